//! Starting a port: one `rte_eth_dev_start`, or for memif the retries a
//! client needs while its server is not there yet or not ready, and the
//! link polling both `Port::open` and `Port::wait_link_up` use.

use super::memif::{memif_is_client, memif_socket, MemifQuiet, MEMIF_HANDSHAKE};
use super::{DpdkError, LinkStatus};
use std::time::{Duration, Instant};

/// Starts port `id` (device `name`), whose queues are all set up; a memif
/// port retries for `start_retry`.
pub(super) fn start(
    eal: &super::Eal,
    id: u16,
    name: &str,
    start_retry: Duration,
) -> Result<(), DpdkError> {
    let started = Instant::now();
    // A memif client retries until its server listens: it says so once,
    // instead of one PMD error line per attempt (the first included).
    let memif_retry = name.starts_with("net_memif") && !start_retry.is_zero();
    let mut quiet = memif_retry.then(MemifQuiet::new);
    let memif_client = memif_retry && memif_is_client(eal, name);
    let (mut announced, mut refused) = (false, false);
    loop {
        // SAFETY: all queues are set up.
        let rc = unsafe { dpdk_sys::rte_eth_dev_start(id) };
        if rc == 0 {
            let left = start_retry.saturating_sub(started.elapsed());
            if !memif_client || left.is_zero() || link_up_within(id, left.min(MEMIF_HANDSHAKE)) {
                break;
            }
            // The server refused the handshake: its port was probed (the
            // socket listens) but not yet started, and DPDK 22.11's memif
            // server turns such a client away for good ("ID mismatch").
            // Reconnecting is the only way back; a stop closes the
            // control channel so the next start dials again.
            if !refused {
                eprintln!(
                    "memif server at {} not started yet; reconnecting",
                    memif_socket(eal, name)
                );
                refused = true;
            }
            // SAFETY: the port was just started; stopping it is allowed.
            unsafe { dpdk_sys::rte_eth_dev_stop(id) };
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        if memif_retry && !announced {
            eprintln!(
                "waiting for memif server at {} (up to {} s)",
                memif_socket(eal, name),
                start_retry.as_secs_f64().ceil() as u64
            );
            announced = true;
        }
        if started.elapsed() >= start_retry {
            drop(quiet.take()); // restore the memif log level
            let err = DpdkError::from_rc("rte_eth_dev_start", rc);
            if name.starts_with("net_memif") {
                let what = format!(
                    "{err}; a memif client cannot start until a memif server listens on its socket (is the server running?)"
                );
                return Err(DpdkError::PortConfig { port: id, what });
            }
            return Err(err);
        }
        std::thread::sleep(Duration::from_millis(50));
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

/// Whether started port `id`'s link comes up within `wait` (polled every
/// 10 ms, as `wait_link_up`).
pub(super) fn link_up_within(id: u16, wait: Duration) -> bool {
    let start = Instant::now();
    loop {
        if link_of(id).map(|l| l.up).unwrap_or(false) {
            return true;
        }
        if start.elapsed() >= wait {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
