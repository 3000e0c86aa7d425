//! The session state machine, declared in one place: every allowed
//! transition ([`transition`]) with the effects the endpoint runs when it is
//! taken ([`Step::effects`]). The endpoint changes a session's state only
//! through `Endpoint::change_state` (in `lifecycle.rs`), which looks the
//! step up here and runs its effects in order, so this table is what the
//! engine does, and the snapshot test of it binds the engine.
//!
//! Sessions are born in a state without a transition: a client session by
//! `connect` in `Connecting`, a server session by an accepted ConnectReq in
//! `Connected`. `Freed` means the record is removed from the session table
//! and its number returns to the free list (a fresh generation makes stale
//! handles miss).

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
    /// Every state, in declaration order (for table tests).
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
    /// Server: the client's DisconnectReq arrived, or the client reconnected
    /// with a new token (it restarted), which replaces the old session.
    PeerDisconnect,
    /// An RPC made no progress for `session_timeout`, or a lossless
    /// violation under `LossPolicy::ResetSession`.
    Reset,
    /// Server: the client has been silent for `idle_timeout` (or, never
    /// heard since its ConnectReq, for `half_open_timeout`).
    IdleTimeout,
}

impl SessionInput {
    /// Every input, in declaration order (for table tests).
    pub const ALL: [SessionInput; 8] = [
        SessionInput::ConnectOk,
        SessionInput::ConnectRefused,
        SessionInput::ConnectTimeout,
        SessionInput::Disconnect,
        SessionInput::DisconnectDone,
        SessionInput::PeerDisconnect,
        SessionInput::Reset,
        SessionInput::IdleTimeout,
    ];
}

/// Where a transition leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The session stays in the table in this state.
    To(SessionState),
    /// The session is removed from the table.
    Freed,
}

/// Which event a transition reports to the application (the payload, a
/// session id and a reason, is filled in by the endpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// `Event::Connected`.
    Connected,
    /// `Event::ConnectFailed`.
    ConnectFailed,
    /// `Event::Disconnected`.
    Disconnected,
    /// `Event::SessionReset`.
    SessionReset,
    /// `Event::PeerSessionClosed`.
    PeerSessionClosed,
    /// `Event::PeerSessionReclaimed`.
    PeerSessionReclaimed,
}

/// Why the requests of a session fail when a transition fails them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailCause {
    /// `RpcError::SessionClosed`: disconnect, or a connect that failed.
    Closed,
    /// `RpcError::SessionReset`.
    Reset,
}

/// One thing the endpoint does when a transition is taken, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Arm the handshake timer (retry and deadline from now); the session
    /// counts as having a handshake pending.
    StartHandshake,
    /// The handshake ended: disarm its timer.
    EndHandshake,
    /// Queue the session's DisconnectReq.
    SendDisconnectReq,
    /// Fail every request in the slots and the backlog.
    FailRequests(FailCause),
    /// Return the session's receive-ring reservation (the session stays).
    ReleaseRing,
    /// Queue the session for transmission if it has packets and credits.
    Schedule,
    /// Report an event.
    Emit(EventKind),
    /// Remove the session: buffers, ring reservation and number go back.
    Free,
}

/// A transition: where it leads and what the endpoint does on the way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The state after the step.
    pub next: Next,
    /// Run in order by `Endpoint::change_state`.
    pub effects: &'static [Effect],
}

/// An input that the state does not accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid session transition: {input:?} in state {state:?}")]
pub struct InvalidTransition {
    /// The state the session was in.
    pub state: SessionState,
    /// The input it does not accept.
    pub input: SessionInput,
}

/// The session state machine: every allowed transition with its effects,
/// and nothing else.
pub fn transition(state: SessionState, input: SessionInput) -> Result<Step, InvalidTransition> {
    use Effect as E;
    use SessionInput as I;
    use SessionState as S;
    let (next, effects): (Next, &'static [Effect]) = match (state, input) {
        (S::Connecting, I::ConnectOk) => (
            Next::To(S::Connected),
            &[E::EndHandshake, E::Emit(EventKind::Connected), E::Schedule],
        ),
        (S::Connecting, I::ConnectRefused | I::ConnectTimeout) => (
            Next::Freed,
            &[
                E::EndHandshake,
                E::FailRequests(FailCause::Closed),
                E::Free,
                E::Emit(EventKind::ConnectFailed),
            ],
        ),
        (S::Connected, I::Disconnect) => (
            Next::To(S::Disconnecting),
            &[
                E::StartHandshake,
                E::FailRequests(FailCause::Closed),
                E::SendDisconnectReq,
            ],
        ),
        (S::Connected, I::PeerDisconnect) => (
            Next::Freed,
            &[E::Free, E::Emit(EventKind::PeerSessionClosed)],
        ),
        (S::Connected, I::IdleTimeout) => (
            Next::Freed,
            &[E::Free, E::Emit(EventKind::PeerSessionReclaimed)],
        ),
        (S::Connected, I::Reset) => (
            Next::To(S::Reset),
            &[
                E::ReleaseRing,
                E::Emit(EventKind::SessionReset),
                E::FailRequests(FailCause::Reset),
            ],
        ),
        (S::Disconnecting, I::DisconnectDone) => (
            Next::Freed,
            &[E::EndHandshake, E::Free, E::Emit(EventKind::Disconnected)],
        ),
        (S::Reset, I::Disconnect) => (Next::Freed, &[E::Free, E::Emit(EventKind::Disconnected)]),
        _ => return Err(InvalidTransition { state, input }),
    };
    Ok(Step { next, effects })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_freeing_step_frees_last_but_its_event() {
        for s in SessionState::ALL {
            for i in SessionInput::ALL {
                let Ok(step) = transition(s, i) else { continue };
                let frees = step.effects.contains(&Effect::Free);
                assert_eq!(frees, step.next == Next::Freed, "{s:?} + {i:?}");
                if frees {
                    // Nothing may touch the session after it is freed.
                    let after: Vec<_> = step
                        .effects
                        .iter()
                        .skip_while(|e| **e != Effect::Free)
                        .skip(1)
                        .collect();
                    assert!(after.iter().all(|e| matches!(e, Effect::Emit(_))));
                }
            }
        }
    }
}
