//! Application commands on requests and their bookkeeping: enqueueing a
//! request (into a free slot or the backlog), answering one (response or
//! error), and what happens when a client request completes or fails (its
//! buffers go home by drop, the backlog head takes the slot, the
//! application hears of failures through `Event::RequestFailed`).

use super::client::{ClientSession, Pending};
use super::config::Retransmit;
use super::endpoint::Endpoint;
use super::error::RpcError;
use super::ids::{ReqHandle, SessionId};
use super::loss::retime_quiet;
use super::msgbuf::MsgBuf;
use super::server::{Answer, StoreCtx};
use super::state::SessionState;
use super::table::Session;
use super::transmit::schedule;
use super::txq::AnswerKind;
use crate::time::Instant;
use crate::wire::ErrorCode;

impl Endpoint {
    /// Queues a request of type `req_type` on client session `s`. The
    /// endpoint owns `msg` until the request completes (then it goes back to
    /// the pool); `tag` comes back with the response or failure. Allowed in
    /// Connecting (sent once connected) and Connected. On error `msg` is
    /// handed back.
    pub fn enqueue_request(
        &mut self,
        now: Instant,
        s: SessionId,
        req_type: u8,
        msg: MsgBuf,
        tag: u64,
    ) -> Result<(), (RpcError, MsgBuf)> {
        let max = self.cfg.max_msg_size;
        if msg.len() > max {
            let len = msg.len();
            return Err((RpcError::MsgTooLarge { len, max }, msg));
        }
        let dpp = self.cfg.dpp;
        let Some(sess) = self.table.get_mut(s) else {
            return Err((RpcError::UnknownSession, msg));
        };
        let state = sess.common().state;
        if !matches!(state, SessionState::Connecting | SessionState::Connected) {
            return Err((RpcError::InvalidState { state }, msg));
        }
        let Session::Client(c) = sess else {
            return Err((RpcError::WrongRole, msg));
        };
        let limit = self.cfg.max_backlog;
        let selective = self.cfg.retransmit == Retransmit::Selective;
        match c.free_slot() {
            Some(i) => {
                c.start(i, Pending { req_type, msg, tag }, now, dpp, selective);
                self.timers.active_client_reqs += 1;
                schedule(&mut self.txq, c);
            }
            None if c.backlog.len() >= limit => {
                self.out.stats.backlog_full += 1;
                return Err((RpcError::BacklogFull { limit }, msg));
            }
            None => c.backlog.push_back(Pending { req_type, msg, tag }),
        }
        Ok(())
    }

    /// Answers the request behind `h` with `msg` (ownership passes to the
    /// endpoint: it is kept to answer duplicates and RFRs, and returned to
    /// the pool when the slot's next request arrives or the session closes).
    /// Response packet 0 goes out unasked, and so do the packets after it
    /// that the client granted credits for; the client pulls the rest.
    ///
    /// A multi-packet response is charged to the memory budget
    /// (`EndpointConfig::mem`) while stored; one that does not fit is
    /// dropped and the client's request fails with
    /// `RpcError::Remote(ErrorCode::OverBudget)` (counted in
    /// `responses_over_budget`; this still returns `Ok`: the request was
    /// answered). Unasked for during `reassembly_timeout`, it is freed.
    #[inline]
    pub fn respond(&mut self, now: Instant, h: ReqHandle, msg: MsgBuf) -> Result<(), RpcError> {
        let max = self.cfg.max_msg_size;
        if msg.len() > max {
            let len = msg.len();
            return Err(RpcError::MsgTooLarge { len, max });
        }
        self.answer(h, Answer::Response(msg), now)
    }

    /// Answers the request behind `h` with an error instead of a response
    /// (e.g. `ErrorCode::NoHandler` for a request type nobody serves): one
    /// `ErrorResponse` packet, and the client's request fails at once with
    /// `RpcError::Remote(code)`.
    pub fn respond_error(&mut self, h: ReqHandle, code: ErrorCode) -> Result<(), RpcError> {
        // Nothing is charged for an error, so no time is needed.
        self.answer(h, Answer::Error(code), Instant::ZERO)
    }

    fn answer(&mut self, h: ReqHandle, answer: Answer, now: Instant) -> Result<(), RpcError> {
        let srv = self
            .table
            .server_mut(h.session)
            .filter(|x| x.common.state == SessionState::Connected)
            .ok_or(RpcError::StaleHandle)?;
        let armed = srv.expiry_armed;
        let cx = StoreCtx {
            dpp: self.cfg.dpp,
            now,
            ledger: &mut self.ledger,
        };
        let st = srv
            .store_answer(h.req_num, answer, cx)
            .map_err(|_| RpcError::StaleHandle)?;
        if st.over_budget {
            self.out.stats.responses_over_budget += 1;
        }
        self.out.stats.pool_trimmed = self.ledger.trimmed_bytes();
        if st.charged && !armed {
            self.arm_expiry(h.session, now);
        }
        let kind = if st.error {
            AnswerKind::Error
        } else {
            AnswerKind::Response
        };
        for _ in 0..st.copies {
            self.txq.answer(h.session, h.req_num, kind, 0);
        }
        // The packets the client granted credits for go out unasked.
        for k in 1..=st.extra {
            self.txq.answer(h.session, h.req_num, kind, k);
        }
        Ok(())
    }

    /// The request in `slot` completed: count it, start the next one, and
    /// return its tag.
    pub(crate) fn finish_request(
        &mut self,
        s: SessionId,
        slot: usize,
        now: Instant,
    ) -> Option<u64> {
        let (dpp, selective) = (self.cfg.dpp, self.cfg.retransmit == Retransmit::Selective);
        // One lookup for the whole completion: take, refill, schedule, retime.
        let c = self.table.client_mut(s)?;
        let tag = c.take(slot)?;
        self.timers.active_client_reqs -= 1;
        self.out.stats.requests_completed += 1;
        if refill(c, slot, now, dpp, selective) {
            self.timers.active_client_reqs += 1;
        }
        schedule(&mut self.txq, c);
        retime_quiet(&mut self.timers, c, self.cfg.keepalive_interval);
        Some(tag)
    }

    /// Fails the request in `slot` with `error` (its buffers go home on drop).
    pub(crate) fn fail_request(&mut self, s: SessionId, slot: usize, error: RpcError) {
        let Some(tag) = self.table.client_mut(s).and_then(|c| c.take(slot)) else {
            return;
        };
        self.timers.active_client_reqs -= 1;
        self.out.request_failed(s, tag, error);
    }

    /// Moves the backlog head into free `slot` and schedules transmission.
    pub(crate) fn refill_slot(&mut self, s: SessionId, slot: usize, now: Instant) {
        let dpp = self.cfg.dpp;
        let selective = self.cfg.retransmit == Retransmit::Selective;
        let Some(c) = self.table.client_mut(s) else {
            return;
        };
        if refill(c, slot, now, dpp, selective) {
            self.timers.active_client_reqs += 1;
        }
        schedule(&mut self.txq, c);
    }

    /// Fails every request of client session `s`, in slots and backlog.
    pub(crate) fn fail_all_requests(&mut self, s: SessionId, error: RpcError) {
        for slot in 0..self.cfg.req_window {
            self.fail_request(s, slot, error);
        }
        while let Some(p) = self.table.client_mut(s).and_then(|c| c.backlog.pop_front()) {
            self.out.request_failed(s, p.tag, error);
        }
    }
}

/// Moves the backlog head of `c` into `slot` if the slot is free; whether
/// it did.
fn refill(c: &mut ClientSession, slot: usize, now: Instant, dpp: usize, selective: bool) -> bool {
    if c.slots[slot].req.is_some() {
        return false;
    }
    let Some(p) = c.backlog.pop_front() else {
        return false;
    };
    c.start(slot, p, now, dpp, selective);
    true
}
