//! The blocking call: send one request on a session and run this worker's
//! loop until its response arrives, its session fails, or a timeout passes
//! ([`Rpc::call`], and [`Rpc::call_with`] when the handlers have state).
//! While it waits the loop does everything `run_once` does (it serves
//! requests, runs continuations, sends, retransmits); it polls no more
//! than the loop always does. The response comes back in a pooled
//! [`MsgBuf`], so a call allocates nothing once the pool is warm; copy it
//! out (`to_vec`) only if owned bytes are wanted.

use super::waiters::Waiter;
use super::Rpc;
use crate::proto::{MsgBuf, RpcError, SessionId};
use crate::time::Duration;

/// Why an [`Rpc::call`] returned no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No response within the timeout. The request stays on its session
    /// (holding a slot of its window) until it completes or fails, and its
    /// response is then dropped; a server that never answers it resets the
    /// session after `session_timeout`, as for any request.
    #[error("no response within {0:?}")]
    Timeout(std::time::Duration),
    /// The request was refused before it was sent: an unknown or closed
    /// session, a full backlog, a message over `max_msg_size`.
    #[error("request not sent: {0}")]
    NotSent(RpcError),
    /// The session's connect failed (`ConnectTimeout`: no server answered
    /// at that address; `Refused`, with the server's reason), failing the
    /// requests queued on it.
    #[error("connect failed: {0}")]
    ConnectFailed(RpcError),
    /// The session was reset while the request was out (`PeerTimeout`:
    /// the server stopped answering; `LosslessViolation`).
    #[error("session reset: {0}")]
    SessionReset(RpcError),
    /// The request failed otherwise: the server answered with an error
    /// (`Remote`, e.g. no handler for the request type), the response was
    /// over `max_msg_size`, or the session was closed meanwhile.
    #[error("request failed: {0}")]
    Failed(RpcError),
    /// Called from a handler or a continuation, i.e. inside this worker's
    /// loop, which cannot wait for itself: enqueue with
    /// [`OnDone::Continue`](crate::runtime::OnDone::Continue) there.
    #[error("call from inside the run loop (a handler or continuation): enqueue the request with OnDone::Continue there")]
    InsideLoop,
}

impl CallError {
    /// The protocol error behind it, if there is one.
    pub fn rpc_error(&self) -> Option<RpcError> {
        match *self {
            CallError::NotSent(e)
            | CallError::ConnectFailed(e)
            | CallError::SessionReset(e)
            | CallError::Failed(e) => Some(e),
            CallError::Timeout(_) | CallError::InsideLoop => None,
        }
    }
}

/// The call waiting on the loop: at most one per endpoint, since `call`
/// runs the loop itself and refuses to run inside it.
#[derive(Debug, Default)]
pub(super) struct WaitingCall {
    /// Its session, while it waits.
    session: Option<SessionId>,
    /// Its outcome, once in.
    outcome: Option<Result<MsgBuf, RpcError>>,
    /// Why its session ended, if a ConnectFailed or SessionReset named it
    /// (its request only says `SessionClosed` or `SessionReset`).
    cause: Option<RpcError>,
}

impl WaitingCall {
    /// The request's outcome, from the loop.
    pub(super) fn complete(&mut self, outcome: Result<MsgBuf, RpcError>) {
        self.outcome = Some(outcome);
    }

    /// A session ended with `reason` (ConnectFailed, SessionReset): kept
    /// if it is the waiting call's.
    pub(super) fn session_ended(&mut self, session: SessionId, reason: RpcError) {
        if self.session == Some(session) {
            self.cause = Some(reason);
        }
    }
}

/// The call's error from its request's error and, when the request failed
/// with its session, the reason the session ended.
fn classify(error: RpcError, cause: Option<RpcError>) -> CallError {
    let why = match (error, cause) {
        (RpcError::SessionClosed | RpcError::SessionReset, Some(c)) => c,
        _ => error,
    };
    match why {
        RpcError::ConnectTimeout | RpcError::Refused(_) => CallError::ConnectFailed(why),
        RpcError::PeerTimeout | RpcError::LosslessViolation | RpcError::SessionReset => {
            CallError::SessionReset(why)
        }
        _ => CallError::Failed(why),
    }
}

impl Rpc<()> {
    /// Sends `req` as a request of `req_type` on session `s` and runs this
    /// worker's loop until its response arrives (returned as a pooled
    /// buffer: `&resp[..]` reads it, `resp.to_vec()` copies it out), the
    /// request fails, or `timeout` passes (a `std::time::Duration` or an
    /// [`engine::time::Duration`](crate::time::Duration)). The session may
    /// still be connecting: the request waits for it. For an endpoint whose
    /// handlers have state, [`call_with`](Rpc::call_with).
    ///
    /// Not from a handler or continuation ([`CallError::InsideLoop`]):
    /// there, enqueue with [`OnDone::Continue`](crate::runtime::OnDone::Continue).
    pub fn call(
        &mut self,
        s: SessionId,
        req_type: u8,
        req: &[u8],
        timeout: impl Into<Duration>,
    ) -> Result<MsgBuf, CallError> {
        self.call_with(&mut (), s, req_type, req, timeout)
    }
}

impl<A> Rpc<A> {
    /// [`call`](Rpc::call) on an endpoint whose handlers and continuations
    /// take the application state `app`: the loop serves with it while it
    /// waits.
    pub fn call_with(
        &mut self,
        app: &mut A,
        s: SessionId,
        req_type: u8,
        req: &[u8],
        timeout: impl Into<Duration>,
    ) -> Result<MsgBuf, CallError> {
        if self.in_loop {
            return Err(CallError::InsideLoop);
        }
        let timeout = timeout.into();
        self.now = self.clock.now();
        let deadline = self.now + timeout;
        let slot = self
            .enqueue_bytes_for(s, req_type, req, Waiter::Call, 0)
            .map_err(CallError::NotSent)?;
        self.waiting_call = WaitingCall {
            session: Some(s),
            ..WaitingCall::default()
        };
        loop {
            self.run_once(app);
            let call = &mut self.waiting_call;
            if let Some(outcome) = call.outcome.take() {
                let cause = call.cause;
                *call = WaitingCall::default();
                return outcome.map_err(|e| classify(e, cause));
            }
            if self.now >= deadline {
                self.waiters.abandon(slot);
                self.waiting_call = WaitingCall::default();
                return Err(CallError::Timeout(timeout.into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ErrorCode, SmStatus};

    #[test]
    fn a_request_failed_with_its_session_reports_why_the_session_ended() {
        use RpcError as E;
        let cases = [
            (
                E::SessionClosed,
                Some(E::ConnectTimeout),
                CallError::ConnectFailed(E::ConnectTimeout),
            ),
            (
                E::SessionClosed,
                Some(E::Refused(SmStatus::BadMtu)),
                CallError::ConnectFailed(E::Refused(SmStatus::BadMtu)),
            ),
            (
                E::SessionReset,
                Some(E::PeerTimeout),
                CallError::SessionReset(E::PeerTimeout),
            ),
            // No session event seen (an event handler took it): the request's own error.
            (
                E::SessionReset,
                None,
                CallError::SessionReset(E::SessionReset),
            ),
            (E::SessionClosed, None, CallError::Failed(E::SessionClosed)),
            // A server's error answer is the call's, whatever happened to the session.
            (
                E::Remote(ErrorCode::NoHandler),
                Some(E::PeerTimeout),
                CallError::Failed(E::Remote(ErrorCode::NoHandler)),
            ),
        ];
        for (error, cause, want) in cases {
            assert_eq!(classify(error, cause), want, "{error:?} after {cause:?}");
        }
    }

    #[test]
    fn only_the_waiting_calls_session_leaves_a_cause() {
        let s = |num| SessionId { num, gen: 1 };
        let mut call = WaitingCall {
            session: Some(s(1)),
            ..WaitingCall::default()
        };
        call.session_ended(s(2), RpcError::PeerTimeout);
        assert_eq!(call.cause, None);
        call.session_ended(s(1), RpcError::ConnectTimeout);
        assert_eq!(call.cause, Some(RpcError::ConnectTimeout));
        assert_eq!(
            CallError::ConnectFailed(RpcError::ConnectTimeout).rpc_error(),
            Some(RpcError::ConnectTimeout)
        );
        assert_eq!(CallError::InsideLoop.rpc_error(), None);
    }
}
