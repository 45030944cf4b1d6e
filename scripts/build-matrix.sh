#!/usr/bin/env bash
# The CI build matrix: the C project built twice with warnings as errors,
#   build/matrix-release   Release, gcc
#   build/matrix-debug     Debug, clang (gcc when clang is not installed: says so)
# then a short C test subset on the Debug build (MPI-free model checks, the error paths and
# one small collective check under mpiexec: seconds; sched_all_algorithms takes minutes).
# MPI: the project's MPICH wheel in .mpi/mpich (scripts/setup.sh installs it), or the
# system MPI given by MPICC, as scripts/setup.sh does.
# Usage: scripts/build-matrix.sh        (JOBS=n for the build parallelism, default 2)
# Set COLLTUNE_MATRIX_INSTALL_CLANG=1 to apt-get install clang when it is missing (root).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-2}
# Bold only where a person reads it: a file or a pipe (a CI log) gets plain text.
if [ -t 2 ]; then
    say() { printf '\033[1m[matrix]\033[0m %s\n' "$*" >&2; }
else
    say() { printf '[matrix] %s\n' "$*" >&2; }
fi

if [ -n "${MPICC:-}" ]; then
    mpicc=$MPICC
else
    mpicc=$ROOT/.mpi/${MPI:-mpich}/bin/mpicc
    if [ ! -x "$mpicc" ]; then
        say "no $mpicc: setting up the MPI first (scripts/setup.sh ${MPI:-mpich})"
        scripts/setup.sh "${MPI:-mpich}"
    fi
fi
mpiexec=$(dirname "$mpicc")/mpiexec

if ! command -v clang >/dev/null && [ "${COLLTUNE_MATRIX_INSTALL_CLANG:-0}" = 1 ] \
        && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "clang is not installed: installing it (COLLTUNE_MATRIX_INSTALL_CLANG=1)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang >/dev/null
fi
if command -v clang >/dev/null; then
    debug_cc=$(command -v clang)
else
    debug_cc=$(command -v gcc)
    say "clang is not installed: the Debug build uses gcc instead" \
        "(COLLTUNE_MATRIX_INSTALL_CLANG=1 installs it)"
fi

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)

# Targets the matrix builds: everything (a warning anywhere fails CI). The tests run below
# need test_model, test_splittree, test_errors and test_coll_mpi, all part of that.
matrix_build() { # dir build-type c-compiler
    local dir=$1 type=$2 cc=$3 log
    say "configuring $dir ($type, $(basename "$cc"), -Werror)"
    # A compiler change needs a fresh cache: CMake does not switch compilers in place.
    if [ -f "$dir/CMakeCache.txt" ] \
            && ! grep -qxF "CMAKE_C_COMPILER:FILEPATH=$cc" "$dir/CMakeCache.txt" \
            && ! grep -qxF "CMAKE_C_COMPILER:STRING=$cc" "$dir/CMakeCache.txt"; then
        rm -rf "$dir"
    fi
    log=$(mktemp)
    if ! cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE="$type" -DCMAKE_C_COMPILER="$cc" \
            -DCOLLTUNE_WERROR=ON -DCOLLTUNE_TESTS=ON -DMPI_C_COMPILER="$mpicc" \
            -DMPIEXEC_EXECUTABLE="$mpiexec" >"$log" 2>&1; then
        cat "$log" >&2; rm -f "$log"; say "configuring $dir failed"; exit 1
    fi
    say "building $dir (-j$JOBS)"
    if ! cmake --build "$dir" -j "$JOBS" >"$log" 2>&1; then
        grep -E 'warning|error' "$log" >&2 || cat "$log" >&2
        rm -f "$log"; say "building $dir failed"; exit 1
    fi
    # -Werror makes compiler warnings fail the build; anything else that warns (the linker,
    # a tool that ignores -Werror) fails here.
    if grep -qiE '(^|[^-])warning[: ]' "$log"; then
        grep -iE 'warning' "$log" >&2
        rm -f "$log"; say "$dir built with warnings"; exit 1
    fi
    rm -f "$log"
}

start=$SECONDS
matrix_build build/matrix-release Release "$(command -v gcc)"
matrix_build build/matrix-debug Debug "$debug_cc"

say "short C test subset on build/matrix-debug"
ctest --test-dir build/matrix-debug --output-on-failure --timeout 120 \
    -R '^(model_closed_forms|splittree_model|errors_np(1|3)|coll_vs_native_np3_small)$'
say "matrix done in $((SECONDS - start)) s"
