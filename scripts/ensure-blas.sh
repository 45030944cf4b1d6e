#!/usr/bin/env bash
# The tiled Cholesky (tools/cholesky) calls a real BLAS/LAPACK: Debian's OpenBLAS and LAPACKE.
# Install them when missing (as root, with apt-get). Without root it says how, and the build
# goes on without the Cholesky (CMake says so).
set -euo pipefail
have() { [ -e /usr/include/lapacke.h ] && ls /usr/lib/*/libopenblas.so >/dev/null 2>&1; }
have && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "[setup] OpenBLAS/LAPACKE are missing: the Cholesky is not built;" \
         "install them with: apt-get install libopenblas-dev liblapacke-dev" >&2
    exit 0
fi
echo "[setup] installing Debian's libopenblas-dev and liblapacke-dev for the Cholesky" >&2
export DEBIAN_FRONTEND=noninteractive
# Another apt-get may hold the lock for a while: wait for it rather than fail.
apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
apt-get -o DPkg::Lock::Timeout=300 install -y -qq libopenblas-dev liblapacke-dev >/dev/null
