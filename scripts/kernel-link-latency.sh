#!/usr/bin/env bash
# The kernel link's latency beside the DPDK client's, against the same
# DPDK rpc-server on the same wire (af_packet on a veth pair): the server
# on NAME, each client in NAME's peer namespace, taking turns ROUNDS times
# (kernel, DPDK, kernel, ...), one request in flight of 32 B each way.
# The DPDK client (net_af_packet on NAMEp) uses another address than the
# kernel's, so the namespace's kernel stack ignores its frames; it sets
# NAMEp down when it stops, so the script sets the link up again after it.
#
#   scripts/kernel-link-latency.sh [--seconds 5] [--rounds 2] [--name rpcklat0]
#
# Prints one line per run and a JSON summary (p50/p99 in us per client).
# Needs root (veth, netns) and ./target/release built.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=5 rounds=2 name=rpcklat0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) secs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
ns="${name}ns" bin=./target/release out=$(mktemp -d)
common=(-c configs/kernel.toml --iface "$name" --set "link.client_netns=\"$ns\"")
scripts/kernel-link.sh up "$name" --netns "$ns" >/dev/null
server=""
cleanup() {
  [ -n "$server" ] && kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  scripts/kernel-link.sh down "$name" --netns "$ns"
  rm -rf "$out"
}
trap cleanup EXIT
timeout $((rounds * 2 * (secs + 10) + 30)) "$bin/rpc-server" "${common[@]}" --link af_packet \
  --set "link.file_prefix=\"${name}s\"" --set workload.verify=false 2>"$out/server.err" >/dev/null &
server=$!
sleep 2
for r in $(seq 1 "$rounds"); do
  for kind in kernel af_packet; do
    extra=()
    [ "$kind" = af_packet ] && extra=(--link af_packet --set 'link.client_ip="10.77.0.3"' --set "link.file_prefix=\"${name}c\"")
    timeout $((secs + 30)) "$bin/rpc-client" "${common[@]}" "${extra[@]}" --seconds "$secs" \
      --set workload.verify=false --json 2>"$out/$kind.$r.err" >"$out/$kind.$r.json" || { echo "$kind client failed:"; tail -3 "$out/$kind.$r.err"; tail -3 "$out/server.err"; exit 1; }
    python3 - "$out/$kind.$r.json" "$kind" "$r" <<'PY'
import json, sys
v = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(f"round {sys.argv[3]} {sys.argv[2]:>9}: p50 {v['p50_us']:.2f} us  p99 {v['p99_us']:.2f} us  p99.9 {v['p999_us']:.2f} us  {v['completed']} RPCs, {v['failed']} failed, {v['retransmissions']} retransmissions")
PY
    # net_af_packet sets its interface down when it stops (and the kernel
    # then flushes its neighbour entries): up again for the kernel client.
    [ "$kind" = af_packet ] && scripts/kernel-link.sh up "$name" --netns "$ns" >/dev/null
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
res = {}
for kind in ["kernel", "af_packet"]:
    runs = [json.loads(open(f"{out}/{kind}.{r}.json").read().strip().splitlines()[-1]) for r in range(1, rounds + 1)]
    res[kind] = {q: statistics.median(r[q] for r in runs) for q in ["p50_us", "p99_us", "p999_us"]}
print(json.dumps({"median_of_rounds_us": res}))
PY
