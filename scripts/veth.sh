#!/usr/bin/env bash
# Creates or removes a veth pair NAME <-> NAMEp for the af_packet vdev, with an
# optional tbf rate limit on NAME's egress so the kernel drops like a congested
# switch port (tbf works on these kernels; netem does not).
#
#   scripts/veth.sh up NAME [--rate 1gbit] [--limit 16kb] [--burst 32kbit] [--netns NS]
#   scripts/veth.sh down NAME [--netns NS]
#
# Idempotent: `up` on an existing pair re-applies the qdisc; `down` on a
# missing pair is a no-op. The peer is NAME with a trailing "p". With --netns
# the peer lives in network namespace NS (created if missing), like a second
# host; the client then runs with link.client_netns = NS. Two af_packet
# processes on one veth pair in the same namespace can collide in DPDK's
# PACKET_FANOUT group id (pid ^ ifindex), so the tests use a namespace.
set -euo pipefail

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 name=$2; shift 2
peer="${name}p"
rate="" limit="16kb" burst="32kbit" netns=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --netns) netns=$2; shift 2 ;;
    *) echo "veth.sh: unknown option $1" >&2; usage ;;
  esac
done
if [ ${#name} -gt 14 ]; then
  echo "veth.sh: interface name '$name' too long (max 14 characters, the peer adds 'p')" >&2
  exit 2
fi

in_ns() { if [ -n "$netns" ]; then ip netns exec "$netns" "$@"; else "$@"; fi; }

case "$action" in
  up)
    if [ -n "$netns" ] && ! ip netns list | grep -qw "$netns"; then
      ip netns add "$netns"
    fi
    if ! ip link show "$name" >/dev/null 2>&1; then
      ip link add "$name" type veth peer name "$peer"
    fi
    if [ -n "$netns" ] && ip link show "$peer" >/dev/null 2>&1; then
      ip link set "$peer" netns "$netns"
    fi
    # No IPv6 on the pair: keeps router solicitations and ND out of the test traffic.
    sysctl -qw "net.ipv6.conf.$name.disable_ipv6=1" 2>/dev/null || true
    ip link set "$name" mtu 1500 up
    in_ns sysctl -qw "net.ipv6.conf.$peer.disable_ipv6=1" 2>/dev/null || true
    in_ns ip link set "$peer" mtu 1500 up
    tc qdisc del dev "$name" root >/dev/null 2>&1 || true
    if [ -n "$rate" ]; then
      tc qdisc add dev "$name" root tbf rate "$rate" burst "$burst" limit "$limit"
    fi
    ;;
  down)
    ip link del "$name" >/dev/null 2>&1 || true
    if [ -n "$netns" ]; then
      ip netns del "$netns" >/dev/null 2>&1 || true
    fi
    ;;
  *) usage ;;
esac
