#!/usr/bin/env bash
# The fabric lab's experiments (docs/fabric.md): each line of
# results/fabric-*.jsonl is one `rpc-lab --json` report (rpc-lab, the lab
# crate's binary, needs no DPDK; `rpc-bench fabric` is the same command),
# and the tables in the docs are read from them. Deterministic: the same
# seeds give the same files on any machine (the wall-clock rate is on
# stderr only).
# The experiments run seeds 7-11 (`--seeds 5`: per metric the mean and a
# Student's t 95 % interval, every seed's result kept in the JSON; `--plot`
# draws seed 7); the calibration runs stay single-seed at seed 7, each set
# against one real run.
# Usage: scripts/fabric.sh [quick]   (quick: the short acceptance runs only)
# Environment: RPC_LAB  the rpc-lab binary to run [rpc-lab in the release
#              target folder, built first if it is the default];
#              SEEDS  seeds per experiment [5].
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${RPC_BENCH:-}" ]; then
  echo "fabric.sh: RPC_BENCH is not read any more: the experiments run rpc-lab (set RPC_LAB)" >&2
  exit 2
fi
if [ -z "${RPC_LAB:-}" ]; then
  cargo build --release -q -p lab --bin rpc-lab
  RPC_LAB=${CARGO_TARGET_DIR:-target}/release/rpc-lab
fi
B=$RPC_LAB
SEEDS=(--seed 7 --seeds "${SEEDS:-5}")
OUT=results
mkdir -p "$OUT"
run() { # name, args...
  local name=$1; shift
  echo "== $name: rpc-lab $*" >&2
  "$B" "$@" --json | tail -1 >> "$OUT/fabric-$name.jsonl"
}
rm -f "$OUT"/fabric-*.jsonl
run incast --scenario incast "${SEEDS[@]}" --plot "$OUT/fabric-incast.svg"
run victim --scenario victim "${SEEDS[@]}"
[ "${1:-}" = quick ] && exit 0
run slow-receiver --scenario slow-receiver "${SEEDS[@]}"
for n in 16 64 256; do run incast-sweep --scenario incast --hosts "$n" "${SEEDS[@]}"; done
for load in 0.3 0.5 0.8; do
  run websearch --scenario websearch --load "$load" "${SEEDS[@]}" --plot "$OUT/fabric-websearch-$load.svg"
done
run hadoop --scenario hadoop "${SEEDS[@]}"
run permutation --scenario permutation "${SEEDS[@]}"
run alltoall --scenario alltoall "${SEEDS[@]}"
for c in 8 16 32 64 128 256; do
  run credits --scenario incast --hosts 64 --regimes lossy,irn --set transport.credits="$c" "${SEEDS[@]}"
done
# Calibration runs take the real run loop's timers (transport.scan_us,
# rto_us, rto_low_us at their defaults), not the regimes' 5 us grain: a
# session's timeouts within one grain fire together, and go-back-N's resend
# count depends on it (docs/fabric.md, "Injected loss"); and its
# transport.nak = false (the real runs had no NAKs: only timeouts recover).
REAL_TIMERS=(--set transport.scan_us=500 --set transport.rto_us=5000 --set transport.rto_low_us=500 --set transport.nak=false)
# Calibration against memif (docs/lossy-vs-lossless.md, the injected-loss run):
# one sender, 64 KiB requests, window 4, 1 % loss; the credits each
# regime ran with on memif (irn at the BDP, 9; lossy at 4 x BDP, 36).
for rc in irn:9 lossy:36; do
  run calibration --scenario incast --hosts 1 --flows 3000 --flow-size 65536 \
    --loss 0.01 --set transport.credits="${rc#*:}" --set transport.req_window=4 --link-gbps 40 --link-delay-us 2.5 \
    --regimes "${rc%%:*}" --seed 7 "${REAL_TIMERS[@]}"
done
# Slow receiver against a real server that spins server.work_ns per
# request: one sender, 512 B requests, window 8, 2 and 10 us per request.
for us in 2 10; do
  run calibration-slow --scenario incast --hosts 1 --flows 3000 --flow-size 512 \
    --set transport.req_window=8 --service-us "$us" --link-gbps 40 --link-delay-us 2.5 \
    --regimes erpc --seed 7 "${REAL_TIMERS[@]}"
done
# Overrun slow receiver against af_packet (configs/slow-receiver.toml): 8
# sessions x 32 outstanding 32 B requests into a 64-entry ring, the server
# taking W + c = 4.59 us per request (2 us of work plus the host's own cost,
# measured as 1 / its throughput when always busy); lossy's 32 credits per
# session overrun the ring, 2 credits (what lossless ran with) cannot.
for c in 32 2; do
  run calibration-ring --scenario incast --hosts 8 --flows 4000 --flow-size 32 \
    --set transport.req_window=32 --set transport.credits="$c" --ring 64 --service-us 4.59 --link-gbps 10 \
    --link-delay-us 2.5 --regimes lossy --seed 7 "${REAL_TIMERS[@]}"
done
