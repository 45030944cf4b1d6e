"""An mpi4py program colltune was not written for, for the drop-in's test
(tests/python/test_monitor.py): buffer collectives (mpi4py calls the MPI 4 large-count forms,
MPI_Bcast_c and the like, where the MPI has them). Each result is checked here; rank 0 prints
"ok" when all hold."""

from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, n = comm.Get_rank(), comm.Get_size()
count = 1000

buf = array("d", [float(i) if rank == 1 else -1.0 for i in range(count)])
comm.Bcast([buf, MPI.DOUBLE], root=1)
assert list(buf) == [float(i) for i in range(count)], "Bcast"

send = array("d", [float(rank + i) for i in range(count)])
total = array("d", [0.0] * count)
comm.Allreduce([send, MPI.DOUBLE], [total, MPI.DOUBLE], op=MPI.SUM)
assert list(total) == [float(n * i + n * (n - 1) // 2) for i in range(count)], "Allreduce"

blocks = array("i", [r * 10 + k for r in range(n) for k in range(3)])
mine = array("i", [0] * 3)
comm.Scatter([blocks, MPI.INT] if rank == 0 else None, [mine, MPI.INT], root=0)
assert list(mine) == [rank * 10 + k for k in range(3)], "Scatter"

req = comm.Ibcast([buf, MPI.DOUBLE], root=0)
req.Wait()
comm.Barrier()
if rank == 0:
    print("ok", flush=True)
