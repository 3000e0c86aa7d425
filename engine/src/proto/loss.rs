//! Loss recovery and the other per-session timers. Each session has one
//! deadline in the endpoint's timer heap (`timers.rs`): the earliest of its
//! retransmission timeouts, session timeout, judgements, handshake retry or
//! give-up, keepalive and idle/half-open reclamation. When it fires, this
//! file checks that one session (as eRPC's periodic scan checked every
//! session) and re-arms it, so the timer work per tick is proportional to
//! the sessions that are due, not to the sessions that exist.
//!
//! Loss recovery is client-side only (the server is passive). A request with
//! packets in flight and no progress for `rto` rolls back: its in-flight
//! credits come home, `num_tx` rewinds to `num_rx` and the packets are sent
//! again (go-back-N). In lossless mode every rollback is a counted violation
//! and, under `LossPolicy::ResetSession`, resets the session instead. A
//! request that makes no progress for `session_timeout` (measured from its
//! last accepted answer, or from when it started transmitting) resets the
//! session: all its requests fail with `SessionReset`, then it sits in state
//! Reset until the application disconnects it. Handshakes are retried every
//! `connect_retry` and abandoned after `connect_timeout`.

use super::client::{pop_slot, window_mask, ClientSession};
use super::config::{FlowMode, LossPolicy};
use super::endpoint::Endpoint;
use super::error::RpcError;
use super::ids::SessionId;
use super::recovery::{LossTimers, Timers};
use super::state::{SessionInput, SessionState};
use super::stats::Stats;
use super::table::Session;
use super::txq::TxDesc;
use crate::time::{Duration, Instant};

/// What the scan decided for one client session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Ok,
    /// Some requests rolled back: schedule transmission.
    RolledBack,
    Reset(RpcError),
}

/// The judgement delay for an RTT estimate (see `ClientSession::rtt`).
fn judgement(rtt: Duration, rto: Duration) -> Duration {
    Duration::from_nanos(rto.as_nanos().max(2 * rtt.as_nanos()))
}

impl ClientSession {
    /// Retransmission and session timeouts of this connected session, and
    /// the judgement of earlier timeouts (see `Suspect`).
    pub fn scan(&mut self, now: Instant, t: LossTimers, stats: &mut Stats) -> Verdict {
        let mut verdict = Verdict::Ok;
        // RCCC: a session kept back with nothing in flight draws no CR
        // that could release it; if the one that did was lost, it takes
        // its credits back after a timeout (`rccc.rs`).
        // Nothing in flight: every credit is home, or held by a trim.
        let held: u32 = self
            .slots
            .iter()
            .filter_map(|s| s.req.as_ref())
            .map(|r| r.trim_held)
            .sum();
        if self.withheld > 0
            && u32::from(self.credits) + held >= u32::from(self.credits_total)
            && now.saturating_since(self.withheld_at) >= t.rto
        {
            self.withheld = 0;
            // And what trims hold: nothing in flight can bring it home.
            for r in self.slots.iter_mut().filter_map(|s| s.req.as_mut()) {
                self.credits += r.trim_held as u16;
                r.trim_held = 0;
            }
            verdict = Verdict::RolledBack;
        }
        for i in 0..self.slots.len() {
            match self.judge(i, now, t, stats) {
                Verdict::Ok => {}
                Verdict::RolledBack => verdict = Verdict::RolledBack,
                reset => return reset,
            }
            let slot = &mut self.slots[i];
            let under_judgement = slot.suspect.is_some();
            let Some(req) = slot.req.as_mut() else {
                continue;
            };
            let in_flight = req.in_flight();
            if in_flight == 0 && !req.rolled_back {
                continue; // idle or waiting for credits: not this request's fault
            }
            if now.saturating_since(req.progress_at) >= t.session_timeout {
                return Verdict::Reset(RpcError::PeerTimeout);
            }
            if in_flight == 0 || now.saturating_since(req.armed_at) < t.rto_for(req) {
                continue;
            }
            let judge_at = now + judgement(self.rtt, t.rto);
            let suspect = req.suspect(judge_at);
            req.armed_at = now;
            if t.mode == FlowMode::Lossless {
                // Fault detection first: resend one packet and keep every
                // other credit, since those packets may still sit in the
                // receiver's ring. The judgement decides later.
                if !under_judgement {
                    self.set_probe(i);
                    self.set_suspect(i, suspect);
                    verdict = Verdict::RolledBack;
                }
                continue;
            }
            stats.rollbacks += 1;
            self.roll_back(i, now);
            self.set_suspect(i, suspect);
            verdict = Verdict::RolledBack;
        }
        verdict
    }

    /// Slot `i`'s suspect, if its time is up without the duplicate answer
    /// that would have shown the original late: a loss. In lossless mode it
    /// is a counted violation, handled per policy; the request goes back to
    /// its first unanswered packet now, since a go-back-N receiver discarded
    /// everything sent after the hole.
    fn judge(&mut self, i: usize, now: Instant, t: LossTimers, stats: &mut Stats) -> Verdict {
        if self.slots[i].suspect.is_none_or(|s| now < s.judge_at) {
            return Verdict::Ok;
        }
        let Some(s) = self.take_suspect(i) else {
            return Verdict::Ok;
        };
        if t.mode != FlowMode::Lossless {
            return Verdict::Ok;
        }
        stats.lossless_violations += 1;
        if t.on_loss == LossPolicy::ResetSession {
            return Verdict::Reset(RpcError::LosslessViolation);
        }
        let stuck = self.slots[i]
            .req
            .as_ref()
            .is_some_and(|r| r.req_num == s.req_num && r.in_flight() > 0);
        if !stuck {
            return Verdict::Ok;
        }
        stats.rollbacks += 1;
        self.roll_back(i, now);
        Verdict::RolledBack
    }
}

impl ClientSession {
    /// The earliest time `scan` or `judge` could act on this session: a
    /// judgement, an RTO, a session timeout. `None` if nothing is pending.
    /// Every reference it reads only moves later until the scan runs, so a
    /// deadline computed now is never late.
    pub fn loss_deadline(&self, t: LossTimers) -> Option<Instant> {
        let mut at: Option<Instant> = None;
        let mut earliest = |x: Instant| at = Some(at.map_or(x, |a| a.min(x)));
        // A suspect may outlive its request: every slot when there is one,
        // else only the slots holding a request (the minimum is the same).
        let mut visit = if self.suspects > 0 {
            window_mask(self.slots.len())
        } else {
            self.occupied
        };
        while visit != 0 {
            let slot = &self.slots[pop_slot(&mut visit)];
            if let Some(s) = slot.suspect {
                earliest(s.judge_at);
            }
            let Some(req) = slot.req.as_ref() else {
                continue;
            };
            let in_flight = req.in_flight();
            if in_flight == 0 && !req.rolled_back {
                continue;
            }
            earliest(req.progress_at + t.session_timeout);
            if in_flight > 0 {
                earliest(req.armed_at + t.rto_for(req));
            }
        }
        // RCCC: the backstop for a lost CR (`scan`).
        if self.withheld > 0 && self.occupied != 0 {
            earliest(self.withheld_at + t.rto);
        }
        at
    }
}

/// A request of client session `c` completed: when nothing else of
/// the session is in flight or under judgement, its timer moves out to
/// the keepalive, exactly, so the RTO armed for that request does not
/// fire for nothing (an idle firing touches the session, which at tens
/// of thousands of sessions is out of cache). O(1) when no request is
/// left in a slot (the closed loop's case: the next one is not queued
/// yet), O(window) otherwise; no heap move (`timers.rs`).
pub(crate) fn retime_quiet(timers: &mut Timers, c: &ClientSession, keepalive: Duration) {
    if c.common.state != SessionState::Connected || c.suspects > 0 {
        return;
    }
    // With no request and no suspect, `loss_deadline` is `None`.
    if c.occupied != 0 && c.loss_deadline(timers.loss).is_some() {
        return;
    }
    let ka = c.common.active_at + keepalive;
    timers.heap.reset(c.common.id(), Some(ka));
}

impl Endpoint {
    /// Runs the timers due at `now`: each session whose deadline has come
    /// is checked and re-armed. Cheap to call early (it returns at once
    /// when the heap's top is not due) and safe to call late.
    #[inline]
    pub fn handle_timeout(&mut self, now: Instant) {
        // The common call finds nothing due: say so before paying for the
        // call below (a run loop asks once per iteration).
        let due = self.timers.heap.next().is_some_and(|t| t <= now);
        let paced = !self.txq.pacer.is_empty() || !self.txq.credit.is_empty();
        if due || !self.pause.paused.is_empty() || paced {
            self.run_timers(now);
        }
    }

    /// `handle_timeout` when something may be due.
    #[inline(never)]
    fn run_timers(&mut self, now: Instant) {
        self.expire_pauses(now);
        if !self.txq.pacer.is_empty() {
            self.release_paced(now);
        }
        if !self.txq.credit.is_empty() {
            self.release_credits(now);
        }
        while let Some((id, _)) = self.timers.heap.pop_due(now) {
            let Some(sess) = self.table.get(id) else {
                continue; // freed since: a stale deadline
            };
            let connected = sess.common().state == SessionState::Connected;
            let before = self.out.stats.timer_actions();
            self.fire(now, id);
            self.out.stats.timers_fired += 1;
            if connected && self.out.stats.timer_actions() == before {
                self.out.stats.timers_idle += 1;
            }
            self.rearm(now, id);
        }
    }

    /// Everything session `id` may have due at `now`: keepalive or
    /// reclamation, then handshake retry/give-up or the loss scan.
    fn fire(&mut self, now: Instant, id: SessionId) {
        self.housekeeping(now, id);
        let timers = self.timers.loss;
        let Some(sess) = self.table.get_mut(id) else {
            return;
        };
        match (sess.common().state, sess) {
            (SessionState::Connecting | SessionState::Disconnecting, _) => {
                self.handshake_timer(now, id)
            }
            (SessionState::Connected, Session::Client(c)) if c.occupied != 0 || c.suspects > 0 => {
                let before = c.suspects;
                let verdict = c.scan(now, timers, &mut self.out.stats);
                self.timers.pending_suspects = self.timers.pending_suspects + c.suspects - before;
                match verdict {
                    Verdict::Ok => {}
                    Verdict::RolledBack => self.schedule_client(id),
                    Verdict::Reset(reason) => self.step(now, id, SessionInput::Reset, reason),
                }
            }
            _ => {}
        }
    }

    /// Arms session `id` at its next deadline, if it has one and is not
    /// already armed at or before it. O(window); called on state changes
    /// and after a session's timer fired, never per packet.
    pub(crate) fn rearm(&mut self, now: Instant, id: SessionId) {
        let timers = self.timers.loss;
        let c = &self.cfg;
        let (keepalive, idle, half_open) =
            (c.keepalive_interval, c.idle_timeout, c.half_open_timeout);
        let reassembly = c.mem.reassembly_timeout;
        let period = self.housekeeping_period();
        let Some(sess) = self.table.get_mut(id) else {
            return;
        };
        let state = sess.common().state;
        let at = match sess {
            _ if matches!(
                state,
                SessionState::Connecting | SessionState::Disconnecting
            ) =>
            {
                let sm = sess.common().sm;
                Some(sm.next_retry.min(sm.deadline))
            }
            Session::Client(c) if state == SessionState::Connected => {
                let ka = c.common.active_at + keepalive;
                Some(c.loss_deadline(timers).map_or(ka, |l| l.min(ka)))
            }
            Session::Server(s) => {
                let limit = if s.common.heard { idle } else { half_open };
                let due = s.common.active_at + limit;
                // Past due but held by a handler: look again a period later.
                let due = if due <= now { now + period } else { due };
                // Held memory expires on its own clock (keepalives do not
                // move it); armed for it, memory taken later needs no arming.
                let expiry = s.expiry(reassembly);
                s.expiry_armed = expiry.is_some();
                Some(expiry.map_or(due, |e| e.min(due)))
            }
            Session::Client(_) => None,
        };
        if let Some(at) = at {
            // Never at or before `now`: a deadline that is due has just
            // been handled, and the next look is at least one grain later.
            let at = at.max(now + Duration::from_nanos(1));
            self.timers.heap.arm(id, at);
        }
    }

    /// Period at which a server session held by a handler past its idle
    /// limit is looked at again (a quarter of the shortest housekeeping
    /// timer, as the former keepalive/idle scan ran).
    fn housekeeping_period(&self) -> Duration {
        Duration::from_nanos(
            self.cfg
                .keepalive_interval
                .min(self.cfg.half_open_timeout)
                .as_nanos()
                / 4,
        )
    }

    /// Keepalive for an idle client session; for a server session, expiry
    /// of memory held without progress, and reclamation once its client
    /// went silent (not while a handler holds one of its requests: the
    /// client is waiting for that answer).
    fn housekeeping(&mut self, now: Instant, id: SessionId) {
        let c = &self.cfg;
        let (keepalive, idle, half_open) =
            (c.keepalive_interval, c.idle_timeout, c.half_open_timeout);
        let reassembly = c.mem.reassembly_timeout;
        let Some(sess) = self.table.get_mut(id) else {
            return;
        };
        match sess {
            Session::Client(c) if c.common.state == SessionState::Connected => {
                if now.saturating_since(c.common.active_at) >= keepalive {
                    c.common.active_at = now;
                    self.out.stats.keepalives_sent += 1;
                    self.txq.ctrl.push_back(TxDesc::KeepAlive(id));
                }
            }
            Session::Server(s) => {
                let gone = s.expire(now, reassembly, &mut self.ledger);
                self.out.stats.reassembly_timeouts += gone.requests;
                self.out.stats.responses_expired += gone.responses;
                let limit = if s.common.heard { idle } else { half_open };
                if now.saturating_since(s.common.active_at) >= limit && !s.in_handler() {
                    self.step(now, id, SessionInput::IdleTimeout, RpcError::PeerTimeout);
                }
            }
            Session::Client(_) => {}
        }
    }
    /// Handshake retry or give-up for a Connecting/Disconnecting session.
    fn handshake_timer(&mut self, now: Instant, id: SessionId) {
        let retry = self.cfg.connect_retry;
        let Some(sess) = self.table.get_mut(id) else {
            return;
        };
        let c = sess.common_mut();
        let connecting = c.state == SessionState::Connecting;
        if now >= c.sm.deadline {
            if connecting {
                self.step(
                    now,
                    id,
                    SessionInput::ConnectTimeout,
                    RpcError::ConnectTimeout,
                );
            } else {
                // The server is gone or unreachable: free locally anyway.
                self.step(
                    now,
                    id,
                    SessionInput::DisconnectDone,
                    RpcError::SessionClosed,
                );
            }
            return;
        }
        if now >= c.sm.next_retry {
            c.sm.next_retry = now + retry;
            self.txq.ctrl.push_back(if connecting {
                TxDesc::ConnectReq(id)
            } else {
                TxDesc::DisconnectReq(id)
            });
        }
    }
}
