#!/usr/bin/env bash
# Congestion control on an idle memif link: goodput of each controller
# against cc=none at 64 KiB and 8 MiB requests, alternated within each round
# (none and each of CCS, the order rotated by one every round so that no
# controller always runs first or last, then the next size), so that every
# ratio compares runs of the same minutes; the figure is the median ratio
# over the rounds.
#
#   ROUNDS=9 SECS=2 CCS="timely dcqcn nscc" scripts/cc-idle.sh
#
# Why many short rounds: memif on this repository's 2-vCPU VM runs in one of
# two speed states (about 10-16 Gb/s or 30-55 Gb/s with 8 MiB requests),
# fixed for most of a run and independent of the controller, so one run's
# ratio to its neighbour says as much about the states the two drew as
# about the controller (docs/configs.md, "NSCC and Timely on a stalling
# host"). The table therefore also shows, per controller, the median of its
# own counters: `pacing_waits` (the session waited for its rate) and
# `cc_rate_cuts` (its controller lowered the rate): a controller that left
# the link alone shows 0 of both, whatever state the link was in.
#
# Each run measures its own floor (link rate, base RTT, BDP credits) and
# streams its per-second goodput (kept as `intervals` in the JSON lines, so
# a run's state changes show). Needs the release binaries (cargo build
# --release -p apps -p bench --bins; RPC_BIN_DIR overrides where they are).
# Every run is bounded by `timeout`. JSON lines go to
# results/cc-idle-<timestamp>.jsonl; the table to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${RPC_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}/rpc-bench
ROUNDS=${ROUNDS:-9}
SECS=${SECS:-2}
CCS=${CCS:-timely dcqcn nscc}
mkdir -p results
out="results/cc-idle-$(date +%Y%m%d-%H%M%S).jsonl"
read -r -a all <<<"none $CCS"
for round in $(seq 1 "$ROUNDS"); do
  # This round's order: `all` rotated by round - 1.
  n=${#all[@]}
  order=()
  for i in $(seq 0 $((n - 1))); do order+=("${all[$(((i + round - 1) % n))]}"); done
  for size in 65536 8388608; do
    for cc in "${order[@]}"; do
      lines=$(timeout $((SECS * 10 + 60)) "$B" run --workload large --msg-size "$size" --resp-size 32 \
        --set workload.verify=false --set transport.cc="$cc" --seconds "$SECS" --floor-pings 2000 \
        --json-stream 2>/dev/null) || lines=''
      python3 - "$round" "$size" "$cc" "$lines" >>"$out" <<'PY'
import json, sys
rnd, size, cc, text = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
objs = []
for l in text.splitlines():
    try:
        objs.append(json.loads(l))
    except ValueError:
        pass
result = next((o for o in reversed(objs) if "gbps" in o and o.get("event") != "interval"), {})
intervals = [round(o.get("wire_gbps", 0.0), 2) for o in objs if o.get("event") == "interval"]
print(json.dumps({"round": rnd, "size": size, "cc": cc, "intervals": intervals, "result": result}))
PY
      echo "round $round, $size B, cc=$cc: $(tail -n 1 "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(round(r["result"].get("gbps", 0.0), 2), "Gb/s, per second", r["intervals"])')" >&2
    done
  done
done
python3 scripts/cc_idle_table.py "$out" $CCS
