# Shared by the set-up and test scripts (sourced, not run).

# Runs a command quietly; on failure shows everything it printed.
quiet() {
    local log rc=0
    log=$(mktemp)
    "$@" >"$log" 2>&1 || rc=$?
    [ $rc -eq 0 ] || cat "$log" >&2
    rm -f "$log"
    return $rc
}

# Installs Debian packages for a purpose, as root with apt-get; otherwise (or without apt-get)
# says what to install and why it matters, and returns 0 so that the caller goes on without.
#   apt_install "what is missing: consequence" "why (the installing message)" pkg...
apt_install() {
    local missing=$1 why=$2
    shift 2
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "[setup] $missing; install it with: apt-get install $*" >&2
        return 0
    fi
    echo "[setup] installing Debian's $* $why" >&2
    # Another apt-get may hold the lock for a while: wait for it rather than fail.
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        --no-install-recommends "$@" >/dev/null
}
