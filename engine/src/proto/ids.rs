//! Handles the application holds: [`SessionId`] names a session of one
//! endpoint, [`ReqHandle`] names a request delivered to a server handler.
//! Both carry the session's generation, so a handle outlives its session
//! harmlessly: once the session is freed (and its number reused) every
//! lookup with the old handle misses.

use core::fmt;

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
/// [`Endpoint::respond`](super::Endpoint::respond) (or
/// [`respond_error`](super::Endpoint::respond_error)), which consumes it.
/// Not `Clone`: a handler answers once.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ReqHandle {
    pub(crate) session: SessionId,
    pub(crate) req_num: u64,
}

impl ReqHandle {
    /// The server session the request arrived on.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The request's number within its session.
    pub fn req_num(&self) -> u64 {
        self.req_num
    }
}
