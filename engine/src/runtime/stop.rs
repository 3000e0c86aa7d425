//! [`StopHandle`]: a flag any thread (a signal handler's thread, a timer, a
//! worker that finished) sets to end every worker's run loop and a
//! [`Nexus`](super::Nexus)'s wait for its link
//! ([`NexusBuilder::stop_on`](super::NexusBuilder::stop_on)), and the one
//! call that ties it to Ctrl-C ([`StopHandle::stop_on_signals`]).

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
    /// Sets the flag on Ctrl-C (SIGINT) and SIGTERM from now on, so the
    /// loops watching it finish their iteration and return (and the process
    /// can print its counters and close its port) instead of dying
    /// mid-burst. A second Ctrl-C or SIGTERM ends the process at once, with
    /// 128 + the signal's number (130 for Ctrl-C): the way out of a loop
    /// that does not watch the flag. Fails only if the OS refuses the
    /// handlers.
    pub fn stop_on_signals(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        // Set by the first of these signals, after the exit below has
        // looked at it: only a second one ends the process. A flag of this
        // call's own, so that neither `stop()` nor a second call to this
        // method arms it.
        let seen = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, seen.clone())?;
            signal_hook::flag::register(sig, seen.clone())?;
            signal_hook::flag::register(sig, self.flag.clone())?;
        }
        Ok(())
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
