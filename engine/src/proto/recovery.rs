//! Loss recovery's and the timers' endpoint-wide state: the deadline heap
//! (`timers.rs`), the timeouts the loss scan applies ([`LossTimers`], with
//! the one rule that chooses a retransmission timeout) and the counts that
//! say whether anything is in progress (`Endpoint::is_idle`). What a
//! session's timer does when it fires is `loss.rs`.

use super::client::ClientReq;
use super::config::{EndpointConfig, FlowMode, LossPolicy, Retransmit, RTO_LOW_MAX_IN_FLIGHT};
use super::timers::TimerHeap;
use crate::time::Duration;

/// The timeouts the scan applies to a client session.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LossTimers {
    pub rto: Duration,
    /// Selective: the RTO with few packets in flight.
    pub rto_low: Duration,
    pub session_timeout: Duration,
    pub mode: FlowMode,
    /// Lossless mode: what a judged loss does.
    pub on_loss: LossPolicy,
    /// Selective retransmission (IRN): requests may take `rto_low`.
    pub selective: bool,
}

impl LossTimers {
    /// The timeouts `cfg` sets.
    pub fn of(cfg: &EndpointConfig) -> Self {
        LossTimers {
            rto: cfg.rto,
            rto_low: cfg.rto_low,
            session_timeout: cfg.session_timeout,
            mode: cfg.mode,
            on_loss: cfg.on_loss,
            selective: cfg.retransmit == Retransmit::Selective,
        }
    }

    /// The retransmission timeout, chosen here only: IRN's short one for a
    /// selective request with few packets in flight (nothing later would
    /// reveal their loss), the normal one otherwise. `few_in_flight` is
    /// asked only for a selective request (counting costs a window walk).
    #[inline]
    pub fn rto(&self, selective: bool, few_in_flight: impl FnOnce() -> bool) -> Duration {
        if selective && few_in_flight() {
            self.rto_low
        } else {
            self.rto
        }
    }

    /// The retransmission timeout of `req` as the loss scan judges it.
    #[inline]
    pub fn rto_for(&self, req: &ClientReq) -> Duration {
        self.rto(req.sel.is_some(), || {
            req.in_flight_real() <= RTO_LOW_MAX_IN_FLIGHT
        })
    }

    /// The timeout a packet just sent arms: the shortest its request may
    /// have (as if few were in flight), since arming only ever moves a
    /// session's deadline earlier and the scan, when it fires, applies
    /// the request's own (`rto_for`) and re-arms at it.
    #[inline]
    pub fn rto_after_send(&self) -> Duration {
        self.rto(self.selective, || true)
    }
}

/// Loss recovery's and the timers' state.
#[derive(Debug)]
pub(crate) struct Timers {
    /// Every session's next deadline.
    pub heap: TimerHeap,
    /// The timeouts from the config.
    pub loss: LossTimers,
    /// Client requests in slots (any session): busy while > 0.
    pub active_client_reqs: usize,
    /// Sessions in Connecting or Disconnecting: busy while > 0.
    pub sm_pending: usize,
    /// Timeouts under judgement (client slots' suspects): busy while > 0.
    pub pending_suspects: usize,
}

impl Timers {
    pub fn new(cfg: &EndpointConfig) -> Self {
        Timers {
            heap: TimerHeap::new(cfg.scan_interval, cfg.max_sessions),
            loss: LossTimers::of(cfg),
            active_client_reqs: 0,
            sm_pending: 0,
            pending_suspects: 0,
        }
    }

    /// Whether a request, a handshake or a judgement is in progress.
    #[inline]
    pub fn busy(&self) -> bool {
        self.active_client_reqs + self.sm_pending + self.pending_suspects != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timers(retransmit: Retransmit) -> LossTimers {
        LossTimers::of(&EndpointConfig {
            retransmit,
            ..EndpointConfig::default()
        })
    }

    #[test]
    fn the_short_rto_needs_a_selective_request_with_few_in_flight() {
        let t = timers(Retransmit::Selective);
        assert_eq!(t.rto(true, || true), t.rto_low);
        assert_eq!(t.rto(true, || false), t.rto);
        assert_eq!(t.rto(false, || panic!("not asked")), t.rto);
        assert_eq!(t.rto_after_send(), t.rto_low);
        let g = timers(Retransmit::GoBackN);
        assert_eq!(g.rto_after_send(), g.rto);
    }

    #[test]
    fn busy_while_any_count_is_up() {
        let mut t = Timers::new(&EndpointConfig::default());
        assert!(!t.busy());
        t.pending_suspects = 1;
        assert!(t.busy());
        t.pending_suspects = 0;
        t.sm_pending = 1;
        assert!(t.busy());
    }
}
