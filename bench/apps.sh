#!/usr/bin/env bash
# The real-application study (issue 38; docs/APP.md): `colltune app` on MPI applications
# nobody here wrote, from Debian, each checking its own results:
#   hpcc        HPC Challenge 1.5 (HPL, PTRANS, MPIFFT, RandomAccess, STREAM, ...): its
#               summary file must say Success=1; compared on its MPIFFT Gflop/s (alltoall).
#   petsc-ksp   PETSc 3.18 KSP tutorial ex2: a 2-D Laplacian solved with CG and Jacobi (two
#               small allreduces an iteration); it prints the norm of its error.
#   petsc-snes  PETSc 3.18 SNES tutorial ex5: the Bratu problem, Newton-Krylov; it must say
#               that the nonlinear solve converged.
# Debian builds them against its Open MPI 4.1, so the drop-in preloaded is the one built
# against that MPI (build/debian-openmpi, with ct_bench and ct_osu for the tuner and the
# verification).
#
# Usage: bench/apps.sh [NP] [colltune app options ...]
#   NP (default 2) ranks; the options go to every `colltune app`, e.g. --testbed --ppn 1,
#   --hostfile FILE, --budget 300, --repeat 7. APPS (default "hpcc petsc-ksp petsc-snes")
#   picks the applications; APPS_OUT the results directory; APPS_BUILD another build tree
#   against Debian's Open MPI than build/debian-openmpi.
# Results: APPS_OUT (default bench/results/apps-DATE-TIME): one study directory per
# application (study.json: the verdict) and the store apps.db (`colltune report --db`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
np=2
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then np=$1; shift; fi
apps=${APPS:-hpcc petsc-ksp petsc-snes}
out=${APPS_OUT:-bench/results/apps-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
db=$out/apps.db

scripts/ensure-apps.sh
if [ -z "${APPS_BUILD:-}" ]; then
    scripts/ensure-system-mpi.sh
    scripts/build-debian-mpi.sh openmpi
    if [ ! -f build/debian-openmpi/CMakeCache.txt ]; then
        echo "apps.sh: no drop-in against Debian's Open MPI (build/debian-openmpi): nothing to run" >&2
        exit 1
    fi
    cmake --build build/debian-openmpi -j "$(nproc)" --target ct_bench ct_osu >/dev/null
fi
# APPS_BUILD: another build tree against Debian's Open MPI (with libcolltune_pmpi.so,
# ct_bench and ct_osu) to preload instead of build/debian-openmpi.
export COLLTUNE_BUILD=${APPS_BUILD:-$root/build/debian-openmpi}
app=("$root/.venv/bin/colltune" app --mpi system -n "$np" --db "$db")

echo "apps.sh: $np ranks, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), results in $out"
for name in $apps; do
    dir=$out/$name
    mkdir -p "$dir/work"
    echo "== $name" >&2
    case $name in
        hpcc)
            if [ ! -x /usr/bin/hpcc ]; then echo "apps.sh: hpcc is not installed: skipped" >&2; continue; fi
            # Debian's example input with the process grid made P x Q = NP (P the largest
            # factor up to the square root): HPL N 1000, PTRANS and FFT sized from it.
            p=1
            for ((k = 1; k * k <= np; k++)); do (( np % k == 0 )) && p=$k; done
            sed -e "s/^2            Ps/$p            Ps/" -e "s/^2            Qs/$((np / p))            Qs/" \
                /usr/share/doc/hpcc/examples/_hpccinf.txt >"$dir/work/hpccinf.txt"
            (cd "$dir/work" && "${app[@]}" -o "$dir" --result-file hpccoutf.txt \
                --expect '^Success=1$' --metric '^MPIFFT_Gflops=([0-9.eE+-]+)$' \
                --metric-higher-better "$@" -- /usr/bin/hpcc) || echo "apps.sh: $name: failed" >&2
            ;;
        petsc-ksp)
            prog=$root/build/apps/petsc-ksp-ex2
            if [ ! -x "$prog" ]; then echo "apps.sh: $prog is missing: skipped" >&2; continue; fi
            (cd "$dir/work" && "${app[@]}" -o "$dir" --expect 'Norm of error [0-9.e+-]+,? [Ii]terations? [0-9]+' \
                "$@" -- "$prog" -m 100 -n 100 -ksp_type cg -pc_type jacobi) \
                || echo "apps.sh: $name: failed" >&2
            ;;
        petsc-snes)
            prog=$root/build/apps/petsc-snes-ex5
            if [ ! -x "$prog" ]; then echo "apps.sh: $prog is missing: skipped" >&2; continue; fi
            (cd "$dir/work" && "${app[@]}" -o "$dir" --expect 'Nonlinear solve converged' \
                "$@" -- "$prog" -da_grid_x 64 -da_grid_y 64 -snes_converged_reason \
                -ksp_type cg -pc_type jacobi) || echo "apps.sh: $name: failed" >&2
            ;;
        *) echo "apps.sh: unknown application $name (hpcc, petsc-ksp, petsc-snes)" >&2 ;;
    esac
done
echo "apps.sh: results in $out: <app>/study.json, <app>/*.out; the store $db:"
echo "  .venv/bin/colltune runs --db $db; .venv/bin/colltune report --db $db RUN -o report.html"
