//! What a virtio or af_xdp device needs from outside the process, checked
//! before EAL starts because DPDK's probe would otherwise fail at once and
//! leave no port ("no DPDK port named virtio_user0"): a virtio driver waits
//! for its vhost-user backend to listen (bounded by the link timeout, ended
//! by the stop handle, like a memif client's wait for its server), a vhost
//! backend clears the socket file a dead predecessor left and refuses one
//! another process listens on, and an af_xdp port's interface must exist in
//! this network namespace.

use super::RuntimeError;
use crate::dpdk::LinkWait;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often a virtio driver looks for its backend's socket: well inside
/// the 100 ms a person waits for an answer, and a connect a poll is cheap.
const BACKEND_POLL: Duration = Duration::from_millis(50);

/// What a device needs before its probe ([`Device::peer_need`](super::Device)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Need<'a> {
    /// A vhost-user backend listening on this socket (net_virtio_user).
    Backend(&'a str),
    /// This socket free for our own backend to listen on (net_vhost).
    OwnSocket(&'a str),
    /// This interface (with `true`: its veth peer, + "p") in our namespace.
    Interface(&'a str, bool),
}

/// Checks `need`, waiting for a backend as `wait` says.
pub(super) fn check(need: Need<'_>, wait: &LinkWait) -> Result<(), RuntimeError> {
    match need {
        Need::Backend(socket) => wait_for_backend(socket, wait),
        Need::OwnSocket(socket) => claim_socket(socket),
        Need::Interface(iface, peer) => {
            let name = format!("{iface}{}", if peer { "p" } else { "" });
            match interface_exists(&name) {
                true => Ok(()),
                false => Err(RuntimeError::NoInterface { iface: name }),
            }
        }
    }
}

/// Whether interface `name` exists in this process's network namespace.
/// Asked of the kernel (`if_nametoindex`), not of /sys/class/net: sysfs
/// shows the namespace it was mounted in, not the one a client entered.
fn interface_exists(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated string; the call only reads it.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// Whether a process accepts connections on unix socket `path` (a vhost-user
/// backend accepts the probe's connection and drops it when it closes, as
/// when a guest's driver restarts).
fn listening(path: &str) -> bool {
    UnixStream::connect(path).is_ok()
}

fn wait_for_backend(socket: &str, wait: &LinkWait) -> Result<(), RuntimeError> {
    let since = Instant::now();
    let mut announced = false;
    loop {
        if listening(socket) {
            return Ok(());
        }
        if wait
            .stop
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Acquire))
        {
            return Err(RuntimeError::Stopped {
                device: format!("vhost-user backend at {socket}"),
            });
        }
        if let Some(limit) = wait.limit {
            if since.elapsed() >= limit {
                return Err(RuntimeError::NoBackend {
                    socket: socket.to_string(),
                    waited_ms: limit.as_millis() as u64,
                });
            }
        }
        if !announced {
            let limit = match wait.limit {
                Some(l) => format!(" (up to {} s)", l.as_secs_f64().ceil() as u64),
                None => String::new(),
            };
            eprintln!("waiting for a vhost-user backend at {socket}{limit}");
            announced = true;
        }
        std::thread::sleep(BACKEND_POLL);
    }
}

/// A backend's socket: refused while another process listens on it; a
/// file nobody listens on (a backend that died without closing) is removed,
/// since net_vhost's bind would fail on it and leave no port.
fn claim_socket(socket: &str) -> Result<(), RuntimeError> {
    if !Path::new(socket).exists() {
        return Ok(());
    }
    if listening(socket) {
        return Err(RuntimeError::SocketInUse {
            socket: socket.to_string(),
        });
    }
    // A failure here leaves the file to net_vhost, whose error names it.
    let _ = std::fs::remove_file(socket);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn path(tag: &str) -> String {
        let p = format!("/tmp/engine-peer-check-{}-{tag}.sock", std::process::id());
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn a_missing_backend_is_named_once_the_wait_is_over() {
        let p = path("none");
        let wait = LinkWait::from(Duration::from_millis(120));
        let t = Instant::now();
        match check(Need::Backend(&p), &wait) {
            Err(RuntimeError::NoBackend { socket, waited_ms }) => {
                assert_eq!((socket.as_str(), waited_ms), (p.as_str(), 120));
            }
            other => panic!("{other:?}"),
        }
        assert!(t.elapsed() >= Duration::from_millis(120));
        assert!(t.elapsed() < Duration::from_secs(2), "bounded");
        // A listener ends the wait at once.
        let l = UnixListener::bind(&p).unwrap();
        check(Need::Backend(&p), &wait).unwrap();
        // The backend's own socket is taken while it listens, free after.
        assert!(matches!(
            check(Need::OwnSocket(&p), &wait),
            Err(RuntimeError::SocketInUse { .. })
        ));
        drop(l);
        assert!(Path::new(&p).exists(), "a dead listener leaves its file");
        check(Need::OwnSocket(&p), &wait).unwrap();
        assert!(!Path::new(&p).exists(), "the stale file is cleared");
    }

    #[test]
    fn a_stop_ends_the_wait_for_a_backend() {
        let p = path("stop");
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let wait = LinkWait {
            limit: None,
            stop: Some(flag),
        };
        assert!(matches!(
            check(Need::Backend(&p), &wait),
            Err(RuntimeError::Stopped { .. })
        ));
    }

    #[test]
    fn an_interface_must_exist() {
        check(Need::Interface("lo", false), &LinkWait::default()).unwrap();
        match check(Need::Interface("nosuchif0", true), &LinkWait::default()) {
            Err(RuntimeError::NoInterface { iface }) => assert_eq!(iface, "nosuchif0p"),
            other => panic!("{other:?}"),
        }
    }
}
