#!/usr/bin/env bash
# Fills .whl/deb/chol/ with the Debian packages the offline 16-core device needs for the
# Cholesky comparison (bench/device.sh OUTDIR cholesky): OpenBLAS and LAPACKE (headers,
# libraries, pkg-config files) for colltune's ct_cholesky, and StarPU-MPI's mpi_cholesky
# example with the Debian Open MPI it was built on. About 24 MB; run once on a connected
# Debian 12 machine, in the repository root. The device unpacks them with dpkg -x (no
# root, no install): optional plugins (hwloc's, X11) are left out on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl/deb/chol
cd .whl/deb/chol
apt-get download \
    libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libopenblas0 libblas3 \
    liblapack3 liblapacke liblapacke-dev libtmglib3 libgfortran5 libquadmath0 \
    starpu-examples libstarpu-1.3-9 libstarpumpi-1.3-3 libhwloc15 ocl-icd-libopencl1 \
    libglpk40 libcolamd2 libamd2 libsuitesparseconfig5 libltdl7 libgmp10 zlib1g libudev1 \
    openmpi-bin openmpi-common libopenmpi3 libpmix2 libevent-core-2.1-7 \
    libevent-pthreads-2.1-7 libfabric1 libucx0 libnuma1 libibverbs1 librdmacm1 \
    libnl-3-200 libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libmunge2
ls | wc -l
