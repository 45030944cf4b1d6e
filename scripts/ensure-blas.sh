#!/usr/bin/env bash
# The tiled Cholesky (tools/cholesky) calls a real BLAS/LAPACK: Debian's OpenBLAS and LAPACKE.
# Install them when missing (as root, with apt-get). Without root it says how, and the build
# goes on without the Cholesky (CMake says so).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
have() { [ -e /usr/include/lapacke.h ] && ls /usr/lib/*/libopenblas.so >/dev/null 2>&1; }
have && exit 0
apt_install "OpenBLAS/LAPACKE are missing: the Cholesky is not built" "for the Cholesky" \
    libopenblas-dev liblapacke-dev
