//! End-to-end tests of rpc-server, rpc-client and rpc-hostile (the apps
//! package's binaries, `CARGO_BIN_EXE_*`) on real virtual devices.
//! One test binary (each file a module), not one per file: each test
//! binary is compiled and linked on its own, and one per file cost test.sh minutes.
//! One file's tests: `cargo test --release -p apps --test apps_e2e FILE:: -- --test-threads=1`.

mod common;

mod capture;
mod cli_conventions;
mod examples;
mod hostile_peers;
mod idle;
mod kernel_link;
mod links;
mod live_metrics;
mod memif_peer_death;
mod offload;
mod reliability;
mod rpc_e2e;
mod scale;
mod waiting;
