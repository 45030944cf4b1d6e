#!/usr/bin/env bash
# Builds the drop-in against Debian's own Open MPI or MPICH (installed side by side by
# scripts/ensure-system-mpi.sh) into build/debian-<name>, quietly: libcolltune and
# libcolltune_pmpi for the Fortran test (tests/python/test_fortran.py), and the C tests
# labelled "system" (tests/c/CMakeLists.txt) that scripts/test.sh runs there, and
# testbed_check for Debian's Open MPI 4.1 across the test bed (tests/python/test_testbed.py,
# the launcher bench/apps.sh --testbed needs). An MPI that
# is not installed is skipped with a word (the tests then skip too).
# Usage: scripts/build-debian-mpi.sh openmpi|mpich ...
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
for name in "$@"; do
    case $name in
        openmpi) werror=ON ;;
        # MPICH 4.0's mpi.h makes GCC 12 see MPI_STATUSES_IGNORE ((MPI_Status *)1) as a
        # zero-size array (-Wstringop-overflow) in src/sched/exec.c and src/dyn/dyn.c.
        mpich) werror=OFF ;;
        *) echo "usage: $0 openmpi|mpich ..." >&2; exit 2 ;;
    esac
    mpicc=/usr/bin/mpicc.$name dir=build/debian-$name
    if [ ! -x "$mpicc" ]; then
        echo "[setup] $mpicc is missing (scripts/ensure-system-mpi.sh installs it): not built" >&2
        continue
    fi
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    if ! grep -qxF "MPI_C_COMPILER:FILEPATH=$mpicc" "$dir/CMakeCache.txt" 2>/dev/null; then
        rm -rf "$dir"
        quiet cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DCOLLTUNE_WERROR=$werror -DMPI_C_COMPILER="$mpicc" \
            -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.$name
    fi
    quiet cmake --build "$dir" -j "$(nproc)" --target colltune_pmpi test_coll_mpi test_move_mpi \
        plain_release_linked plain_finalize_linked testbed_check
done
