#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit and protocol
# tests (no DPDK needed), then end-to-end tests that launch the real binaries
# on virtual devices one at a time (a poll-mode process burns a core each and
# this machine has two).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
if ! command -v cargo >/dev/null 2>&1; then
  echo "test.sh: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi

# Layout rules (docs/architecture.md): no file over 600 lines of code, no
# import cycle; and the engine's docs build with no warning (missing docs
# are denied in the crate).
python3 scripts/check-layout.py
RUSTDOCFLAGS="-D warnings" cargo doc -p engine --no-deps --quiet

# Release binaries for the end-to-end tests: they poll at full speed and the
# debug build is too slow for the timing bounds in the tests.
cargo build --release --workspace --bins --examples
export RPC_BIN_DIR="$PWD/target/release"
# One test thread: the e2e tests each start two pinned poll-mode processes.
# --no-fail-fast: one failing test binary must not hide the others' results.
cargo test --release --workspace --no-fail-fast -- --test-threads=1
