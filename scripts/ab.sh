#!/usr/bin/env bash
# A/B of two rpc-bench builds in the same minutes: runs A and B alternately
# (A B, B A, A B, ... so neither always goes first) ROUNDS times with the same
# arguments, reads KEY from each run's JSON line, and prints every figure,
# each build's median and B / A. Timed figures drift 20-60 % between hours on
# this VM; alternating is what makes two builds' figures comparable.
# Usage: scripts/ab.sh A_BIN B_BIN ROUNDS KEY -- RPC-BENCH ARGS...
#   e.g. scripts/ab.sh /tmp/old/rpc-bench target/release/rpc-bench 5 engine_ns_per_rpc -- engine --rpcs 2000000
# Single-process subcommands (engine) run pinned to core 0 with taskset.
set -euo pipefail
usage() {
  echo "usage: scripts/ab.sh A_BIN B_BIN ROUNDS KEY -- RPC-BENCH ARGS..." >&2
  exit 2
}
[ $# -ge 6 ] && [ "$5" = -- ] || usage
A=$1 B=$2 ROUNDS=$3 KEY=$4
shift 5
for bin in "$A" "$B"; do
  [ -x "$bin" ] || { echo "ab.sh: $bin is not an executable rpc-bench" >&2; exit 2; }
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2; }
pin=()
[ "$1" = engine ] && pin=(taskset -c 0)
figure() { # bin args... -> KEY of its run's last JSON line
  local bin=$1
  shift
  "${pin[@]}" "$bin" "$@" --json 2>/dev/null | tail -1 |
    python3 -c "import json,sys; print(json.load(sys.stdin)['$KEY'])" 2>/dev/null ||
    { echo "ab.sh: '$bin $*' printed no JSON line with '$KEY'" >&2; exit 1; }
}
a=() b=()
for ((i = 0; i < ROUNDS; i++)); do
  if ((i % 2 == 0)); then
    a+=("$(figure "$A" "$@")"); b+=("$(figure "$B" "$@")")
  else
    b+=("$(figure "$B" "$@")"); a+=("$(figure "$A" "$@")")
  fi
  echo "round $((i + 1)): A ${a[-1]}  B ${b[-1]}"
done
python3 - "$KEY" "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
key, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"{key}: A median {ma:.4g} (range {min(a):.4g}-{max(a):.4g}), "
      f"B median {mb:.4g} (range {min(b):.4g}-{max(b):.4g}), B / A {mb / ma:.3f}")
PY
