#!/usr/bin/env bash
# Does a memif server survive its clients being SIGKILLed mid-run?
# Usage: scripts/memif-kill-loop.sh [KILLS] [BIN_DIR]   (defaults: 100, target/release)
# Starts rpc-server on memif (core 1); then KILLS times starts a busy
# rpc-client (core 0: throughput workload, window 8) and SIGKILLs it after a
# random 1.0-2.0 s, mid-traffic. After each kill it checks the server: a
# server that died is counted (with how: a signal or an exit code) and
# restarted. Prints one line per death and a summary line:
#   memif-kill-loop: N kills, D server deaths, F guarded burst faults; then a 1 s client: completed C, failed 0
# Runs two pinned poll-mode processes: nothing else should run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS=${1:-100}
BIN=${2:-target/release}
SOCK=/tmp/rpc-kill-loop-$$.sock
LOG=/tmp/rpc-kill-loop-$$
SPID=
deaths=0
faults=0
start_server() {
  "$BIN/rpc-server" --link memif --socket "$SOCK" --set 'cores.server=[1]' \
    --max-seconds 3600 >"$LOG.server.$1.log" 2>&1 &
  SPID=$!
}
server_faults() { grep -c "burst faulted" "$LOG".server.*.log 2>/dev/null | awk -F: '{s+=$NF} END {print s+0}'; }
cleanup() {
  [ -n "$SPID" ] && kill -TERM "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null || true
  rm -f "$SOCK"
}
trap cleanup EXIT
start_server 0
for i in $(seq 1 "$KILLS"); do
  "$BIN/rpc-client" --link memif --socket "$SOCK" --set 'cores.client=[0]' \
    --workload throughput --window 8 --seconds 30 >"$LOG.client.log" 2>&1 &
  CPID=$!
  sleep "$(awk -v r="$RANDOM" 'BEGIN {printf "%.2f", 1.0 + r / 32768}')"
  kill -KILL "$CPID" 2>/dev/null || true
  wait "$CPID" 2>/dev/null || true
  sleep 0.5
  if ! kill -0 "$SPID" 2>/dev/null; then
    rc=0
    wait "$SPID" || rc=$?
    deaths=$((deaths + 1))
    how="exit $rc"
    [ "$rc" -gt 128 ] && how="signal $((rc - 128))"
    echo "memif-kill-loop: kill $i: server died ($how); restarting it"
    start_server "$i"
  fi
done
# The server still serves: a last client runs to its end.
last=$("$BIN/rpc-client" --link memif --socket "$SOCK" --set 'cores.client=[0]' \
  --workload throughput --window 8 --seconds 1 --json 2>"$LOG.client.log" | tail -1)
served=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("completed %d, failed %d" % (d["completed"], d["failed"]))' "$last" 2>/dev/null ||
  echo "no summary (see $LOG.client.log)")
echo "memif-kill-loop: $KILLS kills, $deaths server deaths, $(server_faults) guarded burst faults; then a 1 s client: $served"
