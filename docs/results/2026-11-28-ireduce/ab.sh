#!/bin/bash
# ab.sh OUTDIR FORM: 3 launches of each of native/table x as-is/primed, interleaved
cd "$(dirname "$0")/../../.."  # the repository root
out=$1; form=$2; mkdir -p $out
T=docs/results/2026-11-28-quiet-record/table-mpich.json; P=build/mpich/libcolltune_pmpi.so
S=8,64,512,4096,32768,262144,1048576,4194304
for rep in 1 2 3; do for heap in as-is primed; do for m in native table; do
  env=(); [ $m = table ] && env=(-env LD_PRELOAD $P -env COLLTUNE_TABLE $T)
  echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" > $out/$rep-$form-$m-$heap.txt
  .mpi/mpich/bin/mpiexec -n 2 -bind-to core "${env[@]}" build/mpich/ct_osu --op bcast --sizes $S --op allreduce --sizes $S --op reduce --sizes $S --iters 20000 --warmup 100 --budget-ms 40 --between mpi --form $form --heap $heap >> $out/$rep-$form-$m-$heap.txt 2>&1
done; done; done
