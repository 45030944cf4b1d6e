#!/bin/bash
# A/B forced algorithms: before (cded1cf) and after, 3 launches interleaved, medians and means
cd /work/main
M=.mpi/mpich/bin/mpiexec
for r in 1 2 3; do
 for lib in before after; do
  if [ $lib = before ]; then B=/work/wt-before/build/mpich; else B=build/mpich; fi
  for cfg in allreduce:shm allreduce:cma reduce:shm; do
   op=${cfg%%:*}; alg=${cfg#*:}; U=$(echo $op | tr a-z A-Z)
   $M -n 2 -bind-to core -env LD_PRELOAD $B/libcolltune_pmpi.so -env COLLTUNE_${U}_ALGORITHM $alg -env COLLTUNE_SUMMARY off build/mpich/ct_osu --op $op --sizes 32768,262144,1048576,4194304 --iters 400 --budget-ms 150 2>/dev/null | python3 -c "
import sys,json
for l in sys.stdin:
    if not l.startswith('{'): continue
    d=json.loads(l); print('$r $lib $alg %-9s %8d mean %9.2f median %9.2f'%(d['op'],d['size'],d['avg_us'],d['median_us']))"
  done
 done
done
