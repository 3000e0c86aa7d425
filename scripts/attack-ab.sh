#!/usr/bin/env bash
# The sighted attacks of docs/reliability.md against two rpc-server builds,
# alternated, as issue 32's before/after figures were measured:
#
#   scripts/attack-ab.sh SERVER_DIR_A SERVER_DIR_B [ATTACK...]
#
# SERVER_DIR_* hold an rpc-server each (e.g. an older commit's
# target/release); the attacker, the normal client and this script's veth
# pair come from this tree's target/release (RPC_BIN_DIR overrides). ATTACK
# is any of mem-pin multi-addr-hog credit-flood dup-amplify (default: all).
# Each run: a server on a fresh veth pair (af_packet, 1,024-entry ring), the
# attack from the namespace end and, for the three that can hurt a client,
# a 4 s lossless rpc-client beside it. One JSON line per run:
#   mem-pin         server VmPeak/VmHWM growth (MiB) during the attack and
#                   2.5 s after it (every packet but the last of 8 MiB
#                   requests, 120,000 frames/s)
#   multi-addr-hog  the attacker's sessions and ring entries (one MAC,
#                   five addresses), the client's completed/failed
#   credit-flood    the flood's requests served, the client's completed,
#                   violations, retransmissions, max latency (the server
#                   spends 20 us per request: server.work_ns)
#   dup-amplify     server bytes out / bytes in (copies of a request for
#                   1 MiB, 2,000 a second)
# Run nothing else meanwhile: the server polls a core.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
A=$1 B=$2
shift 2
ATTACKS=("$@")
[ ${#ATTACKS[@]} -gt 0 ] || ATTACKS=(mem-pin multi-addr-hog credit-flood dup-amplify)
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${RPC_BIN_DIR:-$HERE/target/release}
WORK=$(mktemp -d /tmp/attack-ab.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  [ -n "${N:-}" ] && "$HERE/scripts/veth.sh" down "$N" --netns "${N}ns" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

status() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

one() { # one SIDE SERVER_DIR ATTACK
  local side=$1 dir=$2 attack=$3 i=$4
  N=ab$$$i
  N=${N:0:12}
  "$HERE/scripts/veth.sh" up "$N" --netns "${N}ns" >/dev/null
  link() { echo "--link=af_packet --iface=$N --set=link.client_netns=\"${N}ns\" --set=link.file_prefix=\"$1$N\""; }
  local srv=(--set=link.rx_desc=1024) hostile=(--victim-ip=127.77.3.1) client=1
  case $attack in
    mem-pin) hostile+=(--duration=6 --fps=120000 --pin-packets=all-but-last); client=0
      # The pinning peer ignores its credits too: where the server polices
      # credits, policing is turned off so that the memory budget alone
      # meets it (a server that does not know the key has no policing).
      "$dir/rpc-server" --print-config --set=transport.police_strikes=0 >/dev/null 2>&1 &&
        srv+=(--set=transport.police_strikes=0) ;;
    multi-addr-hog) hostile=(--victim-ip=127.77.4.1 --addresses=5 --duration=6 --fps=5000) ;;
    credit-flood) srv+=(--set=server.work_ns=20000); hostile+=(--duration=5.5 --fps=60000) ;;
    dup-amplify) srv+=(--set=workload.resp_size=1048576 '--set=workload.kind="large"')
      hostile+=(--duration=2 --fps=2000); client=0 ;;
  esac
  # Not under timeout: its own PID is the one /proc is read for
  # (--max-seconds bounds it).
  # shellcheck disable=SC2046
  "$dir/rpc-server" $(link s) "${srv[@]}" --max-seconds 50 --json \
    >"$WORK/srv.json" 2>"$WORK/srv.err" &
  local sp=$!
  PIDS+=("$sp")
  sleep 0.5
  local vm0 hwm0
  vm0=$(status $sp VmPeak) hwm0=$(status $sp VmHWM)
  # shellcheck disable=SC2046
  timeout 60 "$BIN/rpc-hostile" $(link h) --attack="$attack" "${hostile[@]}" \
    >"$WORK/hos.json" 2>"$WORK/hos.err" &
  local hp=$!
  PIDS+=("$hp")
  if [ "$client" = 1 ]; then
    sleep 1
    # shellcheck disable=SC2046
    timeout 60 "$BIN/rpc-client" $(link c) --seconds=4 --set=workload.warmup_seconds=0.0 --json \
      >"$WORK/cli.json" 2>"$WORK/cli.err"
  else
    : >"$WORK/cli.json"
  fi
  wait "$hp"
  local vm1 hwm1
  vm1=$(status $sp VmPeak) hwm1=$(status $sp VmHWM)
  sleep 2.5
  local vm2
  vm2=$(status $sp VmSize)
  kill -TERM "$sp" 2>/dev/null
  wait "$sp" 2>/dev/null
  "$HERE/scripts/veth.sh" down "$N" --netns "${N}ns" >/dev/null
  python3 - "$WORK" "$side" "$attack" "$vm0" "$hwm0" "$vm1" "$hwm1" "$vm2" <<'PY'
import json, sys
work, side, attack = sys.argv[1:4]
vm0, hwm0, vm1, hwm1, vm2 = (int(x or 0) for x in sys.argv[4:9])
def last(name):
    for line in reversed(open(f"{work}/{name}").read().splitlines()):
        if line.strip().startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return {}
s, h, c = last("srv.json"), last("hos.json"), last("cli.json")
st = s.get("stats", {})
out = {"side": side, "attack": attack, "attack_frames": h.get("sent")}
if attack == "mem-pin":
    out |= {"vm_peak_growth_mib": (vm1 - vm0) // 1024, "vm_hwm_growth_mib": (hwm1 - hwm0) // 1024,
            "vm_size_after_mib": (vm2 - vm0) // 1024, "budget_drops": st.get("drops", {}).get("reassembly_budget")}
elif attack == "multi-addr-hog":
    out |= {"hog_sessions": h.get("connected"), "hog_ring_entries": h.get("ring_entries")}
elif attack == "credit-flood":
    served = (st.get("handler_invocations") or 0) - (c.get("completed") or 0)
    out |= {"flood_sessions": h.get("connected"), "flood_served": served,
            "client_violations": c.get("violations"), "client_retransmissions": c.get("retransmissions"),
            "client_max_us": c.get("max_us")}
elif attack == "dup-amplify":
    out |= {"server_tx_over_rx": round(st.get("tx_bytes", 0) / max(1, st.get("rx_bytes", 0)), 1)}
if c:
    out |= {"client_completed": c.get("completed"), "client_failed": c.get("failed")}
elif attack in ("multi-addr-hog", "credit-flood"):
    out |= {"client_completed": 0, "client_error": open(f"{work}/cli.err").read().strip()[-160:]}
print(json.dumps(out))
PY
  N=""
}

i=0
for attack in "${ATTACKS[@]}"; do
  for side in A B; do
    dir=$A
    [ "$side" = B ] && dir=$B
    i=$((i + 1))
    one "$side" "$dir" "$attack" "$i"
  done
done
