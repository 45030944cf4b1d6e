#!/usr/bin/env bash
# Builds the drop-in against the MPI-5 standard ABI (docs/DROPIN.md, "MPI-5 standard ABI")
# into build/mpich-abi, quietly: MPICH's mpicc_abi (the mpich wheel scripts/setup.sh installs
# into .mpi/mpich) compiles against mpi_abi.h and links libmpi_abi.so.1, and CMake, seeing
# MPI_ABI_VERSION in that mpi.h, leaves the Fortran entry points out and names the libraries
# libcolltune_abi.so and libcolltune_pmpi_abi.so. Besides the drop-in, the two C programs
# tests/python/test_abi.py runs: plain_collectives (under LD_PRELOAD) and
# test_dropin_diff_mpi (linked with the drop-in).
# Usage: scripts/build-abi.sh          (MPICC_ABI=/path/to/mpicc_abi for another MPI's)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/lib.sh
if [ -z "${MPICC_ABI:-}" ]; then
    [ -x .mpi/mpich/bin/mpicc ] || scripts/setup.sh mpich
    MPICC_ABI=$ROOT/.mpi/mpich/bin/mpicc_abi
fi
if [ ! -x "$MPICC_ABI" ]; then
    echo "[setup] $MPICC_ABI is missing: this MPI has no standard-ABI wrapper (MPICH >= 4.2" \
         "builds one with --enable-mpi-abi)" >&2
    exit 1
fi
dir=build/mpich-abi
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if ! grep -qxF "MPI_C_COMPILER:FILEPATH=$MPICC_ABI" "$dir/CMakeCache.txt" 2>/dev/null; then
    rm -rf "$dir"
    echo "[setup] configuring $dir with $MPICC_ABI" >&2
    quiet cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLTUNE_WERROR=ON \
        -DCOLLTUNE_MPI_ABI=ON -DMPI_C_COMPILER="$MPICC_ABI" \
        -DMPIEXEC_EXECUTABLE="$(dirname "$MPICC_ABI")/mpiexec"
fi
echo "[setup] building $dir" >&2
quiet cmake --build "$dir" -j "$(nproc)" --target colltune_pmpi plain_collectives \
    test_dropin_diff_mpi
