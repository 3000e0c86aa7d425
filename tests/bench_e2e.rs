//! End-to-end tests of rpc-bench (this package's binary; rpc-server and
//! rpc-client through tests/common's `bin()`) on real virtual devices.
//! One test binary (each file a module), not one per file: each test
//! binary is compiled and linked on its own, and one per file cost test.sh minutes.
//! One file's tests: `cargo test --release -p bench --test bench_e2e FILE:: -- --test-threads=1`.

mod common;

mod dpdk_ports;
mod exit_codes;
mod fabric_cli;
mod hygiene;
mod lossy_lossless;
mod one_config;
mod output_cli;
mod regimes;
mod sweep_cli;
