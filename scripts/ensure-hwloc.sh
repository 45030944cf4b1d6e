#!/usr/bin/env bash
# The machine probe (tools/probe) binds threads and ranks with hwloc and exports an XML
# topology. Install Debian's libhwloc-dev when CMake cannot find hwloc through pkg-config.
# Without root it says how, and the build goes on without binding (the probe then says so).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
pkg-config --exists hwloc 2>/dev/null && exit 0
apt_install "hwloc is missing: the probe is built without binding" "for the machine probe" \
    libhwloc-dev pkg-config
