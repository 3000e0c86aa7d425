#!/usr/bin/env bash
# Small-RPC rate against the number of sessions: 32 B throughput, window 1,
# lossy mode, one worker each side over memif, N = 1,000 / 5,000 / 10,000 /
# 20,000 sessions. Prints one line per N (Mrps, p50, ratio to the 1k rate)
# and appends one JSON line per run to $1 (default
# results/bench-sessions-<timestamp>.jsonl; scripts/bench.sh passes its own
# file). The server's per-peer limit is raised to N: all sessions come from
# one client address.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p apps -p bench --bins >/dev/null 2>&1
B=./target/release/rpc-bench
mkdir -p results
out=${1:-results/bench-sessions-$(date +%Y%m%d-%H%M%S).jsonl}
SECS=${SECS:-3}

echo "# load: $(cat /proc/loadavg)" >&2
base=""
for n in 1000 5000 10000 20000; do
  # rpc-bench lets its own client hold all its sessions (no
  # max_sessions_per_peer override needed).
  line=$("$B" run --workload throughput --window 1 --sessions "$n" --mode lossy \
    --seconds "$SECS" --no-floor --json \
    2>/tmp/bench-sessions-stderr.$$ | tail -n 1) || true
  case "$line" in
    "{"*) ;;
    *) echo "sessions=$n FAILED: $(tail -n 2 /tmp/bench-sessions-stderr.$$ | tr '\n' ' ')" >&2
       line='{"failed_run":true}' ;;
  esac
  rm -f /tmp/bench-sessions-stderr.$$
  echo "{\"label\":\"sessions-$n\",\"sessions\":$n,\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"result\":$line}" >>"$out"
  res=$(python3 - "$n" "$base" "$line" <<'PY'
import json, sys
n, base, v = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
mrps = v.get("mrps")
if mrps is None:
    print(f"sessions={n:>5}  no rate"); print(base); sys.exit()
base = float(base) if base else mrps
ratio = mrps / base if base else float("nan")
print(f"sessions={n:>5}  mrps={mrps:.3f}  p50_us={v.get('p50_us', 0):.1f}  ratio_to_1k={ratio:.3f}  "
      f"failed={v.get('failed')}  bytes_per_session={v.get('bytes_per_session')}")
print(base)
PY
)
  echo "${res%$'\n'*}"
  base=${res##*$'\n'}
done
echo "# load: $(cat /proc/loadavg)" >&2
echo "# JSON lines: $out" >&2
