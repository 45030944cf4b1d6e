#!/usr/bin/env bash
# colltune's tiled Cholesky (dynamic broadcasts on and off) beside StarPU-MPI's own example
# (Debian's starpu-examples mpi_cholesky, STARPU_MPI_COOP_SENDS=1 and 0) at the same matrix
# order, tile size, precision (single: StarPU's example computes in float), grid and ranks.
# Every size is one `colltune cholesky --starpu` run, recorded in the store (the report's
# Cholesky section) and kept as OUTDIR/cholesky-N.json; the table goes to OUTDIR/table.md.
#   bench/cholesky_compare.sh OUTDIR [RANKS [NB [SIZES...]]]
#   e.g. bench/cholesky_compare.sh /tmp/chol 2 160 960 1920            (2-core machine)
#        bench/cholesky_compare.sh /tmp/chol 16 320 3200 6400 9600 12800  (16-core device)
# Environment: ITERS (3), WARMUP (1), WORKERS (1 per rank), MPI (mpich), GRID (most square),
# EXTRA (more `colltune cholesky` options). StarPU needs `apt-get install starpu-examples
# openmpi-bin`; without it the StarPU rows say so and colltune's are still measured.
set -euo pipefail
out=${1:?usage: $0 OUTDIR [RANKS [NB [SIZES...]]]}
ranks=${2:-$(nproc)}
nb=${3:-160}
shift $(( $# < 3 ? $# : 3 ))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=($((nb * 6)) $((nb * 12)))
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-$root/.venv/bin/python}
grid=()
[ -n "${GRID:-}" ] && grid=(--grid "$GRID")
for n in "${sizes[@]}"; do
    printf '[cholesky_compare %s] N=%s NB=%s ranks=%s\n' "$(date -u +%T)" "$n" "$nb" "$ranks" >&2
    # shellcheck disable=SC2086
    "$py" -m colltune.cli cholesky --n "$n" --nb "$nb" --ranks "$ranks" "${grid[@]}" \
        --precision s --dynbcast both --starpu --iters "${ITERS:-3}" --warmup "${WARMUP:-1}" \
        --workers "${WORKERS:-1}" --mpi "${MPI:-mpich}" --json ${EXTRA:-} > "$out/cholesky-$n.json"
done
"$py" - "$out" "${sizes[@]}" > "$out/table.md" <<'PY'
import json, sys
out, sizes = sys.argv[1], sys.argv[2:]
print("| N | NB | grid | variant | median s | min s | max s | GFlop/s | residual |")
print("|---|---|---|---|---|---|---|---|---|")
for n in sizes:
    doc = json.load(open(f"{out}/cholesky-{n}.json"))
    for r in doc["results"]:
        res = "-" if r["residual"] is None else f"{r['residual']:.1e}"
        print(f"| {doc['n']} | {doc['nb']} | {doc['grid']} | {r['variant']} | "
              f"{r['seconds']:.3f} | {r['seconds_min']:.3f} | {r['seconds_max']:.3f} | "
              f"{r['gflops']:.2f} | {res} |")
PY
cat "$out/table.md"
