//! Raw bindings to the system DPDK (>= 22.11): an explicit allowlist generated
//! by bindgen, plus `shim_*` out-of-line wrappers for DPDK's `static inline`
//! fast-path functions (rx/tx burst, mbuf alloc/free, rte_errno, lcore id, TSC).
//! This is the project's only FFI crate; `engine::dpdk` is the safe layer.

#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
#![allow(clippy::all)]
#![allow(unsafe_op_in_unsafe_fn, missing_debug_implementations)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

/// The DPDK version (pkg-config's `libdpdk` modversion) this crate was
/// built against; 22.11's `rte_version()` is a header inline, so this is
/// also what it would say.
pub const DPDK_VERSION: &str = env!("RPC_DPDK_VERSION");
