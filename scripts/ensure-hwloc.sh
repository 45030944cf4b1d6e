#!/usr/bin/env bash
# The machine probe (tools/probe) binds threads and ranks with hwloc and exports an XML
# topology. Install Debian's libhwloc-dev when CMake cannot find hwloc through pkg-config.
# Without root it says how, and the build goes on without binding (the probe then says so).
set -euo pipefail
pkg-config --exists hwloc 2>/dev/null && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "[setup] hwloc is missing: the probe is built without binding;" \
         "install it with: apt-get install libhwloc-dev pkg-config" >&2
    exit 0
fi
echo "[setup] installing Debian's libhwloc-dev for the machine probe" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq libhwloc-dev pkg-config >/dev/null
