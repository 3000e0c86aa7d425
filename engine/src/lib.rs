//! The RPC engine: an eRPC-style transport (sessions, credits capped at the
//! bandwidth-delay product, multi-packet messages by memcpy, go-back-N) whose
//! protocol core is sans-IO (`proto`, `wire`), driven over DPDK by per-core
//! poll-mode run loops (`dpdk`, feature `dpdk`) or over an in-memory link for
//! deterministic tests (`sim`).

pub mod fault;
pub mod proto;
pub mod rng;
pub mod sim;
pub mod time;
pub mod wire;

#[cfg(feature = "dpdk")]
pub mod dpdk;
#[cfg(feature = "dpdk")]
pub mod runtime;
