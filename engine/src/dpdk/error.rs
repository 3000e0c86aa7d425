//! Typed DPDK errors. Every failing DPDK call is turned into a `DpdkError` in
//! one place (`DpdkError::from_rc`/`from_errno`), with DPDK's own text.

use std::ffi::CStr;

/// Why a call into DPDK (EAL, mempool, port, mbuf, lcore) failed.
#[derive(Debug, thiserror::Error)]
pub enum DpdkError {
    /// A DPDK function returned an error code.
    #[error("{op} failed: {msg} (errno {code})")]
    Call {
        /// The DPDK function that failed.
        op: &'static str,
        /// The errno it reported (positive).
        code: i32,
        /// DPDK's text for `code` (`rte_strerror`).
        msg: String,
    },
    #[error(
        "EAL is already initialised in this process (DPDK allows one initialisation per process)"
    )]
    /// `Eal::init` was called a second time in this process.
    AlreadyInitialized,
    /// An EAL argument was rejected before calling DPDK.
    #[error("invalid EAL argument {arg:?}: {why}")]
    BadArgument {
        /// The offending argument.
        arg: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// No DPDK port has the requested name (device not probed or misnamed).
    #[error("no DPDK port named {name:?} ({available} port(s) available: {names}); for a vdev, is its driver loaded and its spec right? for a PCI NIC, is it bound to a DPDK driver and allow-listed?")]
    NoSuchPort {
        /// The name that was asked for.
        name: String,
        /// How many ports DPDK knows.
        available: u16,
        /// Their names, comma-separated.
        names: String,
    },
    /// The port's link did not come up before the timeout.
    #[error("link of port {port} ({name}) did not come up within {waited_ms} ms (is the peer running? for memif, is the other role started on the same socket?)")]
    LinkDown {
        /// The DPDK port id.
        port: u16,
        /// The port's name.
        name: String,
        /// How long was waited, in milliseconds.
        waited_ms: u64,
    },
    /// The stop flag of a wait for the link was set (`LinkWait::stop`).
    #[error("port {port} ({name}): stopped while waiting for the link")]
    Stopped {
        /// The DPDK port id.
        port: u16,
        /// The port's name.
        name: String,
    },
    /// Configuring or starting a port (or a flow rule on it) failed, or the
    /// port cannot do what was asked.
    #[error("port {port}: {what}")]
    PortConfig {
        /// The DPDK port id.
        port: u16,
        /// What went wrong.
        what: String,
    },
    /// `transport.checksum_offload = "require"` on a device that lacks one.
    #[error(transparent)]
    Offload(#[from] crate::nic::OffloadError),
    /// An mbuf allocation found the mempool empty.
    #[error("mempool {name:?}: out of mbufs")]
    PoolExhausted {
        /// The mempool's name.
        name: String,
    },
    /// The lcore id (the field) is not in the EAL core list, so no worker can be launched on it.
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
