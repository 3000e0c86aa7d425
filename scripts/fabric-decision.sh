#!/usr/bin/env bash
# The decision table of docs/fabric.md ("lossless or lossy, and UEC?"):
# every regime over the scenarios that decide it, 5 seeds each, the table
# written into docs/fabric.md between its markers by
# scripts/fabric-decision.py (tail and median FCT slowdown, goodput, drops,
# trims, pauses, each the mean and 95 % interval over the seeds).
#
# Rows: 16-, 128- and 1,024-node incast (uet-htsim's validation shapes:
# N-1 senders into node 0, 2 MB each, 100 KB each at 1,024 nodes, written
# here as connection matrices, `--scenario matrix`); the 1,024-node
# permutation of 2 MB flows, healthy and with 8 core links degraded to 25 %
# (uet-htsim's -failed 8); websearch at 50 % and 80 % load.
#
# Usage: scripts/fabric-decision.sh [--dry-run]
#   --dry-run  print the runs, run nothing, leave the docs alone.
# Environment:
#   RPC_LAB   the rpc-lab binary [release target's, built if the default]
#   REGIMES   [ib,roce,roce-nocc,irn,srd,uec,uec-rccc]; a regime this
#             rpc-lab lacks is skipped, and the table says so
#   SEEDS     seeds per row [5], from seed 7 as scripts/fabric.sh
#   WS_HOSTS  websearch hosts [1024]; WS_FLOWS its flows [100000]
#   JOBS      --jobs for rpc-lab when it has the flag [2]
#   MTU       --mtu of every row and regime [4136: 4,150-byte frames]
#   OUT       where the JSON lines and matrices go [results/decision]
#   DOC       the document whose table is replaced [docs/fabric.md]
#   ONLY      run only these rows (comma-separated names, e.g.
#             incast-16,websearch-0.5); the others show as not run
#
# Run time (estimate): the 1,024-node permutation under irn took 7.7 s of
# CPU (2.84 M packets; 65 s of wall on this 2-core machine while other
# builds ran, 11-27), the incasts less: about 22 s per regime and seed for
# the five incast and permutation rows, 13 min for 7 regimes x 5 seeds;
# each websearch of 100,000 flows on 1,024 hosts up to 60 s per regime
# and seed (issue 33's bound), 2 x 7 x 5 of them: at most 70 min. About
# 85 min on one free core, half with --jobs 2. Measured (11-27, 4 KiB
# frames, load 0.5): 190-440 s of CPU per websearch regime and seed, so
# the full table takes hours (docs/fabric.md, "1,024 hosts x 100,000").
set -euo pipefail
cd "$(dirname "$0")/.."
DRY=0
[ "${1:-}" = --dry-run ] && DRY=1
if [ -z "${RPC_LAB:-}" ]; then
  [ "$DRY" = 1 ] || cargo build --release -q -p lab --bin rpc-lab
  RPC_LAB=${CARGO_TARGET_DIR:-target}/release/rpc-lab
fi
REGIMES=${REGIMES:-ib,roce,roce-nocc,irn,srd,uec,uec-rccc}
SEEDS=${SEEDS:-5}
WS_HOSTS=${WS_HOSTS:-1024}
WS_FLOWS=${WS_FLOWS:-100000}
JOBS=${JOBS:-2}
MTU=${MTU:-4136}
OUT=${OUT:-results/decision}
DOC=${DOC:-docs/fabric.md}
mkdir -p "$OUT"

HELP=$("$RPC_LAB" --help 2>/dev/null || true)
has_flag() { grep -q -- "$1" <<<"$HELP"; }
# Regimes this build has; the others are listed as skipped.
HAVE=() SKIPPED=()
for r in ${REGIMES//,/ }; do
  if "$RPC_LAB" --scenario incast --hosts 1 --flow-size 1000 --regimes "$r" --json -q >/dev/null 2>&1; then
    HAVE+=("$r")
  else
    SKIPPED+=("$r")
  fi
done
[ ${#HAVE[@]} -gt 0 ] || { echo "fabric-decision: $RPC_LAB has none of $REGIMES" >&2; exit 1; }
[ ${#SKIPPED[@]} -eq 0 ] || echo "fabric-decision: skipping regimes this rpc-lab lacks: ${SKIPPED[*]}" >&2
RUN_REGIMES=$(IFS=,; echo "${HAVE[*]}")

COMMON=(--seed 7 --seeds "$SEEDS" --regimes "$RUN_REGIMES")
# One frame size for every regime of a row: UEC's 4 KiB (uet-htsim's
# 4,150-byte packets), also what RoCE and InfiniBand fabrics run.
has_flag --mtu && COMMON+=(--mtu "$MTU")
has_flag --jobs && COMMON+=(--jobs "$JOBS")
# The 1,024-node rows on uet-htsim's 3-tier fat tree when this build has it.
FAT=()
has_flag --topology && FAT+=(--topology fat-tree)

# uet-htsim-shaped incasts as connection matrices (our own files).
incast_matrix() { # nodes size file
  { echo "Nodes $1"; echo "Connections $(($1 - 1))"
    for ((s = 1; s < $1; s++)); do echo "$s->0 id $s start 0 size $2"; done; } >"$3"
}
incast_matrix 16 2000000 "$OUT/incast-16.cm"
incast_matrix 128 2000000 "$OUT/incast-128.cm"
incast_matrix 1024 100000 "$OUT/incast-1024.cm"

NOTES=()
[ ${#SKIPPED[@]} -eq 0 ] || NOTES+=("regimes not in this rpc-lab, skipped: ${SKIPPED[*]}")
run() { # row-name, args...
  local name=$1; shift
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then return 0; fi
  echo "== $name: rpc-lab $* ${COMMON[*]}" >&2
  [ "$DRY" = 1 ] && return 0
  local t0=$SECONDS
  if "$RPC_LAB" "$@" "${COMMON[@]}" --json -q >"$OUT/$name.json.tmp" 2>"$OUT/$name.log"; then
    tail -1 "$OUT/$name.json.tmp" >"$OUT/$name.json"
  else
    echo "fabric-decision: $name failed: $(tail -1 "$OUT/$name.log")" >&2
    NOTES+=("$name: failed: $(tail -1 "$OUT/$name.log")")
  fi
  rm -f "$OUT/$name.json.tmp"
  echo "   $name: $((SECONDS - t0)) s" >&2
}
# A row's old result goes when the row runs again; with ONLY, the rows not
# run keep theirs, so a table can be completed row by row (or regime by
# regime into another OUT, merged by scripts/fabric-decision.py --dir).
[ -n "${ONLY:-}" ] || rm -f "$OUT"/*.json
run incast-16 --scenario matrix --matrix "$OUT/incast-16.cm"
run incast-128 --scenario matrix --matrix "$OUT/incast-128.cm"
run incast-1024 --scenario matrix --matrix "$OUT/incast-1024.cm" ${FAT[@]+"${FAT[@]}"}
run perm-1024 --scenario permutation --hosts 1024 --flow-size 2000000 ${FAT[@]+"${FAT[@]}"}
if has_flag --degraded-links; then
  run perm-1024-degraded --scenario permutation --hosts 1024 --flow-size 2000000 \
    --degraded-links 8 --degraded-fraction 0.25 ${FAT[@]+"${FAT[@]}"}
else
  NOTES+=("perm-1024-degraded: this rpc-lab has no --degraded-links; row skipped")
fi
for load in 0.5 0.8; do
  run "websearch-$load" --scenario websearch --hosts "$WS_HOSTS" --flows "$WS_FLOWS" --load "$load"
done
[ "$DRY" = 1 ] && exit 0
NOTE_ARGS=()
for n in ${NOTES[@]+"${NOTES[@]}"}; do NOTE_ARGS+=(--note "$n"); done
python3 scripts/fabric-decision.py --dir "$OUT" --doc "$DOC" --seeds "$SEEDS" \
  ${NOTE_ARGS[@]+"${NOTE_ARGS[@]}"}
