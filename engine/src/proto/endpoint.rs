//! The [`Endpoint`]: its fields, one struct per concern that owns its own
//! state (settings, sessions, handshake gate, ledger, transmit queues and
//! pacer, timers, pause links, output), getters, and `handle_frame`, which
//! parses a frame once and hands it to the concern that owns its packet
//! kind. The other `impl Endpoint` blocks, which orchestrate several
//! concerns, live beside their concern: `handshake.rs`, `requests.rs`,
//! `transmit.rs`, `loss.rs`, `lifecycle.rs`, `pause.rs`, `congestion.rs`.

use super::budget::Ledger;
use super::client_rx::AnswerRx;
use super::config::{EndpointAddr, EndpointConfig, Retransmit};
use super::error::EndpointConfigError;
use super::event::{Delivery, Event};
use super::gate::Gate;
use super::ids::SessionId;
use super::msgbuf::{CopyBytes, MsgBuf, MsgPool, PayloadCopy, PoolStats};
use super::output::Output;
use super::pause_peers::PausePeers;
use super::police::Police;
use super::recovery::Timers;
use super::secrets::SecretKey;
use super::server_rx::{GapRule, RequestRx};
use super::settings::Settings;
use super::state::SessionState;
use super::stats::{SessionCounts, Stats};
use super::table::SessionTable;
use super::txq::{AnswerKind, TxQueues};
use crate::time::Instant;
use crate::wire::{self, Parsed, PktType, HEADERS_LEN};
use std::net::Ipv4Addr;

/// One RPC endpoint: a client and a server at once, owned by one thread.
///
/// # Call order
///
/// Methods fall in four groups, as in quinn-proto:
///
/// - **getters**: [`stats`](Self::stats), [`session_state`](Self::session_state),
///   [`session_credits_available`](Self::session_credits_available),
///   [`sessions_by_state`](Self::sessions_by_state),
///   [`max_data_per_pkt`](Self::max_data_per_pkt),
///   [`has_pending_transmit`](Self::has_pending_transmit), ...
/// - **inputs**: [`handle_frame`](Self::handle_frame) for every received
///   frame, [`handle_timeout`](Self::handle_timeout) when the time from
///   `poll_timeout` is reached (calling it early or late is harmless).
/// - **commands**: [`connect`](Self::connect), [`disconnect`](Self::disconnect),
///   [`alloc_msg`](Self::alloc_msg), [`enqueue_request`](Self::enqueue_request),
///   [`respond`](Self::respond), [`respond_error`](Self::respond_error);
///   allowed at any time, including while holding a [`Delivery`] (it borrows
///   the frame, not the endpoint).
/// - **outputs**: after any input or command, drain
///   [`poll_transmit`](Self::poll_transmit) until `None` (or until the TX
///   batch is full: what is left stays queued), then
///   [`poll_event`](Self::poll_event) until `None`, then re-arm the timer with
///   [`poll_timeout`](Self::poll_timeout).
///
/// A run loop iteration is therefore: receive a burst and `handle_frame`
/// each (acting on each `Delivery`), `handle_timeout(now)` if due, drain
/// `poll_transmit` into TX buffers, drain `poll_event`, read `poll_timeout`.
#[derive(Debug)]
pub struct Endpoint {
    /// The configuration and the values derived from it once.
    pub(crate) cfg: Settings,
    /// The sessions, by number, with their counts per state.
    pub(crate) table: SessionTable,
    /// Handshake state apart from the sessions: accepted client sessions,
    /// secrets, the wrong-token tally, the client-token stream.
    pub(crate) gate: Gate,
    /// Memory and receive-ring reservations held for peers, and the
    /// message-buffer pool they come from.
    pub(crate) ledger: Ledger,
    /// Transmit work: control descriptors, client sessions with packets,
    /// and client sessions waiting for their pacing time.
    pub(crate) txq: TxQueues,
    /// Every session's deadline, the loss timeouts, the busy counts.
    pub(crate) timers: Timers,
    /// Pause mode: peer links, their pauses and the receiver's XOFF state.
    pub(crate) pause: PausePeers,
    /// Sources barred for violating their sessions' credits.
    pub(crate) police: Police,
    /// Events for the application and the counters.
    pub(crate) out: Output,
}

impl Endpoint {
    /// An endpoint with no sessions; fails if `cfg` does not validate.
    pub fn new(cfg: EndpointConfig) -> Result<Self, EndpointConfigError> {
        let pool = MsgPool::keeping(cfg.max_msg_size, cfg.mem.pool_keep);
        Self::with_pool(cfg, pool)
    }

    /// An endpoint that takes its message buffers from `pool`, which other
    /// endpoints on the same thread may share (a simulator with hundreds of
    /// endpoints then reuses buffers across all of them instead of warming
    /// a pool per endpoint). Its pool counters are the shared pool's.
    pub fn with_pool(cfg: EndpointConfig, pool: MsgPool) -> Result<Self, EndpointConfigError> {
        cfg.validate()?;
        let secret = cfg.secret.unwrap_or(SecretKey::from_seed(cfg.seed));
        Ok(Endpoint {
            table: SessionTable::new(cfg.max_sessions),
            gate: Gate::new(cfg.seed, secret, cfg.admission.wrong_tokens_per_sec),
            ledger: Ledger::new(&cfg.mem, pool, cfg.rx_ring_entries),
            txq: TxQueues::new(&cfg),
            timers: Timers::new(&cfg),
            pause: PausePeers::default(),
            police: Police::new(Police::span_for(cfg.rto, cfg.rto_low)),
            out: Output::new(),
            cfg: Settings::new(cfg),
        })
    }

    // ---- getters ----

    /// The validated configuration.
    pub fn config(&self) -> &EndpointConfig {
        self.cfg.config()
    }

    /// This endpoint's own address.
    pub fn local_addr(&self) -> EndpointAddr {
        self.cfg.local
    }

    /// Counters (see [`Stats`]).
    pub fn stats(&self) -> &Stats {
        &self.out.stats
    }

    /// Counters of the message-buffer pool.
    pub fn pool_stats(&self) -> PoolStats {
        self.ledger.pool.stats()
    }

    /// Message buffers handed out by this endpoint's pool and not yet
    /// returned (held by the application or by sessions).
    pub fn msgs_outstanding(&self) -> u64 {
        self.ledger.pool.outstanding()
    }

    /// Bytes of free buffers the pool keeps (at most `mem.pool_keep` for
    /// a pool of its own).
    pub fn pool_free_bytes(&self) -> usize {
        self.ledger.pool.free_bytes()
    }

    /// Bytes the server side holds for all peers (reassembly buffers and
    /// stored multi-packet responses, by capacity): at most
    /// `mem.per_worker`.
    pub fn held_bytes(&self) -> usize {
        self.ledger.worker_bytes()
    }

    /// The same for one client address: at most `mem.per_peer`.
    pub fn held_bytes_of(&self, ip: Ipv4Addr) -> usize {
        self.ledger.peer_bytes(ip)
    }

    /// Payload bytes one packet carries (`mtu - PKT_OVERHEAD`, `mtu - 56`).
    pub fn max_data_per_pkt(&self) -> usize {
        self.cfg.dpp
    }

    /// Smallest `buf` that `poll_transmit` accepts: headers plus one packet of data.
    pub fn min_tx_buf_len(&self) -> usize {
        HEADERS_LEN + self.cfg.dpp
    }

    /// `None` if the session does not exist (any more).
    pub fn session_state(&self, s: SessionId) -> Option<SessionState> {
        self.table.get(s).map(|x| x.common().state)
    }

    /// Credits not held by packets in flight; `None` unless `s` is a live
    /// client session. Equals the session's credits whenever it is idle.
    pub fn session_credits_available(&self, s: SessionId) -> Option<u16> {
        self.table.client(s).map(|c| c.credits)
    }

    /// The rate congestion control allows client session `s` now, in
    /// bits/s; `None` without congestion control or for no such session.
    pub fn session_rate_bps(&self, s: SessionId) -> Option<u64> {
        self.table
            .client(s)
            .and_then(|c| c.cc.as_ref())
            .and_then(|c| c.rate_bps())
    }

    /// Requests of a client session not yet completed (in slots and backlog).
    pub fn session_pending_requests(&self, s: SessionId) -> Option<usize> {
        self.table.client(s).map(|c| c.active() + c.backlog.len())
    }

    /// How many sessions are in each state.
    pub fn sessions_by_state(&self) -> SessionCounts {
        self.table.counts()
    }

    /// Sessions whose handshake timer is armed (Connecting or
    /// Disconnecting ones, by construction).
    pub fn handshakes_pending(&self) -> usize {
        self.timers.sm_pending
    }

    /// Memory one session costs this endpoint, in bytes: its table entry,
    /// its slots (`req_window` of them), the client backlog's pre-sized
    /// entries or the server's duplicate-ConnectReq map entry (whichever
    /// role costs more), and its share of the timer heap (two entries).
    /// Message buffers are not counted: they come from the shared pool and
    /// scale with requests in flight, not with sessions.
    pub fn bytes_per_session(&self) -> usize {
        use super::client::{ClientSlot, Pending, BACKLOG_PRESIZE};
        use super::server::ServerSlot;
        use std::mem::size_of;
        type AcceptedEntry = (super::gate::ClientKey, (SessionId, u64));
        let w = self.cfg.req_window;
        let entry = size_of::<Option<super::table::Session>>();
        let client = w * size_of::<ClientSlot>() + BACKLOG_PRESIZE * size_of::<Pending>();
        // A hashbrown entry: the key-value pair plus one control byte.
        let server = w * size_of::<ServerSlot>() + size_of::<AcceptedEntry>() + 1;
        entry + client.max(server) + super::timers::ENTRY_BYTES
    }

    /// Receive-ring entries reserved by live sessions and the total.
    pub fn ring_usage(&self) -> (usize, usize) {
        self.ledger.ring_usage()
    }

    /// Server sessions and ring entries the addresses behind source MAC
    /// `mac` hold (`admission.max_sessions_per_mac`, `mac_ring_share_pct`).
    pub fn mac_usage(&self, mac: wire::MacAddr) -> super::MacUse {
        self.gate.macs.of(mac)
    }

    /// Whether `poll_transmit` may produce a frame. May be `true` spuriously
    /// (a queued item turned out stale); `poll_transmit` is authoritative.
    pub fn has_pending_transmit(&self) -> bool {
        !self.txq.is_empty()
    }

    /// When `handle_timeout` should next be called; `None` when nothing is
    /// waiting on a timer (no session at all). While sessions exist their
    /// keepalive/idle deadlines keep a timer armed; see
    /// [`is_idle`](Self::is_idle) for whether anything is actually in
    /// progress. O(1): the top of the deadline heap (it may be a deadline
    /// that no longer applies, so an early call is possible, never a late one).
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Plain `Option` minima: an array iterator here was 60 % of this
        // call's instructions, and a simulated host asks after every frame.
        let earliest = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        earliest(
            earliest(self.timers.heap.next(), self.pause.next_expiry()),
            earliest(self.txq.pacer.next_due(), self.txq.credit.next_due()),
        )
    }

    /// Whether nothing is in progress: no client request outstanding, no
    /// handshake pending, no timeout under judgement, nothing queued to
    /// send. Timers may still be armed for keepalives and idle reclamation.
    pub fn is_idle(&self) -> bool {
        !self.timers.busy()
            && self.txq.is_empty()
            && self.pause.next_expiry().is_none()
            && self.txq.pacer.is_empty()
            && self.txq.credit.is_empty()
    }

    /// Next event, if any.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.out
            .events
            .pop_front()
            .or_else(|| self.gate.wrong_tokens.next_report().map(Event::WrongTokens))
    }

    // ---- commands: message buffers ----

    /// A pooled message buffer of `len` bytes (contents unspecified); it
    /// returns to the pool when dropped.
    #[inline]
    pub fn alloc_msg(&mut self, len: usize) -> MsgBuf {
        self.ledger.pool.alloc(len)
    }

    // ---- inputs ----

    /// Processes one received frame. Returns a complete request (server
    /// side) or response (client side) when this frame completes one; all
    /// other outcomes (credit returns, handshake, drops) show up in stats,
    /// events and transmit work. Never panics on any input bytes.
    #[inline]
    pub fn handle_frame<'f>(&mut self, now: Instant, frame: &'f [u8]) -> Option<Delivery<'f>> {
        self.handle_frame_with::<CopyBytes>(now, frame)
    }

    /// [`handle_frame`](Self::handle_frame) with the payload bytes of a
    /// multi-packet message moved into its buffer by `C` (see
    /// [`PayloadCopy`]): chosen at compile time, so a real link's calls
    /// pay for nothing but the copy.
    pub fn handle_frame_with<'f, C: PayloadCopy>(
        &mut self,
        now: Instant,
        frame: &'f [u8],
    ) -> Option<Delivery<'f>> {
        let verify = self.cfg.verify_ipv4_checksum;
        self.handle_frame_verified::<C>(now, frame, verify)
    }

    /// `handle_frame_with`, checking the IPv4 header checksum only when
    /// `verify` (a device that checked it already: `rx_checked`).
    #[inline(always)]
    pub(super) fn handle_frame_verified<'f, C: PayloadCopy>(
        &mut self,
        now: Instant,
        frame: &'f [u8],
        verify: bool,
    ) -> Option<Delivery<'f>> {
        self.out.stats.rx_pkts += 1;
        self.out.stats.rx_bytes += frame.len() as u64;
        let Ok(p) = wire::parse_frame_with(frame, verify) else {
            self.out.stats.drops.malformed += 1;
            return None;
        };
        let local = &self.cfg.local;
        let mac_ok = p.dst_mac == local.mac || p.dst_mac.is_broadcast();
        if !mac_ok || p.dst_ip != local.ip || p.dst_port != local.port {
            self.out.stats.drops.not_ours += 1;
            return None;
        }
        if p.congestion_experienced() {
            self.out.stats.ecn_marks += 1;
            self.on_ce(now, &p.rpc);
        }
        match p.rpc.pkt_type {
            PktType::Request => self.rx_request::<C>(now, &p),
            PktType::ReqForResp => {
                self.rx_rfr(now, &p);
                None
            }
            PktType::Cnp => {
                self.rx_cnp(now, &p);
                None
            }
            PktType::CreditReturn
            | PktType::Response
            | PktType::ErrorResponse
            | PktType::Sack
            | PktType::Nak
            | PktType::TrimNak => self.rx_answer::<C>(now, &p),
            PktType::SessionMgmt => {
                if !self.source_barred(now, &p) {
                    self.handle_sm(now, &p);
                }
                None
            }
            PktType::Pause => {
                self.rx_pause(now, &p);
                None
            }
            PktType::Unknown(_) => {
                self.out.stats.drops.malformed += 1;
                None
            }
        }
    }

    /// A request packet: to its server session.
    fn rx_request<'f, C: PayloadCopy>(
        &mut self,
        now: Instant,
        p: &Parsed<'f>,
    ) -> Option<Delivery<'f>> {
        let mut srv = self.table.server_for_packet(
            now,
            p,
            &mut self.out.stats.drops,
            &mut self.gate.wrong_tokens,
        )?;
        if !srv.common.heard {
            // The handshake's last step (rare: once per session).
            let id = srv.common.id();
            if !self.first_contact(now, id) {
                return None;
            }
            srv = self.table.server_mut(id)?;
        }
        // The first look: more packets this epoch than its credits allow?
        if self.cfg.police.strikes > 0 {
            let epoch = self.police.epoch(now, self.out.stats.tx_pkts);
            if !srv.meter.within(epoch) {
                let id = srv.common.id();
                self.over_credit(now, id);
                return None;
            }
        }
        let d = &mut self.out.stats.drops;
        srv.common.heard_at(now);
        let sid = srv.common.id();
        let gaps = GapRule {
            selective: self.cfg.retransmit == Retransmit::Selective,
            nak: self.cfg.nak,
            regrants: self.cfg.admission.regrants_per_request,
        };
        let max_msg = self.cfg.max_msg_size;
        if p.trimmed {
            // Its payload is gone: ask for it again (`trim.rs`).
            let (kind, k) = srv.rx_trimmed(p, self.cfg.dpp, max_msg, gaps, d)?;
            match kind {
                AnswerKind::Nak => self.out.stats.naks_sent += 1,
                _ => self.out.stats.trim_naks_sent += 1,
            }
            self.txq.answer(sid, p.rpc.req_num, kind, k);
            return None;
        }
        let armed = srv.expiry_armed;
        let ledger = &mut self.ledger;
        let rx = srv.rx_request::<C>(p, self.cfg.dpp, max_msg, gaps, ledger, now, d);
        self.out.stats.pool_trimmed = self.ledger.trimmed_bytes();
        match rx {
            RequestRx::Dropped => None,
            RequestRx::Nak(k) => {
                self.out.stats.naks_sent += 1;
                self.txq.answer(sid, p.rpc.req_num, AnswerKind::Nak, k);
                None
            }
            RequestRx::Stored { k, arm } => {
                if arm && !armed {
                    self.arm_expiry(sid, now);
                }
                self.out.stats.rx_accepted += 1;
                self.out.stats.sacks_sent += 1;
                self.txq.answer(sid, p.rpc.req_num, AnswerKind::Sack, k);
                None
            }
            RequestRx::Reanswer { kind, first, count } => {
                for k in first..first + count {
                    self.txq.answer(sid, p.rpc.req_num, kind, k);
                }
                None
            }
            RequestRx::Accepted(cr) => {
                if p.rpc.pkt_num == 0 && !armed {
                    // The request's first buffer (in order: at packet 0).
                    self.arm_expiry(sid, now);
                }
                self.out.stats.rx_accepted += 1;
                if cr {
                    let cr = AnswerKind::CreditReturn;
                    self.txq.answer(sid, p.rpc.req_num, cr, 0);
                }
                if self.cfg.rccc {
                    // Its credit waits for the credit pacer (`rccc.rs`).
                    self.rccc_wait(sid);
                }
                None
            }
            RequestRx::Deliver(delivery, cr_too) => {
                if cr_too {
                    let cr = AnswerKind::CreditReturn;
                    self.txq.answer(sid, p.rpc.req_num, cr, 0);
                }
                if self.cfg.rccc {
                    // Nothing of it is kept back now: a parked session
                    // goes idle at its next turn.
                    self.rccc_wait(sid);
                }
                self.out.stats.rx_accepted += 1;
                self.out.stats.handler_invocations += 1;
                Some(delivery)
            }
        }
    }

    /// Server session `sid` took memory at `now`: its expiry timer, at
    /// `reassembly_timeout` (progress moves the expiry later; the firing
    /// re-arms at the real deadline). Out of line: once per request, and
    /// inlined it slowed every packet of `rx_request` (register pressure).
    #[inline(never)]
    pub(crate) fn arm_expiry(&mut self, sid: SessionId, now: Instant) {
        self.timers
            .heap
            .arm(sid, now + self.cfg.mem.reassembly_timeout);
        if let Some(s) = self.table.server_mut(sid) {
            s.expiry_armed = true;
        }
    }

    /// A request-for-response: to its server session.
    fn rx_rfr(&mut self, now: Instant, p: &Parsed<'_>) {
        let (d, wrong) = (&mut self.out.stats.drops, &mut self.gate.wrong_tokens);
        let Some(mut srv) = self.table.server_for_packet(now, p, d, wrong) else {
            return;
        };
        if !srv.common.heard {
            let id = srv.common.id();
            if !self.first_contact(now, id) {
                return;
            }
            let Some(s) = self.table.server_mut(id) else {
                return;
            };
            srv = s;
        }
        if self.cfg.police.strikes > 0 {
            let epoch = self.police.epoch(now, self.out.stats.tx_pkts);
            if !srv.meter.within(epoch) {
                let id = srv.common.id();
                self.over_credit(now, id);
                return;
            }
        }
        let d = &mut self.out.stats.drops;
        srv.common.heard_at(now);
        let sid = srv.common.id();
        if let Some((kind, k, new)) = srv.rx_rfr(p, self.cfg.dpp, now, d) {
            self.out.stats.rx_accepted += new as u64;
            self.txq.answer(sid, p.rpc.req_num, kind, k);
        }
    }

    /// A credit return, response or error answer: to its client session.
    fn rx_answer<'f, C: PayloadCopy>(
        &mut self,
        now: Instant,
        p: &Parsed<'f>,
    ) -> Option<Delivery<'f>> {
        let (d, wrong) = (&mut self.out.stats.drops, &mut self.gate.wrong_tokens);
        let c = self.table.client_for_packet(now, p, d, wrong)?;
        let sid = c.common.id();
        let max_msg = self.cfg.max_msg_size;
        let (pool, stats) = (&self.ledger.pool, &mut self.out.stats);
        let withheld = c.withheld;
        let rx = c.rx_answer::<C>(now, p, self.cfg.dpp, max_msg, pool, stats);
        // A CR that acknowledges nothing new may still release credits an
        // RCCC server kept back (`rccc.rs`).
        let released = c.withheld < withheld;
        let dropped = matches!(
            rx,
            AnswerRx::Dropped
                | AnswerRx::Spurious
                | AnswerRx::Rejected { .. }
                | AnswerRx::GapRollback
                | AnswerRx::Resend
        );
        if !dropped {
            self.out.stats.rx_accepted += 1;
        }
        match rx {
            AnswerRx::Dropped if released => {
                self.schedule_client(sid);
                None
            }
            AnswerRx::Dropped => None,
            AnswerRx::Spurious => {
                self.out.stats.spurious_timeouts += 1;
                self.timers.pending_suspects -= 1;
                None
            }
            AnswerRx::Progress => {
                self.schedule_client(sid);
                None
            }
            AnswerRx::GapRollback | AnswerRx::Resend => {
                self.schedule_client(sid);
                None
            }
            AnswerRx::Completed { slot, payload } => {
                let tag = self.finish_request(sid, slot, now)?;
                Some(Delivery::Response {
                    session: sid,
                    tag,
                    payload,
                })
            }
            AnswerRx::Failed { slot, error } | AnswerRx::Rejected { slot, error } => {
                self.fail_request(sid, slot, error);
                self.refill_slot(sid, slot, now);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_sharing_a_pool_reuse_each_others_buffers() {
        let cfg = EndpointConfig::default();
        let pool = MsgPool::new(cfg.max_msg_size);
        let mut a = Endpoint::with_pool(cfg.clone(), pool.clone()).unwrap();
        let mut b = Endpoint::with_pool(cfg, pool).unwrap();
        drop(a.alloc_msg(100_000));
        let m = b.alloc_msg(100_000);
        assert_eq!(b.pool_stats().fresh, 1, "b took the buffer a freed");
        assert_eq!(a.msgs_outstanding(), 1, "the counters are the pool's");
        drop(m);
    }
}
