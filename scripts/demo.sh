#!/usr/bin/env bash
# Installs what is missing, builds in release and runs the default benchmark:
# a server and a client process pinned to two cores over memif, with a latency
# histogram. Extra arguments go to rpc-bench (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cargo build --release -p apps -p bench --bins
exec ./target/release/rpc-bench "$@"
