#!/usr/bin/env bash
# `pip install colltune` end to end (README "Install with pip"; issue 37): the sdist of this
# tree (python -m build, in a venv of its own), then pip install of that sdist into a fresh
# venv, as pip does from PyPI: pip builds the wheel (tools/pip/colltune_build.py,
# scikit-build-core: the C parts against the mpich wheel, or $MPICC when set) and installs it
# with its requirements. Then, outside the source tree: colltune --help, colltune bench of
# one operation at 2 ranks (the installed ct_bench and libcolltune through the CLI), and the
# installed drop-in (colltune preload) under the installed MPI's mpiexec, forcing an
# algorithm: the debug log must show colltune serving the calls.
# Usage: scripts/test-wheel.sh      (work dir: build/wheel-test, rebuilt each time)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
# Bold only where a person reads it: a file or a pipe (a CI log) gets plain text.
if [ -t 2 ]; then
    say() { printf '\033[1m[test-wheel]\033[0m %s\n' "$*" >&2; }
else
    say() { printf '[test-wheel] %s\n' "$*" >&2; }
fi
. scripts/lib.sh

work=$ROOT/build/wheel-test
rm -rf "$work"
mkdir -p "$work/run"
say "sdist"
"$PYTHON" -m venv "$work/tools"
quiet "$work/tools/bin/pip" install -q build
quiet "$work/tools/bin/python" -m build --sdist -o "$work/dist" .
sdist=$(ls "$work"/dist/colltune-*.tar.gz)
say "pip install $(basename "$sdist") into a fresh venv (builds the C parts)"
"$PYTHON" -m venv "$work/venv"
quiet "$work/venv/bin/pip" install "$sdist"

# Away from the checkout, with nothing of the development set-up: the package finds its
# build inside itself (python/colltune/core/mpi.py: installed_build).
cd "$work/run"
unset COLLTUNE_MPI COLLTUNE_BUILD COLLTUNE_HOME PYTHONPATH
export HOME=$work/run  # the store of recorded runs, if any, stays here
bin=$work/venv/bin
say "colltune --help, bench, the drop-in"
"$bin/colltune" --help >/dev/null
"$bin/colltune" bench --op allreduce -n 2 --min 8 --max 64 --iters 5 --algs native,ring \
    --no-record --json bench.json >bench.out
# ring's result checked against native's at every size, both timed.
"$bin/python" - <<'PY' || { cat bench.out >&2; exit 1; }
import json
d = json.load(open("bench.json"))
got = {(r["algorithm"], r["size"]): r for r in d["results"]}
assert d["complete"] and d["mpi"]["implementation"] != "unknown", d["mpi"]
assert set(got) == {(a, s) for a in ("native", "ring") for s in (8, 16, 32, 64)}, sorted(got)
assert all(r["median_us"] > 0 for r in got.values())
assert all(got["ring", s]["check"] == "ok" for s in (8, 16, 32, 64))
PY
dropin=$("$bin/colltune" preload)
case $dropin in
    "$work"/venv/*/colltune/_build/libcolltune_pmpi.so) ;;
    *) echo "colltune preload: $dropin is not the installed drop-in" >&2; exit 1 ;;
esac
# The launch as the CLI makes it (MPIBuild: the installed build's mpiexec, Open MPI's -x for
# the variables when $MPICC was one).
"$bin/python" - "$dropin" <<'PY'
import os, subprocess, sys
from pathlib import Path
from colltune.core.mpi import MPIBuild
build, dropin = MPIBuild.select(), sys.argv[1]
forced = {"LD_PRELOAD": dropin, "COLLTUNE_LOG": "debug", "COLLTUNE_BCAST_ALGORITHM": "binomial"}
cmd = build.launch_command(2, [str(Path(dropin).parent / "ct_osu"), "--op", "bcast", "--sizes",
                               "64", "--iters", "3"], bind=False, export=tuple(forced))
p = subprocess.run(cmd, env={**os.environ, **build.launch_env(2), **forced},
                   capture_output=True, text=True, timeout=120)
assert p.returncode == 0 and "MPI_Bcast 64 bytes -> binomial" in p.stderr, (cmd, p.stdout,
                                                                           p.stderr[-3000:])
PY
say "ok"
