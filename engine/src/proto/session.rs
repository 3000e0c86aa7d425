//! Sessions: the state machine (declared in one place, [`transition`]), the
//! public handles ([`SessionId`], [`ReqHandle`]) and the per-session record
//! the endpoint keeps in its session table. The role-specific halves live in
//! `client.rs` (slots, credits, backlog) and `server.rs` (slots, stored
//! responses).
//!
//! Lifecycle. A client session is created by `connect` in `Connecting`; a
//! server session is created by an accepted ConnectReq directly in
//! `Connected`. Every later change goes through [`transition`]; `Freed` means
//! the record is removed and its number returns to the free list (a fresh
//! generation guards stale handles).

use super::client::ClientSession;
use super::config::PeerAddr;
use super::server::ServerSession;
use crate::time::Instant;
use crate::wire::HeaderTemplate;
use core::fmt;

/// State of a session. Freed sessions have no state (they are gone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// Client: ConnectReq sent, waiting for the ConnectResp.
    Connecting,
    /// Ready for requests (client) or serving them (server).
    Connected,
    /// Client: DisconnectReq sent, waiting for the DisconnectResp.
    Disconnecting,
    /// Client: failed (peer unresponsive or a lossless violation under the
    /// ResetSession policy); all requests were failed. `disconnect` frees it.
    Reset,
}

impl SessionState {
    pub const ALL: [SessionState; 4] = [
        SessionState::Connecting,
        SessionState::Connected,
        SessionState::Disconnecting,
        SessionState::Reset,
    ];
}

/// What happens to a session: the inputs of the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionInput {
    /// A ConnectResp with status Ok arrived.
    ConnectOk,
    /// A ConnectResp with an error status arrived.
    ConnectRefused,
    /// `connect_timeout` passed without a ConnectResp.
    ConnectTimeout,
    /// The application called `disconnect`.
    Disconnect,
    /// The DisconnectResp arrived, or `connect_timeout` passed without one.
    DisconnectDone,
    /// Server: the client's DisconnectReq arrived.
    PeerDisconnect,
    /// An RPC made no progress for `session_timeout`, or a lossless
    /// violation under `LossPolicy::ResetSession`.
    Reset,
}

impl SessionInput {
    pub const ALL: [SessionInput; 7] = [
        SessionInput::ConnectOk,
        SessionInput::ConnectRefused,
        SessionInput::ConnectTimeout,
        SessionInput::Disconnect,
        SessionInput::DisconnectDone,
        SessionInput::PeerDisconnect,
        SessionInput::Reset,
    ];
}

/// Where a transition leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    To(SessionState),
    /// The session is removed from the table.
    Freed,
}

/// An input that the state does not accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid session transition: {input:?} in state {state:?}")]
pub struct InvalidTransition {
    pub state: SessionState,
    pub input: SessionInput,
}

/// The session state machine: every allowed transition, and nothing else.
pub fn transition(state: SessionState, input: SessionInput) -> Result<Next, InvalidTransition> {
    use SessionInput as I;
    use SessionState as S;
    match (state, input) {
        (S::Connecting, I::ConnectOk) => Ok(Next::To(S::Connected)),
        (S::Connecting, I::ConnectRefused | I::ConnectTimeout) => Ok(Next::Freed),
        (S::Connected, I::Disconnect) => Ok(Next::To(S::Disconnecting)),
        (S::Connected, I::PeerDisconnect) => Ok(Next::Freed),
        (S::Connected, I::Reset) => Ok(Next::To(S::Reset)),
        (S::Disconnecting, I::DisconnectDone) => Ok(Next::Freed),
        (S::Reset, I::Disconnect) => Ok(Next::Freed),
        _ => Err(InvalidTransition { state, input }),
    }
}

/// Names a session of one endpoint: its number (what peers put in
/// `dest_session`) and a generation that makes ids of freed sessions stale
/// even after the number is reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId {
    pub(crate) num: u16,
    pub(crate) gen: u32,
}

impl SessionId {
    /// The local session number (as carried on the wire).
    pub fn number(&self) -> u16 {
        self.num
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}#{}", self.num, self.gen)
    }
}

/// A request delivered to the server application; answer it with
/// [`Endpoint::respond`](super::Endpoint::respond), which consumes it. Not
/// `Clone`: a handler answers once.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ReqHandle {
    pub(crate) session: SessionId,
    pub(crate) req_num: u64,
}

impl ReqHandle {
    pub fn session(&self) -> SessionId {
        self.session
    }
    pub fn req_num(&self) -> u64 {
        self.req_num
    }
}

/// Which side of the session this endpoint is, with that side's state.
#[derive(Debug)]
pub(crate) enum Role {
    Client(ClientSession),
    Server(ServerSession),
}

/// Handshake retransmission timer of a Connecting or Disconnecting session.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SmTimer {
    pub next_retry: Instant,
    pub deadline: Instant,
}

/// One entry of the session table.
#[derive(Debug)]
pub(crate) struct Session {
    pub gen: u32,
    pub state: SessionState,
    pub peer: PeerAddr,
    /// The peer's session number (`SESSION_NONE` until the ConnectResp).
    pub remote: u16,
    pub token: u32,
    /// Receive-ring entries reserved for this session (lossless mode).
    pub ring_reserved: usize,
    /// Prebuilt Ethernet/IPv4/UDP headers towards the peer (broadcast MAC
    /// until the peer's MAC is known).
    pub template: HeaderTemplate,
    pub sm: SmTimer,
    pub role: Role,
}

impl Session {
    pub fn id(&self, num: u16) -> SessionId {
        SessionId { num, gen: self.gen }
    }

    pub fn client(&self) -> Option<&ClientSession> {
        match &self.role {
            Role::Client(c) => Some(c),
            Role::Server(_) => None,
        }
    }

    pub fn client_mut(&mut self) -> Option<&mut ClientSession> {
        match &mut self.role {
            Role::Client(c) => Some(c),
            Role::Server(_) => None,
        }
    }

    pub fn server_mut(&mut self) -> Option<&mut ServerSession> {
        match &mut self.role {
            Role::Server(s) => Some(s),
            Role::Client(_) => None,
        }
    }

    /// Applies `input`; on success the new state is stored (for `Freed` the
    /// caller removes the record).
    pub fn apply(&mut self, input: SessionInput) -> Result<Next, InvalidTransition> {
        let next = transition(self.state, input)?;
        if let Next::To(s) = next {
            self.state = s;
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_and_client_paths_exist() {
        assert_eq!(
            transition(SessionState::Connecting, SessionInput::ConnectOk),
            Ok(Next::To(SessionState::Connected))
        );
        assert!(transition(SessionState::Reset, SessionInput::Reset).is_err());
    }
}
