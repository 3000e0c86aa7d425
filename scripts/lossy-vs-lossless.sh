#!/usr/bin/env bash
# Reproduces every number and plot of docs/lossy-vs-lossless.md (a few
# minutes; needs root for the veth pairs). Outputs go to $OUT (default
# /tmp/lossy-vs-lossless), plots to docs/img/.
#
#   cargo build --release -p apps -p bench && scripts/lossy-vs-lossless.sh
#
# Each benchmark starts two busy-polling processes pinned to cores 0 and 1:
# run nothing else meanwhile (a compiler on the same two cores moves every
# number). The runs are short, so expect run-to-run variation; the doc
# says where it matters.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release}
OUT=${OUT:-/tmp/lossy-vs-lossless}
IMG=docs/img
mkdir -p "$OUT" "$IMG"
rpc-bench() { "$BIN/rpc-bench" "$@"; }

pairs=()
cleanup() {
  for p in "${pairs[@]}"; do scripts/veth.sh down $p || true; done
}
trap cleanup EXIT
veth() { # veth NAME [veth.sh options...]
  local name=$1; shift
  scripts/veth.sh up "$name" --netns "${name}ns" "$@"
  pairs+=("$name --netns ${name}ns")
}
step() { echo; echo "=== $1"; }
# run NAME cmd... : prints the command, keeps its output in $OUT/NAME.txt
run() {
  local name=$1 rc=0 shown; shift
  if [ "$1" = sh ] && [ "$2" = -c ]; then shown=$3; else shown=$*; fi
  echo "\$ $shown" | sed "s#$BIN/##g" | tee "$OUT/$name.txt"
  "$@" > "$OUT/$name.raw" 2>&1 || rc=$?
  grep -v '^rpc-server: ' "$OUT/$name.raw" | tee -a "$OUT/$name.txt" || true
  if [ "$rc" -ne 0 ]; then echo "(exit code $rc)" | tee -a "$OUT/$name.txt"; fi
}

step "machine"
run machine sh -c 'nproc; uname -r; grep -m1 "model name" /proc/cpuinfo; grep -m1 hypervisor /proc/cpuinfo >/dev/null && echo "hypervisor: yes"'

step "1. af_packet link: base RTT and streaming rate (for the BDP)"
veth lvl0
run floor-afpacket rpc-bench floor --link af_packet --iface lvl0 --client-netns lvl0ns --pings 5000 --stream-secs 0.5

step "2. slow receiver, 64-entry af_packet ring"
# DPDK 22.11's af_packet PMD never reads the socket's drop counter (no getsockopt).
run afpacket-imissed sh -c "nm -D --undefined-only /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_net_af_packet.so.23.0 | grep -E 'sockopt|sendto|poll'"
L="--iface lvl0 --set link.client_netns=lvl0ns"
run ring-compare rpc-bench compare -c configs/slow-receiver.toml $L --plot $IMG/lvl-ring-compare.svg
run ring-compare-rto100 rpc-bench compare -c configs/slow-receiver.toml $L --lossless-set transport.rto_us=100000 --plot $IMG/lvl-ring-compare-rto100.svg
run ring-sweep rpc-bench sweep -c configs/slow-receiver.toml $L --credits 0.5x,1x,2x,4x,8x,16x --regimes lossy,lossless --seconds 1.5 --plot $IMG/lvl-ring-sweep.svg
# Lossless with the reservation filling the whole ring (8 x 32 = 256 entries),
# with eRPC's 5 ms RTO and with a 100 ms one.
run ring-exactfit rpc-bench sweep -c configs/slow-receiver.toml $L --credits 16x --regimes lossless --seconds 1.5
run ring-exactfit-rto100 rpc-bench sweep -c configs/slow-receiver.toml $L --credits 16x --regimes lossless --lossless-set transport.rto_us=100000 --seconds 1.5
run ring-four-modes rpc-bench compare -c configs/slow-receiver.toml $L --regimes lossless,pause,lossy,irn --lossless-set transport.rto_us=100000 --plot $IMG/lvl-ring-four-modes.svg
run ring-incast rpc-bench incast -c configs/slow-receiver.toml $L --fan-in 1,2,4,8,16,32 --seconds 1.5 --plot $IMG/lvl-incast.svg

step "3. tbf on the server's egress (1 Gbit/s, 16 kB queue)"
veth lvt0 --rate 1gbit --limit 16kb --burst 32kbit
L="--iface lvt0 --set link.client_netns=lvt0ns"
run tbf-compare rpc-bench compare -c configs/tbf-veth.toml $L --plot $IMG/lvl-tbf-compare.svg
run tbf-sweep rpc-bench sweep -c configs/tbf-veth.toml $L --credits 0.5x,1x,2x,4x,8x,16x --seconds 1.5 --plot $IMG/lvl-tbf-sweep.svg

# With DPDK's default PACKET_QDISC_BYPASS the tbf sees nothing.
run tbf-bypass sh -c "tc -s qdisc show dev lvt0 | grep Sent; $BIN/rpc-bench run -c configs/tbf-veth.toml $L --set link.qdisc_bypass=true --seconds 1 --no-floor >/dev/null 2>&1; tc -s qdisc show dev lvt0 | grep Sent"
# A refused frame is sent later, not lost: frames the server sent = frames the client received.
run tbf-refused sh -c "$BIN/rpc-bench compare -c configs/tbf-veth.toml $L --seconds 1 --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; v=json.load(sys.stdin)[\"lossy\"]; q=v[\"qdisc\"][0]; print(\"lossy: server tx\", v[\"server\"][\"port\"][\"tx_packets\"], \"client rx\", v[\"client_port\"][\"rx_packets\"], \"tbf sent\", q[\"sent_pkts\"], \"tbf dropped\", q[\"dropped\"])'"

step "4. the same tbf at a switch port (bridge in a namespace)"
veth lvw0 --switch --rate 1gbit --limit 16kb --burst 32kbit
run switch-sweep rpc-bench sweep -c configs/tbf-veth.toml --iface lvw0 --set link.client_netns=lvw0ns --credits 1x,16x,256x --seconds 1.5
# The switch's tbf queue while 512 credits of responses are requested at once.
run switch-backlog sh -c "$BIN/rpc-bench run -c configs/tbf-veth.toml --iface lvw0 --set link.client_netns=lvw0ns --mode lossy --credits 512 --seconds 3 --no-floor >/dev/null 2>&1 & sleep 1.5; for i in \$(seq 100); do ip netns exec lvw0sw tc -s qdisc show dev lvw0q | grep -o 'backlog [0-9]*b [0-9]*p'; done | sort | uniq -c; wait"

step "5. injected loss over memif"
run injected-uniform rpc-bench compare --workload throughput --set faults.drop=uniform --set faults.p=0.01 --plot $IMG/lvl-injected.svg
run injected-four-modes rpc-bench compare --regimes lossless,pause,lossy,irn --workload throughput --window 4 --msg-size 65536 --resp-size 32 --set faults.drop=uniform --set faults.p=0.01 --plot $IMG/lvl-injected-four-modes.svg
run injected-bursty rpc-bench compare --workload throughput --set faults.drop=gilbert_elliott --set faults.ge_p_good_to_bad=0.001 --set faults.ge_p_bad_to_good=0.1
run reset-policy sh -c "$BIN/rpc-bench run --workload throughput --set transport.on_loss=reset --set faults.drop=uniform --set faults.p=0.01 --seconds 1 --no-floor; echo \"exit code \$?\""

echo
echo "outputs in $OUT, plots in $IMG"
