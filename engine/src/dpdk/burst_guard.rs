//! Bursts that survive their driver unmapping memory under them. DPDK
//! 22.11's memif PMD frees a peer's shared regions from its interrupt
//! thread when the peer disconnects (a client killed mid-run), while a
//! worker may be inside the receive or transmit burst, past its one check
//! of the connected flag: the worker then touches unmapped memory and the
//! whole server dies of SIGSEGV. Nothing in the PMD orders the two threads,
//! so the burst itself is guarded (`dpdk-sys/shim.c`): a fault inside it
//! returns to the burst's caller as "faulted" instead of killing the
//! process. What the driver had taken or allocated in that burst is lost
//! (at most one burst of mbufs per disconnect; never freed twice), and the
//! link is down by then, so the run loop sees an idle port until the peer
//! comes back.
//!
//! Only ports whose driver needs it pay for the guard (a `sigsetjmp`
//! without the signal mask: no system call).

use std::sync::Once;

static INSTALL: Once = Once::new();

/// Whether bursts on the device `name` (e.g. `net_memif0`) are guarded, and
/// if so the process's fault handler is installed (once).
pub(super) fn needed_for(name: &str) -> bool {
    if !name.starts_with("net_memif") {
        return false;
    }
    INSTALL.call_once(|| {
        // SAFETY: installs a SIGSEGV/SIGBUS handler that only jumps when
        // the faulting thread is inside a guarded burst and otherwise hands
        // the signal to the handler it replaced; it touches no Rust state.
        let rc = unsafe { dpdk_sys::shim_burst_guard_install() };
        if rc != 0 {
            eprintln!(
                "warning: cannot guard memif bursts (sigaction: errno {}): a peer's disconnect mid-burst can crash this process",
                -rc
            );
        }
    });
    true
}

/// Bursts that faulted in this process since it started.
pub fn faults() -> u64 {
    // SAFETY: reads an atomic counter.
    unsafe { dpdk_sys::shim_burst_guard_faults() }
}

/// A guarded receive burst into `pkts[..n]`; a fault counts as nothing
/// received.
///
/// # Safety
/// As `rte_eth_rx_burst`: the caller is the only user of (port, queue) and
/// `pkts` has room for `n` pointers.
#[inline]
pub(super) unsafe fn rx(port: u16, queue: u16, pkts: *mut *mut dpdk_sys::rte_mbuf, n: u16) -> u16 {
    let mut faulted = 0;
    // SAFETY: the caller's contract; `faulted` outlives the call.
    let got = unsafe { dpdk_sys::shim_rx_burst_guarded(port, queue, pkts, n, &mut faulted) };
    if faulted != 0 {
        note_fault("receive");
    }
    got
}

/// A guarded transmit burst of `pkts[..n]`: how many the driver took, or
/// on a fault all `n`, since the driver may already have freed some of
/// them and none may be freed twice (the rest leak; the link is down).
///
/// # Safety
/// As `rte_eth_tx_burst`: the caller is the only user of (port, queue) and
/// the first `n` entries are mbufs it owns.
#[inline]
pub(super) unsafe fn tx(port: u16, queue: u16, pkts: *mut *mut dpdk_sys::rte_mbuf, n: u16) -> u16 {
    let mut faulted = 0;
    // SAFETY: the caller's contract; `faulted` outlives the call.
    let sent = unsafe { dpdk_sys::shim_tx_burst_guarded(port, queue, pkts, n, &mut faulted) };
    if faulted != 0 {
        note_fault("transmit");
        return n;
    }
    sent
}

#[cold]
#[inline(never)]
fn note_fault(which: &str) {
    eprintln!(
        "memif: a {which} burst faulted while the peer disconnected (DPDK 22.11 unmaps the shared memory under the poller); recovered, {} so far",
        faults()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guard catches what the PMD does to a poller: a read of memory
    /// unmapped under it, twice in a row (the handler stays armed after a
    /// jump), and counts each.
    #[test]
    fn a_read_of_unmapped_memory_under_the_guard_is_caught_and_counted() {
        assert!(needed_for("net_memif7"));
        assert!(!needed_for("net_ring0"));
        let before = faults();
        for _ in 0..2 {
            // SAFETY: maps, unmaps and reads one page of its own under the
            // guard; no Rust memory is touched.
            assert_eq!(unsafe { dpdk_sys::shim_burst_guard_selftest() }, 1);
        }
        assert_eq!(faults() - before, 2);
    }
}
