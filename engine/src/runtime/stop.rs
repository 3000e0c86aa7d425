//! [`StopHandle`]: a flag any thread (a signal handler's thread, a timer, a
//! worker that finished) sets to end every worker's run loop, and a
//! [`Nexus`](super::Nexus)'s wait for its link
//! ([`NexusBuilder::stop_on`](super::NexusBuilder::stop_on)).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared stop flag; clones refer to the same flag. Workers poll it with
/// [`Rpc::run_until_stopped`](super::Rpc::run_until_stopped); opening a
/// Nexus polls it while it waits for the link.
#[derive(Clone, Debug, Default)]
pub struct StopHandle {
    flag: Arc<AtomicBool>,
}

impl StopHandle {
    /// A flag that is not set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the flag: every loop watching it returns after its current iteration.
    pub fn stop(&self) {
        self.flag.store(true, Ordering::Release);
    }
    /// Whether [`stop`](Self::stop) was called.
    #[inline]
    pub fn is_stopped(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
    /// The flag itself, for the DPDK layer's waits (`dpdk::LinkWait`).
    pub(super) fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}

impl From<Arc<AtomicBool>> for StopHandle {
    /// A handle on a flag something else sets, e.g. one registered with
    /// `signal_hook::flag::register` for SIGINT: the run loops and the
    /// wait for the link stop when the signal comes.
    fn from(flag: Arc<AtomicBool>) -> Self {
        StopHandle { flag }
    }
}
