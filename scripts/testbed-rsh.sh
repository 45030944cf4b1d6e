#!/bin/sh
# The "remote shell" of colltune's test bed (docs/TESTBED.md): MPICH's hydra
# (-launcher rsh -launcher-exec) and Open MPI's PRRTE (plm_rsh_agent) call it as
#   testbed-rsh.sh [ssh-like options] HOST COMMAND...
# and it runs COMMAND in HOST's network and UTS namespaces, as ssh would run it on
# that host (through a shell). HOST is a test-bed host name, e.g. ctb-h1: its
# namespaces are /run/netns/ctb-h1 and /run/colltune-testbed/ctb/uts-h1.
set -eu
while [ $# -gt 0 ]; do
    case $1 in
        -l|-p|-o|-i|-F) shift 2 ;;  # options ssh takes with a value: nothing to do here
        -*) shift ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "testbed-rsh.sh: usage: testbed-rsh.sh HOST COMMAND..." >&2; exit 255; }
host=$1
shift
case $host in
    ctb*-h[0-9]*) ;;
    *) echo "testbed-rsh.sh: $host is not a colltune test-bed host (ctb...-hN)" >&2; exit 255 ;;
esac
bed=${host%-h*}
index=${host##*-h}
net=/run/netns/$host
uts=${COLLTUNE_TESTBED_RUN:-/run/colltune-testbed}/$bed/uts-h$index
if [ ! -e "$net" ] || [ ! -e "$uts" ]; then
    echo "testbed-rsh.sh: host $host is not up (no $net or $uts): colltune testbed up" >&2
    exit 255
fi
exec nsenter --net="$net" --uts="$uts" -- /bin/sh -c "$*"
