//! The engine's own notion of time. The protocol core never reads a clock:
//! callers pass `Instant`s in (the DPDK run loop derives them from the TSC, the
//! in-memory link from a virtual clock), which keeps every protocol test
//! deterministic.

use core::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since an arbitrary origin chosen by the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    /// `us` microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// The span in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// The span in (fractional) seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);
    /// The instant `ns` nanoseconds after the origin.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time elapsed since `earlier`, saturating at zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

/// The same span as a `std::time::Duration`: the runtime's setup API (link
/// timeouts) takes `impl Into<std::time::Duration>`, so either type works.
impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        std::time::Duration::from_nanos(d.0)
    }
}

/// A `std::time::Duration` in nanoseconds, saturating at `u64::MAX` (584 years).
impl From<std::time::Duration> for Duration {
    fn from(d: std::time::Duration) -> Self {
        Duration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant(10) + Duration::from_nanos(5);
        assert_eq!(t, Instant(15));
        assert_eq!(Instant(3) - Instant(10), Duration::ZERO);
        assert_eq!(Instant(u64::MAX) + Duration(1), Instant(u64::MAX));
        assert_eq!(Duration::from_millis(5).as_nanos(), 5_000_000);
    }

    #[test]
    fn converts_to_and_from_std() {
        let d: std::time::Duration = Duration::from_micros(3).into();
        assert_eq!(d, std::time::Duration::from_micros(3));
        assert_eq!(Duration::from(d), Duration::from_micros(3));
        assert_eq!(Duration::from(std::time::Duration::MAX), Duration(u64::MAX));
    }
}
