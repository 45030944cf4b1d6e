#!/usr/bin/env bash
# What a barrier between iterations does to the next call (docs/BENCHMARKS.md sections 40,
# 42): ct_osu at 2 ranks pinned under the MPICH wheel, one operation at one size, four
# ways: the library's call after the library's barrier (A), the library's call after
# colltune's shm barrier (B), colltune's shm call after the library's barrier (C), and both
# colltune's (D). Prints per launch the call's own mean and median (the slowest rank's, us)
# and the whole iteration's (barrier + call).
# Usage: OP=bcast SIZE=8 R=3 IT=20000 bench/skew.sh   (make setup first)
set -euo pipefail
cd "$(dirname "$0")/.."
M=$PWD/.mpi/mpich/bin OSU=$PWD/build/mpich/ct_osu PRE=$PWD/build/mpich/libcolltune_pmpi.so
op=${OP:-bcast}
upper=$(echo "$op" | tr a-z A-Z)
run() { # name between [VAR=value ...]
    local name=$1 between=$2
    shift 2
    local envs=()
    for e in "$@"; do envs+=(-env "${e%%=*}" "${e#*=}"); done
    "$M/mpiexec" -n 2 -bind-to core "${envs[@]}" "$OSU" --op "$op" --sizes "${SIZE:-8}" \
        --iters "${IT:-20000}" --warmup 200 --between "$between" 2>/dev/null | tail -1 |
        python3 -c 'import json, sys
d = json.loads(sys.stdin.read())
print(sys.argv[1], "call mean %.3f median %.3f  iteration mean %.3f median %.3f" % (
    d["avg_us"], d["median_us"], d["iter_avg_us"], d["iter_median_us"]))' "$name"
}
for ((r = 1; r <= ${R:-3}; r++)); do
    run A-library-after-library-barrier pmpi
    run B-library-after-shm-barrier mpi LD_PRELOAD="$PRE" COLLTUNE_BARRIER_ALGORITHM=shm
    run C-shm-after-library-barrier pmpi LD_PRELOAD="$PRE" "COLLTUNE_${upper}_ALGORITHM=shm"
    run D-shm-after-shm-barrier mpi LD_PRELOAD="$PRE" "COLLTUNE_${upper}_ALGORITHM=shm" \
        COLLTUNE_BARRIER_ALGORITHM=shm
done
