//! The one place a session changes state: [`Endpoint::change_state`] looks
//! the step up in the declared table (`state.rs`) and runs its effects in
//! order (handshake timer, failing requests, ring reservation, transmit
//! scheduling, events and their counters, freeing). Nothing else writes a
//! session's state; sessions are only born here-adjacent, in `handshake.rs`,
//! in the state the table starts them in.

use super::endpoint::Endpoint;
use super::error::RpcError;
use super::event::Event;
use super::ids::SessionId;
use super::pause_peers::NO_LINK;
use super::state::{transition, Effect, EventKind, FailCause, Next, SessionInput};
use super::table::Session;
use super::txq::TxDesc;
use crate::time::Instant;
use crate::wire::MacAddr;

impl Endpoint {
    /// Applies `input` to session `id` and runs the step's effects. `reason`
    /// is what the step's event carries (ConnectFailed, SessionReset);
    /// other steps ignore it. Errors: the session does not exist, or the
    /// table has no such transition from its state (nothing changes then).
    pub(crate) fn change_state(
        &mut self,
        now: Instant,
        id: SessionId,
        input: SessionInput,
        reason: RpcError,
    ) -> Result<Next, RpcError> {
        let common = self
            .table
            .get_mut(id)
            .ok_or(RpcError::UnknownSession)?
            .common_mut();
        let state = common.state;
        let step = transition(state, input).map_err(|_| RpcError::InvalidState { state })?;
        if let Next::To(to) = step.next {
            common.state = to;
            self.table.note_state(state, to);
        }
        for &effect in step.effects {
            self.run_effect(now, id, effect, reason);
        }
        // The new state may have an earlier deadline (a handshake, a
        // keepalive); a freed session has none.
        self.rearm(now, id);
        Ok(step.next)
    }

    /// `change_state` where the caller has checked the session's state: a
    /// refusal would be an engine bug, counted in `invalid_transitions`
    /// (which tests require to stay 0) rather than ignored.
    pub(crate) fn step(
        &mut self,
        now: Instant,
        id: SessionId,
        input: SessionInput,
        reason: RpcError,
    ) {
        if let Err(e) = self.change_state(now, id, input, reason) {
            debug_assert!(false, "{input:?} on {id}: {e}");
            self.out.stats.invalid_transitions += 1;
        }
    }

    /// One effect of a transition (or of a session's birth).
    pub(crate) fn run_effect(
        &mut self,
        now: Instant,
        id: SessionId,
        effect: Effect,
        reason: RpcError,
    ) {
        match effect {
            Effect::StartHandshake => {
                let (retry, timeout) = (self.cfg.connect_retry, self.cfg.connect_timeout);
                if let Some(s) = self.table.get_mut(id) {
                    let sm = &mut s.common_mut().sm;
                    sm.next_retry = now + retry;
                    sm.deadline = now + timeout;
                    self.timers.sm_pending += 1;
                }
                self.rearm(now, id);
            }
            Effect::EndHandshake => {
                if let Some(s) = self.table.get_mut(id) {
                    s.common_mut().sm = super::session::SmTimer::IDLE;
                    self.timers.sm_pending -= 1;
                }
            }
            Effect::SendDisconnectReq => self.txq.ctrl.push_back(TxDesc::DisconnectReq(id)),
            Effect::FailRequests(cause) => {
                let error = match cause {
                    FailCause::Closed => RpcError::SessionClosed,
                    FailCause::Reset => RpcError::SessionReset,
                };
                self.fail_all_requests(id, error);
                self.drop_suspects(id);
            }
            Effect::ReleaseRing => {
                if let Some(s) = self.table.get_mut(id) {
                    let acct = match s {
                        Session::Server(srv) => Some((srv.acct, srv.common.peer.mac)),
                        Session::Client(_) => None,
                    };
                    let back = std::mem::take(&mut s.common_mut().ring_reserved);
                    self.ledger.unreserve_ring(back);
                    if let Some((acct, mac)) = acct {
                        self.ledger.hold_ring(acct, back, true);
                        let mac = mac.unwrap_or(MacAddr::BROADCAST);
                        self.gate.macs.hold_ring(mac, back, true);
                    }
                }
            }
            Effect::Schedule => self.schedule_client(id),
            Effect::Emit(kind) => self.emit(id, kind, reason),
            Effect::Free => self.free_session(id),
        }
    }

    /// Ends every timeout judgement of client session `id` unjudged: its
    /// requests are gone, so there is nothing left to decide.
    fn drop_suspects(&mut self, id: SessionId) {
        if let Some(c) = self.table.client_mut(id) {
            for i in 0..c.slots.len() {
                if c.take_suspect(i).is_some() {
                    self.timers.pending_suspects -= 1;
                }
            }
        }
    }

    /// Reports `kind` for session `id` and counts it.
    fn emit(&mut self, session: SessionId, kind: EventKind, reason: RpcError) {
        let ev = match kind {
            EventKind::Connected => {
                self.out.stats.sessions_connected += 1;
                Event::Connected(session)
            }
            EventKind::ConnectFailed => Event::ConnectFailed { session, reason },
            EventKind::Disconnected => Event::Disconnected(session),
            EventKind::SessionReset => {
                self.out.stats.session_resets += 1;
                Event::SessionReset { session, reason }
            }
            EventKind::PeerSessionClosed => Event::PeerSessionClosed(session),
            EventKind::PeerSessionReclaimed => {
                self.out.stats.sessions_reclaimed += 1;
                Event::PeerSessionReclaimed(session)
            }
        };
        self.out.events.push_back(ev);
    }

    /// Removes session `id`: its buffers go back to the pool (by drop), its
    /// ring reservation to the ring, its number to the free list. Requests
    /// must already be failed or completed.
    fn free_session(&mut self, id: SessionId) {
        let Some(mut sess) = self.table.remove(id) else {
            return;
        };
        if self.table.live() == 0 {
            // Every heap entry is stale now: drop them, so `poll_timeout`
            // says `None` again.
            self.timers.heap.clear();
        }
        self.ledger.unreserve_ring(sess.common().ring_reserved);
        if sess.common().link != NO_LINK {
            self.pause.detach(sess.common().link);
        }
        match &mut sess {
            Session::Server(srv) => {
                if srv.rccc == super::rccc::Waiting::Parked {
                    self.txq.credit.parked -= 1;
                }
                // Its buffers go home when `sess` drops; their charges now.
                srv.release_all(&mut self.ledger);
                let held = srv.common.ring_reserved;
                self.ledger.hold_ring(srv.acct, held, true);
                self.ledger.detach(srv.acct);
                let mac = srv.common.peer.mac.unwrap_or(MacAddr::BROADCAST);
                self.gate.macs.hold_ring(mac, held, true);
                self.gate.macs.detach(mac);
                let c = &srv.common;
                self.gate.forget((c.peer.ip, c.peer.port, c.remote), id);
            }
            Session::Client(c) => debug_assert_eq!(c.active(), 0, "freed with requests in slots"),
        }
    }

    /// Reserves `need` ring entries and a table slot for a new session,
    /// both or neither: `NoRingSpace` or `TooManySessions`.
    pub(crate) fn reserve_session(&mut self, need: usize) -> Result<SessionId, RpcError> {
        self.ledger.reserve_ring(need)?;
        self.table.reserve().ok_or_else(|| {
            self.ledger.unreserve_ring(need);
            RpcError::TooManySessions
        })
    }
}
