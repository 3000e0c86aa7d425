//! [`StopHandle`]: a flag any thread (a signal handler's thread, a timer, a
//! worker that finished) sets to end every worker's run loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared stop flag; clones refer to the same flag. Workers poll it with
/// [`Rpc::run_until_stopped`](super::Rpc::run_until_stopped).
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
}
