//! `poll_transmit`: turns one queued descriptor into one whole Ethernet
//! frame in the caller's buffer: control packets (server answers and
//! handshake packets) first, then client packets round-robin over the
//! sessions that have work and credits.

use super::client::ClientSession;
use super::congestion::{on_client_sent, pace_or_wait};
use super::endpoint::Endpoint;
use super::ids::SessionId;
use super::msgbuf::{CopyBytes, PayloadCopy};
use super::rccc::Waiting;
use super::state::SessionState;
use super::table::Session;
use super::txq::{SmReply, TxDesc, TxQueues};
use crate::time::Instant;
use crate::wire::{HeaderTemplate, SmRepr, SmStatus, SmType};

/// `Endpoint::schedule_client` for a session the caller has looked up
/// already (one table lookup per command, not one per step).
pub(crate) fn schedule(txq: &mut TxQueues, c: &mut ClientSession) {
    if c.common.state == SessionState::Connected && c.wants_tx() {
        c.tx_queued = true;
        txq.clients.push_back(c.common.id());
    }
}

impl Endpoint {
    /// Writes the next frame into `buf` and returns its length, or `None` if
    /// there is nothing to send now (including: packets waiting for credits).
    ///
    /// # Panics
    /// If `buf` is shorter than [`min_tx_buf_len`](Self::min_tx_buf_len)
    /// (`70 + max_data_per_pkt`): a caller bug, not a network condition.
    #[inline]
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.poll_transmit_with::<CopyBytes>(now, buf)
    }

    /// Whether [`poll_transmit`](Self::poll_transmit) would do nothing now
    /// and at any later time until something else changes the endpoint:
    /// no frame queued and no session waiting on either pacer. Exact, not a
    /// hint (unlike [`has_pending_transmit`](Self::has_pending_transmit),
    /// which leaves the pacers out): a caller that polls many endpoints
    /// skips those with nothing to send.
    #[inline]
    pub fn transmit_idle(&self) -> bool {
        self.txq.is_empty() && self.txq.pacer.is_empty() && self.txq.credit.is_empty()
    }

    /// [`poll_transmit`](Self::poll_transmit) with the payload bytes of
    /// request and response packets moved into the frame by `C` (see
    /// [`PayloadCopy`]): chosen at compile time, so a real link's calls
    /// pay for nothing but the copy.
    ///
    /// # Panics
    /// As `poll_transmit`.
    pub fn poll_transmit_with<C: PayloadCopy>(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<usize> {
        assert!(
            buf.len() >= self.min_tx_buf_len(),
            "poll_transmit: buffer of {} bytes, need {}",
            buf.len(),
            self.min_tx_buf_len()
        );
        if !self.txq.pacer.is_empty() {
            self.release_paced(now);
        }
        if !self.txq.credit.is_empty() {
            self.release_credits(now);
        }
        let len = self
            .next_ctrl_frame::<C>(now, buf)
            .or_else(|| self.next_client_frame::<C>(now, buf))?;
        self.out.stats.tx_pkts += 1;
        self.out.stats.tx_bytes += len as u64;
        Some(len)
    }

    /// Queues client session `s` for transmission if it is connected, has
    /// sendable packets and credits, and is not queued yet.
    pub(crate) fn schedule_client(&mut self, s: SessionId) {
        if let Some(c) = self.table.client_mut(s) {
            schedule(&mut self.txq, c);
        }
    }

    fn next_ctrl_frame<C: PayloadCopy>(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        while let Some(d) = self.txq.ctrl.pop_front() {
            let written = match d {
                TxDesc::Answer {
                    session,
                    req_num,
                    kind,
                    pkt,
                } => {
                    let Some(s) = self
                        .table
                        .server_mut(session)
                        .filter(|s| s.common.state == SessionState::Connected)
                    else {
                        continue;
                    };
                    if self.pause.is_paused(s.common.link, now) {
                        // Held with everything else towards that peer.
                        if let Some(l) = self.pause.link_mut(s.common.link) {
                            l.parked_ctrl.push_back(d);
                        }
                        continue;
                    }
                    s.write_answer::<C>(buf, req_num, kind, pkt, (self.cfg.dpp, self.cfg.rccc))
                }
                TxDesc::Pause { link, us } => self.write_pause(buf, link, us),
                TxDesc::Cnp(s) => self.write_cnp(buf, s),
                TxDesc::ConnectReq(s) => self.write_client_sm(buf, s, SmType::ConnectReq),
                TxDesc::DisconnectReq(s) => self.write_client_sm(buf, s, SmType::DisconnectReq),
                TxDesc::KeepAlive(s) => self.write_client_sm(buf, s, SmType::KeepAlive),
                TxDesc::SmReply(r) => Some(self.write_sm_reply(buf, &r)),
            };
            if written.is_some() {
                return written;
            }
        }
        None
    }

    /// Writes the next client packet (request or RFR) of the first queued
    /// session that can send, one packet per session per turn.
    fn next_client_frame<C: PayloadCopy>(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        while let Some(s) = self.txq.clients.pop_front() {
            let Some(c) = self.table.client_mut(s) else {
                continue;
            };
            if self.txq.pacer.on() {
                let waits = &mut self.out.stats.pacing_waits;
                if let Some(cc) = c.cc.as_mut() {
                    if pace_or_wait(&mut self.txq.pacer, waits, now, s, cc) {
                        continue;
                    }
                }
            }
            if c.common.state != SessionState::Connected {
                c.tx_queued = false;
                continue;
            }
            if self.pause.is_paused(c.common.link, now) {
                // Parked (still marked queued) until the peer's XON.
                if let Some(l) = self.pause.link_mut(c.common.link) {
                    l.parked_clients.push(s);
                }
                continue;
            }
            let turn = c.write_next::<C>(now, buf, self.cfg.dpp, &mut self.out.stats);
            if turn.written.is_some() {
                // A packet sent may have started an RTO (`armed_at = now`):
                // O(1) when the session is armed earlier already.
                // Selective: the short RTO may apply once most answers are in.
                let rto = self.timers.loss.rto_after_send();
                self.timers.heap.arm(s, now + rto);
            }
            if turn.again {
                c.tx_queued = true;
                self.txq.clients.push_back(s);
            }
            if let Some(len) = turn.written {
                if self.txq.pacer.on() {
                    if let Some(cc) = c.cc.as_mut() {
                        on_client_sent(&self.txq.pacer, now, len, cc);
                    }
                }
                return turn.written;
            }
        }
        None
    }

    /// Sessions whose pacing time has come go back to the transmit queue.
    pub(crate) fn release_paced(&mut self, now: Instant) {
        while let Some(s) = self.txq.pacer.pop_due(now) {
            // One lookup, not two (`schedule_client` would look it up again).
            if let Some(c) = self.table.client_mut(s) {
                c.tx_queued = false;
                schedule(&mut self.txq, c);
            }
        }
    }

    /// RCCC: server session `s` received request packets whose credits
    /// the pacer returns; it joins the pacer's FIFO unless it waits there.
    pub(crate) fn rccc_wait(&mut self, s: SessionId) {
        let Some(srv) = self.table.server_mut(s) else {
            return;
        };
        match std::mem::replace(&mut srv.rccc, Waiting::Queued) {
            Waiting::Queued => return,
            Waiting::Parked => self.txq.credit.parked -= 1,
            Waiting::Idle => {}
        }
        self.txq.credit.join(s);
    }

    /// RCCC: the grants due at `now`, one session each, round robin: the
    /// front session's next packets released by a CR, the session back at
    /// the tail while it has more (`rccc.rs`).
    pub(crate) fn release_credits(&mut self, now: Instant) {
        while let Some(s) = self.txq.credit.pop_due(now) {
            let Some(srv) = self.table.server_mut(s) else {
                continue; // freed since
            };
            let g = srv.grant_credits(self.txq.credit.sharing());
            // Back to the tail while it has more to release; a session
            // with its share out is parked until its next packet arrives
            // (`rccc_wait`), the only thing that makes room for it.
            srv.rccc = match (g.more, g.credits > 0) {
                (false, _) => Waiting::Idle,
                (true, true) => {
                    self.txq.credit.join(s);
                    Waiting::Queued
                }
                (true, false) => {
                    self.txq.credit.parked += 1;
                    Waiting::Parked
                }
            };
            if g.queue_cr {
                self.txq
                    .answer(s, g.req_num, super::txq::AnswerKind::CreditReturn, 0);
            }
            if g.credits > 0 {
                self.txq.credit.charge(now, g.credits);
            }
        }
    }

    /// Client handshake request (ConnectReq or DisconnectReq), if the
    /// session is still in the state that sends it.
    fn write_client_sm(&self, buf: &mut [u8], s: SessionId, sm_type: SmType) -> Option<usize> {
        let Some(Session::Client(c)) = self.table.get(s) else {
            return None;
        };
        let want = match sm_type {
            SmType::ConnectReq => SessionState::Connecting,
            SmType::KeepAlive => SessionState::Connected,
            _ => SessionState::Disconnecting,
        };
        if c.common.state != want {
            return None;
        }
        let body = SmRepr {
            sm_type,
            status: SmStatus::Ok,
            client_session: s.num,
            server_session: c.common.remote,
            credits: c.credits_total,
            mtu: self.cfg.mtu as u16,
            req_window: self.cfg.req_window as u16,
            // A ConnectReq carries the server's cookie once it has one.
            server_token: c.common.sm.cookie,
        };
        let cm = &c.common;
        Some(cm.template.write_sm(buf, cm.remote, cm.token, &body))
    }

    fn write_sm_reply(&self, buf: &mut [u8], r: &SmReply) -> usize {
        let l = self.cfg.local;
        let template = HeaderTemplate::new((l.mac, l.ip, l.port), r.dst);
        template.write_sm(buf, r.dest_session, r.token, &r.body)
    }
}
