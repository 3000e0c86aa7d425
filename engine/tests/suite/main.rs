//! The engine's integration tests, one test binary (each file a module):
//! the protocol core on the in-memory link and the simulated fabric
//! (`proto_*`), the configuration, and the docs' code. One binary, not one
//! per file: every test binary is compiled and linked on its own, and 23 of
//! them cost test.sh minutes. The tests that start EAL are the
//! `dpdk` binary's (`engine/tests/dpdk/`), each in a process of its own. Run one file's tests with
//! `cargo test -p engine --test suite proto_cc::`.

mod proto_common;

mod config;
mod proto_admission;
mod proto_amplify;
mod proto_cc;
mod proto_memory;
mod proto_multi;
mod proto_nak;
mod proto_packets;
mod proto_pause;
mod proto_police;
mod proto_rccc;
mod proto_reclaim;
mod proto_scale;
mod proto_selective;
mod proto_session;
mod proto_sim;
mod proto_state;
mod proto_transitions;
mod proto_trim;
mod readme_snippet;
mod wire_docs;
