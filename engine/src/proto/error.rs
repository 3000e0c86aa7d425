//! Errors of the protocol core. [`RpcError`] is what application commands
//! return and what failure events carry; [`EndpointConfigError`] is what
//! [`EndpointConfig::validate`](super::EndpointConfig::validate) returns, naming
//! the offending field and the limit it broke. Errors caused by network input
//! never surface here as panics: such packets are dropped and counted in
//! [`Stats::drops`](super::Stats).

use super::state::SessionState;
use crate::wire::{ErrorCode, SmStatus};

/// Why a command failed, a connect was refused, a session was reset or a
/// request did not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// The session id does not name a live session of this endpoint (never
    /// existed, or was freed and its number reused).
    #[error("unknown or freed session")]
    UnknownSession,
    /// The command is not allowed in the session's current state.
    #[error("operation not allowed in session state {state:?}")]
    InvalidState {
        /// The session's state.
        state: SessionState,
    },
    /// The command needs a client session (one opened with `connect`) but the
    /// session was accepted from a peer, or the reverse.
    #[error("wrong session role for this operation")]
    WrongRole,
    /// All `max_sessions` session numbers are in use.
    #[error("session table full")]
    TooManySessions,
    /// Lossless mode: the receive ring cannot reserve `needed` more entries.
    #[error("receive ring has {available} free entries, session needs {needed}")]
    NoRingSpace {
        /// Entries the session needs (its credits).
        needed: usize,
        /// Entries not reserved yet.
        available: usize,
    },
    /// The session's backlog already holds `max_backlog` requests.
    #[error("session backlog full ({limit} requests waiting for a slot); wait for completions or raise max_backlog")]
    BacklogFull {
        /// `max_backlog`.
        limit: usize,
    },
    /// A message is longer than `max_msg_size`.
    #[error("message of {len} bytes exceeds max_msg_size {max}")]
    MsgTooLarge {
        /// The message's length.
        len: usize,
        /// `max_msg_size`.
        max: usize,
    },
    /// No ConnectResp arrived within `connect_timeout`.
    #[error("connect timed out")]
    ConnectTimeout,
    /// The server answered the ConnectReq with a non-Ok status.
    #[error("connect refused by peer ({0:?}): {}", refusal_reason(*.0))]
    Refused(SmStatus),
    /// A request failed because its session was reset.
    #[error("session was reset")]
    SessionReset,
    /// Reset reason: an RPC made no progress for `session_timeout`.
    #[error("peer unresponsive for session_timeout")]
    PeerTimeout,
    /// Reset reason: a packet was lost in lossless mode under
    /// `LossPolicy::ResetSession`.
    #[error("packet loss in lossless mode")]
    LosslessViolation,
    /// A request failed because its session was closed (disconnect, or a
    /// connect that failed) before it completed.
    #[error("session closed before the request completed")]
    SessionClosed,
    /// The response's handle is stale: its session is gone, or the slot has
    /// moved on to a newer request, or it was already answered.
    #[error("stale request handle")]
    StaleHandle,
    /// The peer announced a response larger than `max_msg_size`.
    #[error("response of {len} bytes exceeds max_msg_size {max}")]
    ResponseTooLarge {
        /// The announced response length.
        len: usize,
        /// `max_msg_size`.
        max: usize,
    },
    /// The server answered with an error instead of a response.
    #[error("server answered with an error: {0:?}")]
    Remote(ErrorCode),
}

/// What a ConnectResp status means, in words a user can act on.
pub fn refusal_reason(status: SmStatus) -> &'static str {
    match status {
        SmStatus::Ok => "accepted",
        SmStatus::NoRingSpace => {
            "the server's receive ring has no room left for this session's credits (lossless mode)"
        }
        SmStatus::TooManySessions => "the server's session table is full",
        SmStatus::BadCredits => "the session asked for 0 credits",
        SmStatus::UnknownSession => "the server has no such session",
        SmStatus::BadMtu => "client and server MTUs differ; both ends must use the same mtu",
        SmStatus::BadWindow => {
            "client and server request windows differ; both ends must use the same req_window"
        }
        SmStatus::PeerLimit => {
            "this client address already holds the server's per-peer session limit"
        }
        SmStatus::Retry => {
            "the server asked for its cookie first (its session table is filling up)"
        }
        SmStatus::Unknown(_) => "a status this build does not know",
    }
}

/// A configuration value outside what the engine supports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid config: {field} = {value}: {limit}")]
pub struct EndpointConfigError {
    /// The `EndpointConfig` field at fault.
    pub field: &'static str,
    /// Its value, rendered.
    pub value: String,
    /// The limit it broke, in words.
    pub limit: String,
}

impl EndpointConfigError {
    pub(crate) fn new(field: &'static str, value: impl ToString, limit: impl Into<String>) -> Self {
        EndpointConfigError {
            field,
            value: value.to_string(),
            limit: limit.into(),
        }
    }
}
