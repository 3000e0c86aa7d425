#!/usr/bin/env bash
# Sets up the kernel link: the veth pair of scripts/veth.sh (NAME, the DPDK
# rpc-server's af_packet side <-> NAMEp in network namespace NS, the
# kernel client's side), the client's address on NAMEp, and a static
# neighbour entry for the server's IP: the engine answers no ARP, so the
# kernel learns the server's MAC (NAME's, which net_af_packet uses) here.
#
#   scripts/kernel-link.sh up NAME --netns NS [--client-ip 10.77.0.2] [--server-ip 10.77.0.1] [--prefix 24]
#   scripts/kernel-link.sh down NAME --netns NS
#
# Then (configs/kernel.toml has these names and addresses):
#   rpc-server -c configs/kernel.toml --link af_packet &
#   rpc-client -c configs/kernel.toml            # link.kind = kernel, in NS
# Idempotent: `up` again replaces the address and the entry.
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 name=$2; shift 2
netns="" client_ip="10.77.0.2" server_ip="10.77.0.1" prefix=24
while [ $# -gt 0 ]; do
  case "$1" in
    --netns) netns=$2; shift 2 ;;
    --client-ip) client_ip=$2; shift 2 ;;
    --server-ip) server_ip=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    *) echo "kernel-link.sh: unknown option $1" >&2; usage ;;
  esac
done
[ -n "$netns" ] || { echo "kernel-link.sh: --netns NS is required (the client's side is a second host)" >&2; exit 2; }
here=$(dirname "$0")
peer="${name}p"

case "$action" in
  up)
    "$here/veth.sh" up "$name" --netns "$netns"
    ip -n "$netns" addr replace "$client_ip/$prefix" dev "$peer"
    ip -n "$netns" link set lo up
    mac=$(cat "/sys/class/net/$name/address")
    ip -n "$netns" neigh replace "$server_ip" lladdr "$mac" dev "$peer" nud permanent
    # The server's side has no address: the host's stack ignores the frames.
    echo "kernel link: $peer ($client_ip/$prefix, netns $netns) -> $server_ip at $mac on $name"
    ;;
  down)
    "$here/veth.sh" down "$name" --netns "$netns"
    ;;
  *) usage ;;
esac
