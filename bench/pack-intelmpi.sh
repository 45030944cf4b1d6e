#!/usr/bin/env bash
# Packs the part of Intel MPI (the impi-rt wheel's venv in .mpi/intelmpi) that runs programs on
# one node into .whl/impi-min.tgz for the offline device machine: the wheel (72 MB) is over the
# device's 64 MiB carry limit, this is about 22 MB (with mpitune_fast and its tuning files).
# bench/device.sh record and tuners unpack it.
set -euo pipefail
cd "$(dirname "$0")/.."
I=.mpi/intelmpi
[ -x "$I/bin/mpiexec" ] || { echo "no $I: python3 -m venv $I && $I/bin/pip install --no-deps impi-rt==2021.13.1" >&2; exit 1; }
mkdir -p .whl
tar czf .whl/impi-min.tgz -C "$I" bin/mpiexec bin/mpiexec.hydra bin/hydra_pmi_proxy \
    bin/hydra_bstrap_proxy bin/IMB-MPI1 bin/cpuinfo lib/libmpi.so lib/libmpi.so.12 \
    lib/libfabric/libfabric.so.1 lib/libfabric/libfabric.so lib/libfabric/prov/libshm-fi.so \
    lib/libfabric/prov/libtcp-fi.so lib/libfabric/prov/librxm-fi.so \
    bin/mpirun bin/mpitune_fast bin/impi_info bin/impi_cpuinfo opt/mpi/tune_fast etc
ls -la .whl/impi-min.tgz
