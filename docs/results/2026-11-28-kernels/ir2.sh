#!/bin/bash
B=$1; cd /tmp/rl
ir() { local name=$1 tog=$2; shift 2; local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  rm -f callgrind.out.*
  env "${envs[@]}" COLLTUNE_SUMMARY=off LD_PRELOAD=$B/libcolltune_pmpi.so valgrind --tool=callgrind $tog /work/main/build/mpich/ct_osu "$@" --iters 5000 --warmup 0 >/dev/null 2>&1
  local t=$(callgrind_annotate callgrind.out.* 2>/dev/null | grep "PROGRAM TOTALS" | awk '{gsub(",","",$1); print $1}')
  echo "$name $(python3 -c "print(round($t/5000,1))")"; }
ir "bcast-8-shm-persistent" "--toggle-collect=MPI_Start --toggle-collect=MPI_Wait" COLLTUNE_BCAST_ALGORITHM=shm -- --op bcast --sizes 8 --form persistent
ir "bcast-8-shm-nonblocking" "--toggle-collect=MPI_Ibcast --toggle-collect=MPI_Wait" COLLTUNE_BCAST_ALGORITHM=shm -- --op bcast --sizes 8 --form nonblocking
ir "barrier-shm-persistent" "--toggle-collect=MPI_Start --toggle-collect=MPI_Wait" COLLTUNE_BARRIER_ALGORITHM=shm -- --op barrier --sizes 0 --form persistent
ir "barrier-shm-blocking" "--toggle-collect=MPI_Barrier" COLLTUNE_BARRIER_ALGORITHM=shm -- --op barrier --sizes 0
