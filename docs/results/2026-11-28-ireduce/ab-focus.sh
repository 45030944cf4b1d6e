#!/bin/bash
# the record's order cut to what matters: MPI_Iallreduce 4 MiB, then MPI_Ireduce 256 KiB and 1 MiB
cd "$(dirname "$0")/../../.."  # the repository root
out=$1; mkdir -p $out
T=docs/results/2026-11-28-quiet-record/table-mpich.json; P=build/mpich/libcolltune_pmpi.so
for rep in 1 2 3; do for heap in as-is primed; do for m in native table; do
  env=(); [ $m = table ] && env=(-env LD_PRELOAD $P -env COLLTUNE_TABLE $T)
  echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" > $out/$rep-nonblocking-$m-$heap.txt
  .mpi/mpich/bin/mpiexec -n 2 -bind-to core "${env[@]}" build/mpich/ct_osu --op allreduce --sizes 4194304 --op reduce --sizes 262144,1048576 --iters 20000 --warmup 100 --budget-ms 40 --between mpi --form nonblocking --heap $heap >> $out/$rep-nonblocking-$m-$heap.txt 2>&1
done; done; done
