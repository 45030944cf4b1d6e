#!/usr/bin/env bash
# The dashboard's browser test drives Debian's Chromium through Playwright (the
# Python package; no browser download). Install Chromium when it is missing.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "chromium is missing and installing it needs root: apt-get install chromium" >&2
    exit 1
fi
echo "[setup] installing Debian's chromium for the browser test" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq chromium >/dev/null
