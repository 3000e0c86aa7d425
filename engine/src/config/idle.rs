//! `transport.idle`: what a worker does when its queues are quiet. `spin`
//! polls without pause (the lowest latency, a whole core per worker);
//! `adaptive` sleeps once nothing arrived and nothing waited for
//! `idle_after_us`: on its queue's RX interrupt where the driver has one,
//! else in timed sleeps from `idle_sleep_us` (doubling to 4x it while the
//! quiet lasts: the runtime's `NAP_BACKOFF`), always bounded by the next
//! timer of the endpoint (the runtime's `Rpc::idle_wait` does it). The
//! mode, the policy and the keys' limits live here (a leaf); the fields
//! are `TransportConfig`'s, checked in `check.rs`.

use crate::time::Duration;
use serde::{Deserialize, Serialize};

/// `transport.idle`: poll without pause, or sleep when idle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleMode {
    /// Poll the queues without pause (a worker burns its core).
    #[default]
    Spin,
    /// Sleep after `idle_after_us` without packets or pending work: on
    /// RX interrupts where the driver has them, else on a timer.
    Adaptive,
}

impl IdleMode {
    /// The mode's name in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleMode::Spin => "spin",
            IdleMode::Adaptive => "adaptive",
        }
    }
}

/// The adaptive mode's settings, as the run loop takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdlePolicy {
    /// Quiet time (no packet received, nothing pending) before sleeping.
    pub after: Duration,
    /// One timed sleep where the queue has no RX interrupt.
    pub sleep: Duration,
}

/// Default `idle_after_us`: long enough that a loaded worker, whose
/// packets come microseconds apart, never sleeps; short enough that a quiet
/// one stops spinning at once, as people count it.
pub const DEFAULT_IDLE_AFTER_US: u64 = 1_000;
/// Default `idle_sleep_us`: the first timed sleep of a quiet spell (the
/// next double up to 2 ms). A wake-up costs ~20 us of CPU on a VM: 4 % of
/// a core at a fixed 500 us, 1-2 % with the backoff; a packet early in a
/// quiet spell waits 250 us on average, one after a long quiet 1 ms.
pub const DEFAULT_IDLE_SLEEP_US: u64 = 500;
/// The longest `idle_after_us`: one minute.
pub const MAX_IDLE_AFTER_US: u64 = 60_000_000;
/// The longest `idle_sleep_us`: 50 ms, so a worker that sleeps still sees a
/// stop request (SIGINT) well within 100 ms.
pub const MAX_IDLE_SLEEP_US: u64 = 50_000;
/// The shortest `idle_sleep_us`: below this the kernel's timer slack
/// (50 us) makes the sleep longer than asked, and spin is the better mode.
pub const MIN_IDLE_SLEEP_US: u64 = 10;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TransportConfig;

    fn mode(text: &str) -> Result<IdleMode, serde::de::value::Error> {
        use serde::de::IntoDeserializer;
        IdleMode::deserialize(text.into_deserializer())
    }

    #[test]
    fn spin_is_the_default_and_has_no_policy() {
        let t = TransportConfig::default();
        assert_eq!(t.idle, IdleMode::Spin);
        assert_eq!(t.idle_policy(), None);
        assert!(t.validate().is_ok());
    }

    #[test]
    fn adaptive_gives_its_times() {
        assert_eq!(mode("adaptive").unwrap(), IdleMode::Adaptive);
        assert_eq!(mode("spin").unwrap(), IdleMode::Spin);
        let t = TransportConfig {
            idle: IdleMode::Adaptive,
            idle_after_us: 2000,
            idle_sleep_us: 300,
            ..TransportConfig::default()
        };
        assert!(t.validate().is_ok());
        assert_eq!(
            t.idle_policy(),
            Some(IdlePolicy {
                after: Duration::from_micros(2000),
                sleep: Duration::from_micros(300),
            })
        );
    }

    #[test]
    fn an_unknown_mode_is_refused_naming_the_choices() {
        let e = mode("sleepy").unwrap_err().to_string();
        assert!(
            e.contains("sleepy") && e.contains("spin") && e.contains("adaptive"),
            "{e}"
        );
    }

    #[test]
    fn sleeps_out_of_range_are_refused_by_key() {
        for (v, ok) in [
            (0, false),
            (9, false),
            (10, true),
            (50_000, true),
            (50_001, false),
        ] {
            let t = TransportConfig {
                idle: IdleMode::Adaptive,
                idle_sleep_us: v,
                ..TransportConfig::default()
            };
            match t.validate() {
                Ok(()) => assert!(ok, "{v} accepted"),
                Err(e) => {
                    assert!(!ok, "{v} refused: {e}");
                    assert_eq!(e.key, "transport.idle_sleep_us");
                    assert!(e.msg.contains(&v.to_string()), "{}", e.msg);
                }
            }
        }
        let t = TransportConfig {
            idle_after_us: MAX_IDLE_AFTER_US + 1,
            ..TransportConfig::default()
        };
        assert_eq!(t.validate().unwrap_err().key, "transport.idle_after_us");
    }

    #[test]
    fn zero_idle_after_sleeps_at_the_first_quiet_poll() {
        let t = TransportConfig {
            idle: IdleMode::Adaptive,
            idle_after_us: 0,
            ..TransportConfig::default()
        };
        assert!(t.validate().is_ok());
        assert_eq!(t.idle_policy().unwrap().after, Duration::ZERO);
    }
}
