#!/bin/bash
# BASE: a build of main at f7cc86b (the branch point): git archive f7cc86b, cmake RelWithDebInfo, targets ct_osu colltune_pmpi
# 3 launches each, interleaved: base (main) and after (this branch), 3 forms; 2 ranks.
W=${W:-$PWD}
for rep in 1 2 3; do for b in base after; do for form in blocking persistent nonblocking; do
  if [ $b = base ]; then bd="$BASE"; else bd=$W/build/mpich; fi
  $W/.mpi/mpich/bin/mpiexec -n 2 -bind-to core -env LD_PRELOAD $bd/libcolltune_pmpi.so \
    -env COLLTUNE_BCAST_ALGORITHM shm -env COLLTUNE_ALLREDUCE_ALGORITHM shm -env COLLTUNE_BARRIER_ALGORITHM shm \
    $bd/ct_osu --op bcast --sizes 8 --op allreduce --sizes 8 --op barrier --sizes 0 \
    --iters 20000 --warmup 100 --budget-ms 40 --between mpi --form $form 2>&1 | sed "s/^/$rep $b $form /"
done; done; done
