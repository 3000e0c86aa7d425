//! The fabric lab's integration tests, one test binary (each file a
//! module): the fabric's queues, paths and trimming, the UEC regimes, and
//! the `rpc-lab` command. One binary, not one per file, because each test
//! binary is compiled and linked on its own. One file's tests:
//! `cargo test --release -p lab --test suite rpc_lab::`.

mod fabric;
mod fabric_uec;
mod paths;
mod rpc_lab;
mod trim;
