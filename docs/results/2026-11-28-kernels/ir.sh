#!/bin/bash
# instructions per call, callgrind; $1 = build dir of the drop-in
B=$1; cd /tmp/rl
ir() { # name toggle env... -- osu args
  local name=$1 tog=$2; shift 2; local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  rm -f callgrind.out.*
  env "${envs[@]}" COLLTUNE_SUMMARY=off LD_PRELOAD=$B/libcolltune_pmpi.so valgrind --tool=callgrind $tog /work/main/build/mpich/ct_osu "$@" --iters 5000 --warmup 0 >/dev/null 2>&1
  local t=$(callgrind_annotate callgrind.out.* 2>/dev/null | grep "PROGRAM TOTALS" | awk '{gsub(",","",$1); print $1}')
  echo "$name $(python3 -c "print(round($t/5000,1))")"
}
T=/work/main/docs/results/2026-11-28-quiet-record/table-mpich.json
ir "bcast-8-shm" --toggle-collect=MPI_Bcast COLLTUNE_BCAST_ALGORITHM=shm -- --op bcast --sizes 8
ir "allgather-8-shm" --toggle-collect=MPI_Allgather COLLTUNE_ALLGATHER_ALGORITHM=shm -- --op allgather --sizes 8
ir "allreduce-8-shm" --toggle-collect=MPI_Allreduce COLLTUNE_ALLREDUCE_ALGORITHM=shm -- --op allreduce --sizes 8
ir "bcast-8-nothing-set" --toggle-collect=MPI_Bcast X=1 -- --op bcast --sizes 8
ir "table:bcast-8+barrier(per-call)" "--toggle-collect=MPI_Bcast --toggle-collect=MPI_Barrier" COLLTUNE_TABLE=$T -- --op bcast --sizes 8 --between mpi
ir "table:allreduce-8+barrier(per-call)" "--toggle-collect=MPI_Allreduce --toggle-collect=MPI_Barrier" COLLTUNE_TABLE=$T -- --op allreduce --sizes 8 --between mpi
