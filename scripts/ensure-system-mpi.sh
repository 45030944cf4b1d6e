#!/usr/bin/env bash
# The Fortran test (tests/python/test_fortran.py) builds Fortran programs against Debian's
# own MPIs, side by side: Open MPI 4.1 (mpif90.openmpi, mpiexec.openmpi) and MPICH 4.0
# (mpif90.mpich, mpiexec.mpich), with gfortran. Installs what is missing of them with
# apt-get; without root it says how, and the test skips.
set -euo pipefail
want=(/usr/bin/gfortran /usr/bin/mpicc.openmpi /usr/bin/mpif90.openmpi /usr/bin/mpiexec.openmpi
      /usr/bin/mpicc.mpich /usr/bin/mpif90.mpich /usr/bin/mpiexec.mpich)
missing=0
for f in "${want[@]}"; do [ -x "$f" ] || missing=1; done
[ $missing = 0 ] && exit 0
pkgs=(gfortran libopenmpi-dev openmpi-bin libmpich-dev mpich)
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "[setup] Debian's MPIs or gfortran are missing: the Fortran test will skip;" \
         "install them with: apt-get install ${pkgs[*]}" >&2
    exit 0
fi
echo "[setup] installing Debian's ${pkgs[*]} for the Fortran test" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
