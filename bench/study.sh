#!/usr/bin/env bash
# The collectives study: every operation, 8 B to 4 MiB, every colltune algorithm next to
# native MPICH (also with its async progress thread) and native Open MPI, all ranks pinned
# one per core. Builds colltune against both MPI wheels from scratch.
#   bench/study.sh OUTDIR [NRANKS [LABEL:OP ...]]
# LABEL is mpich (every algorithm, their default segment sizes), mpich-seg32k (the
# segmentable ones with 32 KiB segments), mpich-async (native with MPIR_CVAR_ASYNC_PROGRESS=1,
# 10 iterations a size: its progress threads share the ranks' cores, so it is slow) or
# openmpi (every algorithm over Open MPI, and its native). Default: mpich, openmpi and
# mpich-async for each of the eight operations, plus mpich-seg32k for bcast.
# Wheels come from .whl/ (offline machines) or PyPI. Writes OUTDIR/<label>-<op>.jsonl and
# .txt, OUTDIR/machine.txt, and OUTDIR.tgz after every run (so a cut-off study keeps its
# finished parts in one file; STUDY_TGZ=FILE puts it elsewhere). A run that finished leaves
# OUTDIR/<label>-<op>.done: running the study again into the same OUTDIR skips those runs,
# so an interrupted study resumes where it stopped.
set -euo pipefail
out=${1:?usage: $0 OUTDIR [NRANKS]}
n=${2:-$(nproc)}
shift $(( $# > 1 ? 2 : 1 ))
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
    runs=(mpich-seg32k:bcast)
    for op in bcast reduce allreduce scatter gather allgather alltoall barrier; do
        runs+=("mpich:$op" "openmpi:$op" "mpich-async:$op")
    done
fi
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

run() { # label op
    local label=$1 op=$2 mpi=mpich algs=all extra=() env=()
    if [ -f "$out/$label-$op.done" ]; then
        echo "= $label $op: done already, skipped"
        return
    fi
    case $label in
        mpich-seg32k) extra=(--segsize 32768) ;;
        mpich-async) algs=native; extra=(--iters 10 --warmup 2); env=(MPIR_CVAR_ASYNC_PROGRESS=1) ;;
        openmpi) mpi=openmpi ;;
    esac
    local bind=(-bind-to core)
    [ "$mpi" = openmpi ] && bind=(--bind-to core --map-by core)
    local cmd=("$work/$mpi/bin/mpiexec" -n "$n" "${bind[@]}" "$work/build-$mpi/ct_bench"
               --op "$op" --algs "$algs" --min 8 --max "${STUDY_MAX:-4194304}" --check --binding core ${STUDY_ARGS:-}
               "${extra[@]}" --json "$out/$label-$op.jsonl")
    echo "+ ${env[*]} ${cmd[*]}" | tee "$out/$label-$op.txt"
    env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "${env[@]}" "${cmd[@]}" \
        >> "$out/$label-$op.txt" 2>&1
    touch "$out/$label-$op.done"
    tar czf "${STUDY_TGZ:-$out.tgz}" -C "$out" .
}
i=0
for r in "${runs[@]}"; do
    i=$((i + 1))
    echo "[study $(date -u +%T)] run $i/${#runs[@]}: ${r%%:*} ${r##*:}"
    run "${r%%:*}" "${r##*:}"
done
echo "study done: $out"
