//! One endpoint per worker thread: the protocol core plus one queue pair, and
//! the event loop that drives them. Each iteration reads the clock once, then:
//! RX burst -> the receive layers (`phy`: capture, fault drop, ECN marker)
//! -> `handle_frame` per frame (handlers / continuations inline) ->
//! background completions -> timers -> TX (frames written straight into mbuf
//! room by `poll_transmit`, through the transmit layers, sent as one burst)
//! -> events. Nothing here allocates per packet: mbufs come and go in
//! bursts, what waits for each request lives in a preallocated slab
//! (`waiters`). The blocking [`Rpc::call`] is `call`'s.

mod call;
mod idle;
mod layers;
mod waiters;

pub use call::CallError;
use call::WaitingCall;
use idle::Idle;
pub use idle::{IdleWake, MAX_WAIT};
use waiters::{Waiter, Waiters};

use super::background::{BackgroundPool, Job};
use super::handlers::{Completion, Handler, HandlerTable, OnDone};
use super::phy::Phy;
use super::run_counters::RunCounters;
use super::rx_signals::RxSignals;
use super::{Nexus, RuntimeError, StopHandle};
use crate::dpdk::{Mbuf, MbufBatch, Mempool, RxQueue, TscClock, TxQueue, BURST};
use crate::nic::{Offloads, RxChecksum};
use crate::proto::{
    Delivery, Endpoint, EndpointConfig, ErrorCode, Event, MsgBuf, Payload, PeerAddr, ReqHandle,
    RpcError, SessionId,
};
use crate::time::Instant;
use std::collections::VecDeque;
use std::sync::Arc;

/// One RPC endpoint of a worker thread, generic over the application state
/// `A` its handlers and continuations get: the sans-IO [`Endpoint`], the
/// worker's queue pair, and the event loop ([`run_once`](Self::run_once)).
pub struct Rpc<A = ()> {
    ep: Endpoint,
    rx: RxQueue,
    tx: TxQueue,
    pool: Arc<Mempool>,
    clock: TscClock,
    handlers: HandlerTable<A>,
    now: Instant,
    /// What waits for each outstanding request, by the tag the endpoint carries.
    waiters: Waiters<A>,
    /// Outcomes of requests enqueued with `OnDone::Poll`, for `poll_completion`.
    completions: VecDeque<(SessionId, u64, Result<MsgBuf, RpcError>)>,
    /// The blocking `call` in progress, if any.
    waiting_call: WaitingCall,
    /// Whether `run_once` is running (a handler or continuation is on the
    /// stack): `call` refuses to wait inside the loop it would run.
    in_loop: bool,
    /// Session events for `poll_event`, when no event handler is set.
    events: VecDeque<Event>,
    on_event: Option<EventHandler<A>>,
    /// The RX burst, boxed so it can be taken out of `self` (a pointer move)
    /// while handlers get `&mut self`; reused, never re-zeroed per loop.
    rx_batch: Option<Box<MbufBatch>>,
    /// Fresh mbufs for `poll_transmit` to fill.
    spare: MbufBatch,
    /// Frames ready to send (carried over when the TX ring is full).
    pending_tx: MbufBatch,
    background: Option<BackgroundPool>,
    counters: RunCounters,
    queue: u16,
    /// Fault injection, injected ECN marks, capture (`set_fault`, ...).
    phy: Phy,
    /// Ring occupancy for pause mode.
    rx_signals: RxSignals,
    /// The adaptive idle mode's state (`set_idle`, `idle_wait`).
    idle: Idle,
    /// Received mbufs carry the device's checksum verdict (RX offload).
    rx_checked: bool,
    /// The TX checksum offloads in use, and the `ol_flags` they put on
    /// every sent mbuf (0: none, the frame goes as the engine wrote it).
    tx_offloads: Offloads,
    tx_offload_flags: u64,
}

impl<A> std::fmt::Debug for Rpc<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rpc")
            .field("queue", &self.queue)
            .field("local", &self.ep.local_addr())
            .finish()
    }
}

/// Session events kept for `poll_event` at most: an application that
/// neither drains them nor sets an event handler (a server loop) must not
/// grow memory with every peer that connects.
pub const EVENT_QUEUE_CAP: usize = 1024;

/// Receives session events from the run loop (see `Rpc::set_event_handler`).
pub type EventHandler<A> = fn(rpc: &mut Rpc<A>, app: &mut A, ev: Event);

impl<A> Rpc<A> {
    /// The endpoint of worker `queue` (its queue pair) with settings of
    /// the caller's own: start from
    /// [`nexus.endpoint_config(queue)`](Nexus::endpoint_config), change
    /// what differs (credits, timeouts, flow mode, ...), pass it here.
    /// `cfg.local.mac` is replaced by the port's MAC. With the defaults,
    /// [`Nexus::rpc`] is the one call to make.
    pub fn new(
        nexus: &Nexus<A>,
        queue: u16,
        mut cfg: EndpointConfig,
    ) -> Result<Self, RuntimeError> {
        cfg.local.mac = nexus.mac();
        let (rx, tx) = nexus.port().queue_pair(queue)?;
        let mut rx_signals = RxSignals::default();
        if cfg.mode == crate::proto::FlowMode::Pause {
            rx_signals.observe(&rx);
        }
        let ep = Endpoint::new(cfg)?;
        let room = nexus.pool().data_room() as usize;
        if room < ep.min_tx_buf_len() {
            return Err(RuntimeError::MbufTooSmall {
                room,
                needed: ep.min_tx_buf_len(),
            });
        }
        let handlers = nexus.handlers().clone();
        let background = handlers.any_background().then(|| BackgroundPool::new(2));
        let clock = TscClock::new(nexus.eal());
        let (rx_checked, tx_offloads) = (rx.checks_checksums(), tx.offloads());
        Ok(Rpc {
            now: clock.now(),
            ep,
            rx,
            tx,
            pool: nexus.pool().clone(),
            clock,
            handlers,
            waiters: Waiters::new(),
            completions: VecDeque::with_capacity(256),
            waiting_call: WaitingCall::default(),
            in_loop: false,
            events: VecDeque::with_capacity(64),
            on_event: None,
            rx_batch: Some(Box::new(MbufBatch::new())),
            spare: MbufBatch::new(),
            pending_tx: MbufBatch::new(),
            background,
            counters: RunCounters::default(),
            queue,
            phy: Phy::default(),
            rx_signals,
            idle: Idle::default(),
            rx_checked,
            tx_offloads,
            tx_offload_flags: tx_offloads.tx_mbuf_flags(),
        })
    }

    // ---- getters ----

    /// The protocol endpoint (stats, session states, ...).
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }
    /// Counters of the run loop itself.
    pub fn counters(&self) -> &RunCounters {
        &self.counters
    }
    /// The time read at the start of the current loop iteration.
    pub fn now(&self) -> Instant {
        self.now
    }
    /// The worker's TSC clock.
    pub fn clock(&self) -> &TscClock {
        &self.clock
    }
    /// The worker's queue pair index.
    pub fn queue(&self) -> u16 {
        self.queue
    }
    // ---- commands ----

    /// Opens a client session to `peer` (see [`Endpoint::connect`]): a
    /// worker of this process ([`Nexus::worker_addr`]), or a server
    /// anywhere on the link from its address alone, `"10.0.0.1:31850"`
    /// parsed into a [`PeerAddr`] (or a `SocketAddrV4` converted with
    /// `into`), whose MAC the session learns from the handshake. Requests
    /// may be enqueued (or called) at once; they wait for the connect.
    pub fn connect(&mut self, peer: PeerAddr) -> Result<SessionId, RpcError> {
        self.ep.connect(self.now, peer)
    }

    /// Closes client session `s` (see [`Endpoint::disconnect`]).
    pub fn disconnect(&mut self, s: SessionId) -> Result<(), RpcError> {
        self.ep.disconnect(self.now, s)
    }

    /// A pooled message buffer of `len` bytes; it returns to the pool when dropped.
    #[inline]
    pub fn alloc_msg(&mut self, len: usize) -> MsgBuf {
        self.ep.alloc_msg(len)
    }

    /// Sends `msg` as a request of `req_type` on session `s`; `on_done`
    /// says what happens with its response or failure (a continuation, or
    /// the queue [`poll_completion`](Self::poll_completion) reads). To send
    /// and wait in one step, [`call`](Self::call).
    pub fn enqueue_request(
        &mut self,
        s: SessionId,
        req_type: u8,
        msg: MsgBuf,
        on_done: OnDone<A>,
    ) -> Result<(), RpcError> {
        let (waiter, tag) = Waiter::of(on_done);
        self.enqueue_for(s, req_type, msg, waiter, tag).map(|_| ())
    }

    /// Copies `data` into a pooled message buffer and enqueues it (see
    /// [`enqueue_request`](Self::enqueue_request)).
    pub fn enqueue_request_bytes(
        &mut self,
        s: SessionId,
        req_type: u8,
        data: &[u8],
        on_done: OnDone<A>,
    ) -> Result<(), RpcError> {
        let (waiter, tag) = Waiter::of(on_done);
        self.enqueue_bytes_for(s, req_type, data, waiter, tag)
            .map(|_| ())
    }

    /// Enqueues `data` (copied into a pooled buffer) for `waiter`; the
    /// request's slot in the waiter slab.
    fn enqueue_bytes_for(
        &mut self,
        s: SessionId,
        req_type: u8,
        data: &[u8],
        waiter: Waiter<A>,
        user_tag: u64,
    ) -> Result<u32, RpcError> {
        let mut m = self.ep.alloc_msg(data.len());
        m.as_mut_slice().copy_from_slice(data);
        self.enqueue_for(s, req_type, m, waiter, user_tag)
    }

    /// Enqueues `msg` with a waiter slot whose index is the endpoint's tag.
    fn enqueue_for(
        &mut self,
        s: SessionId,
        req_type: u8,
        msg: MsgBuf,
        waiter: Waiter<A>,
        user_tag: u64,
    ) -> Result<u32, RpcError> {
        let slot = self.waiters.insert(waiter, user_tag);
        match self
            .ep
            .enqueue_request(self.now, s, req_type, msg, slot as u64)
        {
            Ok(()) => Ok(slot),
            Err((e, _msg)) => {
                self.waiters.release(slot);
                Err(e)
            }
        }
    }

    /// Answers the request behind `h` with `msg` (see [`Endpoint::respond`]).
    #[inline]
    pub fn respond(&mut self, h: ReqHandle, msg: MsgBuf) -> Result<(), RpcError> {
        self.ep.respond(self.now, h, msg)
    }

    /// Copies `data` into a message buffer and answers with it.
    pub fn respond_bytes(&mut self, h: ReqHandle, data: &[u8]) -> Result<(), RpcError> {
        let mut m = self.ep.alloc_msg(data.len());
        m.as_mut_slice().copy_from_slice(data);
        self.respond(h, m)
    }

    /// The outcome of a request enqueued with [`OnDone::Poll`]: its
    /// session, its tag, and the response (a pooled buffer, back to the
    /// pool when dropped) or why it failed.
    pub fn poll_completion(&mut self) -> Option<(SessionId, u64, Result<MsgBuf, RpcError>)> {
        self.completions.pop_front()
    }

    /// Session events (Connected, ConnectFailed, SessionReset, ...) when no
    /// event handler is set; at most `EVENT_QUEUE_CAP` are kept.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Runs `f` on every session event (Connected, ConnectFailed,
    /// SessionReset, PeerSessionAccepted, ...) from the run loop, instead
    /// of queueing it for `poll_event`. Request failures go to their
    /// continuations either way.
    pub fn set_event_handler(&mut self, f: EventHandler<A>) {
        self.on_event = Some(f);
    }

    // ---- the event loop ----

    /// One iteration of the event loop.
    pub fn run_once(&mut self, app: &mut A) {
        // Restored, not cleared, at the end: a handler that runs the loop
        // itself must not unmark the iteration it was called from.
        let outer = std::mem::replace(&mut self.in_loop, true);
        self.now = self.clock.now();
        self.counters.loops += 1;
        self.rx_and_dispatch(app);
        if self.background.is_some() {
            self.collect_background();
        }
        if let Some(t) = self.ep.poll_timeout() {
            if self.now >= t {
                self.ep.handle_timeout(self.now);
            }
        }
        self.transmit();
        self.drain_events(app);
        self.in_loop = outer;
    }

    /// Runs the loop until `done(app)` is true or `deadline` passes; returns
    /// whether `done` became true.
    pub fn run_until(
        &mut self,
        app: &mut A,
        deadline: Instant,
        done: impl Fn(&A, &Self) -> bool,
    ) -> bool {
        loop {
            self.run_once(app);
            if done(app, self) {
                return true;
            }
            if self.now >= deadline {
                return false;
            }
        }
    }

    /// Runs the loop until `stop` is set (by any thread, or by a handler or
    /// continuation holding a clone).
    pub fn run_until_stopped(&mut self, app: &mut A, stop: &StopHandle) {
        while !stop.is_stopped() {
            self.run_once(app);
            self.idle_wait(None);
        }
    }

    fn rx_and_dispatch(&mut self, app: &mut A) {
        let Some(mut batch) = self.rx_batch.take() else {
            return;
        };
        let n = self.rx.rx_burst(&mut batch);
        self.rx_signals
            .after_burst(&self.rx, n, &mut self.ep, self.now);
        if n > 0 {
            self.counters.rx_bursts_nonempty += 1;
            self.idle.busy_at = self.now;
            let keep = self.phy.receive(self.now, &mut *batch, &mut self.counters);
            for i in keep {
                let frame = batch.data(i);
                let delivery = match self.rx_checked {
                    false => self.ep.handle_frame(self.now, frame),
                    true => match RxChecksum::of(batch.ol_flags(i)) {
                        RxChecksum::Good => self.ep.handle_frame_checked(self.now, frame),
                        RxChecksum::Unchecked => self.ep.handle_frame(self.now, frame),
                        RxChecksum::Bad => {
                            self.ep.drop_bad_checksum(frame.len());
                            None
                        }
                    },
                };
                match delivery {
                    None => {}
                    Some(Delivery::Request {
                        handle,
                        req_type,
                        payload,
                    }) => self.dispatch_request(app, handle, req_type, payload),
                    Some(Delivery::Response {
                        session,
                        tag,
                        payload,
                    }) => self.dispatch_response(app, session, tag, payload),
                }
            }
            batch.clear();
        }
        self.rx_batch = Some(batch);
    }

    /// A complete request: to its handler, or an error answer on the wire
    /// when its type has none. A multi-packet payload's buffer goes back to
    /// the pool when `payload` drops at the end of this function.
    fn dispatch_request(
        &mut self,
        app: &mut A,
        handle: ReqHandle,
        req_type: u8,
        payload: Payload<'_>,
    ) {
        match self.handlers.get(req_type) {
            Some(Handler::Inline(f)) => {
                let f = *f;
                f(self, app, handle, payload.as_slice());
            }
            Some(Handler::Background(f)) => {
                let job = Job {
                    handle,
                    req_type,
                    req: payload.as_slice().to_vec(),
                    f: f.clone(),
                };
                self.counters.background_jobs += 1;
                if let Some(bg) = self.background.as_mut() {
                    bg.submit(job);
                }
            }
            None => {
                self.counters.no_handler += 1;
                // The session may be gone already; then no one waits.
                let _ = self.ep.respond_error(handle, ErrorCode::NoHandler);
            }
        }
    }

    /// A complete response: to the request's continuation, or to the
    /// completion queue when it was enqueued without one.
    fn dispatch_response(
        &mut self,
        app: &mut A,
        session: SessionId,
        tag: u64,
        payload: Payload<'_>,
    ) {
        let Some((waiter, user_tag)) = self.waiters.take(tag) else {
            return;
        };
        match waiter {
            Waiter::Continue(c) => {
                let done = Completion {
                    session,
                    tag: user_tag,
                    result: Ok(payload.as_slice()),
                };
                c(self, app, done);
            }
            Waiter::Poll => {
                let m = self.owned(payload);
                self.completions.push_back((session, user_tag, Ok(m)));
            }
            Waiter::Call => {
                let m = self.owned(payload);
                self.waiting_call.complete(Ok(m));
            }
            Waiter::Abandoned => {}
        }
    }

    /// A response's bytes in a pooled buffer of their own (a multi-packet
    /// one already is; a single-packet one is copied out of its frame).
    fn owned(&mut self, payload: Payload<'_>) -> MsgBuf {
        match payload {
            Payload::Owned(m) => m,
            Payload::Borrowed(b) => {
                let mut m = self.ep.alloc_msg(b.len());
                m.as_mut_slice().copy_from_slice(b);
                m
            }
        }
    }

    fn collect_background(&mut self) {
        while let Some(done) = self.background.as_mut().and_then(|bg| bg.try_done()) {
            // The session may have gone away meanwhile; then there is no one to answer.
            let _ = self.respond_bytes(done.handle, &done.resp);
        }
    }

    fn transmit(&mut self) {
        while !self.pending_tx.is_full() && self.ep.has_pending_transmit() {
            if self.spare.is_empty() && self.spare.alloc(&self.pool, BURST).is_err() {
                self.counters.tx_no_mbuf += 1;
                break;
            }
            let Some(mut m) = self.spare.pop() else { break };
            match self.ep.poll_transmit(self.now, m.room_mut()) {
                Some(len) => {
                    m.set_len(len);
                    if self.tx_offload_flags != 0 {
                        m.offload_checksums(&self.tx_offloads, self.tx_offload_flags);
                    }
                    if !self.phy.transmit(self.now, m.data(), &mut self.counters) {
                        // Taken by the TX fault injector: the mbuf is reused.
                        let _ = self.spare.push(m);
                        continue;
                    }
                    if let Err(m) = self.pending_tx.push(m) {
                        drop::<Mbuf>(m);
                    }
                }
                None => {
                    let _ = self.spare.push(m);
                    break;
                }
            }
        }
        if !self.pending_tx.is_empty() {
            self.tx.tx_burst(&mut self.pending_tx);
            if !self.pending_tx.is_empty() {
                self.counters.tx_ring_full += 1;
            }
        }
    }

    /// Endpoint events: request failures to their continuations, session
    /// events to the application's event handler, or to the bounded queue
    /// read by `poll_event` (overflow counted in `events_dropped`).
    fn drain_events(&mut self, app: &mut A) {
        while let Some(ev) = self.ep.poll_event() {
            match ev {
                Event::RequestFailed {
                    session,
                    tag,
                    error,
                } => self.fail_request(app, session, tag, error),
                ev => {
                    if let Event::ConnectFailed { session, reason }
                    | Event::SessionReset { session, reason } = ev
                    {
                        self.waiting_call.session_ended(session, reason);
                    }
                    match self.on_event {
                        Some(f) => f(self, app, ev),
                        None if self.events.len() < EVENT_QUEUE_CAP => self.events.push_back(ev),
                        None => self.counters.events_dropped += 1,
                    }
                }
            }
        }
    }

    /// A request that will not complete: its failure to whoever waits.
    fn fail_request(&mut self, app: &mut A, session: SessionId, tag: u64, error: RpcError) {
        let Some((waiter, user_tag)) = self.waiters.take(tag) else {
            return;
        };
        match waiter {
            Waiter::Continue(c) => c(
                self,
                app,
                Completion {
                    session,
                    tag: user_tag,
                    result: Err(error),
                },
            ),
            Waiter::Poll => self.completions.push_back((session, user_tag, Err(error))),
            Waiter::Call => self.waiting_call.complete(Err(error)),
            Waiter::Abandoned => {}
        }
    }
}
