#!/usr/bin/env bash
# The fabric lab (`rpc-lab`) against uet-htsim, the Ultra Ethernet
# specification authors' htsim, on uet-htsim's own validation suite: every
# experiment of htsim/sim/datacenter/validate_uec_sender.txt,
# validate_uec_rcv.txt and validate_load_balancing_failed_snd.txt, the same
# connection matrix on both, one table (the suite's target, uet-htsim's tail
# FCT, ours, pass/fail for each, packets per wall second for each).
# See docs/fabric.md, "Side by side with uet-htsim".
#
# Usage: scripts/reference/uet-htsim-compare.sh SRC_DIR
#   SRC_DIR  your own uet-htsim tree (its top level, with htsim/sim in it):
#              git clone https://github.com/ultraethernet/uet-htsim
#
# uet-htsim is never vendored here and this script is not part of CI. It
# builds htsim_uec in the tree you give it, once (cmake when installed, into
# htsim/sim/build, as uet-htsim's README says; otherwise g++ directly, from
# the source lists of its CMakeLists.txt files, into htsim/sim/build-g++);
# later runs reuse the binary unless a source is newer. uet-htsim's runs are
# kept in $OUT/htsim/ and reused when the command line is the same (the
# 1,024-node ones take minutes each). Needs g++, python3.
#
# Environment:
#   RPC_LAB      our binary [$CARGO_TARGET_DIR or target, /release/rpc-lab;
#                built if it is the default]
#   OUR_SND      our regime for uet-htsim's -sender_cc_only [uec]
#   OUR_RCV      our regime for -receiver_cc_only [uec-rcv: RCCC alone]
#   STAND_IN     the regime run instead of one this rpc-lab lacks [srd]
#   ONLY         run only experiments whose name contains this string
#   HTSIM_ONLY   1: run uet-htsim alone (no rpc-lab) [0]
#   CACHED_ONLY  1: only the experiments uet-htsim already ran in $OUT [0]
#   RECORD       also write uet-htsim's results (tab-separated) to this file
#   OUT          where logs and the table go [results/uet-htsim-compare,
#                which git ignores]
#   JOBS         parallel jobs of the uet-htsim build [2]
#   TIMEOUT      seconds per run of either simulator [3600]
set -euo pipefail

usage_hint() {
  cat >&2 <<'EOF'
usage: scripts/reference/uet-htsim-compare.sh SRC_DIR
uet-htsim is not part of this repository. Get it yourself:
  git clone https://github.com/ultraethernet/uet-htsim
and pass the clone's top-level directory (the one that holds htsim/sim).
EOF
}

die_arg() { # message: bad argument, exit 2
  echo "uet-htsim-compare: $1" >&2
  usage_hint
  exit 2
}

[ $# -eq 1 ] || die_arg "expected exactly one argument (a uet-htsim source tree), got $#"
SRC_ARG=$1
[ -n "$SRC_ARG" ] || die_arg "the uet-htsim source directory is an empty string"
[ -e "$SRC_ARG" ] || die_arg "SRC_DIR '$SRC_ARG' does not exist"
[ -d "$SRC_ARG" ] || die_arg "SRC_DIR '$SRC_ARG' is not a directory"
[ -f "$SRC_ARG/datacenter/main_uec.cpp" ] &&
  die_arg "'$SRC_ARG' is uet-htsim's htsim/sim directory: pass the top of the clone"
[ -f "$SRC_ARG/sim/datacenter/main_uec.cpp" ] &&
  die_arg "'$SRC_ARG' is uet-htsim's htsim directory: pass the top of the clone"
for f in htsim/sim/CMakeLists.txt htsim/sim/datacenter/CMakeLists.txt htsim/sim/uec.cpp \
         htsim/sim/datacenter/main_uec.cpp htsim/sim/datacenter/validate_uec_sender.txt \
         htsim/sim/datacenter/validate_uec_rcv.txt \
         htsim/sim/datacenter/validate_load_balancing_failed_snd.txt; do
  [ -f "$SRC_ARG/$f" ] || die_arg "'$SRC_ARG' does not look like a uet-htsim tree (no $f)"
done
TOP=$(cd "$SRC_ARG" && pwd)
SIM=$TOP/htsim/sim

abs() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
[ -n "${RPC_LAB:-}" ] && RPC_LAB=$(abs "$RPC_LAB")
[ -n "${OUT:-}" ] && OUT=$(abs "$OUT")
[ -n "${RECORD:-}" ] && RECORD=$(abs "$RECORD")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
OUR_SND=${OUR_SND:-uec}
OUR_RCV=${OUR_RCV:-uec-rcv}
STAND_IN=${STAND_IN:-srd}
OUT=${OUT:-results/uet-htsim-compare}
JOBS=${JOBS:-2}
TIMEOUT=${TIMEOUT:-3600}
HTSIM_ONLY=${HTSIM_ONLY:-0}

command -v python3 >/dev/null || { echo "uet-htsim-compare: python3 is needed" >&2; exit 1; }
command -v g++ >/dev/null || { echo "uet-htsim-compare: building uet-htsim needs g++" >&2; exit 1; }

if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
  COMMIT=$(git -C "$TOP" rev-parse HEAD)
  git -C "$TOP" diff --quiet HEAD -- htsim/sim 2>/dev/null || COMMIT="$COMMIT (htsim/sim modified)"
else
  COMMIT="unknown (not a git checkout)"
fi
mkdir -p "$OUT"

# --- build htsim_uec, once ---------------------------------------------------
newer_source() { # a uet-htsim source newer than $1
  [ -n "$(find "$SIM" -maxdepth 2 \( -name '*.cpp' -o -name '*.h' -o -name CMakeLists.txt \) \
          -newer "$1" -print -quit)" ]
}
# The source lists of uet-htsim's CMakeLists.txt: set(NAME ... ).
cmake_list() { # NAME FILE
  sed -n "/^set($1\$/,/)/p; /^set($1[[:space:]]/,/)/p" "$2" | sed '1d;$d' | tr -d ' \t' | grep -v '^$'
}
if command -v cmake >/dev/null; then
  HTSIM=$SIM/build/datacenter/htsim_uec
  if [ -x "$HTSIM" ] && ! newer_source "$HTSIM"; then
    echo "uet-htsim: htsim_uec already built: $HTSIM" >&2
  else
    echo "uet-htsim: building htsim_uec with cmake (-j$JOBS) in $SIM/build" >&2
    if ! { cmake -S "$SIM" -B "$SIM/build" -DCMAKE_BUILD_TYPE=Release &&
           cmake --build "$SIM/build" --parallel "$JOBS" --target htsim_uec; } >"$OUT/htsim-build.log" 2>&1; then
      tail -n 30 "$OUT/htsim-build.log" >&2
      echo "uet-htsim-compare: the uet-htsim build failed; log: $OUT/htsim-build.log" >&2
      exit 1
    fi
  fi
else
  # No cmake: the same sources and flags (-O3, C++17, asserts on, as its
  # CMakeLists.txt sets them), compiled directly.
  B=$SIM/build-g++
  HTSIM=$B/htsim_uec
  if [ -x "$HTSIM" ] && ! newer_source "$HTSIM"; then
    echo "uet-htsim: htsim_uec already built: $HTSIM" >&2
  else
    echo "uet-htsim: no cmake; building htsim_uec with g++ (-j$JOBS) in $B" >&2
    mkdir -p "$B/obj"
    srcs=$( (cmake_list SOURCE_FILES "$SIM/CMakeLists.txt"
             cmake_list LIB_SOURCES "$SIM/datacenter/CMakeLists.txt" | sed 's|^|datacenter/|'
             echo datacenter/main_uec.cpp) )
    [ "$(printf '%s\n' "$srcs" | wc -l)" -gt 20 ] ||
      { echo "uet-htsim-compare: could not read the source lists of $SIM/CMakeLists.txt" >&2; exit 1; }
    export SIM B
    if ! printf '%s\n' "$srcs" | xargs -P "$JOBS" -I{} sh -c '
          o="$B/obj/$(printf %s "{}" | tr / _).o"
          [ "$o" -nt "$SIM/{}" ] || exec g++ -std=c++17 -O3 -fPIE -I"$SIM" -I"$SIM/datacenter" \
            -c "$SIM/{}" -o "$o"' >"$OUT/htsim-build.log" 2>&1 ||
       ! g++ -o "$HTSIM" "$B"/obj/*.o >>"$OUT/htsim-build.log" 2>&1; then
      tail -n 30 "$OUT/htsim-build.log" >&2
      echo "uet-htsim-compare: the uet-htsim build failed; log: $OUT/htsim-build.log" >&2
      exit 1
    fi
  fi
fi

# --- our binary ----------------------------------------------------------------
ARGS=(--sim-dir "$SIM" --htsim "$HTSIM" --out "$OUT" --commit "$COMMIT" --timeout "$TIMEOUT")
[ -n "${ONLY:-}" ] && ARGS+=(--only "$ONLY")
[ -n "${RECORD:-}" ] && ARGS+=(--record "$RECORD")
[ "${CACHED_ONLY:-0}" = 1 ] && ARGS+=(--cached-only)
if [ "$HTSIM_ONLY" != 1 ]; then
  if [ -z "${RPC_LAB:-}" ]; then
    RPC_LAB=${CARGO_TARGET_DIR:-target}/release/rpc-lab
    RPC_LAB=$(abs "$RPC_LAB")
    cargo build --release -q -p lab --bin rpc-lab
  fi
  [ -x "$RPC_LAB" ] || { echo "uet-htsim-compare: RPC_LAB=$RPC_LAB is not an executable" >&2; exit 1; }
  "$RPC_LAB" --help | grep -q -- '--matrix' ||
    { echo "uet-htsim-compare: $RPC_LAB has no --matrix (--scenario matrix): rebuild it" >&2; exit 1; }
  # A regime this build lacks (uec, uec-rccc before they merge) runs as the
  # stand-in, said above the table and in each row's regime column.
  has_regime() {
    "$RPC_LAB" --scenario incast --hosts 1 --flow-size 1000 --regimes "$1" --json -q >/dev/null 2>&1
  }
  for v in OUR_SND OUR_RCV; do
    if ! has_regime "${!v}"; then
      echo "uet-htsim-compare: $RPC_LAB has no regime '${!v}': running '$STAND_IN' in its place" >&2
      printf -v "$v" '%s' "$STAND_IN"
    fi
  done
  ARGS+=(--rpc-lab "$RPC_LAB" --regime-snd "$OUR_SND" --regime-rcv "$OUR_RCV")
fi

echo "uet-htsim commit: $COMMIT; htsim_uec: $HTSIM; ours: ${RPC_LAB:-none}; files in $OUT" >&2
exec python3 "$REPO/scripts/reference/uet_htsim_compare.py" "${ARGS[@]}"
