#!/usr/bin/env bash
# Shared memory under every call form (issue 36, docs/BENCHMARKS.md section 36): start to
# completion of the non-blocking (MPI_I<op> + MPI_Wait) and persistent (MPI_Start +
# MPI_Wait, the init outside the timing) forms against the blocking call, colltune's shm
# through the drop-in (the barrier between iterations shm too, --between mpi, as in
# bench/record.sh) and MPICH's own, with tools/ct_osu, 2 ranks bound one per core.
# Usage: bench/shm_forms.sh [REPEATS] [ITERS]   POINTS="bcast 8;allreduce 65536" (op size)
# Prints one line per run: variant form op size mean_us median_us; repeats alternate.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
iters=${2:-20000}
M=$PWD/.mpi/mpich/bin OSU=$PWD/build/mpich/ct_osu PRE=$PWD/build/mpich/libcolltune_pmpi.so
np=${NP:-2}
IFS=';' read -r -a points <<<"${POINTS:-bcast 8;bcast 65536;bcast 1048576;allreduce 8;allreduce 65536;allreduce 1048576}"

run() { # variant form op size
    local v=$1 f=$2 op=$3 size=$4 n=$iters upper
    [ "$size" -ge 65536 ] && n=$((iters / 4))
    [ "$size" -ge 1048576 ] && n=$((iters / 20))
    upper=$(echo "$op" | tr a-z A-Z)
    local args=(--op "$op" --sizes "$size" --iters "$n" --warmup 100 --between mpi --form "$f")
    case $v in
    mpich) "$M/mpiexec" -n "$np" -bind-to core "$OSU" "${args[@]}" ;;
    colltune-shm)
        "$M/mpiexec" -n "$np" -bind-to core -env LD_PRELOAD "$PRE" \
            -env "COLLTUNE_${upper}_ALGORITHM" shm -env COLLTUNE_BARRIER_ALGORITHM shm \
            "$OSU" "${args[@]}" ;;
    esac 2>/dev/null | python3 -c 'import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
print(sys.argv[1], d["form"], d["op"], d["size"], "%.3f" % d["avg_us"], "%.3f" % d["median_us"])' "$v" \
        || echo "$v $f $op $size failed"
}

echo "# $(date -u +%FT%TZ) $(uname -n) $(nproc) cores, $np ranks, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < repeats; r++)); do
    for p in "${points[@]}"; do
        read -r op size <<<"$p"
        for f in blocking nonblocking persistent; do
            for v in mpich colltune-shm; do
                run "$v" "$f" "$op" "$size"
            done
        done
    done
done
echo "# end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
