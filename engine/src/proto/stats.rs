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

/// Counters, see the module docs. Packet and byte counts are whole frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub rx_pkts: u64,
    pub rx_bytes: u64,
    /// Client packets sent again after a rollback.
    pub retransmissions: u64,
    /// Retransmission timeouts that fired: go-back-N rollbacks (under
    /// `LossPolicy::ResetSession` the session is reset instead).
    pub rollbacks: u64,
    /// Stall episodes: a session had packets to send but no credits. Counted
    /// once when the session parks, not once per blocked attempt.
    pub credit_stalls: u64,
    /// Rollbacks in lossless mode (each is a loss the design says cannot
    /// happen).
    pub lossless_violations: u64,
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
    /// ConnectReqs refused (any non-Ok status sent).
    pub connects_refused: u64,
    pub drops: Drops,
}

/// Dropped received frames by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// Packet of an older request than the slot's current one (all kinds).
    pub stale: u64,
    /// Already-received packet (all kinds).
    pub duplicate: u64,
    /// Packet beyond the next expected one (all kinds; go-back-N drops it).
    pub future: u64,
    pub dup_request: u64,
    pub dup_response: u64,
    pub dup_cr: u64,
    pub dup_rfr: u64,
    /// Duplicate session-management packets (re-answered where the protocol
    /// says so).
    pub dup_sm: u64,
    pub future_request: u64,
    pub future_response: u64,
    pub future_cr: u64,
    pub future_rfr: u64,
    pub stale_request: u64,
    pub stale_response: u64,
    pub stale_cr: u64,
    pub stale_rfr: u64,
    /// Duplicate of a request's last packet while the handler has not
    /// responded yet (nothing to re-send; the client will retry). A subset
    /// of `dup_request`.
    pub dup_request_no_response: u64,
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
            + self.stale
            + self.duplicate
            + self.future
    }
}

/// How many sessions are in each state (see
/// [`Endpoint::sessions_by_state`](super::Endpoint::sessions_by_state)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionCounts {
    pub connecting: usize,
    pub connected: usize,
    pub disconnecting: usize,
    pub reset: usize,
}
