#!/usr/bin/env bash
# A/B of two builds over memif, alternated in the same minutes (timed figures
# drift 20-60 % between runs here; alternation is what makes them comparable).
# Usage: scripts/ab-memif.sh BIN_DIR_A BIN_DIR_B [ROUNDS]   (default 3)
# Each round runs A then B: a server, then a 2 s client per workload (latency
# at window 1, throughput at window 8), and prints one line per run:
#   ROUND SIDE WORKLOAD p50 US mrps MRPS
# Runs two pinned poll-mode processes (cores 1 and 0): nothing else should run.
set -uo pipefail
A=$1
B=$2
ROUNDS=${3:-3}
for r in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    BIN=$A
    [ "$side" = B ] && BIN=$B
    for wl in "latency --window 1" "throughput --window 8"; do
      S=/tmp/ab-memif-$$.sock
      "$BIN/rpc-server" --link memif --socket "$S" --set 'cores.server=[1]' --max-seconds 60 >/dev/null 2>&1 &
      SP=$!
      # shellcheck disable=SC2086
      out=$("$BIN/rpc-client" --link memif --socket "$S" --set 'cores.client=[0]' --workload $wl \
        --seconds 2 --json 2>/dev/null | tail -1)
      kill -TERM "$SP" 2>/dev/null
      wait "$SP" 2>/dev/null
      fig=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("p50 %.2f mrps %.3f" % (d["p50_us"], d["mrps"]))' "$out" 2>/dev/null || echo "no summary")
      echo "$r $side ${wl%% *} $fig"
    done
  done
done
