#!/bin/bash
# BASE: a build of main at f7cc86b (the branch point): git archive f7cc86b, cmake RelWithDebInfo, targets ct_osu colltune_pmpi
# 1 rank: no spin; Ir per call = totals / iters
W=${W:-$PWD}
for b in ${FORMS_BUILDS:-base after}; do
 if [ $b = base ]; then bd="$BASE"; else bd=$W/build/mpich; fi
 for op in bcast allreduce barrier; do for form in blocking persistent nonblocking; do
  case $form in
   blocking) tog="--toggle-collect=MPI_${op^}";;
   persistent) tog="--toggle-collect=MPI_Start --toggle-collect=MPI_Wait";;
   nonblocking) tog="--toggle-collect=MPI_I$op --toggle-collect=MPI_Wait";;
  esac
  f=/tmp/one_${b}_${op}_${form}
  env COLLTUNE_${op^^}_ALGORITHM=shm LD_PRELOAD=$bd/libcolltune_pmpi.so $W/.mpi/mpich/bin/mpiexec -n 1 valgrind --tool=callgrind $tog --callgrind-out-file=$f.cg $bd/ct_osu --op $op --sizes 8 --iters 10000 --warmup 0 --form $form > $f.out 2>&1
  t=$(callgrind_annotate $f.cg 2>/dev/null | grep -m1 "PROGRAM TOTALS" | awk '{gsub(",","",$1); print $1}')
  echo "$b $op $form $((t/10000))"
 done; done
done
