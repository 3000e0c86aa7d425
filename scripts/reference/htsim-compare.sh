#!/usr/bin/env bash
# An outside check of the fabric lab (`rpc-bench fabric`) against htsim, the
# packet-level datacenter simulator at github.com/Broadcom/csg-htsim: the
# same incasts and permutation on both, one table of completion times,
# goodput and simulator speed. See docs/fabric.md, "htsim".
#
# Usage: scripts/reference/htsim-compare.sh HTSIM_SRC_DIR
#   HTSIM_SRC_DIR  your own clone of htsim (its top level, with sim/ in it):
#                  git clone https://github.com/Broadcom/csg-htsim
#
# htsim is never vendored here and this script is not part of CI: it builds
# htsim in the tree you give it (its own Makefiles, in place: objects and
# libhtsim.a in sim/, htsim_roce and htsim_hpcc in sim/datacenter/), once;
# later runs reuse the binaries unless a source file is newer.
# Needs g++, make and python3; faketime (Debian package faketime) is optional.
#
# Environment:
#   RPC_BENCH     our binary [target/release/rpc-bench, built if it is the default]
#   OUR_LOSSLESS  our regimes against htsim RoCE+PFC without CC [ib,roce-nocc]
#   OUR_CC        our regimes against htsim HPCC over PFC, where comparable
#                 [roce; empty for none]
#   SCENARIOS     subset of incast-256k,incast-16m,perm-1m [all three]
#   SEED          seed of both simulators (our permutation; htsim's ECMP salts) [1]
#   BUFFER_KB     switch buffer per port, KiB; PFC thresholds follow it [256]
#   OUT           where the topologies, matrices and logs go [results/htsim-compare,
#                 which git ignores]
#   JOBS          make -j for the htsim build [2]
#   HTSIM_DRAWS   htsim runs of the permutation, one per ECMP draw [5]
#   USE_FAKETIME  auto|off: run htsim under faketime(1) when it is installed
#                 [auto]. htsim seeds its ECMP path ids from the wall clock
#                 (srand(time(NULL)) in roce.cpp/hpcc.cpp), so without it the
#                 permutation and HPCC rows differ from run to run; with it
#                 each draw is a fixed clock time and runs repeat exactly.
set -euo pipefail

usage_hint() {
  cat >&2 <<'EOF'
usage: scripts/reference/htsim-compare.sh HTSIM_SRC_DIR
htsim is not part of this repository. Get it yourself:
  git clone https://github.com/Broadcom/csg-htsim
and pass the clone's top-level directory (the one that holds sim/).
EOF
}

die_arg() { # message: bad argument, exit 2
  echo "htsim-compare: $1" >&2
  usage_hint
  exit 2
}

[ $# -eq 1 ] || die_arg "expected exactly one argument (an htsim source tree), got $#"
SRC_ARG=$1
[ -n "$SRC_ARG" ] || die_arg "the htsim source directory is an empty string"
[ -e "$SRC_ARG" ] || die_arg "'$SRC_ARG' does not exist"
[ -d "$SRC_ARG" ] || die_arg "'$SRC_ARG' is not a directory"
# The files this comparison relies on: the RoCE model and its main program
# (which must take a -topo file), the fat tree that reads it, the Makefiles.
[ -f "$SRC_ARG/datacenter/main_roce.cpp" ] &&
  die_arg "'$SRC_ARG' is htsim's sim/ directory: pass its parent, the top of the clone"
for f in sim/Makefile sim/roce.cpp sim/queue_lossless_input.cpp \
         sim/datacenter/Makefile sim/datacenter/main_roce.cpp sim/datacenter/fat_tree_topology.cpp; do
  [ -f "$SRC_ARG/$f" ] || die_arg "'$SRC_ARG' does not look like an htsim source tree (no $f)"
done
grep -q '"-topo"' "$SRC_ARG/sim/datacenter/main_roce.cpp" ||
  die_arg "'$SRC_ARG': this htsim's main_roce.cpp takes no -topo file; use a newer htsim"
HTSIM=$(cd "$SRC_ARG" && pwd)

# Paths the caller gives are relative to where they called from.
abs() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
[ -n "${RPC_BENCH:-}" ] && RPC_BENCH=$(abs "$RPC_BENCH")
[ -n "${OUT:-}" ] && OUT=$(abs "$OUT")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
OUR_LOSSLESS=${OUR_LOSSLESS:-ib,roce-nocc}
OUR_CC=${OUR_CC-roce}
SCENARIOS=${SCENARIOS:-incast-256k,incast-16m,perm-1m}
SEED=${SEED:-1}
BUFFER_KB=${BUFFER_KB:-256}
OUT=${OUT:-results/htsim-compare}
JOBS=${JOBS:-2}
HTSIM_DRAWS=${HTSIM_DRAWS:-5}
USE_FAKETIME=${USE_FAKETIME:-auto}
FAKETIME_ARG=()
if [ "$USE_FAKETIME" != off ]; then
  if command -v faketime >/dev/null; then
    FAKETIME_ARG=(--faketime)
  else
    echo "htsim-compare: no faketime (apt-get install faketime): htsim's ECMP draws follow the clock" >&2
  fi
fi

command -v python3 >/dev/null || { echo "htsim-compare: python3 is needed" >&2; exit 1; }
command -v make >/dev/null && command -v g++ >/dev/null ||
  { echo "htsim-compare: building htsim needs make and g++" >&2; exit 1; }

if git -C "$HTSIM" rev-parse --git-dir >/dev/null 2>&1; then
  COMMIT=$(git -C "$HTSIM" rev-parse HEAD)
  git -C "$HTSIM" diff --quiet HEAD -- sim 2>/dev/null || COMMIT="$COMMIT (sim/ modified)"
else
  COMMIT="unknown (not a git checkout)"
fi

# --- build htsim, once ---------------------------------------------------------
BIN="$HTSIM/sim/datacenter"
TARGETS=(htsim_roce)
[ -f "$BIN/main_hpcc.cpp" ] && TARGETS+=(htsim_hpcc)
up_to_date() { # every target exists and no htsim source is newer
  local t
  for t in "${TARGETS[@]}"; do
    [ -x "$BIN/$t" ] || return 1
    [ -z "$(find "$HTSIM/sim" -maxdepth 2 \( -name '*.cpp' -o -name '*.h' -o -name Makefile \) \
            -newer "$BIN/$t" -print -quit)" ] || return 1
  done
}
if up_to_date; then
  echo "htsim: ${TARGETS[*]} already built in $BIN" >&2
else
  echo "htsim: building ${TARGETS[*]} in $BIN (make -j$JOBS, in the htsim tree)" >&2
  mkdir -p "$OUT"
  if ! { make -C "$HTSIM/sim" -j"$JOBS" libhtsim.a &&
         make -C "$BIN" -j"$JOBS" "${TARGETS[@]}"; } >"$OUT/htsim-build.log" 2>&1; then
    tail -n 30 "$OUT/htsim-build.log" >&2
    echo "htsim-compare: the htsim build failed; log: $OUT/htsim-build.log" >&2
    exit 1
  fi
fi

# --- our binary ------------------------------------------------------------------
if [ -z "${RPC_BENCH:-}" ]; then
  RPC_BENCH=target/release/rpc-bench
  cargo build --release -q -p bench --bin rpc-bench
fi
[ -x "$RPC_BENCH" ] || { echo "htsim-compare: RPC_BENCH=$RPC_BENCH is not an executable" >&2; exit 1; }
# Fail before the long runs if the binary lacks a regime (roce-nocc is new).
for r in ${OUR_LOSSLESS//,/ } ${OUR_CC//,/ }; do
  if ! err=$("$RPC_BENCH" fabric --scenario incast --hosts 1 --flow-size 1000 --regimes "$r" --json 2>&1 >/dev/null); then
    echo "htsim-compare: $RPC_BENCH cannot run regime '$r': ${err##*$'\n'}" >&2
    echo "  (set OUR_LOSSLESS / OUR_CC to regimes it has, or rebuild it)" >&2
    exit 1
  fi
done

mkdir -p "$OUT"
echo "htsim commit: $COMMIT; ours: $RPC_BENCH; files in $OUT" >&2
exec python3 "$REPO/scripts/reference/htsim_compare.py" run \
  --htsim-dir "$BIN" --rpc-bench "$RPC_BENCH" --out "$OUT" \
  --lossless "$OUR_LOSSLESS" --cc "$OUR_CC" --scenarios "$SCENARIOS" \
  --buffer-kb "$BUFFER_KB" --seed "$SEED" --commit "$COMMIT" \
  --draws "$HTSIM_DRAWS" ${FAKETIME_ARG[@]+"${FAKETIME_ARG[@]}"}
