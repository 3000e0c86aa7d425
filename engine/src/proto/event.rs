//! What the endpoint hands to the application: a [`Delivery`] returned by
//! `handle_frame` (a complete request or response, its bytes in a
//! [`Payload`]), and [`Event`]s drained with `poll_event`.

use super::error::RpcError;
use super::ids::{ReqHandle, SessionId};
use super::msgbuf::MsgBuf;
use super::wrong_tokens::WrongTokenReport;
use crate::wire::MacAddr;
use std::net::Ipv4Addr;

/// What `handle_frame` hands to the application.
#[derive(Debug)]
pub enum Delivery<'f> {
    /// Server side: a complete request. Answer with
    /// [`Endpoint::respond`](super::Endpoint::respond) (now or later). The
    /// handler for a given (session, req_num) is invoked at most once.
    Request {
        /// Consumed by the answer.
        handle: ReqHandle,
        /// Selects the handler.
        req_type: u8,
        /// The request's bytes.
        payload: Payload<'f>,
    },
    /// Client side: the complete response to the request enqueued with `tag`.
    Response {
        /// The client session the request was sent on.
        session: SessionId,
        /// The tag given to `enqueue_request`.
        tag: u64,
        /// The response's bytes.
        payload: Payload<'f>,
    },
}

/// A received message: borrowed from the frame (single-packet messages,
/// zero-copy) or assembled into a pooled buffer (multi-packet messages),
/// which returns to its pool when the payload is dropped.
#[derive(Debug)]
pub enum Payload<'f> {
    /// The message bytes inside the received frame.
    Borrowed(&'f [u8]),
    /// A message assembled from several packets.
    Owned(MsgBuf),
}

impl Payload<'_> {
    /// The message bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Payload::Borrowed(b) => b,
            Payload::Owned(m) => m.as_slice(),
        }
    }

    /// Message length in bytes.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the message is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Things that happened, drained with
/// [`Endpoint::poll_event`](super::Endpoint::poll_event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A session opened with `connect` is ready.
    Connected(SessionId),
    /// A connect failed (timeout or refused); the session is freed and any
    /// requests enqueued on it failed with `SessionClosed`.
    ConnectFailed {
        /// The freed session.
        session: SessionId,
        /// `ConnectTimeout` or `Refused(status)`.
        reason: RpcError,
    },
    /// A session closed with `disconnect` is freed.
    Disconnected(SessionId),
    /// A client session was reset (reason `PeerTimeout` or
    /// `LosslessViolation`); its requests fail with `SessionReset`.
    SessionReset {
        /// The session, now in state Reset.
        session: SessionId,
        /// Why it was reset.
        reason: RpcError,
    },
    /// A request will never complete; its request buffer went back to the pool.
    RequestFailed {
        /// The client session the request was on.
        session: SessionId,
        /// The tag given to `enqueue_request`.
        tag: u64,
        /// Why it failed.
        error: RpcError,
    },
    /// Server side: a peer opened a session to us.
    PeerSessionAccepted(SessionId),
    /// Server side: a peer closed its session (or reconnected with a new
    /// token, which replaces the old session).
    PeerSessionClosed(SessionId),
    /// Server side: a session whose client went silent (dead, or a
    /// half-open handshake) was reclaimed after the idle timeout.
    PeerSessionReclaimed(SessionId),
    /// Server side: a source address sent more wrong tokens in one second
    /// than `admission.wrong_tokens_per_sec`; until the second is over the
    /// server withholds the replies and probes its packets could draw.
    WrongTokens(WrongTokenReport),
    /// Server side: a session kept sending more request packets than its
    /// credits allow (`police.rs`): it is closed and its source barred
    /// from new sessions for `police.cooloff`.
    CreditViolator(ViolatorReport),
}

/// What `Event::CreditViolator` reports: a session closed for sending
/// more than its credits allow, and its source, now barred.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViolatorReport {
    /// The closed server session.
    pub session: SessionId,
    /// Its source address (barred with `mac`).
    pub ip: Ipv4Addr,
    /// Its source MAC address.
    pub mac: MacAddr,
    /// Its source UDP port.
    pub port: u16,
    /// Its request packets dropped over the allowance.
    pub excess: u64,
}
