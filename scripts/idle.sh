#!/usr/bin/env bash
# transport.idle = "adaptive" against "spin", alternated in one run, over
# memif (no RX interrupts in DPDK 22.11: timed sleeps) and af_packet on a
# veth pair (none either). Per link, per round, per mode (spin, then
# adaptive, so the two share the machine's load of the moment):
#   - idle CPU: the rpc-server's utime+stime (/proc/PID/stat) over
#     CPU_SECS while its client is connected and sends one request a
#     second (open loop, --rate 1): the server is quiet ~1 s at a time;
#   - first RPC after idle: that client's p50/p99 (each request comes
#     after ~1 s of quiet);
#   - steady load: a closed-loop latency client (one request in flight,
#     back to back), p50/p99.
# Every process is bounded (--max-seconds, timeout) and stopped by PID.
# Prints one line per run, then a table of medians over the rounds, and
# writes the runs as JSON lines to $OUT (default /tmp/idle-runs.jsonl).
# Usage: scripts/idle.sh [--rounds N] [--links memif,af_packet]
# SERVER_ARGS adds flags to both servers' command lines (e.g.
# SERVER_ARGS=--set=transport.idle_sleep_us=2000).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=3
LINKS=memif,af_packet
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=${2:?}; shift 2 ;;
    --links) LINKS=${2:?}; shift 2 ;;
    *) echo "usage: scripts/idle.sh [--rounds N] [--links memif,af_packet]" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-/tmp/idle-runs.jsonl}
B=target/release
[ -x $B/rpc-server ] && [ -x $B/rpc-client ] || cargo build --release -q -p apps --bins
CPU_SECS=3
tag=idle$$
veth=${tag:0:8}v
: >"$OUT"
tmp=$(mktemp -d)
SPID=
cleanup() {
  [ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null || true
  [[ ,$LINKS, == *,af_packet,* ]] && scripts/veth.sh down "$veth" --netns "${veth}ns" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

link_args() { # link -> the flags both sides take
  case $1 in
    memif) echo "--socket=/tmp/$tag.sock" ;;
    af_packet) echo "--link=af_packet --iface=$veth --set=link.client_netns=\"${veth}ns\"" ;;
  esac
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

server_up() { # link mode
  # shellcheck disable=SC2046
  $B/rpc-server $(link_args "$1") --set=transport.idle=\""$2"\" --max-seconds=60 ${SERVER_ARGS:-} \
    >"$tmp/server.out" 2>"$tmp/server.err" &
  SPID=$!
  sleep 0.3
}
server_down() {
  kill -INT "$SPID" 2>/dev/null || true
  timeout 15 tail --pid="$SPID" -f /dev/null || kill -KILL "$SPID" 2>/dev/null || true
  wait "$SPID" 2>/dev/null || true
  SPID=
}
client() { # link args... -> the client's JSON line
  # shellcheck disable=SC2046
  timeout 60 $B/rpc-client $(link_args "$1") "${@:2}" --json 2>"$tmp/client.err" | tail -1
}

run_one() { # link mode round
  local link=$1 mode=$2 round=$3
  server_up "$link" "$mode"
  client "$link" --workload=open_loop --rate=1 --seconds=$((CPU_SECS + 4)) >"$tmp/idle.json" &
  local cpid=$!
  # EAL start-up and the warm-up second, then the quiet window.
  sleep 3
  local a b
  a=$(ticks "$SPID"); sleep $CPU_SECS; b=$(ticks "$SPID")
  wait $cpid || true
  local wake
  wake=$(grep -o 'idle: .*' "$tmp/server.err" | head -1)
  server_down
  server_up "$link" "$mode"
  client "$link" --workload=latency --seconds=3 >"$tmp/steady.json" || true
  server_down
  python3 - "$link" "$mode" "$round" "$((b - a))" "$CPU_SECS" "$wake" \
    "$tmp/idle.json" "$tmp/steady.json" <<'PY' | tee -a "$OUT"
import json, sys
link, mode, rnd, ticks, secs, wake, idle_f, steady_f = sys.argv[1:]
def lat(f):
    try:
        v = json.loads(open(f).read().strip().splitlines()[-1])
    except Exception:
        return None, None, 0
    return v.get("p50_us"), v.get("p99_us"), v.get("samples", 0)
ip50, ip99, n_idle = lat(idle_f)
sp50, sp99, n_steady = lat(steady_f)
print(json.dumps({"link": link, "mode": mode, "round": int(rnd),
                  "idle_cpu_pct": round(int(ticks) / int(secs), 2),
                  "first_rpc_p50_us": ip50, "first_rpc_p99_us": ip99, "first_rpcs": n_idle,
                  "steady_p50_us": sp50, "steady_p99_us": sp99, "steady_rpcs": n_steady,
                  "wake": wake}))
PY
}

if [[ ,$LINKS, == *,af_packet,* ]]; then
  scripts/veth.sh up "$veth" --netns "${veth}ns" >/dev/null
fi
for r in $(seq 1 "$ROUNDS"); do
  for link in ${LINKS//,/ }; do
    for mode in spin adaptive; do
      run_one "$link" "$mode" "$r"
    done
  done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return round(statistics.median(xs), 1) if xs else None
keys = ["idle_cpu_pct", "first_rpc_p50_us", "first_rpc_p99_us", "steady_p50_us", "steady_p99_us"]
print("link       mode      " + "  ".join(f"{k:>17}" for k in keys) + "   (medians over rounds)")
for link in dict.fromkeys(r["link"] for r in runs):
    for mode in ("spin", "adaptive"):
        rs = [r for r in runs if r["link"] == link and r["mode"] == mode]
        print(f"{link:<10} {mode:<9} " + "  ".join(f"{str(med([r[k] for r in rs])):>17}" for k in keys))
PY
