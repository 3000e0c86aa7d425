#!/usr/bin/env bash
# Reproduces the figures in docs/results.md: the raw DPDK floor and kernel UDP
# baselines, then RPC latency (with its ratio to the floor measured in the
# same invocation), small-RPC rate against outstanding requests, and 8 MiB
# goodput. Every run launches two processes pinned to cores 0 and 1, one run
# at a time. JSON lines go to results/bench-<timestamp>.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cargo build --release -p apps -p bench --bins >/dev/null
B=./target/release/rpc-bench
mkdir -p results
out="results/bench-$(date +%Y%m%d-%H%M%S).jsonl"
SECS=${SECS:-3}

run() { # label, command...
  local label=$1; shift
  echo "== $label: rpc-bench $*" >&2
  local line
  line=$("$B" "$@" --json 2>/tmp/rpc-bench-stderr.$$ | tail -n 1) || true
  case "$line" in
    "{"*) ;;
    *) echo "   FAILED: $(tail -n 2 /tmp/rpc-bench-stderr.$$ | tr '\n' ' ')" >&2; line='{"failed_run":true}' ;;
  esac
  rm -f /tmp/rpc-bench-stderr.$$
  echo "{\"label\":\"$label\",\"result\":$line}" >>"$out"
  echo "$line"
}

summ() { python3 -c 'import json,sys
keys=sys.argv[1].split(",")
v=json.loads(sys.stdin.read())
print("   " + "  ".join(f"{k}={v.get(k) if not isinstance(v.get(k),float) else round(v.get(k),3)}" for k in keys))' "$1"; }

# The virtio and af_xdp links (docs/links.md): each one's raw floor, then a
# 32 B RPC run whose ratio_p50/ratio_p99 are to that link's own floor.
# `ONLY=links scripts/bench.sh` runs only this part.
links() {
  ./scripts/veth.sh up rpcbx0 --netns rpcbxns
  local l
  for l in virtio af_xdp; do
    local cfg=(-c "configs/$l.toml")
    [ "$l" = af_xdp ] && cfg+=(--iface rpcbx0 --set link.client_netns=rpcbxns)
    run "floor-$l" floor "${cfg[@]}" --pings 20000 --stream-secs 1 | summ p50_us,p99_us,p999_us,p50_us_1k,stream_mpps_64,stream_gbps_mtu
    run "latency-32B-$l" run "${cfg[@]}" --seconds "$SECS" | summ p50_us,p99_us,p999_us,floor_p50_us,ratio_p50,floor_p99_us,ratio_p99,mrps
  done
  ./scripts/veth.sh down rpcbx0 --netns rpcbxns
}
if [ "${ONLY:-}" = links ]; then
  links
  echo "JSON lines: $out" >&2
  exit 0
fi

run floor floor --pings 20000 --stream-secs 1 | summ p50_us,p99_us,p999_us,p50_us_1k,p99_us_1k,stream_mpps_64,stream_gbps_64,stream_mpps_mtu,stream_gbps_mtu,echo_mpps_64,burst_rtt_p50_us_mtu
run kernel-udp kernel-udp --pings 20000 | summ kernel_udp_p50_us,kernel_udp_p99_us,kernel_udp_p999_us
run engine-32B engine --rpcs 2000000 | summ engine_ns_per_rpc,engine_ns_per_packet,engine_mrps
run engine-32B-w8 engine --workload throughput --window 8 --rpcs 2000000 | summ engine_ns_per_rpc,engine_ns_per_packet,engine_mrps
run engine-8MiB engine --workload large --msg-size 8388608 --resp-size 32 --credits 128 --rpcs 300 | summ engine_gbps,engine_ns_per_packet
run latency-32B-ring-loopback run -c configs/ring.toml --seconds "$SECS" | summ p50_us,p99_us,mrps
run latency-32B run --seconds "$SECS" | summ p50_us,p99_us,p999_us,floor_p50_us,ratio_p50,floor_p99_us,ratio_p99,mrps
for s in 1 4 16; do
  run "throughput-32B-w8-s$s" run --workload throughput --window 8 --sessions "$s" --seconds "$SECS" --no-floor | summ mrps,p50_us,p99_us,retransmissions,credits
done
for size in 1024 4096; do
  run "latency-$((size / 1024))KiB" run --msg-size "$size" --seconds "$SECS" --no-floor | summ p50_us,p99_us,mrps
done
# Multi-packet goodput at the default credits, bodies not checked (the
# transport, not the benchmark's byte checks). Each run measures the floor
# first: the default credits are the BDP the floor measured (MTU streaming
# rate x the round trip of a 32-frame burst), reported as "bdp" in the JSON.
for size in 65536 8388608; do
  label=$([ "$size" = 65536 ] && echo 64KiB || echo 8MiB)
  run "large-$label-default" run --workload large --msg-size "$size" --resp-size 32 \
    --set workload.verify=false --seconds "$SECS" --floor-pings 2000 | summ gbps,p50_us,p99_us,retransmissions,credits,bdp
done
for c in 32 128; do
  run "large-8MiB-c$c-noverify" run --workload large --msg-size 8388608 --resp-size 32 --credits "$c" \
    --set workload.verify=false --seconds "$SECS" --no-floor | summ gbps,p50_us,p99_us,retransmissions,credit_stalls
done
run "large-8MiB-c128-verify" run --workload large --msg-size 8388608 --resp-size 32 --credits 128 --seconds "$SECS" --no-floor \
  | summ gbps,p50_us,p99_us,retransmissions
# Congestion control on an idle link (nobody else on memif): Timely and
# DCQCN against none, alternated within each round so the ratio compares
# runs of the same minutes; then the rate cap (the client's wire rate
# against it, ratio_cap). Each run measures its own floor (link rate, BDP).
for round in 1 2; do
  for size in 65536 8388608; do
    for cc in none timely dcqcn nscc; do
      run "cc-$size-$cc-r$round" run --workload large --msg-size "$size" --resp-size 32 \
        --set workload.verify=false --set transport.cc="$cc" --seconds "$SECS" --floor-pings 2000 \
        | summ gbps,credits,retransmissions
    done
  done
done
python3 - "$out" <<'PY'
import json, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["label"].startswith("cc-"):
        runs[r["label"]] = r["result"].get("gbps", 0.0)
for rnd in (1, 2):
    for size in (65536, 8388608):
        none = runs.get(f"cc-{size}-none-r{rnd}", 0.0)
        ratios = "  ".join(
            f"{cc} {runs.get(f'cc-{size}-{cc}-r{rnd}', 0.0) / none:.2f}x" if none else f"{cc} n/a"
            for cc in ("timely", "dcqcn", "nscc"))
        print(f"   idle-link goodput vs cc=none, {size} B, round {rnd}: none {none:.1f} Gb/s  {ratios}")
PY
for cap in 1 10 40; do
  run "rate-cap-$cap" run --workload large --msg-size 8388608 --resp-size 32 \
    --set workload.verify=false --set transport.rate_cap_gbps="$cap" --seconds "$SECS" --floor-pings 2000 \
    | summ rate_cap_gbps,tx_wire_gbps,ratio_cap,gbps
done
links
# Reliability: 10 million RPCs, then the pools' mbufs in use on both sides
# (after the ports started vs after the workers stopped): any difference is
# a leak (docs/reliability.md).
run "leak-10M" run --workload throughput --window 8 --sessions 16 --set workload.max_requests=10000000 \
  --set workload.verify=false --set workload.warmup_seconds=0.0 --seconds 120 --no-floor \
  | python3 -c 'import json,sys
v=json.loads(sys.stdin.read()); s=v.get("server") or {}
print("   completed=%s failed=%s mrps=%.3f mbufs in use: client %s->%s server %s->%s violations=%s" % (
    v.get("completed"), v.get("failed"), v.get("mrps", 0), v.get("mbufs_in_use_start"),
    v.get("mbufs_in_use_end"), s.get("mbufs_in_use_start"), s.get("mbufs_in_use_end"), v.get("violations")))'
# Rate against sessions (1k, 5k, 10k, 20k; lossy, window 1), labels sessions-N.
echo "== sessions: scripts/bench-sessions.sh" >&2
./scripts/bench-sessions.sh "$out"
echo "== cost: scripts/cost.sh (instructions per RPC against scripts/cost-budget.json)" >&2
./scripts/cost.sh | tee -a "$out.cost" || true
echo "== goals (ratios within this run; docs/results.md)" >&2
python3 scripts/goals.py "$out"
echo "JSON lines: $out" >&2
