#!/usr/bin/env bash
# colltune's tuner against Intel MPI's mpitune_fast (issue 37), at 2 ranks on this machine:
#   1. tuning seconds: mpitune_fast (the impi-rt wheel's; it runs IMB-MPI1 over its own 49
#      message lengths, 1 B to 4 MiB) against `colltune tune --strategy exhaustive` (every
#      algorithm and segment size at the powers of two SIZES), both for OPS at 2 ranks;
#   2. one OSU-style benchmark (build/mpich/ct_osu --between mpi, mean per call avg_us) of
#      Intel MPI default, Intel MPI with mpitune_fast's file (I_MPI_TUNING_BIN), and colltune's
#      table through the drop-in under Intel MPI (LD_PRELOAD + COLLTUNE_TABLE), in turn,
#      REPEATS times; per point the median over repeats and its spread (min-max).
# Usage: bench/tuners.sh [OUTDIR]   (scripts/setup.sh intelmpi first)
#   OPS="bcast allreduce reduce allgather alltoall barrier" SIZES=8-4M POINTS=8,1024,65536
#   REPEATS=5 ITERS=1000 NP=2 PY=.venv/bin/python
# Prints a markdown table (docs/BENCHMARKS.md §26) and leaves everything under OUTDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
I=$ROOT/.mpi/intelmpi
[ -x "$I/bin/mpitune_fast" ] || { echo "no $I/bin/mpitune_fast: scripts/setup.sh intelmpi" >&2; exit 1; }
[ -x build/mpich/ct_osu ] || { echo "no build/mpich: scripts/setup.sh intelmpi" >&2; exit 1; }
OUT=$(realpath -m "${1:-tuners-$(date +%F-%H%M%S)}")
mkdir -p "$OUT"
OPS=${OPS:-bcast allreduce reduce allgather alltoall barrier}
SIZES=${SIZES:-8-4M}
POINTS=${POINTS:-8,1024,65536}
REPEATS=${REPEATS:-5}
NP=${NP:-2}                            # ranks on this node, one per core
PY=${PY:-$ROOT/.venv/bin/python}       # bench/device.sh: the machine's python3
ITERS=${ITERS:-1000}
# Intel MPI's environment, as MPIBuild 'intelmpi' sets it (python/colltune/core/mpi.py); the
# tuner's own mpiexec and IMB-MPI1 are found on PATH.
export I_MPI_ROOT=$I I_MPI_FABRICS=shm FI_PROVIDER_PATH=$I/lib/libfabric/prov
# Only for Intel MPI's own processes, never this script's Python: build/mpich's libcolltune.so
# needs MPICH 5's PMPI_Request_get_status_all (MPI 4.1), which Intel MPI 2021.13 lacks, and
# ctypes binds every symbol at load (programs bind lazily and never call it).
IENV=(env "LD_LIBRARY_PATH=$I/lib:$I/lib/libfabric${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      "PATH=$I/bin:$PATH")
export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}  # this tree's colltune
say() { printf '[tuners] %s\n' "$*" >&2; }
now() { date +%s.%N; }

{
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "Intel MPI: $("$I/bin/mpiexec" --version | head -1)"
    echo "ops: $OPS; colltune sizes: $SIZES; points: $POINTS; repeats: $REPEATS; iters: $ITERS"
} | tee "$OUT/machine.txt" >&2

# 1. tuning ------------------------------------------------------------------------------
colls=$(echo "$OPS" | tr ' ' ',')
mkdir -p "$OUT/mpitune"
if [ -f "$OUT/mpitune/seconds" ]; then
    say "mpitune_fast: already done in $OUT (its seconds and file are reused)"
else
    say "mpitune_fast -c $colls at 1 node x $NP ranks"
    t0=$(now)
    # It writes its message-length list and host file into the current folder.
    (cd "$OUT/mpitune" && "${IENV[@]}" "$I/bin/mpitune_fast" -hosts "$(hostname)" -n 1 \
        -ppn "$NP" -c "$colls" -d "$OUT/mpitune/results" >"$OUT/mpitune/log" 2>&1)
    python3 -c "import sys; print(float(sys.argv[1]) - float(sys.argv[2]))" "$(now)" "$t0" >"$OUT/mpitune/seconds"
fi
t_intel=$(cat "$OUT/mpitune/seconds")
tuned_bin=$(ls "$OUT"/mpitune/results/cluster_merged_*.dat | head -1)
say "mpitune_fast: ${t_intel} s -> $tuned_bin"

say "colltune tune --strategy exhaustive --ops $colls --ranks $NP --sizes $SIZES"
t0=$(now)
(cd "$OUT" && COLLTUNE_MPI=intelmpi "$PY" -m colltune.cli \
    tune --strategy exhaustive --ops "$colls" --ranks "$NP" --sizes "$SIZES" --no-record \
    -o "$OUT/colltune-table.json" >"$OUT/colltune-tune.log" 2>&1)
t_ct=$(python3 -c "import sys; print(float(sys.argv[1]) - float(sys.argv[2]))" "$(now)" "$t0")
say "colltune tune: ${t_ct} s"
echo "load after tuning: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

# 2. the benchmark -----------------------------------------------------------------------
osu_args=()
for op in $OPS; do osu_args+=(--op "$op" --sizes "$([ "$op" = barrier ] && echo 0 || echo "$POINTS")"); done
run_variant() { # variant repeat
    local env=()
    case $1 in
        intel-default) ;;
        intel-mpitune) env=(-genv I_MPI_TUNING_BIN "$tuned_bin") ;;
        colltune) env=(-genv LD_PRELOAD "$ROOT/build/mpich/libcolltune_pmpi.so"
                       -genv COLLTUNE_TABLE "$OUT/colltune-table.json") ;;
    esac
    # one rank per core, as MPIBuild 'intelmpi' launches them (core/launch/intelmpi.py)
    "${IENV[@]}" "$I/bin/mpiexec" -n "$NP" -genv I_MPI_PIN 1 -genv I_MPI_PIN_DOMAIN core "${env[@]}" \
        build/mpich/ct_osu "${osu_args[@]}" --iters "$ITERS" --between mpi \
        | sed "s/^{/{\"variant\": \"$1\", \"repeat\": $2, /" >>"$OUT/osu.jsonl"
}
: >"$OUT/osu.jsonl"
for r in $(seq 1 "$REPEATS"); do
    for v in intel-default intel-mpitune colltune; do
        say "repeat $r/$REPEATS: $v"
        run_variant "$v" "$r"
    done
done
echo "load after the benchmark: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

"$PY" - "$OUT" "$t_intel" "$t_ct" "$NP" <<'EOF'
import json, statistics, sys
from pathlib import Path
out, t_intel, t_ct = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
nranks = int(sys.argv[4])
rows = [json.loads(line) for line in (out / "osu.jsonl").read_text().splitlines() if line]
table = json.loads((out / "colltune-table.json").read_text())
pick = {(e["op"], e["size_bytes"]): e["algorithm"] for e in table["entries"]
        if e["ranks"] == nranks}
cell: dict = {}
for r in rows:
    cell.setdefault((r["op"], r["size"]), {}).setdefault(r["variant"], []).append(r["avg_us"])
print(f"tuning seconds, {nranks} ranks: mpitune_fast {t_intel:.0f} s, colltune tune (exhaustive) "
      f"{t_ct:.0f} s, ratio colltune/mpitune {t_ct / t_intel:.2f}\n")
print("| op | size | Intel default us | Intel + mpitune_fast us | colltune table us "
      "(its choice) | mpitune/default | colltune/default | colltune/mpitune |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
def med(v):
    return f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
for (op, size), c in cell.items():
    d, m, t = (statistics.median(c[k]) for k in ("intel-default", "intel-mpitune", "colltune"))
    choice = pick.get((op, size), "nearest entry")
    print(f"| {op} | {size} | {med(c['intel-default'])} | {med(c['intel-mpitune'])} | "
          f"{med(c['colltune'])} {choice} | {m / d:.2f} | {t / d:.2f} | {t / m:.2f} |")
EOF
