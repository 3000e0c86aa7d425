//! The adaptive idle mode of the run loop (`transport.idle = "adaptive"`):
//! a worker that has received nothing and has nothing pending (frames to
//! send, background jobs out, requests waiting for answers) for the
//! policy's `after` sleeps, on its queue's RX interrupt where the driver
//! has one and otherwise on a short timer, never past the endpoint's next
//! timer (a retransmission, a keepalive, a session's reclamation) nor past
//! [`MAX_WAIT`], so a stop flag is seen within it. The loop's only cost is
//! one store per non-empty RX burst (`busy_at`); every other check runs
//! where the loop's owner calls [`Rpc::idle_wait`], after a `run_once`.

use super::Rpc;
use crate::config::IdlePolicy;
use crate::dpdk::RxInterrupt;
use crate::time::{Duration, Instant};
use std::fmt;

/// The longest one wait lasts: a stop request (SIGINT, `StopHandle`) set
/// while a worker sleeps is seen within this (the bound is 100 ms).
pub const MAX_WAIT: Duration = Duration::from_millis(20);

/// A quiet spell's timed sleeps double from the policy's `sleep` up to
/// this many times it (500 us -> 1 ms -> 2 ms): each wake-up costs about
/// 20 us of CPU on a VM (the kernel's timer, the scheduler, one poll), so
/// a fixed 500 us nap keeps 4 % of a core busy where the backed-off one
/// keeps 1-2 %. The first packet of a long quiet spell waits up to the
/// last nap (2 ms at the defaults); one that comes within the first naps,
/// less. A frame or pending work ends the spell and resets it.
pub const NAP_BACKOFF: u32 = 4;

/// Below this much time to the next deadline a worker polls rather than
/// sleeps: a sleep this short overshoots by the kernel's timer slack.
const MIN_SLEEP: Duration = Duration::from_micros(20);

/// How a worker waits when idle: what [`Rpc::set_idle`] found, for the
/// startup line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdleWake {
    /// `transport.idle = "spin"`: it polls without pause.
    Spin,
    /// Adaptive, woken by its queue's RX interrupt.
    Interrupt(IdlePolicy),
    /// Adaptive on a queue without RX interrupts: timed sleeps; `why`
    /// says what the driver refused.
    Timer {
        /// The policy.
        policy: IdlePolicy,
        /// The driver's refusal, as DPDK words it.
        why: String,
    },
}

impl fmt::Display for IdleWake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |d: Duration| d.as_nanos() / 1_000;
        match self {
            IdleWake::Spin => write!(f, "spin (polls without pause)"),
            IdleWake::Interrupt(p) => write!(
                f,
                "adaptive: sleeps on RX interrupts after {} us without packets",
                us(p.after)
            ),
            IdleWake::Timer { policy, why } => write!(
                f,
                "adaptive: no RX interrupts ({why}); timed sleeps of {} us, doubling to {} us while quiet, after {} us without packets",
                us(policy.sleep),
                us(policy.sleep) * NAP_BACKOFF as u64,
                us(policy.after)
            ),
        }
    }
}

/// The idle state of one worker.
#[derive(Debug, Default)]
pub(super) struct Idle {
    /// `None`: spin.
    policy: Option<IdlePolicy>,
    /// The queue's interrupt, where the driver has one.
    intr: Option<RxInterrupt>,
    /// The loop's time when a frame last came in or work last waited.
    pub(super) busy_at: Instant,
    /// Timed sleeps in the current quiet spell (the backoff's step).
    naps: u32,
}

impl<A> Rpc<A> {
    /// Sets what this worker does when idle (`None`: spin, the default;
    /// [`TransportConfig::idle_policy`](crate::config::TransportConfig::idle_policy)
    /// gives it from the config) and says how it will wait: on RX
    /// interrupts when the port was built with them
    /// ([`NexusBuilder::rx_interrupts`](super::super::NexusBuilder::rx_interrupts))
    /// and the driver unmasks this queue's, else on a timer. Call it on the
    /// worker's own thread: the interrupt is registered on that thread's
    /// epoll instance.
    pub fn set_idle(&mut self, policy: Option<IdlePolicy>) -> IdleWake {
        self.idle.intr = None;
        self.idle.policy = policy;
        self.idle.busy_at = self.now;
        let Some(policy) = policy else {
            return IdleWake::Spin;
        };
        match RxInterrupt::register(&self.rx) {
            Ok(i) => {
                self.idle.intr = Some(i);
                IdleWake::Interrupt(policy)
            }
            Err(e) => IdleWake::Timer {
                policy,
                why: e.to_string(),
            },
        }
    }

    /// Call after [`run_once`](Self::run_once): in adaptive mode, once the
    /// worker has been idle for the policy's time, sleeps until a frame
    /// comes (RX interrupt) or for one timed sleep, never past the
    /// endpoint's next timer, `limit` (the caller's own next deadline) or
    /// [`MAX_WAIT`]. With interrupts the first idle call only arms the
    /// interrupt and returns, so the loop polls once more before the
    /// sleep (a frame that came before arming raised none). Returns whether
    /// the worker is idle (it slept, or armed to sleep): the caller may
    /// check its stop flag then. In spin mode it returns `false` at once.
    pub fn idle_wait(&mut self, limit: Option<Instant>) -> bool {
        let Some(policy) = self.idle.policy else {
            return false;
        };
        let now = self.now;
        if self.has_work() {
            self.idle.busy_at = now;
        }
        if now.saturating_since(self.idle.busy_at) < policy.after {
            if let Some(i) = self.idle.intr.as_mut() {
                i.disarm();
            }
            self.idle.naps = 0;
            return false;
        }
        let mut until = now + MAX_WAIT;
        if let Some(t) = self.ep.poll_timeout() {
            until = until.min(t);
        }
        if let Some(l) = limit {
            until = until.min(l);
        }
        let left = until.saturating_since(now);
        if left < MIN_SLEEP {
            return false;
        }
        let ms = left.as_nanos() / 1_000_000;
        if let (Some(intr), true) = (self.idle.intr.as_mut(), ms > 0) {
            if !intr.is_armed() {
                // Refused now though it worked at set_idle: sleep on the
                // timer this time, and try to arm again the next.
                return match intr.arm() {
                    Ok(()) => true,
                    Err(_) => timed_sleep(policy.sleep.min(left)),
                };
            }
            intr.wait(ms as u32);
            intr.disarm();
            return true;
        }
        let nap = nap_length(policy.sleep, self.idle.naps);
        self.idle.naps = self.idle.naps.saturating_add(1);
        timed_sleep(nap.min(left))
    }

    /// Work that a sleep would delay: frames to send (queued in the
    /// endpoint or waiting for TX ring room), background jobs out, and
    /// requests waiting for their answers.
    fn has_work(&self) -> bool {
        self.ep.has_pending_transmit()
            || !self.pending_tx.is_empty()
            || self.background.as_ref().is_some_and(|b| b.in_flight > 0)
            || self.waiters.outstanding() > 0
    }
}

/// The `naps`-th timed sleep of a quiet spell: `sleep` doubled per nap
/// taken, up to [`NAP_BACKOFF`] times it.
fn nap_length(sleep: Duration, naps: u32) -> Duration {
    let factor = 1u64 << naps.min(NAP_BACKOFF.trailing_zeros());
    Duration::from_nanos(sleep.as_nanos().saturating_mul(factor))
}

/// One timed sleep of `d`; always `true` (the worker was idle).
fn timed_sleep(d: Duration) -> bool {
    std::thread::sleep(std::time::Duration::from_nanos(d.as_nanos()));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naps_double_up_to_the_backoff_cap() {
        let us = |n: u64| Duration::from_micros(n);
        let naps: Vec<Duration> = (0..6).map(|n| nap_length(us(500), n)).collect();
        assert_eq!(
            naps,
            [us(500), us(1000), us(2000), us(2000), us(2000), us(2000)]
        );
        assert_eq!(nap_length(us(500), u32::MAX), us(500 * NAP_BACKOFF as u64));
    }
}
