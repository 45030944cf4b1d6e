#!/usr/bin/env bash
# Every test: C schedule checks and correctness against native MPI under both MPI wheels
# (or the system MPI given by MPICC), the drop-in under Intel MPI (the impi-rt wheel), Python tests (store, report, CLI end to end, the
# dashboard in headless Chromium), ruff, the sanitizer builds, and Fortran programs under the
# drop-in with Debian's own Open MPI and MPICH.
set -euo pipefail
cd "$(dirname "$0")/.."
# Bold only where a person reads it: a file or a pipe (a CI log) gets plain text.
if [ -t 2 ]; then
    say() { printf '\033[1m[test]\033[0m %s\n' "$*" >&2; }
else
    say() { printf '[test] %s\n' "$*" >&2; }
fi

if [ -n "${MPICC:-}" ]; then mpis=(system); else mpis=(mpich openmpi); fi
if [ "${mpis[0]}" = system ]; then scripts/setup.sh; else scripts/setup.sh "${mpis[@]}"; fi
scripts/ensure-chromium.sh
scripts/ensure-mpi4py.sh "${mpis[@]}"  # the monitor's test on a program not written for it

first=1
for m in "${mpis[@]}"; do
    say "C tests with $m"
    # system_*: subsets of coll/move_vs_native for the system MPIs' run below.
    if [ $first = 1 ]; then
        # 13 and 16 ranks of large messages and 16 of non-blocking calls (230 s on 2 cores)
        # add no path that 5, 7 and 8 ranks of large messages and 13 and 16 of small ones
        # miss: left out for CI time (issue 35-37's tests took their place).
        ctest --test-dir "build/$m" --output-on-failure --timeout 900 \
            -E '^(system_.*|(coll|move)_vs_native_np(13|16)_large|nbc_vs_native_np16)$'
    else
        # The schedule sweep and the model's closed forms run no MPI: once is enough. The
        # largest cases of the first MPI's run (13 and 16 ranks of large messages, 5 threaded
        # ranks) add no MPI-specific path here: left out for CI time (issue 37's system-MPI
        # runs took their place, about 3 minutes). The shm forms at 8 ranks (20 s here,
        # oversubscribed) repeat 5 ranks' paths under the second MPI.
        ctest --test-dir "build/$m" --output-on-failure --timeout 900 \
            -E '^(sched_all_algorithms|model_closed_forms|splittree_model|system_.*|(coll|move)_vs_native_np(13|16)_large|threads_vs_native_np5|shm_forms_np8)$'
    fi
    first=0
done

# --- build matrix (scripts/build-matrix.sh): Release/gcc and Debug/clang with -Werror, and a
# short C test subset; gcc stands in for clang where clang is not installed
say "build matrix: Release (gcc) and Debug (clang) with warnings as errors"
scripts/build-matrix.sh
# --- end build matrix

# The drop-in against the MPI-5 standard ABI (tests/python/test_abi.py, in the run below),
# with the mpich wheel's mpicc_abi; without that wheel (MPICC=...) the test skips.
if [ -x .mpi/mpich/bin/mpicc_abi ]; then
    say "the drop-in against the MPI-5 standard ABI: build/mpich-abi"
    scripts/build-abi.sh
fi

say "ruff"
.venv/bin/ruff check python tests/python bench
say "Python tests"
COLLTUNE_MPI=${mpis[0]} .venv/bin/python -m pytest -q tests/python \
    --ignore=tests/python/test_fortran.py \
    --ignore=tests/python/test_intelmpi.py  # both below, with the MPIs they need
for m in "${mpis[@]:1}"; do
    # The CLI end to end runs under the first MPI and under Intel MPI (test_intelmpi):
    # its launching of the second is in test_placement; left out here for CI time.
    say "drop-in tests with $m"
    COLLTUNE_MPI=$m .venv/bin/python -m pytest -q tests/python/test_dropin.py \
        tests/python/test_dropin_errors.py tests/python/test_requests.py \
        tests/python/test_monitor.py
done

if [ "${mpis[0]}" != system ]; then
    # Intel MPI runs build/mpich's programs and drop-in (MPICH ABI): every algorithm of the
    # eight operations and the v-variants against its native at 2 and 3 ranks, the drop-in
    # on plain_collectives, bench/tune/verify. Measured 197 s on the 2-core development VM at
    # load average 13 (others' tests beside it); its single runs add up to about 60 s on an
    # idle one. Installing the wheel the first time: about 16 s.
    say "Intel MPI (impi-rt): the C vs-native programs, the drop-in and the CLI under it"
    scripts/setup.sh intelmpi
    .venv/bin/python -m pytest -q tests/python/test_intelmpi.py
fi

scripts/check-sanitize.sh

say "Fortran programs under the drop-in, with Debian's Open MPI and MPICH"
scripts/ensure-system-mpi.sh  # gfortran and both MPIs; without root the test skips
scripts/build-debian-mpi.sh openmpi mpich
.venv/bin/python -m pytest -q tests/python/test_fortran.py
# A user's older MPI (issue 37): the C tests labelled "system" (tests/c/CMakeLists.txt: the
# shm and hier algorithms against native, MPI_Finalize after a shm collective, requests
# freed early, segments smaller than an element) under Debian's Open MPI 4.1 and MPICH 4.0.
for m in openmpi mpich; do
    if [ -f "build/debian-$m/CTestTestfile.cmake" ]; then
        say "C tests labelled system with Debian's $m"
        ctest --test-dir "build/debian-$m" -L system --output-on-failure --timeout 300
    fi
done

say "pip install colltune into a fresh venv (scripts/test-wheel.sh)"
scripts/test-wheel.sh

say "all tests passed"
