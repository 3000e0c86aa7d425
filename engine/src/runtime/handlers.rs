//! The request-handler table (one entry per request type, shared by every
//! worker of a process), the continuation types, and [`OnDone`]: what
//! happens when a request completes (a continuation or a queue). Handlers and
//! continuations are plain function pointers over the application's state:
//! one indirect call per request, no boxing, no allocation.

use super::background::BackgroundFn;
use super::Rpc;
use crate::proto::{ReqHandle, RpcError, SessionId};
use std::sync::Arc;

/// An inline request handler: runs on the dispatch thread and must not block;
/// it answers with `rpc.respond(handle, ..)`, now or later.
pub type ReqHandler<A> = fn(rpc: &mut Rpc<A>, app: &mut A, handle: ReqHandle, req: &[u8]);

/// How a request type is handled.
pub enum Handler<A> {
    /// Runs on the worker's loop ([`ReqHandler`]).
    Inline(ReqHandler<A>),
    /// Runs on a background worker thread (for long work): gets the request
    /// bytes, returns the response bytes; the dispatch thread sends it.
    Background(Arc<BackgroundFn>),
}

impl<A> Clone for Handler<A> {
    fn clone(&self) -> Self {
        match self {
            Handler::Inline(f) => Handler::Inline(*f),
            Handler::Background(f) => Handler::Background(f.clone()),
        }
    }
}

impl<A> std::fmt::Debug for Handler<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Handler::Inline(_) => f.write_str("Inline"),
            Handler::Background(_) => f.write_str("Background"),
        }
    }
}

/// Handlers by request type (0..=255).
pub struct HandlerTable<A = ()> {
    slots: Vec<Option<Handler<A>>>,
}

impl<A> std::fmt::Debug for HandlerTable<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let types: Vec<usize> = (0..256).filter(|&i| self.slots[i].is_some()).collect();
        f.debug_struct("HandlerTable")
            .field("types", &types)
            .finish()
    }
}

impl<A> Clone for HandlerTable<A> {
    fn clone(&self) -> Self {
        HandlerTable {
            slots: self.slots.clone(),
        }
    }
}

impl<A> Default for HandlerTable<A> {
    fn default() -> Self {
        HandlerTable {
            slots: (0..256).map(|_| None).collect(),
        }
    }
}

impl<A> HandlerTable<A> {
    /// A table with no handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the handler of `req_type` (replacing any); chainable.
    pub fn register(&mut self, req_type: u8, h: Handler<A>) -> &mut Self {
        self.slots[req_type as usize] = Some(h);
        self
    }

    /// The handler of `req_type`, if one is registered.
    #[inline]
    pub fn get(&self, req_type: u8) -> Option<&Handler<A>> {
        self.slots[req_type as usize].as_ref()
    }

    /// Whether any handler runs in the background (workers then start a pool).
    pub fn any_background(&self) -> bool {
        self.slots
            .iter()
            .any(|s| matches!(s, Some(Handler::Background(_))))
    }
}

/// What a continuation receives: the response bytes or why there are none.
#[derive(Debug)]
pub struct Completion<'a> {
    /// The session the request was sent on.
    pub session: SessionId,
    /// The application's tag given to `enqueue_request`.
    pub tag: u64,
    /// The response bytes, or why the request failed.
    pub result: Result<&'a [u8], RpcError>,
}

/// Runs on the dispatch thread when a request completes or fails. It may
/// enqueue further requests.
pub type Continuation<A> = fn(rpc: &mut Rpc<A>, app: &mut A, done: Completion<'_>);

/// What happens when a request sent with
/// [`Rpc::enqueue_request`](super::Rpc::enqueue_request) completes or
/// fails. (Before this type, the two were the positional `cont, tag`
/// arguments: `None, 0` is `OnDone::Poll { tag: 0 }`.) For one request at
/// a time, [`Rpc::call`](super::Rpc::call) sends and waits in one step.
pub enum OnDone<A> {
    /// The outcome waits in a queue for
    /// [`Rpc::poll_completion`](super::Rpc::poll_completion), which returns
    /// it with `tag`: a number of the caller's choosing that tells its
    /// requests apart (any value; 0 when there is one at a time).
    Poll {
        /// Returned with the outcome.
        tag: u64,
    },
    /// `cont` runs on this worker's loop when the response arrives or the
    /// request fails, with `tag` in its [`Completion`].
    Continue {
        /// The continuation.
        cont: Continuation<A>,
        /// Passed to `cont` in [`Completion::tag`].
        tag: u64,
    },
}

impl<A> Clone for OnDone<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for OnDone<A> {}

impl<A> std::fmt::Debug for OnDone<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OnDone::Poll { tag } => f.debug_struct("Poll").field("tag", tag).finish(),
            OnDone::Continue { tag, .. } => f.debug_struct("Continue").field("tag", tag).finish(),
        }
    }
}
