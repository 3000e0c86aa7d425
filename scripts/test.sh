#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit and protocol
# tests (no DPDK needed), then end-to-end tests that launch the real binaries
# on virtual devices one at a time (a poll-mode process burns a core each and
# this machine has two).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's time is printed, so a slow run shows where it went.
phase_start=$SECONDS
phase() { echo "test.sh: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }

./scripts/install-deps.sh
if ! command -v cargo >/dev/null 2>&1; then
  echo "test.sh: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi

# Layout rules (docs/architecture.md): no file over 600 lines of code, no
# import cycle.
python3 scripts/check-layout.py
phase "install check and layout"

# Release binaries for the end-to-end tests: they poll at full speed and the
# debug build is too slow for the timing bounds in the tests.
cargo build --release --workspace --bins --examples
phase "release binaries"
# The docs of the engine and of the fabric lab build with no warning
# (missing docs are denied in both crates and in slot-lists). After the
# release build and in its profile: their build
# scripts and proc macros (bindgen, serde's derive, ...) are then the ones
# just built, where the dev profile would build them all again (its
# `package."*"` opt-level 2 covers them), a minute and a half cold.
RUSTDOCFLAGS="-D warnings" cargo doc --release -p slot-lists -p engine -p lab --no-deps --quiet
phase "docs"
export RPC_BIN_DIR="$PWD/target/release"
# Build every test binary before running any: right after a build the
# first two-process memif run has three times timed out waiting for its link
# (10 s), with both processes loading DPDK's ~100 driver libraries from a
# cold page cache while the linker still ran. Then one short memif run
# loads them warm; its outcome is printed, not judged (the tests judge).
cargo test --release --workspace --no-run --quiet
phase "test binaries"
if timeout 60 "$RPC_BIN_DIR/rpc-bench" run --seconds 0.2 --no-floor \
    --set workload.warmup_seconds=0 >/tmp/rpc-test-warmup.log 2>&1; then
  echo "test.sh: warm-up memif run ok"
else
  echo "test.sh: warm-up memif run failed (see /tmp/rpc-test-warmup.log); running the tests anyway"
fi
# One test thread: the e2e tests each start two pinned poll-mode processes.
# --no-fail-fast: one failing test binary must not hide the others' results.
rc=0
cargo test --release --workspace --no-fail-fast -- --test-threads=1 || rc=$?
phase "tests"
# The data path's cost in instructions against its committed budget
# (scripts/cost-budget.json): noise cannot hide a regression there. After
# the tests, so that a cost failure does not hide their results.
./scripts/cost.sh || rc=$?
phase "cost.sh"
echo "test.sh: $SECONDS s in all"
exit "$rc"
