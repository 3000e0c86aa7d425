//! memif specifics of port start-up: while a memif client waits for its
//! server, the PMD's per-attempt error lines are silenced (one line of our
//! own says what is happening), and the socket path is read back from the
//! device's `--vdev` spec for that line. A client whose handshake the
//! server turned away reconnects (see `Port::open`), so it needs its role.
//! Before EAL starts, [`memif_server_socket_in_use`] asks the kernel whether
//! another process already listens on a server's socket: DPDK's own probe
//! would fail with "Address already in use" in its log and leave no port.

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

/// Whether another process listens on memif socket `path` (a second
/// server would fail to bind it). DPDK 22.11's memif binds a
/// `SOCK_SEQPACKET` socket to the abstract name `"\0" + path`
/// (`socket-abstract=yes`, its default; `/proc/net/unix` shows it as
/// `@path`), or to the file `path` with `abstract_name` false: the probe binds the same
/// abstract name (refused with `EADDRINUSE` while someone holds it, freed
/// when the probe closes), or connects to the file without blocking (a stale file left by a
/// dead server refuses the connection, so it is not "in use"). Any other
/// failure says "not in use": DPDK's own attempt then reports it.
pub fn memif_server_socket_in_use(path: &str, abstract_name: bool) -> bool {
    // SAFETY: socket() has no memory effects; the descriptor is closed below.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if fd < 0 {
        return false;
    }
    let (addr, len) = memif_addr(path, abstract_name);
    let sa = (&addr as *const libc::sockaddr_un).cast::<libc::sockaddr>();
    let in_use = if abstract_name {
        // SAFETY: `sa` points to `addr`, which is `len` bytes long and lives
        // across the call; fd is our own socket.
        let rc = unsafe { libc::bind(fd, sa, len) };
        rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EADDRINUSE)
    } else {
        // SAFETY: as for bind. Non-blocking: a full backlog (EAGAIN) is
        // someone listening too.
        let rc = unsafe { libc::connect(fd, sa, len) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN)
    };
    // SAFETY: fd is our own open descriptor, closed once.
    unsafe { libc::close(fd) };
    in_use
}

/// The address DPDK 22.11's memif binds for `path`, and its length: the
/// abstract name after a NUL, exactly as long as the path (two names
/// differ by their length too); a path is cut to what fits
/// (`Device::validate` refuses longer ones before this runs).
fn memif_addr(path: &str, abstract_name: bool) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let skip = usize::from(abstract_name);
    let mut used = skip;
    for (slot, b) in addr.sun_path[skip..].iter_mut().zip(path.bytes()) {
        *slot = b as libc::c_char;
        used += 1;
    }
    let len = match abstract_name {
        true => std::mem::offset_of!(libc::sockaddr_un, sun_path) + used,
        false => std::mem::size_of::<libc::sockaddr_un>(),
    };
    (addr, len as libc::socklen_t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listener bound as DPDK's memif server binds it; its descriptor.
    fn listen_like_dpdk(path: &str, abstract_name: bool) -> i32 {
        let (addr, len) = memif_addr(path, abstract_name);
        // SAFETY: a fresh socket bound to `addr`, which outlives the calls.
        unsafe {
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0);
            assert!(fd >= 0);
            let sa = (&addr as *const libc::sockaddr_un).cast::<libc::sockaddr>();
            assert_eq!(libc::bind(fd, sa, len), 0, "bind {path}");
            assert_eq!(libc::listen(fd, 1), 0);
            fd
        }
    }

    #[test]
    fn the_abstract_name_is_the_path_after_a_nul_and_no_longer() {
        let (addr, len) = memif_addr("/tmp/m.sock", true);
        let name: Vec<u8> = addr.sun_path[..12].iter().map(|&c| c as u8).collect();
        assert_eq!(name, b"\0/tmp/m.sock");
        assert_eq!(len as usize, 2 + 12);
        let (_, file_len) = memif_addr("/tmp/m.sock", false);
        assert_eq!(file_len as usize, std::mem::size_of::<libc::sockaddr_un>());
    }

    #[test]
    fn a_listened_memif_socket_is_in_use_until_closed() {
        for abstract_name in [true, false] {
            let path = format!(
                "/tmp/engine-memif-probe-{}-{abstract_name}.sock",
                std::process::id()
            );
            let _ = std::fs::remove_file(&path);
            assert!(
                !memif_server_socket_in_use(&path, abstract_name),
                "nobody yet"
            );
            let fd = listen_like_dpdk(&path, abstract_name);
            assert!(memif_server_socket_in_use(&path, abstract_name), "{path}");
            // The other namespace is another address.
            assert!(!memif_server_socket_in_use(&path, !abstract_name), "{path}");
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(fd) };
            // A dead server's file (not abstract) refuses connections: free.
            assert!(!memif_server_socket_in_use(&path, abstract_name), "{path}");
            let _ = std::fs::remove_file(&path);
        }
    }
}
