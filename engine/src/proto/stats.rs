//! Counters of one endpoint: plain integers owned by the protocol core and
//! bumped inline on the hot path (no atomics: an endpoint belongs to one
//! thread). The run loop copies them out for reports. Every received frame
//! that does not advance the protocol is counted exactly once under one of
//! the aggregate `drops.*` reasons (see [`Drops::total`]); duplicates are
//! counted there even when the protocol re-answers them (a duplicate request
//! packet gets its CR or Response(0) again, a duplicate RFR its response
//! packet, a duplicate ConnectReq its ConnectResp). Per-kind counters refine
//! the aggregates (`drops.duplicate == dup_request + dup_response + dup_cr +
//! dup_rfr + dup_sm`, and likewise for `future_*` and `stale_*`).

crate::counters! {
/// Counters, see the module docs. Packet and byte counts are whole frames.
pub struct Stats {
    /// Frames written by `poll_transmit`.
    pub tx_pkts: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames given to `handle_frame`.
    pub rx_pkts: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Received frames that advanced the protocol (accepted in order, or a
    /// handshake packet processed). Every received frame is either this or
    /// one drop: `rx_pkts == rx_accepted + drops.total()`.
    pub rx_accepted: u64,
    /// Client packets sent again after a rollback.
    pub retransmissions: u64,
    /// Go-back-N rollbacks: on every retransmission timeout in lossy mode;
    /// in lossless mode only once a probed loss is confirmed.
    pub rollbacks: u64,
    /// Retransmission timeouts later proved spurious: the answer to the
    /// resent packet arrived twice, so the original was late, not lost.
    pub spurious_timeouts: u64,
    /// Lossless mode: single packets resent as probes on a timeout.
    pub probes_sent: u64,
    /// Stall episodes: a session had packets to send but no credits. Counted
    /// once when the session parks, not once per blocked attempt.
    pub credit_stalls: u64,
    /// Lossless mode: timeouts judged to be real losses (no duplicate
    /// answer arrived within an RTO of the probe), each a loss the design
    /// says cannot happen.
    pub lossless_violations: u64,
    /// Client sessions reset (peer timeout or lossless violation).
    pub session_resets: u64,
    /// Client requests whose response was delivered.
    pub requests_completed: u64,
    /// Client requests completed with `Event::RequestFailed`.
    pub requests_failed: u64,
    /// Requests delivered to the application on the server side.
    pub handler_invocations: u64,
    /// Sessions opened by this endpoint that reached Connected.
    pub sessions_connected: u64,
    /// Sessions accepted from peers.
    pub sessions_accepted: u64,
    /// Server sessions reclaimed after their client went silent.
    pub sessions_reclaimed: u64,
    /// Keepalives sent by client sessions that had nothing else to send.
    pub keepalives_sent: u64,
    /// Requests refused because their session's backlog was full.
    pub backlog_full: u64,
    /// ConnectReqs refused (any non-Ok status sent).
    pub connects_refused: u64,
    /// Server: ConnectReqs refused (or first packets of their sessions
    /// dropped) because the addresses behind their source MAC held
    /// `admission.max_sessions_per_mac` sessions or its ring share.
    pub refused_mac_limit: u64,
    /// Server: the same because only the newcomers' reserve of the ring
    /// was left (`admission.ring_reserve_pct`) and the peer held entries.
    pub refused_ring_reserve: u64,
    /// Server: live sessions replaced by a ConnectReq with a new token once
    /// proven dead (a restarted client).
    pub sessions_replaced: u64,
    /// Server: liveness probes sent to a session whose key a ConnectReq
    /// with a new token named.
    pub restart_probes: u64,
    /// Client: liveness probes answered (with a keepalive).
    pub probes_answered: u64,
    /// Client: sessions whose server granted fewer credits than asked.
    pub credits_lowered: u64,
    /// Server: ConnectReqs answered with ConnectResp(Retry) and a cookie
    /// (the table was filling up and they brought no valid cookie).
    pub cookies_sent: u64,
    /// Server: ConnectReqs whose cookie was not this server's for their
    /// source, or had expired (answered as if they had none).
    pub cookies_bad: u64,
    /// Client: ConnectResp(Retry) received (connects that paid a round
    /// trip for a cookie).
    pub cookie_retries: u64,
    /// Server: replies and restart probes not sent because their source
    /// was over its wrong-token limit this second
    /// (`admission.wrong_tokens_per_sec`).
    pub replies_withheld: u64,
    /// State changes the engine attempted that the transition table
    /// refused: always 0 unless the engine has a bug.
    pub invalid_transitions: u64,
    /// Session deadlines that fired (valid heap entries, stale ones
    /// excluded): the timer work of the endpoint.
    pub timers_fired: u64,
    /// Of those, firings that found nothing due (a request completed in
    /// time, a keepalive not yet needed) and only re-armed the session.
    pub timers_idle: u64,
    /// Selective mode: SACKs sent, one per request packet that arrived
    /// out of order (kept, and named so the client resends only the hole).
    pub sacks_sent: u64,
    /// Selective mode: SACKs received.
    pub sacks_received: u64,
    /// Selective mode: packets resent because a SACK showed them missing,
    /// before any timeout (a subset of `retransmissions`).
    pub fast_retransmits: u64,
    /// Go-back-N with NAKs: Naks sent, one per gap in a request's packets.
    pub naks_sent: u64,
    /// Packet trimming: TrimNaks sent, one per trimmed request packet
    /// received whose payload the server still needs (`trim.rs`).
    pub trim_naks_sent: u64,
    /// Packet trimming: packets taken as lost at once because the server
    /// reported them trimmed (a TrimNak) or their answer arrived trimmed
    /// (then resent first, counted in `retransmissions`).
    pub trim_resends: u64,
    /// Go-back-N with NAKs: rollbacks at once, on a Nak or a gap in the
    /// response packets (a subset of `rollbacks`; the rest are timeouts).
    pub nak_rollbacks: u64,
    /// Pause mode: XOFF and XON frames this receiver sent to its peers.
    pub pause_frames_sent: u64,
    /// Pause mode: XOFF and XON frames received from peers.
    pub pause_frames_received: u64,
    /// Pause mode: nanoseconds this endpoint held traffic to a paused peer,
    /// summed over peers.
    pub paused_ns: u64,
    /// Received frames whose IPv4 ECN field said Congestion Experienced.
    pub ecn_marks: u64,
    /// DCQCN: congestion notifications sent (at most one per session per
    /// `cc::CNP_INTERVAL`).
    pub cnps_sent: u64,
    /// DCQCN: congestion notifications received (each cuts the rate).
    pub cnps_received: u64,
    /// Congestion control: times a session waited on the timing wheel for
    /// its rate to allow the next packet.
    pub pacing_waits: u64,
    /// Congestion control: updates that lowered a client session's rate
    /// (Timely on an RTT sample, DCQCN on a CNP, NSCC on an ack, an ECN
    /// echo or a NACK), so a run shows whether its controller acted.
    pub cc_rate_cuts: u64,
    /// Server: incomplete requests given up after `reassembly_timeout`
    /// without new bytes (their buffers freed; the client's request fails
    /// with `ErrorCode::ReassemblyTimeout`).
    pub reassembly_timeouts: u64,
    /// Server: stored multi-packet responses freed after
    /// `reassembly_timeout` without being asked for (`ResponseExpired`).
    pub responses_expired: u64,
    /// Server: responses not kept because they did not fit the memory
    /// budget; the client's request fails with `ErrorCode::OverBudget`.
    pub responses_over_budget: u64,
    /// Server: bytes of free buffers the message pool gave back to the
    /// allocator so that they fit beside a peer's or the worker's charge
    /// within its memory limit (`budget::Ledger::charge_for`).
    pub pool_trimmed: u64,
    /// Server: sessions closed for sending over their credits, their
    /// sources barred (`police.rs`).
    pub sessions_policed: u64,
    /// Received frames dropped, by reason.
    pub drops: Drops,
}
}

crate::counters! {
/// Dropped received frames by reason.
pub struct Drops {
    /// Frame failed `wire::parse_frame`, or header fields are inconsistent
    /// (packet number beyond the message, wrong payload length, unknown
    /// packet or SM type, ...).
    pub malformed: u64,
    /// Addressed to another MAC (not broadcast), IP or UDP port.
    pub not_ours: u64,
    /// `dest_session` names no live session of the right role.
    pub unknown_session: u64,
    /// The token does not match the session's.
    pub bad_token: u64,
    /// The session exists but is not in a state that takes this packet
    /// (e.g. data for a Connecting or Reset session).
    pub bad_state: u64,
    /// A message longer than `max_msg_size`.
    pub too_large: u64,
    /// A request packet whose reassembly buffer would take its peer or
    /// the endpoint over the memory budget (`MemBudget`): nothing was
    /// allocated; the client retransmits it later.
    pub reassembly_budget: u64,
    /// Packet of an older request than the slot's current one (all kinds).
    pub stale: u64,
    /// Already-received packet (all kinds).
    pub duplicate: u64,
    /// Packet beyond the next expected one (all kinds; go-back-N drops it).
    pub future: u64,
    /// Duplicate request packets.
    pub dup_request: u64,
    /// Duplicate response packets.
    pub dup_response: u64,
    /// Duplicate credit returns.
    pub dup_cr: u64,
    /// Duplicate requests-for-response.
    pub dup_rfr: u64,
    /// Duplicate session-management packets (re-answered where the protocol
    /// says so).
    pub dup_sm: u64,
    /// Request packets beyond the next expected one.
    pub future_request: u64,
    /// Response packets beyond the next expected one.
    pub future_response: u64,
    /// Credit returns beyond the next expected one.
    pub future_cr: u64,
    /// RFRs for responses that do not exist yet.
    pub future_rfr: u64,
    /// Request packets of an older request than the slot holds.
    pub stale_request: u64,
    /// Response packets of an older request.
    pub stale_response: u64,
    /// Credit returns of an older request.
    pub stale_cr: u64,
    /// RFRs of an older request.
    pub stale_rfr: u64,
    /// Duplicate of a request's last packet while the handler has not
    /// responded yet (nothing to re-send; the client will retry). A subset
    /// of `dup_request`.
    pub dup_request_no_response: u64,
    /// Duplicate of a request's last packet answered with Response(0)
    /// alone, not its grant: the request had used its re-grants
    /// (`Admission::regrants_per_request`). A subset of `dup_request`.
    pub dup_request_regrant_spent: u64,
    /// ConnectReqs with a new token for a live session's key, dropped while
    /// the old session's liveness probe is out (`admission::restart`).
    pub restart_pending: u64,
    /// ConnectReqs with a new token for a live session whose client
    /// answered its probe: forged or stale, dropped.
    pub restart_refused: u64,
    /// A half-open session's first packet found no receive-ring room for
    /// its credits (taken only then); the session is closed.
    pub no_ring_space: u64,
    /// Request packets (and RFRs) of a session over its credits in one
    /// epoch: more than a compliant client can have sent (`police.rs`).
    pub over_credit: u64,
    /// Session-management packets from a source barred after one of its
    /// sessions was closed for violating its credits.
    pub policed_source: u64,
    /// Packet trimming: frames a switch cut to their headers, and
    /// TrimNaks, each counted here whether or not it caused a resend
    /// (`trim_naks_sent`, `trim_resends` count those).
    pub trimmed: u64,
}
}

impl Stats {
    /// Whether every received frame is accounted for: accepted, or dropped
    /// under exactly one reason.
    pub fn rx_accounted(&self) -> bool {
        self.rx_pkts == self.rx_accepted + self.drops.total()
    }
}

impl Drops {
    /// Every dropped frame, over all reasons (per-kind refinements excluded).
    pub fn total(&self) -> u64 {
        self.malformed
            + self.not_ours
            + self.unknown_session
            + self.bad_token
            + self.bad_state
            + self.too_large
            + self.reassembly_budget
            + self.stale
            + self.duplicate
            + self.future
            + self.restart_pending
            + self.restart_refused
            + self.no_ring_space
            + self.over_credit
            + self.policed_source
            + self.trimmed
    }
}

/// How many sessions are in each state (see
/// [`Endpoint::sessions_by_state`](super::Endpoint::sessions_by_state)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionCounts {
    /// Client sessions waiting for their ConnectResp.
    pub connecting: usize,
    /// Sessions of either role ready for requests.
    pub connected: usize,
    /// Client sessions waiting for their DisconnectResp.
    pub disconnecting: usize,
    /// Client sessions reset and not yet disconnected.
    pub reset: usize,
}

impl SessionCounts {
    /// The counter of state `s`.
    pub(crate) fn of(&mut self, s: super::state::SessionState) -> &mut usize {
        use super::state::SessionState as S;
        match s {
            S::Connecting => &mut self.connecting,
            S::Connected => &mut self.connected,
            S::Disconnecting => &mut self.disconnecting,
            S::Reset => &mut self.reset,
        }
    }
}

impl Stats {
    /// Sum of the counters a firing timer of a connected session can bump
    /// (keepalive, probe, rollback, reset, reclamation): unchanged across a
    /// firing means the firing found nothing due.
    pub(crate) fn timer_actions(&self) -> u64 {
        self.keepalives_sent
            + self.probes_sent
            + self.rollbacks
            + self.session_resets
            + self.sessions_reclaimed
            + self.lossless_violations
            + self.reassembly_timeouts
            + self.responses_expired
    }
}
