#!/usr/bin/env bash
# Congestion control on an idle memif link: goodput of each controller
# against cc=none at 64 KiB and 8 MiB requests, alternated within each round
# (none, timely, dcqcn, nscc, then the next size) so that every ratio
# compares runs of the same minutes, and the median ratio over the rounds.
# Each run measures its own floor (link rate, base RTT, BDP credits).
#
#   ROUNDS=3 SECS=3 CCS="timely dcqcn nscc" scripts/cc-idle.sh
#
# Needs the release binaries (cargo build --release -p apps -p bench --bins;
# RPC_BIN_DIR overrides where they are). Every run is bounded by `timeout`.
# JSON lines go to results/cc-idle-<timestamp>.jsonl; the table to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${RPC_BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}/rpc-bench
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-3}
CCS=${CCS:-timely dcqcn nscc}
mkdir -p results
out="results/cc-idle-$(date +%Y%m%d-%H%M%S).jsonl"
for round in $(seq 1 "$ROUNDS"); do
  for size in 65536 8388608; do
    for cc in none $CCS; do
      line=$(timeout $((SECS * 10 + 60)) "$B" run --workload large --msg-size "$size" --resp-size 32 \
        --set workload.verify=false --set transport.cc="$cc" --seconds "$SECS" --floor-pings 2000 \
        --json 2>/dev/null | tail -n 1) || line='{}'
      case "$line" in "{"*) ;; *) line='{}' ;; esac
      echo "{\"round\":$round,\"size\":$size,\"cc\":\"$cc\",\"result\":$line}" >>"$out"
      echo "round $round, $size B, cc=$cc: $(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1]).get("gbps", 0.0), 2))' "$line") Gb/s" >&2
    done
  done
done
python3 - "$out" $CCS <<'PY'
import json, statistics, sys
path, ccs = sys.argv[1], sys.argv[2:]
g = {}
for line in open(path):
    r = json.loads(line)
    g[(r["round"], r["size"], r["cc"])] = r["result"].get("gbps", 0.0)
rounds = sorted({k[0] for k in g})
print(f"# {path}")
print("| request | `none` Gb/s (median) | " + " | ".join(f"`{c}` (median, per round)" for c in ccs) + " |")
print("|---|---:|" + "---:|" * len(ccs))
for size in (65536, 8388608):
    nones = [g.get((r, size, "none"), 0.0) for r in rounds]
    cells = []
    for c in ccs:
        ratios = [g.get((r, size, c), 0.0) / n if n else 0.0 for r, n in zip(rounds, nones)]
        cells.append(f"{statistics.median(ratios):.2f}x ({', '.join(f'{x:.2f}' for x in ratios)})")
    label = "64 KiB" if size == 65536 else "8 MiB"
    print(f"| {label} | {statistics.median(nones):.2f} | " + " | ".join(cells) + " |")
PY
