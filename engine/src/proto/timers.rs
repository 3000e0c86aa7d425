//! Timers: one periodic scan (every `scan_interval`, as in eRPC) drives loss
//! recovery and the handshake retries, so the endpoint needs a single
//! deadline and `poll_timeout` is O(1).
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

use super::session::{Next, SessionInput};
use super::{Endpoint, Event, FlowMode, LossPolicy, RpcError, SessionId, SessionState};
use crate::time::Instant;

/// What the scan decided for one client session.
enum Verdict {
    Ok,
    /// Some requests rolled back: schedule transmission.
    RolledBack,
    Reset(RpcError),
}

impl Endpoint {
    /// Runs the timers due at `now`. Cheap to call early (it returns at
    /// once before the scan deadline) and safe to call late.
    pub fn handle_timeout(&mut self, now: Instant) {
        if now < self.next_scan {
            return;
        }
        self.next_scan = now + self.cfg.scan_interval;
        for num in 0..self.sessions.len() as u16 {
            let Some(sess) = self.sessions[num as usize].as_ref() else {
                continue;
            };
            let id = sess.id(num);
            match sess.state {
                SessionState::Connecting | SessionState::Disconnecting => self.sm_timer(now, id),
                SessionState::Connected if sess.client().is_some_and(|c| c.active > 0) => {
                    match self.scan_client(now, id) {
                        Verdict::Ok => {}
                        Verdict::RolledBack => self.schedule_client(num),
                        Verdict::Reset(reason) => self.reset_session(id, reason),
                    }
                }
                _ => {}
            }
        }
    }

    /// Handshake retry or give-up for a Connecting/Disconnecting session.
    fn sm_timer(&mut self, now: Instant, id: SessionId) {
        let retry = self.cfg.connect_retry;
        let Some(sess) = self.session_mut(id) else {
            return;
        };
        let connecting = sess.state == SessionState::Connecting;
        if now >= sess.sm.deadline {
            if connecting {
                self.connect_failed(id, RpcError::ConnectTimeout);
            } else {
                // The server is gone or unreachable: free locally anyway.
                let _ = sess.apply(SessionInput::DisconnectDone);
                self.sm_pending -= 1;
                self.free_session(id.num);
                self.events.push_back(Event::Disconnected(id));
            }
            return;
        }
        if now >= sess.sm.next_retry {
            sess.sm.next_retry = now + retry;
            self.tx_ctrl.push_back(if connecting {
                super::TxDesc::ConnectReq {
                    num: id.num,
                    gen: id.gen,
                }
            } else {
                super::TxDesc::DisconnectReq {
                    num: id.num,
                    gen: id.gen,
                }
            });
        }
    }

    /// Retransmission and session timeouts of a connected client session.
    fn scan_client(&mut self, now: Instant, id: SessionId) -> Verdict {
        let (rto, timeout, mode) = (self.cfg.rto, self.cfg.session_timeout, self.cfg.mode);
        let Some(c) = super::get_mut(&mut self.sessions, id).and_then(|s| s.client_mut()) else {
            return Verdict::Ok;
        };
        let mut verdict = Verdict::Ok;
        for slot in c.slots.iter_mut() {
            let Some(req) = slot.req.as_mut() else {
                continue;
            };
            let in_flight = req.in_flight();
            if in_flight == 0 && !req.rolled_back {
                continue; // idle or waiting for credits: not this request's fault
            }
            if now.saturating_since(req.progress_at) >= timeout {
                return Verdict::Reset(RpcError::PeerTimeout);
            }
            if in_flight == 0 || now.saturating_since(req.armed_at) < rto {
                continue;
            }
            self.stats.rollbacks += 1;
            if let FlowMode::Lossless { on_loss } = mode {
                self.stats.lossless_violations += 1;
                if on_loss == LossPolicy::ResetSession {
                    return Verdict::Reset(RpcError::LosslessViolation);
                }
            }
            c.credits += in_flight as u16;
            req.num_tx = req.num_rx;
            req.armed_at = now;
            req.rolled_back = true;
            verdict = Verdict::RolledBack;
        }
        verdict
    }

    /// Resets client session `id`: every request fails with `SessionReset`,
    /// credits and the ring reservation are released, and the session stays
    /// in state Reset (no more transmissions) until `disconnect` frees it.
    pub(crate) fn reset_session(&mut self, id: SessionId, reason: RpcError) {
        let Some(sess) = self.session_mut(id) else {
            return;
        };
        if !matches!(sess.apply(SessionInput::Reset), Ok(Next::To(_))) {
            return;
        }
        let reserved = std::mem::take(&mut sess.ring_reserved);
        self.ring_reserved -= reserved;
        self.stats.session_resets += 1;
        self.events.push_back(Event::SessionReset {
            session: id,
            reason,
        });
        self.fail_all_requests(id, RpcError::SessionReset);
    }
}
