#!/usr/bin/env bash
# The Fortran test (tests/python/test_fortran.py) builds Fortran programs against Debian's
# own MPIs, side by side: Open MPI 4.1 (mpif90.openmpi, mpiexec.openmpi) and MPICH 4.0
# (mpif90.mpich, mpiexec.mpich), with gfortran. Installs what is missing of them with
# apt-get; without root it says how, and the test skips.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
want=(/usr/bin/gfortran /usr/bin/mpicc.openmpi /usr/bin/mpif90.openmpi /usr/bin/mpiexec.openmpi
      /usr/bin/mpicc.mpich /usr/bin/mpif90.mpich /usr/bin/mpiexec.mpich)
missing=0
for f in "${want[@]}"; do [ -x "$f" ] || missing=1; done
[ $missing = 0 ] && exit 0
apt_install "Debian's MPIs or gfortran are missing: the Fortran test will skip" \
    "for the Fortran test" gfortran libopenmpi-dev openmpi-bin libmpich-dev mpich
