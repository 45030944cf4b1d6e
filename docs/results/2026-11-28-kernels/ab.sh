#!/bin/bash
# A/B: the quiet record's MPICH table through the drop-in, before (cded1cf) and after, ct_osu --between mpi
cd /work/main
T=docs/results/2026-11-28-quiet-record/table-mpich.json
M=.mpi/mpich/bin/mpiexec
OPS=${OPS:-"bcast allreduce reduce allgather alltoall"}
SIZES=${SIZES:-8,512,32768,262144}
for r in 1 2 3; do
 for lib in before after; do
  if [ $lib = before ]; then B=/work/wt-before/build/mpich; else B=build/mpich; fi
  args=""; for op in $OPS; do args="$args --op $op --sizes $SIZES"; done
  args="$args --op barrier --sizes 0"
  $M -n 2 -bind-to core -env LD_PRELOAD $B/libcolltune_pmpi.so -env COLLTUNE_TABLE $PWD/$T -env COLLTUNE_SUMMARY off build/mpich/ct_osu $args --iters 20000 --budget-ms 40 --between mpi 2>/dev/null | python3 -c "
import sys,json
for l in sys.stdin:
    if not l.startswith('{'): continue
    d=json.loads(l); print('$r $lib %-9s %8d mean %8.3f median %8.3f'%(d['op'],d['size'],d['avg_us'],d['median_us']))"
 done
done
