#!/usr/bin/env bash
# Joins the net_tap ports of two DPDK processes on one host with a kernel
# bridge, the way their frames can reach each other (docs/links.md, "net_tap:
# two processes through a bridge"). Root.
#
#   scripts/tap-bridge.sh up BRIDGE TAP... [--wait SECS]
#   scripts/tap-bridge.sh down BRIDGE
#
# `up` creates BRIDGE (if missing), then waits up to SECS (default 10) for
# each TAP to exist and be up (net_tap creates its interface when its
# process starts, sets it up when the port starts and removes it when the
# process exits, so run this after starting the processes),
# gives the tap's kernel side a MAC of its own and puts it in the bridge.
# Why the new MAC: net_tap gives the kernel interface the DPDK port's MAC,
# and a bridge takes frames addressed to one of its ports' own MACs for
# itself (delivered to the host's stack, never forwarded), so without it
# every frame from one process to the other disappears in the host.
# `down` removes the bridge (the taps go with their processes); a missing
# bridge is a no-op.
set -euo pipefail

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 bridge=$2; shift 2
taps=() wait_s=10
while [ $# -gt 0 ]; do
  case "$1" in
    --wait) wait_s=$2; shift 2 ;;
    -*) echo "tap-bridge.sh: unknown option $1" >&2; usage ;;
    *) taps+=("$1"); shift ;;
  esac
done

case "$action" in
  up)
    [ ${#taps[@]} -gt 0 ] || usage
    ip link show "$bridge" >/dev/null 2>&1 || ip link add "$bridge" type bridge
    ip link set "$bridge" up
    for tap in "${taps[@]}"; do
      deadline=$((SECONDS + wait_s))
      # Started: DPDK sets the interface up in rte_eth_dev_start, which
      # then writes the port's MAC to it again (ethdev's MAC restore), so a
      # MAC set before that would be undone.
      until ip -o link show "$tap" 2>/dev/null | grep -q '[<,]UP[,>]'; do
        if [ $SECONDS -ge "$deadline" ]; then
          echo "tap-bridge.sh: no started interface $tap after ${wait_s} s: is its DPDK process (net_tap0,iface=$tap) running?" >&2
          exit 1
        fi
        sleep 0.05
      done
      # A locally administered unicast MAC, unlike the DPDK port's; set
      # again should the port's start still have been under way.
      mac=$(printf '02:6b:%02x:%02x:%02x:%02x' $((RANDOM % 256)) $((RANDOM % 256)) \
        $((RANDOM % 256)) $((RANDOM % 256)))
      for _ in 1 2 3 4 5; do
        ip link set "$tap" address "$mac"
        sleep 0.1
        ip -o link show "$tap" | grep -q "link/ether $mac" && break
      done
      # The kernel's own IPv6 chatter would only reach the processes as
      # frames they drop (malformed).
      sysctl -qw "net.ipv6.conf.$tap.disable_ipv6=1" 2>/dev/null || true
      ip link set "$tap" master "$bridge"
      ip link set "$tap" up
    done
    ;;
  down)
    if ip link show "$bridge" >/dev/null 2>&1; then ip link del "$bridge"; fi
    ;;
  *) usage ;;
esac
