//! Starting a port: one `rte_eth_dev_start`, or for memif the retries a
//! client needs while its server is not there yet or not ready, and the
//! link polling both `Port::open` and `Port::wait_link_up` use. Every wait
//! here follows one [`LinkWait`]: its limit (or none), and a flag another
//! thread sets to end it at the next poll.

use super::memif::{memif_is_client, memif_socket, MemifQuiet, MEMIF_HANDSHAKE};
use super::{DpdkError, LinkStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a wait polls the link and its stop flag: well inside the
/// 100 ms a person (or a script's SIGINT) should wait for an answer.
const LINK_POLL: Duration = Duration::from_millis(10);

/// How often a memif client dials a server that is not there yet.
const MEMIF_DIAL: Duration = Duration::from_millis(50);

/// How long a port waits for its peer (the link; a memif client's server),
/// and what ends the wait early.
#[derive(Clone, Debug, Default)]
pub struct LinkWait {
    /// The longest wait; `None` waits as long as it takes.
    pub limit: Option<Duration>,
    /// Set by another thread (a signal handler's flag): the wait ends at
    /// its next poll, within 10 ms, with [`DpdkError::Stopped`].
    pub stop: Option<Arc<AtomicBool>>,
}

impl From<Duration> for LinkWait {
    /// A wait of at most `limit`, with no stop flag.
    fn from(limit: Duration) -> Self {
        LinkWait {
            limit: Some(limit),
            stop: None,
        }
    }
}

impl LinkWait {
    /// Whether the stop flag is set.
    fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Acquire))
    }

    /// `Err` once the wait of port `port` (`name`) that began at `since`
    /// must end: stopped, or past its limit.
    fn check(&self, port: u16, name: &str, since: Instant) -> Result<(), DpdkError> {
        if self.stopped() {
            return Err(DpdkError::Stopped {
                port,
                name: name.to_string(),
            });
        }
        match self.limit {
            Some(limit) if since.elapsed() >= limit => Err(DpdkError::LinkDown {
                port,
                name: name.to_string(),
                waited_ms: limit.as_millis() as u64,
            }),
            _ => Ok(()),
        }
    }

    /// What is left of the wait that began at `since` (`None`: no limit).
    fn left(&self, since: Instant) -> Option<Duration> {
        self.limit.map(|l| l.saturating_sub(since.elapsed()))
    }

    /// Polls port `name`'s link every [`LINK_POLL`] until it is up: the
    /// link, or why the wait that began at `since` ended.
    pub(super) fn link_up(
        &self,
        port: u16,
        name: &str,
        since: Instant,
    ) -> Result<LinkStatus, DpdkError> {
        loop {
            let link = link_of(port)?;
            if link.up {
                return Ok(link);
            }
            self.check(port, name, since)?;
            std::thread::sleep(LINK_POLL);
        }
    }
}

/// Starts port `id` (device `name`), whose queues are all set up: once, or
/// for a memif client with a `wait`, retried within it (a server's start
/// does not wait for anyone; its link does, in `LinkWait::link_up`).
pub(super) fn start(
    eal: &super::Eal,
    id: u16,
    name: &str,
    wait: Option<&LinkWait>,
) -> Result<(), DpdkError> {
    match wait {
        Some(wait) if name.starts_with("net_memif") && memif_is_client(eal, name) => {
            start_memif_client(eal, id, name, wait)
        }
        _ => {
            // SAFETY: all queues are set up.
            let rc = unsafe { dpdk_sys::rte_eth_dev_start(id) };
            match rc {
                0 => Ok(()),
                rc => Err(DpdkError::from_rc("rte_eth_dev_start", rc)),
            }
        }
    }
}

/// A memif client's start: retried until its server listens and takes its
/// handshake; it says so once, instead of one PMD error line per attempt
/// (the first included).
fn start_memif_client(
    eal: &super::Eal,
    id: u16,
    name: &str,
    wait: &LinkWait,
) -> Result<(), DpdkError> {
    let started = Instant::now();
    let quiet = MemifQuiet::new();
    let (mut announced, mut refused) = (false, false);
    loop {
        // SAFETY: all queues are set up.
        let rc = unsafe { dpdk_sys::rte_eth_dev_start(id) };
        if rc == 0 {
            let left = wait.left(started).unwrap_or(MEMIF_HANDSHAKE);
            if left.is_zero() || link_up_within(id, left.min(MEMIF_HANDSHAKE), wait) {
                break;
            }
            // The server refused the handshake: its port was probed (the
            // socket listens) but not yet started, and DPDK 22.11's memif
            // server turns such a client away for good ("ID mismatch").
            // Reconnecting is the only way back; a stop closes the
            // control channel so the next start dials again.
            if !refused && !wait.stopped() {
                eprintln!(
                    "memif server at {} not started yet; reconnecting",
                    memif_socket(eal, name)
                );
                refused = true;
            }
            // SAFETY: the port was just started; stopping it is allowed.
            unsafe { dpdk_sys::rte_eth_dev_stop(id) };
        } else if !announced {
            let limit = match wait.limit {
                Some(l) => format!(" (up to {} s)", l.as_secs_f64().ceil() as u64),
                None => String::new(),
            };
            eprintln!(
                "waiting for memif server at {}{limit}",
                memif_socket(eal, name)
            );
            announced = true;
        }
        // Past the limit a client is told what it waited for: LinkDown
        // asks whether the other role runs on the same socket.
        wait.check(id, name, started)?;
        std::thread::sleep(MEMIF_DIAL);
    }
    drop(quiet); // restore the memif log level
    Ok(())
}

/// Port `id`'s link state now, without waiting.
pub(super) fn link_of(id: u16) -> Result<LinkStatus, DpdkError> {
    let mut link = dpdk_sys::rte_eth_link::default();
    // SAFETY: valid port, valid out-pointer.
    let rc = unsafe { dpdk_sys::rte_eth_link_get_nowait(id, &mut link) };
    if rc != 0 {
        return Err(DpdkError::from_rc("rte_eth_link_get_nowait", rc));
    }
    Ok(LinkStatus {
        up: link.link_status() != 0,
        speed_mbps: link.link_speed,
    })
}

/// Whether started port `id`'s link comes up within `within` (polled every
/// [`LINK_POLL`]); `false` at once when `wait` is stopped.
fn link_up_within(id: u16, within: Duration, wait: &LinkWait) -> bool {
    let start = Instant::now();
    loop {
        if link_of(id).map(|l| l.up).unwrap_or(false) {
            return true;
        }
        if start.elapsed() >= within || wait.stopped() {
            return false;
        }
        std::thread::sleep(LINK_POLL);
    }
}
