"""An mpi4py program colltune was not written for, for the monitor's consistency test
(tests/python/test_monitor.py): pickled objects by comm.send/comm.recv (mpi4py matches them
with MPI_Mprobe and MPI_Mrecv, large-count variants where the MPI has them), buffers by
Isend/Irecv from MPI_ANY_SOURCE completed by Request.Waitall, Sendrecv_replace, a
communicator split in reverse order with Issend/Irecv and Request.Waitany, and collectives
(comm.allreduce of objects is left out: mpi4py makes it of point-to-point messages). Rank 0
prints one JSON line: the buffer messages' expected counts and bytes per (sender, receiver),
which the test checks against the monitor's matrices."""

import json
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, n = comm.Get_rank(), comm.Get_size()
expected = [[[0, 0] for _ in range(n)] for _ in range(n)]  # buffer messages only


def sent(i, j, nbytes):
    expected[i][j][0] += 1
    expected[i][j][1] += nbytes


# pickled objects around a ring, twice
for k in range(2):
    comm.send({"from": rank, "k": k, "pad": "x" * (10 * rank)}, dest=(rank + 1) % n, tag=k)
    got = comm.recv(source=(rank - 1) % n, tag=k)
    assert got["from"] == (rank - 1) % n
# every rank to every other: 100 * (sender + 1) + receiver bytes
reqs, bufs = [], []
for _ in range(1, n):
    src_buf = bytearray(200 * n)
    bufs.append(src_buf)
    reqs.append(comm.Irecv([src_buf, MPI.BYTE], source=MPI.ANY_SOURCE, tag=7))
for j in range(n):
    for i in range(n):
        if i != j:
            sent(i, j, 100 * (i + 1) + j)
    if j != rank:
        reqs.append(comm.Isend([bytearray(100 * (rank + 1) + j), MPI.BYTE], dest=j, tag=7))
MPI.Request.Waitall(reqs)
# a ring of 64 bytes in place
ring = bytearray(64)
comm.Sendrecv_replace([ring, MPI.BYTE], dest=(rank + 1) % n, source=(rank - 1) % n)
for i in range(n):
    sent(i, (i + 1) % n, 64)
# a communicator with the world's ranks reversed: 16 bytes to the next one in it
rev = comm.Split(0, n - rank)
rr = rev.Get_rank()
box = bytearray(16)
pair = [rev.Irecv([box, MPI.BYTE], source=MPI.ANY_SOURCE, tag=3),
        rev.Issend([bytearray(16), MPI.BYTE], dest=(rr + 1) % n, tag=3)]
while MPI.Request.Waitany(pair) != MPI.UNDEFINED:
    pass
for i in range(n):  # world rank i has rev rank n-1-i; its next is n-1-((n-i) % n)
    sent(i, n - 1 - ((n - i) % n), 16)
rev.Free()
mine, total = array("i", [rank]), array("i", [0])
comm.Allreduce([mine, MPI.INT], [total, MPI.INT], op=MPI.SUM)
assert total[0] == n * (n - 1) // 2
assert comm.bcast("hello" if rank == 0 else None, root=0) == "hello"
if rank == 0:
    print(json.dumps({"ranks": n, "buffer_traffic": expected}), flush=True)
