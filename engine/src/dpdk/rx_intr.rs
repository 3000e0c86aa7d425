//! One RX queue's interrupt, the adaptive idle mode's wake-up: registered on
//! the calling thread's own epoll instance (DPDK's `RTE_EPOLL_PER_THREAD`),
//! unmasked just before a sleep and masked again after it, so a loop that
//! polls pays nothing for it. Register it, and wait on it, from the thread
//! that owns the queue: the epoll instance is that thread's. A driver whose
//! interrupt is its queue's own readable fd (net_tap) has nothing to
//! unmask (`rx_intr_enable` says ENOTSUP): it is always armed, as DPDK's
//! l3fwd-power treats it.

use super::{DpdkError, RxQueue};

/// The RX interrupt of one queue, registered on this thread's epoll instance.
#[derive(Debug)]
pub struct RxInterrupt {
    port: u16,
    queue: u16,
    /// Unmasked (between [`arm`](Self::arm) and [`disarm`](Self::disarm)).
    armed: bool,
    /// The driver masks and unmasks it (`rx_intr_enable` is supported);
    /// else it is always on.
    maskable: bool,
}

impl RxInterrupt {
    /// Registers `rx`'s interrupt on the calling thread's epoll instance
    /// and checks that the driver can unmask it; the error says which step
    /// the driver refused (a port configured without interrupts, a driver
    /// without an interrupt vector or without `rx_queue_intr_enable`).
    pub fn register(rx: &RxQueue) -> Result<Self, DpdkError> {
        let (port, queue) = (rx.port_id(), rx.queue());
        if !rx.port_has_rx_interrupts() {
            return Err(DpdkError::PortConfig {
                port,
                what: "the driver refused intr_conf.rxq at configure".into(),
            });
        }
        // SAFETY: a started port and one of its queues; registering adds an
        // fd to this thread's epoll instance and touches nothing else.
        let rc = unsafe { dpdk_sys::shim_rx_intr_add(port, queue) };
        if rc != 0 {
            return Err(DpdkError::from_rc("rte_eth_dev_rx_intr_ctl_q", rc));
        }
        let mut intr = RxInterrupt {
            port,
            queue,
            armed: false,
            maskable: true,
        };
        match intr.arm() {
            Ok(()) => intr.disarm(),
            // Registered, with nothing to unmask: always on (net_tap).
            Err(DpdkError::Call { code, .. }) if code == libc::ENOTSUP => intr.maskable = false,
            Err(e) => return Err(e),
        }
        Ok(intr)
    }

    /// Unmasks the interrupt: the next frame on the queue wakes a
    /// [`wait`](Self::wait). Poll the queue once more after arming: a
    /// frame that came before it raised no interrupt.
    pub fn arm(&mut self) -> Result<(), DpdkError> {
        if self.armed || !self.maskable {
            self.armed = true;
            return Ok(());
        }
        // SAFETY: started port, valid queue; the driver's own unmask.
        let rc = unsafe { dpdk_sys::shim_rx_intr_enable(self.port, self.queue) };
        if rc != 0 {
            return Err(DpdkError::from_rc("rte_eth_dev_rx_intr_enable", rc));
        }
        self.armed = true;
        Ok(())
    }

    /// Masks the interrupt again (a busy queue is polled, not signalled).
    pub fn disarm(&mut self) {
        if !self.armed || !self.maskable {
            self.armed = false;
            return;
        }
        // SAFETY: started port, valid queue; the driver's own mask. A
        // failure leaves it unmasked, which costs a spurious wake at most.
        let _ = unsafe { dpdk_sys::shim_rx_intr_disable(self.port, self.queue) };
        self.armed = false;
    }

    /// Whether the interrupt is unmasked.
    pub fn is_armed(&self) -> bool {
        self.armed
    }

    /// Sleeps until the queue's interrupt fires or `timeout_ms` passes:
    /// whether it fired. An error of the wait reads as a timeout (the
    /// caller polls, and sleeps again if nothing came).
    pub fn wait(&mut self, timeout_ms: u32) -> bool {
        let ms = timeout_ms.min(i32::MAX as u32) as i32;
        // SAFETY: waits on this thread's epoll instance, where `register`
        // added the queue's fd; DPDK reads the interrupt's counter itself.
        let n = unsafe { dpdk_sys::shim_rx_intr_wait(ms) };
        n > 0
    }
}

impl Drop for RxInterrupt {
    fn drop(&mut self) {
        self.disarm();
    }
}
