#!/usr/bin/env bash
# A throw-away Ray cluster on this machine for tests: start it, run a command, stop it.
#
#   unshare -n -p -f --mount-proc bash tests/helpers/ray_cluster.sh "host-a host-b" CMD ARGS...
#
# Run it inside private network and PID namespaces (as above): the network one has only
# loopback, so Ray's daemons, which listen on every interface, can reach nothing else;
# the PID one makes `ray stop --force` see only this cluster's processes, and the kernel
# ends whatever is left when this script (the namespace's first process) exits.
# A head that takes no work (--num-cpus=0), then one worker node per name given, each
# offering one kvsim_host slot plus a resource of its own name, and naming itself in
# kvsim's results through KVSIM_HOST_NAME. The cluster is stopped on any exit (trap).
set -euo pipefail
hosts="$1"
shift
ip link set lo up
# Ray's sockets live under its temp dir: keep the path short (KVSIM_RAY_TMP may name it).
tmp="${KVSIM_RAY_TMP:-$(mktemp -d /tmp/kvray.XXXXXX)}"
mkdir -p "$tmp"
stop() {
  ray stop --force >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap stop EXIT
common=(--node-ip-address=127.0.0.1 --disable-usage-stats --object-store-memory=100000000)
ray start --head --port=6379 --num-cpus=0 --include-dashboard=false --temp-dir="$tmp" \
  "${common[@]}" >"$tmp.head.log" 2>&1 || { cat "$tmp.head.log" >&2; exit 3; }
for h in $hosts; do
  KVSIM_HOST_NAME="$h" ray start --address=127.0.0.1:6379 --num-cpus=1 \
    --resources="{\"kvsim_host\": 1, \"$h\": 1}" "${common[@]}" >"$tmp.$h.log" 2>&1 \
    || { cat "$tmp.$h.log" >&2; exit 3; }
done
rm -f "$tmp".*.log
export RAY_ADDRESS=127.0.0.1:6379
"$@"
