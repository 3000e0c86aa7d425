//! The run loop's clock: the TSC read once per batch and turned into the
//! engine's `time::Instant` (nanoseconds since the clock was made).

use crate::time::Instant;

/// The TSC-based clock of a run loop: cycles since creation converted to
/// nanoseconds ([`Instant`]). `Copy`; every copy shares the same origin.
#[derive(Clone, Copy, Debug)]
pub struct TscClock {
    start: u64,
    /// Nanoseconds per cycle in 32.32 fixed point, so `now` is one multiply.
    ns_per_cycle_q32: u128,
    hz: u64,
}

impl TscClock {
    /// Needs an initialised EAL (it calibrates the TSC frequency).
    pub fn new(_eal: &super::Eal) -> Self {
        // SAFETY: EAL is initialised (the `Eal` borrow proves it); this only
        // reads the calibrated TSC frequency.
        let hz = unsafe { dpdk_sys::shim_tsc_hz() };
        let start = rdtsc();
        let hz = hz.max(1);
        TscClock {
            start,
            ns_per_cycle_q32: ((1_000_000_000u128) << 32) / hz as u128,
            hz,
        }
    }

    /// Reads the raw TSC (cycles since reset, not since this clock was made).
    #[inline]
    pub fn cycles(&self) -> u64 {
        rdtsc()
    }

    /// The current time: nanoseconds since this clock was made.
    #[inline]
    pub fn now(&self) -> Instant {
        self.instant_of(self.cycles())
    }

    /// Converts a TSC reading taken with [`Self::cycles`] to an [`Instant`].
    #[inline]
    pub fn instant_of(&self, cycles: u64) -> Instant {
        let delta = cycles.wrapping_sub(self.start) as u128;
        Instant(((delta * self.ns_per_cycle_q32) >> 32) as u64)
    }

    /// The calibrated TSC frequency in cycles per second (at least 1).
    pub fn hz(&self) -> u64 {
        self.hz
    }
}

/// The TSC, inline: this is read once per loop iteration, so an FFI call to
/// the C shim (DPDK's rte_rdtsc) would be a measurable share of an idle loop.
#[inline(always)]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC is available on every x86_64 CPU and has no side effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: rte_rdtsc has no preconditions.
        unsafe { dpdk_sys::shim_rdtsc() }
    }
}
