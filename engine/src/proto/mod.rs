//! The sans-IO protocol core: an eRPC-style RPC endpoint with sessions,
//! session credits, multi-packet messages, go-back-N loss recovery and a
//! lossless/lossy mode. No I/O, no clock reads, no threads: frames come in
//! through [`Endpoint::handle_frame`] with a caller-supplied [`Instant`], and
//! go out through [`Endpoint::poll_transmit`] into caller-lent buffers. The
//! DPDK run loop and the in-memory link (`crate::sim`) are two drivers of the
//! same code.
//!
//! Files, one concern each: `config` (configuration and limits), `session`
//! (state machine, handles), `sm` (connect/disconnect handshake), `client`
//! (client slots, credits, RFRs, go-back-N receive side), `server` (server
//! slots, credit returns, stored responses), `timers` (loss scan, rollback,
//! session reset, handshake retries), `tx` (transmit descriptors and frame
//! writing), `msgbuf` (message buffers and their pool), `stats`, `error`.

mod client;
mod config;
mod error;
mod msgbuf;
mod server;
mod session;
mod sm;
mod stats;
mod timers;
mod tx;

pub use config::{
    bdp_credits, EndpointAddr, EndpointConfig, FlowMode, LossPolicy, PeerAddr,
    DEFAULT_MAX_MSG_SIZE, MAX_MTU, MAX_PKTS_PER_MSG, MAX_REQ_WINDOW, MAX_SESSIONS, MIN_MTU,
    PKT_OVERHEAD,
};
pub use error::{ConfigError, RpcError};
pub use msgbuf::{MsgBuf, MsgPool, PoolStats};
pub use session::{
    transition, InvalidTransition, Next, ReqHandle, SessionId, SessionInput, SessionState,
};
pub use stats::{Drops, SessionCounts, Stats};

use crate::rng::Rng;
use crate::time::Instant;
use crate::wire::{self, PktType, HEADERS_LEN};
use session::{Role, Session};
use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use tx::TxDesc;

/// Transmit descriptors pre-sized per endpoint: a full receive burst of
/// requests each needing an answer fits without growing the queue.
const TX_QUEUE_PRESIZE: usize = 1024;
/// Events pre-sized per endpoint: a session reset with a full window and a
/// modest backlog fits without growing the queue.
const EVENT_QUEUE_PRESIZE: usize = 256;

/// What `handle_frame` hands to the application.
#[derive(Debug)]
pub enum Delivery<'f> {
    /// Server side: a complete request. Answer with [`Endpoint::respond`]
    /// (now or later). The handler for a given (session, req_num) is invoked
    /// at most once.
    Request {
        handle: ReqHandle,
        req_type: u8,
        payload: Payload<'f>,
    },
    /// Client side: the complete response to the request enqueued with `tag`.
    Response {
        session: SessionId,
        tag: u64,
        payload: Payload<'f>,
    },
}

/// A received message: borrowed from the frame (single-packet messages,
/// zero-copy) or assembled into a pooled buffer (multi-packet messages; give
/// it back with [`Endpoint::free_msg`] when done).
#[derive(Debug)]
pub enum Payload<'f> {
    Borrowed(&'f [u8]),
    Owned(MsgBuf),
}

impl Payload<'_> {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Payload::Borrowed(b) => b,
            Payload::Owned(m) => m.as_slice(),
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Things that happened, drained with [`Endpoint::poll_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A session opened with `connect` is ready.
    Connected(SessionId),
    /// A connect failed (timeout or refused); the session is freed and any
    /// requests enqueued on it failed with `SessionClosed`.
    ConnectFailed {
        session: SessionId,
        reason: RpcError,
    },
    /// A session closed with `disconnect` is freed.
    Disconnected(SessionId),
    /// A client session was reset (reason `PeerTimeout` or
    /// `LosslessViolation`); its requests fail with `SessionReset`.
    SessionReset {
        session: SessionId,
        reason: RpcError,
    },
    /// A request will never complete; its request buffer went back to the pool.
    RequestFailed {
        session: SessionId,
        tag: u64,
        error: RpcError,
    },
    /// Server side: a peer opened a session to us.
    PeerSessionAccepted(SessionId),
    /// Server side: a peer closed its session (or reconnected with a new
    /// token, which replaces the old session).
    PeerSessionClosed(SessionId),
}

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
///   [`alloc_msg`](Self::alloc_msg), [`free_msg`](Self::free_msg),
///   [`enqueue_request`](Self::enqueue_request), [`respond`](Self::respond);
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
    cfg: EndpointConfig,
    /// Payload bytes per packet (`cfg.max_data_per_pkt()`).
    dpp: usize,
    /// Session table, indexed by local session number.
    sessions: Vec<Option<Session>>,
    /// Session numbers below `sessions.len()` that are free (FIFO, so a freed
    /// number is reused as late as possible).
    free_nums: VecDeque<u16>,
    /// Generation given to the next session created.
    next_gen: u32,
    /// Receive-ring entries reserved by live sessions (lossless mode).
    ring_reserved: usize,
    /// Server side: (client ip, client port, client session) -> (our
    /// session, token), to answer duplicate ConnectReqs without allocating.
    accepted: HashMap<(Ipv4Addr, u16, u16), (u16, u32)>,
    pool: MsgPool,
    /// Server answers and handshake packets, sent first.
    tx_ctrl: VecDeque<TxDesc>,
    /// Client sessions that may have request/RFR packets to send, served
    /// round-robin one packet per turn: (number, generation).
    tx_client: VecDeque<(u16, u32)>,
    events: VecDeque<Event>,
    stats: Stats,
    rng: Rng,
    /// When the next loss/handshake scan is due.
    next_scan: Instant,
    /// Client requests in slots (any session): the scan is needed while > 0.
    active_client_reqs: usize,
    /// Sessions in Connecting or Disconnecting: the scan is needed while > 0.
    sm_pending: usize,
}

impl Endpoint {
    pub fn new(cfg: EndpointConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(Endpoint {
            dpp: cfg.max_data_per_pkt(),
            sessions: Vec::new(),
            free_nums: VecDeque::new(),
            next_gen: 1,
            ring_reserved: 0,
            accepted: HashMap::new(),
            pool: MsgPool::new(cfg.max_msg_size),
            tx_ctrl: VecDeque::with_capacity(TX_QUEUE_PRESIZE),
            tx_client: VecDeque::with_capacity(TX_QUEUE_PRESIZE),
            events: VecDeque::with_capacity(EVENT_QUEUE_PRESIZE),
            stats: Stats::default(),
            rng: Rng::new(cfg.seed),
            next_scan: Instant::ZERO,
            active_client_reqs: 0,
            sm_pending: 0,
            cfg,
        })
    }

    // ---- getters ----

    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    pub fn local_addr(&self) -> EndpointAddr {
        self.cfg.local
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    pub fn pool_stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Payload bytes one packet carries (`mtu - 52`).
    pub fn max_data_per_pkt(&self) -> usize {
        self.dpp
    }

    /// Smallest `buf` that `poll_transmit` accepts: headers plus one packet of data.
    pub fn min_tx_buf_len(&self) -> usize {
        HEADERS_LEN + self.dpp
    }

    /// `None` if the session does not exist (any more).
    pub fn session_state(&self, s: SessionId) -> Option<SessionState> {
        self.session(s).map(|x| x.state)
    }

    /// Credits not held by packets in flight; `None` unless `s` is a live
    /// client session. Equals `session_credits` whenever the session is idle.
    pub fn session_credits_available(&self, s: SessionId) -> Option<u16> {
        self.session(s).and_then(Session::client).map(|c| c.credits)
    }

    /// Requests of a client session not yet completed (in slots and backlog).
    pub fn session_pending_requests(&self, s: SessionId) -> Option<usize> {
        self.session(s)
            .and_then(Session::client)
            .map(|c| c.active + c.backlog.len())
    }

    pub fn sessions_by_state(&self) -> SessionCounts {
        let mut n = SessionCounts::default();
        for s in self.sessions.iter().flatten() {
            match s.state {
                SessionState::Connecting => n.connecting += 1,
                SessionState::Connected => n.connected += 1,
                SessionState::Disconnecting => n.disconnecting += 1,
                SessionState::Reset => n.reset += 1,
            }
        }
        n
    }

    /// Receive-ring entries reserved by live sessions and the total.
    pub fn ring_usage(&self) -> (usize, usize) {
        (self.ring_reserved, self.cfg.rx_ring_entries)
    }

    /// Whether `poll_transmit` may produce a frame. May be `true` spuriously
    /// (a queued item turned out stale); `poll_transmit` is authoritative.
    pub fn has_pending_transmit(&self) -> bool {
        !self.tx_ctrl.is_empty() || !self.tx_client.is_empty()
    }

    /// When `handle_timeout` should next be called; `None` when nothing is
    /// waiting on a timer (no requests in flight, no handshake pending).
    pub fn poll_timeout(&self) -> Option<Instant> {
        (self.active_client_reqs > 0 || self.sm_pending > 0).then_some(self.next_scan)
    }

    /// Next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ---- commands: message buffers ----

    /// A pooled message buffer of `len` bytes (contents unspecified).
    pub fn alloc_msg(&mut self, len: usize) -> MsgBuf {
        self.pool.alloc(len)
    }

    /// Returns a buffer (e.g. an `Owned` payload) to the pool.
    pub fn free_msg(&mut self, m: MsgBuf) {
        self.pool.free(m)
    }

    // ---- inputs ----

    /// Processes one received frame. Returns a complete request (server
    /// side) or response (client side) when this frame completes one; all
    /// other outcomes (credit returns, handshake, drops) show up in stats,
    /// events and transmit work. Never panics on any input bytes.
    pub fn handle_frame<'f>(&mut self, now: Instant, frame: &'f [u8]) -> Option<Delivery<'f>> {
        self.stats.rx_pkts += 1;
        self.stats.rx_bytes += frame.len() as u64;
        let p = match wire::parse_frame(frame) {
            Ok(p) => p,
            Err(_) => {
                self.stats.drops.malformed += 1;
                return None;
            }
        };
        let local = &self.cfg.local;
        let mac_ok = p.dst_mac == local.mac || p.dst_mac.is_broadcast();
        if !mac_ok || p.dst_ip != local.ip || p.dst_port != local.port {
            self.stats.drops.not_ours += 1;
            return None;
        }
        match p.rpc.pkt_type {
            PktType::Request => self.server_rx_request(&p),
            PktType::ReqForResp => {
                self.server_rx_rfr(&p);
                None
            }
            PktType::CreditReturn | PktType::Response => self.client_rx_answer(now, &p),
            PktType::SessionMgmt => {
                self.handle_sm(&p);
                None
            }
            PktType::Unknown(_) => {
                self.stats.drops.malformed += 1;
                None
            }
        }
    }

    // ---- internal helpers shared by the submodules ----

    fn session(&self, s: SessionId) -> Option<&Session> {
        match self.sessions.get(s.num as usize) {
            Some(Some(x)) if x.gen == s.gen => Some(x),
            _ => None,
        }
    }

    fn session_mut(&mut self, s: SessionId) -> Option<&mut Session> {
        get_mut(&mut self.sessions, s)
    }

    fn slot_of(&self, req_num: u64) -> usize {
        (req_num % self.cfg.req_window as u64) as usize
    }
}

/// Packets of a `len`-byte message at `dpp` bytes per packet: at least one.
fn pkts_of(len: usize, dpp: usize) -> u32 {
    len.div_ceil(dpp).max(1) as u32
}

/// Byte range of packet `k` of a `len`-byte message.
fn chunk(len: usize, k: u32, dpp: usize) -> core::ops::Range<usize> {
    let start = (k as usize * dpp).min(len);
    start..(start + dpp).min(len)
}

/// The session `s` names, borrowing only the table (so other endpoint
/// fields stay usable).
fn get_mut(sessions: &mut [Option<Session>], s: SessionId) -> Option<&mut Session> {
    match sessions.get_mut(s.num as usize) {
        Some(Some(x)) if x.gen == s.gen => Some(x),
        _ => None,
    }
}

/// Finds the live session a data packet is addressed to, checking role and
/// token and counting the drop if there is none. `server` selects the role
/// the packet needs (requests and RFRs go to server sessions).
fn lookup<'a>(
    sessions: &'a mut [Option<Session>],
    drops: &mut Drops,
    rpc: &wire::RpcRepr,
    server: bool,
) -> Option<&'a mut Session> {
    let Some(Some(s)) = sessions.get_mut(rpc.dest_session as usize) else {
        drops.unknown_session += 1;
        return None;
    };
    if matches!(s.role, Role::Server(_)) != server {
        drops.unknown_session += 1;
        return None;
    }
    if s.token != rpc.token {
        drops.bad_token += 1;
        return None;
    }
    if s.state != SessionState::Connected {
        drops.bad_state += 1;
        return None;
    }
    Some(s)
}
