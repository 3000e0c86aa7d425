#!/usr/bin/env bash
# The engine's data-path cost in instructions, which this VM's noise cannot
# move (timed figures drift 20-60 % between hours; callgrind's counts repeat
# to a few instructions in a hundred million). Each workload runs the
# engine alone (`rpc-bench engine`: two endpoints exchanging frames in
# memory on one thread, no wire) twice under callgrind, with N1 and N2 RPCs;
# the difference divided by N2 - N1 is the cost per RPC without start-up.
# Prints one JSON line (per workload: instructions, budget, ratio) and exits
# 1 when a figure exceeds its budget in scripts/cost-budget.json by more
# than 2 %. Lower the budget in the same commit as a win.
# Usage: scripts/cost.sh [--budget FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET=scripts/cost-budget.json
if [ "${1:-}" = --budget ]; then
  BUDGET=${2:?"--budget needs a file"}
elif [ $# -gt 0 ]; then
  echo "usage: scripts/cost.sh [--budget FILE]" >&2
  exit 2
fi
[ -f "$BUDGET" ] || { echo "cost.sh: no budget file $BUDGET" >&2; exit 2; }
command -v valgrind >/dev/null 2>&1 || ./scripts/install-deps.sh
# The build test.sh makes (so a no-op there): a narrower one (`-p bench`)
# unifies dependency features without the examples' dev-dependencies,
# which rebuilds engine, apps and bench (a minute) and measures another
# build than the one the tests ran.
cargo build --release -q --workspace --bins --examples
B=target/release/rpc-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every run is one thread and callgrind's counts do not depend on what
# else runs, so the runs go side by side, one per core.
JOBS=$(nproc)
run() { # id args... -> $tmp/id.err holds callgrind's summary
  local id=$1; shift
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$B" engine "$@" \
    >"$tmp/$id.out" 2>"$tmp/$id.err" || echo "$id" >>"$tmp/failed" &
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
}
instructions() { # id -> total instructions of that run
  grep -o 'Collected : [0-9]*' "$tmp/$1.err" | grep -o '[0-9]*$'
}
# name, N1, N2, unit (RPCs per unit: 1 = per RPC), args...
WORKLOADS=(
  "rpc_32b_w1 50000 150000 1"
  "rpc_32b_16x8 50000 150000 1 --workload throughput --window 8 --sessions 16"
  "rpc_4k 20000 60000 1 --msg-size 4096"
  # One 8 MiB message per RPC; per MB of request (8.388608 MB per RPC).
  "msg_8mib_per_mb 2 6 8.388608 --workload large --msg-size 8388608 --resp-size 32 --credits 128"
)
for w in "${WORKLOADS[@]}"; do
  read -r name n1 n2 _ args <<<"$w"
  # shellcheck disable=SC2086 # the workload's flags split on purpose
  run "$name.a" --rpcs "$n1" $args
  # shellcheck disable=SC2086
  run "$name.b" --rpcs "$n2" $args
done
wait
if [ -s "$tmp/failed" ]; then
  for id in $(cat "$tmp/failed"); do cat "$tmp/$id.err" >&2; done
  exit 1
fi
for w in "${WORKLOADS[@]}"; do
  read -r name n1 n2 per _ <<<"$w"
  a=$(instructions "$name.a")
  b=$(instructions "$name.b")
  echo "$name $(( b - a )) $(( n2 - n1 )) $per" >>"$tmp/figures"
done

python3 - "$tmp/figures" "$BUDGET" <<'PY'
import json, sys
budget = json.load(open(sys.argv[2]))
out, ok = {}, True
for line in open(sys.argv[1]):
    name, diff, n, per = line.split()
    cost = int(diff) / int(n) / float(per)
    b = budget.get(name)
    ratio = cost / b if b else None
    if ratio is None or ratio > 1.02:
        ok = False
    out[name] = {"instructions": round(cost, 1), "budget": b,
                 "ratio": None if ratio is None else round(ratio, 4)}
out["ok"] = ok
print(json.dumps(out))
if not ok:
    bad = [k for k, v in out.items() if k != "ok" and (v["ratio"] is None or v["ratio"] > 1.02)]
    print(f"cost.sh: over budget (more than 2 %) or no budget: {', '.join(bad)}; see {sys.argv[2]}",
          file=sys.stderr)
    sys.exit(1)
PY
