//! Typed DPDK errors. Every failing DPDK call is turned into a `DpdkError` in
//! one place (`DpdkError::from_rc`/`from_errno`), with DPDK's own text.

use std::ffi::CStr;

#[derive(Debug, thiserror::Error)]
pub enum DpdkError {
    #[error("{op} failed: {msg} (errno {code})")]
    Call {
        op: &'static str,
        code: i32,
        msg: String,
    },
    #[error(
        "EAL is already initialised in this process (DPDK allows one initialisation per process)"
    )]
    AlreadyInitialized,
    #[error("invalid EAL argument {arg:?}: {why}")]
    BadArgument { arg: String, why: &'static str },
    #[error("no DPDK port named {name:?} ({available} port(s) available: {names}); for a vdev, is its driver loaded and its spec right? for a PCI NIC, is it bound to a DPDK driver and allow-listed?")]
    NoSuchPort {
        name: String,
        available: u16,
        names: String,
    },
    #[error("link of port {port} ({name}) did not come up within {waited_ms} ms (is the peer running? for memif, is the other role started on the same socket?)")]
    LinkDown {
        port: u16,
        name: String,
        waited_ms: u64,
    },
    #[error("port {port}: {what}")]
    PortConfig { port: u16, what: String },
    #[error("mempool {name:?}: out of mbufs")]
    PoolExhausted { name: String },
    #[error("lcore {0} is not enabled in the EAL core list")]
    BadLcore(u32),
}

impl DpdkError {
    /// Error for a DPDK call that returned a negative errno (`-EINVAL` style).
    pub(crate) fn from_rc(op: &'static str, rc: i32) -> Self {
        Self::call(op, rc.saturating_abs())
    }

    /// Error for a DPDK call that signals failure and sets `rte_errno`.
    pub(crate) fn from_errno(op: &'static str) -> Self {
        // SAFETY: reads the calling thread's rte_errno; no preconditions.
        let code = unsafe { dpdk_sys::shim_errno() };
        Self::call(op, code)
    }

    fn call(op: &'static str, code: i32) -> Self {
        // SAFETY: rte_strerror accepts any value and returns a pointer to a
        // static or thread-local NUL-terminated string.
        let msg = unsafe { CStr::from_ptr(dpdk_sys::rte_strerror(code)) }
            .to_string_lossy()
            .into_owned();
        DpdkError::Call { op, code, msg }
    }
}
