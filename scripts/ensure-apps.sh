#!/usr/bin/env bash
# The applications of the real-application study (issue 38; bench/apps.sh, docs/APP.md):
# MPI programs nobody here wrote, from Debian, that check their own results.
#   - HPC Challenge (Debian's hpcc, built against Debian's Open MPI 4.1): HPL, PTRANS
#     (alltoall-heavy transposes), MPIFFT, ... each with its residual check; its summary
#     file says "Failure" where a check failed.
#   - PETSc 3.18's tutorials (Debian's petsc-dev and libpetsc3.18-dev-examples, Open MPI):
#     KSP ex2 (a Laplacian solved with CG: small allreduces every iteration; it prints the
#     norm of its error) and SNES ex5 (the Bratu problem, Newton + Krylov), built here into
#     build/apps/.
# Installs what is missing with apt-get as root; otherwise says what to install and exits 0
# (bench/apps.sh then skips the application with that line). Both are built against
# Debian's Open MPI: the drop-in that matches them is build/debian-openmpi
# (scripts/ensure-system-mpi.sh, scripts/build-debian-mpi.sh openmpi).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

[ -x /usr/bin/hpcc ] || apt_install "hpcc is missing: HPC Challenge is left out of the study" \
    "for the real-application study (HPC Challenge)" hpcc
pkgconf=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real/lib/pkgconfig/PETSc.pc
examples=/usr/share/petsc/3.18
if [ ! -f "$pkgconf" ] || [ ! -d "$examples" ]; then
    apt_install "PETSc 3.18 or its examples are missing: the PETSc tutorials are left out of \
the study" "for the real-application study (PETSc tutorials)" petsc-dev \
        libpetsc3.18-dev-examples pkg-config
fi

# PETSc's tutorials, built with Debian's Open MPI compiler against Debian's PETSc.
mkdir -p build/apps
if [ -f "$pkgconf" ] && [ -x /usr/bin/mpicc.openmpi ]; then
    flags=$(PKG_CONFIG_PATH=$(dirname "$pkgconf") pkg-config --cflags --libs PETSc)
    for ex in ksp/ksp/tutorials/ex2 snes/tutorials/ex5; do
        src=$(find "$examples" -path "*examples/src/$ex.c" 2>/dev/null | head -1)
        out=build/apps/petsc-$(echo "$ex" | cut -d/ -f1)-$(basename "$ex")
        if [ -z "$src" ]; then
            echo "[setup] PETSc's $ex.c is not in $examples: left out of the study" >&2
            continue
        fi
        [ "$out" -nt "$src" ] && continue
        # shellcheck disable=SC2086 # the flags are words
        /usr/bin/mpicc.openmpi -O2 -o "$out" "$src" $flags -lm
        echo "[setup] built $out from $src" >&2
    done
fi
