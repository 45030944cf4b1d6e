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
