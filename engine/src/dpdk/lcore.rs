//! Per-core workers. EAL pins its main thread to the first core of `-l`;
//! other cores run as EAL worker lcores launched with `rte_eal_remote_launch`,
//! so every worker is pinned and has an lcore id (and thus a mempool cache).

use super::{DpdkError, Eal};

/// An EAL lcore id.
pub type LcoreId = u32;

/// The calling thread's lcore id, or `None` for a thread EAL does not know.
pub fn current_lcore() -> Option<LcoreId> {
    // SAFETY: reads a thread-local set by EAL; no preconditions.
    let id = unsafe { dpdk_sys::shim_lcore_id() };
    (id != u32::MAX).then_some(id)
}

struct Job<'a> {
    f: &'a (dyn Fn(LcoreId) + Sync),
}

unsafe extern "C" fn trampoline(arg: *mut std::os::raw::c_void) -> i32 {
    // SAFETY: `arg` is the `&Job` passed by `run_on_lcores`, which waits for
    // every launched lcore before the `Job` goes out of scope.
    let job = unsafe { &*(arg as *const Job<'_>) };
    let me = current_lcore().unwrap_or(u32::MAX);
    // A panic must not unwind into C.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (job.f)(me))) {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

impl Eal {
    /// Runs `f(lcore)` on every enabled lcore: the worker lcores by remote
    /// launch and the main lcore on the calling thread; returns when all are
    /// done. A worker that panicked is reported as an error after all finish.
    pub fn run_on_lcores(&self, f: &(dyn Fn(LcoreId) + Sync)) -> Result<(), DpdkError> {
        let job = Job { f };
        let arg = &job as *const Job<'_> as *mut std::os::raw::c_void;
        let main = self.main_lcore();
        let mut launched = Vec::new();
        for &lcore in self.lcores() {
            if lcore == main {
                continue;
            }
            // SAFETY: `trampoline` matches lcore_function_t; `arg` stays valid
            // until the wait loop below returns for this lcore.
            let rc = unsafe { dpdk_sys::rte_eal_remote_launch(Some(trampoline), arg, lcore) };
            if rc != 0 {
                self.wait_all(&launched);
                return Err(DpdkError::from_rc("rte_eal_remote_launch", rc));
            }
            launched.push(lcore);
        }
        let main_ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(main))).is_ok();
        let workers_ok = self.wait_all(&launched);
        if main_ok && workers_ok {
            Ok(())
        } else {
            Err(DpdkError::Call {
                op: "worker",
                code: -1,
                msg: "a worker panicked".into(),
            })
        }
    }

    fn wait_all(&self, lcores: &[LcoreId]) -> bool {
        let mut ok = true;
        for &lcore in lcores {
            // SAFETY: waiting on an lcore we launched; no other preconditions.
            ok &= unsafe { dpdk_sys::rte_eal_wait_lcore(lcore) } == 0;
        }
        ok
    }
}
