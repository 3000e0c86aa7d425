#!/usr/bin/env bash
# Creates or removes a veth pair NAME <-> NAMEp for the af_packet vdev, with an
# optional tbf rate limit so the kernel queues and drops like a congested
# switch port (tbf works on these kernels; netem does not).
#
#   scripts/veth.sh up NAME [--rate 1gbit] [--limit 16kb] [--burst 32kbit] [--netns NS] [--switch]
#   scripts/veth.sh down NAME [--netns NS]
#
# Idempotent: `up` on an existing pair re-applies the qdisc; `down` on a
# missing pair is a no-op. The peer is NAME with a trailing "p". With --netns
# the peer lives in network namespace NS (created if missing), like a second
# host; the client then runs with link.client_netns = NS. Two af_packet
# processes on one veth pair in the same namespace can collide in DPDK's
# PACKET_FANOUT group id (pid ^ ifindex), so the tests use a namespace.
#
# Where the tbf goes:
# - default: on NAME's egress, the server's own interface. af_packet then
#   sends through it only with link.qdisc_bypass = false, and a frame the
#   full tbf refuses is NOT lost: the kernel leaves it in the sender's TX
#   ring to be sent again (the sender stalls instead).
# - --switch: NAME and NAMEp are two separate veth pairs joined by a bridge
#   in namespace NAMEsw (NAME <-> NAMEs, NAMEq <-> NAMEp, br0 = NAMEs + NAMEq),
#   and the tbf sits on NAMEq, the switch's egress toward the client. A
#   frame it drops is lost, as at a congested switch port. Read its counters
#   with `ip netns exec NAMEsw tc -s qdisc show dev NAMEq` (rpc-bench
#   compare/sweep/incast do).
set -euo pipefail

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 name=$2; shift 2
peer="${name}p"
rate="" limit="16kb" burst="32kbit" netns="" switch=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --netns) netns=$2; shift 2 ;;
    --switch) switch=1; shift ;;
    *) echo "veth.sh: unknown option $1" >&2; usage ;;
  esac
done
if [ ${#name} -gt 14 ]; then
  echo "veth.sh: interface name '$name' too long (max 14 characters, the peer adds 'p')" >&2
  exit 2
fi
sw="${name}sw"

in_ns() { if [ -n "$netns" ]; then ip netns exec "$netns" "$@"; else "$@"; fi; }
in_sw() { ip netns exec "$sw" "$@"; }
has_ns() { ip netns list | grep -qw "$1"; }

case "$action" in
  up)
    if [ -n "$netns" ] && ! has_ns "$netns"; then
      ip netns add "$netns"
    fi
    if [ "$switch" = 1 ]; then
      has_ns "$sw" || ip netns add "$sw"
      if ! ip link show "$name" >/dev/null 2>&1; then
        ip link add "$name" type veth peer name "${name}s" netns "$sw"
      fi
      if ! in_sw ip link show "${name}q" >/dev/null 2>&1; then
        ip link add "$peer" type veth peer name "${name}q" netns "$sw"
      fi
      in_sw sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
      in_sw sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
      in_sw ip link show br0 >/dev/null 2>&1 || in_sw ip link add br0 type bridge
      for port in "${name}s" "${name}q"; do
        in_sw ip link set "$port" master br0
        in_sw ip link set "$port" mtu 1500 up
      done
      in_sw ip link set br0 up
    elif ! ip link show "$name" >/dev/null 2>&1; then
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
    if [ "$switch" = 1 ]; then
      qdev=(in_sw tc qdisc) qif="${name}q"
    else
      qdev=(tc qdisc) qif="$name"
    fi
    "${qdev[@]}" del dev "$qif" root >/dev/null 2>&1 || true
    if [ -n "$rate" ]; then
      "${qdev[@]}" add dev "$qif" root tbf rate "$rate" burst "$burst" limit "$limit"
    fi
    ;;
  down)
    ip link del "$name" >/dev/null 2>&1 || true
    # Deleting the switch namespace removes its ports, and with them NAMEp.
    if has_ns "$sw"; then
      ip netns del "$sw" >/dev/null 2>&1 || true
    fi
    if [ -n "$netns" ]; then
      ip netns del "$netns" >/dev/null 2>&1 || true
    fi
    ;;
  *) usage ;;
esac
