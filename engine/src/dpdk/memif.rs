//! memif specifics of port start-up: while a memif client waits for its
//! server, the PMD's per-attempt error lines are silenced (one line of our
//! own says what is happening), and the socket path is read back from the
//! device's `--vdev` spec for that line. A client whose handshake the
//! server turned away reconnects (see `Port::open`), so it needs its role.

use std::ffi::CStr;
use std::time::Duration;

/// How long a memif client waits for the handshake after connecting before
/// it takes the connection as refused and dials again. A handshake is a few
/// control messages (milliseconds); the margin is for a stalled VM.
pub(super) const MEMIF_HANDSHAKE: Duration = Duration::from_secs(2);

/// Lowers the memif PMD's log level to errors-only while it lives (the
/// start-retry loop), then restores the level it had.
pub(super) struct MemifQuiet {
    saved: Option<u32>,
}

const MEMIF_LOG_PATTERN: &CStr = c"pmd.net.memif*";

impl MemifQuiet {
    pub(super) fn new() -> Self {
        // SAFETY: a valid C string; rte_log_register returns the id of the
        // already registered logtype (the PMD registered it at load).
        let logtype = unsafe { dpdk_sys::rte_log_register(c"pmd.net.memif".as_ptr()) };
        let saved = if logtype >= 0 {
            // SAFETY: a valid logtype id; returns the level or a negative error.
            let level = unsafe { dpdk_sys::rte_log_get_level(logtype as u32) };
            u32::try_from(level).ok()
        } else {
            None
        };
        // SAFETY: a valid C string pattern and a valid level. Failing to set
        // it only means the retry loop stays as noisy as before.
        let _ = unsafe {
            dpdk_sys::rte_log_set_level_pattern(MEMIF_LOG_PATTERN.as_ptr(), dpdk_sys::RTE_LOG_CRIT)
        };
        MemifQuiet { saved }
    }
}

impl Drop for MemifQuiet {
    fn drop(&mut self) {
        let level = self.saved.unwrap_or(dpdk_sys::RTE_LOG_NOTICE);
        // SAFETY: as in `new`.
        let _ = unsafe { dpdk_sys::rte_log_set_level_pattern(MEMIF_LOG_PATTERN.as_ptr(), level) };
    }
}

/// The socket path of memif device `name`, from its `--vdev` spec (memif's
/// default when the spec names none).
pub(super) fn memif_socket(eal: &super::Eal, name: &str) -> String {
    vdev_arg(eal, name, "socket=").unwrap_or_else(|| "/run/memif.sock".to_string())
}

/// The value of `key` (with its `=`) in device `name`'s `--vdev` spec.
fn vdev_arg(eal: &super::Eal, name: &str, key: &str) -> Option<String> {
    let args = eal.args();
    args.windows(2)
        .filter(|w| w[0] == "--vdev")
        .map(|w| w[1].as_str())
        .find(|spec| spec.split(',').next() == Some(name))
        .and_then(|spec| spec.split(',').find_map(|kv| kv.strip_prefix(key)))
        .map(str::to_string)
}

/// Whether memif device `name` is a client (`role=client`, or the deprecated
/// `role=slave`); memif's default role is server.
pub(super) fn memif_is_client(eal: &super::Eal, name: &str) -> bool {
    vdev_arg(eal, name, "role=").is_some_and(|r| r == "client" || r == "slave")
}
