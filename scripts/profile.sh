#!/usr/bin/env bash
# Where the time goes in one rpc-bench run: samples both pinned processes
# with perf (cpu-clock: this VM has no cycle counters) in the middle of the
# run and prints the top symbols of rpc-server and rpc-client.
#
#   scripts/profile.sh [rpc-bench run arguments...]
#   scripts/profile.sh --workload large --msg-size 65536 --resp-size 32 --set workload.verify=false
#
# The RPC run lasts SECS (default 6) seconds after the floor; perf samples
# PERF_SECS (default 3) seconds of it, after the connects and the warm-up.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "profile.sh: perf not installed (apt-get install linux-perf)" >&2; exit 1; }
cargo build --release -p apps -p bench --bins >/dev/null 2>&1
SECS=${SECS:-6}
PERF_SECS=${PERF_SECS:-3}
TOP=${TOP:-12}
data=$(mktemp /tmp/rpc-profile.XXXXXX)
./target/release/rpc-bench run --seconds "$SECS" "$@" --json >"$data.json" 2>"$data.err" &
bench=$!
# The floor (if any) runs first: start sampling once rpc-bench's own
# rpc-client child exists and has connected and warmed up.
for _ in $(seq 600); do
  pgrep -P "$bench" -x rpc-client >/dev/null && break
  sleep 0.1
done
sleep 1.5
perf record -q -F 1999 -a -o "$data" -- sleep "$PERF_SECS" >/dev/null 2>&1 || true
wait "$bench" || { echo "profile.sh: the run failed:" >&2; tail -n 3 "$data.err" >&2; }
for comm in rpc-server rpc-client; do
  echo "== $comm: top $TOP symbols (share of its samples)"
  perf report -q -i "$data" --comms "$comm" --sort symbol --percent-limit 0.5 2>/dev/null \
    | sed '/^$/d' | head -n "$TOP"
done
python3 -c 'import json,sys
v=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print("== run: p50_us=%s mrps=%.3f gbps=%.3f credits=%s" % (v.get("p50_us"), v.get("mrps",0), v.get("gbps",0), v.get("credits")))' "$data.json" 2>/dev/null || true
[ -n "${KEEP:-}" ] && echo "perf data kept: $data" || rm -f "$data"
rm -f "$data.json" "$data.err" "$data.old"
