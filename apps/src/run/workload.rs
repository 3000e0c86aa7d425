//! The workloads, over the engine's runtime: the server's handlers (echo with
//! a chosen response size, optional busy work per request, optionally on a
//! background thread) and the client's drivers (closed loop with a window per
//! session for latency/throughput/large/incast; open loop at a fixed rate,
//! timed from the intended send times so queueing is not hidden). Messages
//! follow `run::message`'s format, so the receiver can check every byte.
//!
//! A request of 12 bytes or more also names, in bytes 8..12, the response
//! size its client expects: the server answers with that size, so a client
//! run with `--resp-size 4096` needs no matching flag on the server.
//! Shorter requests cannot carry it; the server then answers with its own
//! `workload.resp_size`, and the client stops at the first response of the
//! wrong size, naming both.

use crate::run::live::Snapshot;
pub use crate::run::message::{
    asked_resp_size, check_message, fill_message, pattern, pattern_byte, write_resp_size,
    write_seq, REQ_ECHO, REQ_HEADER, RESP_HEADER,
};
use crate::run::tally::Tally;
use engine::proto::{MsgBuf, PeerAddr, ReqHandle, SessionId};
use engine::runtime::{Completion, OnDone, Rpc};
use engine::time::{Duration, Instant};

// ---------------------------------------------------------------- roles

/// Application state that includes a server half (the echo handler's state).
pub trait ServerSide {
    fn server(&mut self) -> &mut ServerApp;
}

/// Application state that includes a client half (the workload driver's state).
pub trait ClientSide {
    fn client(&mut self) -> &mut ClientApp;
}

impl ServerSide for ServerApp {
    fn server(&mut self) -> &mut ServerApp {
        self
    }
}

impl ClientSide for ClientApp {
    fn client(&mut self) -> &mut ClientApp {
        self
    }
}

/// Both halves in one endpoint: the single-process loopback over net_ring,
/// where the endpoint connects to its own address.
#[derive(Debug)]
pub struct LoopApp {
    pub srv: ServerApp,
    pub cli: ClientApp,
}

impl ServerSide for LoopApp {
    fn server(&mut self) -> &mut ServerApp {
        &mut self.srv
    }
}

impl ClientSide for LoopApp {
    fn client(&mut self) -> &mut ClientApp {
        &mut self.cli
    }
}

// ---------------------------------------------------------------- server

/// Server-side state of one worker.
#[derive(Debug)]
pub struct ServerApp {
    pub resp_size: usize,
    pub work_ns: u64,
    pub verify: bool,
    pub template: Vec<u8>,
    pub handled: u64,
    pub bad_requests: u64,
    pub respond_errors: u64,
}

impl ServerApp {
    /// `resp_size` answers requests too short to ask for a size;
    /// `max_msg` bounds the sizes asked for and the requests checked.
    pub fn new(resp_size: usize, max_msg: usize, work_ns: u64, verify: bool) -> Self {
        ServerApp {
            resp_size,
            work_ns,
            verify,
            template: pattern(resp_size.max(max_msg)),
            handled: 0,
            bad_requests: 0,
            respond_errors: 0,
        }
    }
}

/// Spins for `ns` nanoseconds on the TSC: the model of a slow receiver.
fn busy_work<A>(rpc: &Rpc<A>, ns: u64) {
    let clock = rpc.clock();
    let until = clock.now() + Duration::from_nanos(ns);
    while clock.now() < until {
        std::hint::spin_loop();
    }
}

/// The response size to answer `req` with: the size it asks for, or the
/// server's own for a request too short to ask; None when it asks for
/// more than the server answers with (`max`).
#[inline]
pub fn response_size(req: &[u8], own: usize, max: usize) -> Option<usize> {
    match asked_resp_size(req) {
        Some(n) if n > max => None,
        Some(n) => Some(n),
        None => Some(own),
    }
}

/// The inline echo handler: checks the request, answers with the response
/// size it asks for ([`response_size`]), in pattern bytes carrying the
/// request's sequence number. A request asking for more than the server's
/// largest message counts as bad and is answered with the server's size.
pub fn echo_handler<A: ServerSide>(rpc: &mut Rpc<A>, whole: &mut A, h: ReqHandle, req: &[u8]) {
    let app = whole.server();
    app.handled += 1;
    let resp_size = match response_size(req, app.resp_size, app.template.len()) {
        Some(n) => n,
        None => {
            app.bad_requests += 1;
            app.resp_size
        }
    };
    let seq = if app.verify {
        match check_message(req, &app.template, req.len(), REQ_HEADER) {
            Ok(s) => s,
            Err(_) => {
                app.bad_requests += 1;
                u64::MAX
            }
        }
    } else {
        let mut s = [0u8; 8];
        let k = req.len().min(8);
        s[..k].copy_from_slice(&req[..k]);
        u64::from_le_bytes(s)
    };
    if app.work_ns > 0 {
        busy_work(rpc, app.work_ns);
    }
    let mut m = rpc.alloc_msg(resp_size);
    if app.verify {
        fill_message(m.as_mut_slice(), &app.template, seq);
    } else {
        write_seq(m.as_mut_slice(), seq);
    }
    if rpc.respond(h, m).is_err() {
        app.respond_errors += 1;
    }
}

/// The background echo handler: the same answer, computed off the dispatch
/// thread (a size above `max_msg` is answered with `resp_size`).
pub fn background_echo(
    resp_size: usize,
    max_msg: usize,
    work_ns: u64,
) -> impl Fn(u8, &[u8]) -> Vec<u8> + Send + Sync {
    let template = pattern(resp_size.max(max_msg));
    move |_ty, req| {
        if work_ns > 0 {
            let until = std::time::Instant::now() + std::time::Duration::from_nanos(work_ns);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        let n = response_size(req, resp_size, template.len()).unwrap_or(resp_size);
        let mut out = template[..n].to_vec();
        let mut s = [0u8; 8];
        let k = req.len().min(8);
        s[..k].copy_from_slice(&req[..k]);
        fill_message(&mut out, &template, u64::from_le_bytes(s));
        out
    }
}

// ---------------------------------------------------------------- client

/// How a client issues requests: a closed loop (a window per session) or
/// an open one (at intended times, whatever completes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loop {
    /// Each session keeps `window` requests outstanding.
    Closed,
    /// Requests start at intended times `rate` per second per worker.
    Open { interval: Duration },
}

#[derive(Clone, Debug)]
pub struct ClientParams {
    pub pace: Loop,
    pub req_size: usize,
    pub resp_size: usize,
    pub window: usize,
    pub sessions: usize,
    pub warmup: Duration,
    pub run: Duration,
    /// Stop issuing after this many requests per worker (None: time-bound only).
    pub max_requests: Option<u64>,
    pub verify: bool,
    /// Time between live progress lines (None: the default second;
    /// whether lines appear at all is `run::interval::LiveOptions::client`'s
    /// rule).
    pub live_every: Option<Duration>,
}

/// Client-side state of one worker.
#[derive(Debug)]
pub struct ClientApp {
    pub p: ClientParams,
    pub template: Vec<u8>,
    pub sessions: Vec<SessionId>,
    /// Completions and latencies, split at the measured window.
    pub tally: Tally,
    /// Intended send time per tag (tag = index), for latency measurement.
    start_times: Vec<Instant>,
    free_tags: Vec<u32>,
    pub issued: u64,
    pub failed: u64,
    pub bad_responses: u64,
    pub first_error: Option<String>,
    pub enqueue_errors: u64,
    pub stop_at: Instant,
    pub next_seq: u64,
    /// Open loop: the next intended send time.
    next_intended: Instant,
    pub in_flight: usize,
    pub rr: usize,
}

impl ClientApp {
    pub fn new(p: ClientParams, sessions: Vec<SessionId>, now: Instant) -> Self {
        let cap = (p.window.max(1) * sessions.len().max(1) * 4).max(1024);
        let template = pattern(p.req_size.max(p.resp_size));
        ClientApp {
            tally: Tally::new(now, p.warmup, p.run),
            stop_at: now + p.warmup + p.run,
            next_intended: now,
            p,
            template,
            sessions,
            start_times: vec![Instant::ZERO; cap],
            free_tags: (0..cap as u32).rev().collect(),
            issued: 0,
            failed: 0,
            bad_responses: 0,
            first_error: None,
            enqueue_errors: 0,
            next_seq: 0,
            in_flight: 0,
            rr: 0,
        }
    }

    fn may_issue(&self, now: Instant) -> bool {
        now < self.stop_at && self.p.max_requests.is_none_or(|m| self.issued < m)
    }

    pub fn done(&self, now: Instant) -> bool {
        !self.may_issue(now) && self.in_flight == 0
    }

    /// This worker's measured window at `now`, for the live board:
    /// completions measured so far, and whether it is inside the window or
    /// past it (stopped early counts as past). The reporter marks each
    /// interval's phase from these (`run::interval`).
    pub fn window_state(&self, now: Instant, snap: &mut Snapshot) {
        let t = &self.tally;
        let past = now >= self.stop_at.min(t.measure_until);
        snap.measured = t.completed_measured;
        snap.in_window = u64::from(now >= t.measure_from && !past);
        snap.past_window = u64::from(past);
    }
}

/// Issues one request on `s` whose latency is measured from `start`.
/// Returns false when nothing could be issued (no free tag, or the endpoint refused).
fn issue<A: ClientSide>(rpc: &mut Rpc<A>, whole: &mut A, s: SessionId, start: Instant) -> bool {
    let app = whole.client();
    let Some(tag) = app.free_tags.pop() else {
        return false;
    };
    app.start_times[tag as usize] = start;
    let mut m: MsgBuf = rpc.alloc_msg(app.p.req_size);
    let seq = app.next_seq;
    if app.p.verify {
        fill_message(m.as_mut_slice(), &app.template, seq);
    } else {
        write_seq(m.as_mut_slice(), seq);
    }
    write_resp_size(m.as_mut_slice(), app.p.resp_size);
    let on_done = OnDone::Continue {
        cont: on_response::<A>,
        tag: tag as u64,
    };
    match rpc.enqueue_request(s, REQ_ECHO, m, on_done) {
        Ok(()) => {
            let app = whole.client();
            app.next_seq += 1;
            app.issued += 1;
            app.in_flight += 1;
            true
        }
        Err(e) => {
            let app = whole.client();
            app.free_tags.push(tag);
            app.enqueue_errors += 1;
            app.first_error
                .get_or_insert_with(|| format!("enqueue failed: {e}"));
            false
        }
    }
}

fn on_response<A: ClientSide>(rpc: &mut Rpc<A>, whole: &mut A, done: Completion<'_>) {
    let now = rpc.now();
    let app = whole.client();
    let tag = done.tag as usize;
    let start = app.start_times[tag];
    app.free_tags.push(tag as u32);
    app.in_flight -= 1;
    match done.result {
        Ok(resp) => {
            if let Err(e) = judge_response(resp, &app.template, &app.p) {
                // A wrong response is a failed RPC: not completed, not in
                // the latencies or the goodput.
                app.bad_responses += 1;
                app.failed += 1;
                if resp.len() != app.p.resp_size {
                    // Every later response will be as wrong: stop issuing
                    // now (the requests in flight drain, each counted).
                    app.stop_at = app.stop_at.min(now);
                }
                app.first_error
                    .get_or_insert_with(|| explain_bad_response(e, resp.len(), &app.p));
            } else {
                app.tally.record(start, now);
            }
        }
        Err(e) => {
            app.failed += 1;
            app.first_error
                .get_or_insert_with(|| format!("request failed: {e}"));
        }
    }
    // Closed loop: keep the session's window full.
    if app.p.pace == Loop::Closed && app.may_issue(now) {
        issue(rpc, whole, done.session, now);
    }
}

/// Whether `resp` is the response `p` asked for: its length always (one
/// comparison, so a server answering another size is caught even
/// unverified), every byte when `p.verify`.
#[inline]
fn judge_response(resp: &[u8], template: &[u8], p: &ClientParams) -> Result<(), String> {
    if resp.len() != p.resp_size {
        return Err(format!("length {} != expected {}", resp.len(), p.resp_size));
    }
    if p.verify {
        check_message(resp, template, p.resp_size, RESP_HEADER)?;
    }
    Ok(())
}

/// The first bad response's error, with the likely cause when only its
/// length is wrong.
fn explain_bad_response(e: String, got: usize, p: &ClientParams) -> String {
    if got == p.resp_size {
        return format!("bad response: {e}");
    }
    let want = p.resp_size;
    let head = format!(
        "the server answered {got} B where --resp-size {want} asked for {want} B (the client stopped at this first wrong response)"
    );
    if p.req_size < REQ_HEADER {
        format!(
            "{head}: requests under {REQ_HEADER} B cannot ask for a size, so the server answered with its own workload.resp_size; start both sides with the same --resp-size"
        )
    } else {
        format!(
            "{head}: a server that predates sized requests, or one whose transport.max_msg_size is smaller"
        )
    }
}

/// Starts the workload: fills every session's window (closed loop).
pub fn start<A: ClientSide>(rpc: &mut Rpc<A>, whole: &mut A) {
    let app = whole.client();
    if app.p.pace != Loop::Closed {
        return;
    }
    let now = rpc.now();
    let sessions = app.sessions.clone();
    let window = app.p.window.max(1);
    for s in sessions {
        for _ in 0..window {
            if !whole.client().may_issue(now) || !issue(rpc, whole, s, now) {
                break;
            }
        }
    }
}

/// Open loop: issues every request whose intended time has come, round-robin
/// over sessions; latency counts from the intended time.
pub fn open_loop_tick<A: ClientSide>(rpc: &mut Rpc<A>, whole: &mut A) {
    let Loop::Open { interval } = whole.client().p.pace else {
        return;
    };
    let now = rpc.now();
    loop {
        let app = whole.client();
        let cap = app.p.window.max(1) * app.sessions.len();
        if !(app.next_intended <= now && app.may_issue(now) && app.in_flight < cap) {
            break;
        }
        let s = app.sessions[app.rr % app.sessions.len()];
        app.rr += 1;
        let t = app.next_intended;
        if !issue(rpc, whole, s, t) {
            break;
        }
        whole.client().next_intended += interval;
    }
    // Requests we could not even start (window full) are late: they keep their
    // intended time and are issued as soon as a slot frees.
}

/// Handshakes one client worker keeps in flight while connecting: a
/// quarter of the default receive ring (1,024), so a burst of ConnectReqs
/// (and of their retries) cannot overflow the server's ring, while the
/// handshakes of thousands of sessions still overlap.
const CONNECTS_IN_FLIGHT: usize = 256;

/// Connects one session to each of `peers` and waits for all (bounded,
/// and ended by SIGINT/SIGTERM), with at most `CONNECTS_IN_FLIGHT`
/// handshakes outstanding at a time.
pub fn connect_all<A>(
    rpc: &mut Rpc<A>,
    app: &mut A,
    peers: &[PeerAddr],
    timeout: Duration,
) -> anyhow::Result<Vec<SessionId>> {
    let mut pending = Vec::with_capacity(peers.len());
    let mut connected = Vec::with_capacity(peers.len());
    let deadline = rpc.clock().now() + timeout;
    while connected.len() < peers.len() {
        while pending.len() < peers.len() && pending.len() - connected.len() < CONNECTS_IN_FLIGHT {
            pending.push(rpc.connect(peers[pending.len()])?);
        }
        rpc.run_once(app);
        while let Some(ev) = rpc.poll_event() {
            match ev {
                engine::proto::Event::Connected(s) => connected.push(s),
                engine::proto::Event::ConnectFailed { session, reason } => {
                    let i = pending.iter().position(|p| *p == session).unwrap_or(0);
                    anyhow::bail!(
                        "connect to {}:{} failed: {reason}",
                        peers[i].ip,
                        peers[i].port
                    )
                }
                _ => {}
            }
        }
        // SIGINT/SIGTERM while the handshakes run ends the wait at once.
        if crate::run::sys::interrupted() {
            anyhow::bail!(
                "interrupted while connecting: {} of {} sessions connected",
                connected.len(),
                peers.len()
            );
        }
        if rpc.now() > deadline {
            anyhow::bail!(
                "{} of {} sessions connected within {:?} (is the server running on the same link?)",
                connected.len(),
                peers.len(),
                std::time::Duration::from_nanos(timeout.as_nanos())
            );
        }
    }
    // Keep the order of `peers` (session numbers grow with it, since a
    // fresh endpoint hands them out in order; the sort is O(n log n)).
    let order: std::collections::HashMap<SessionId, usize> =
        pending.iter().enumerate().map(|(i, s)| (*s, i)).collect();
    connected.sort_by_key(|s| order.get(s).copied().unwrap_or(usize::MAX));
    Ok(connected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_corruption_is_caught() {
        let t = pattern(100);
        let mut m = vec![0u8; 100];
        fill_message(&mut m, &t, 42);
        assert_eq!(check_message(&m, &t, 100, RESP_HEADER), Ok(42));
        m[50] ^= 1;
        assert!(check_message(&m, &t, 100, RESP_HEADER)
            .unwrap_err()
            .contains("byte 50"));
        assert!(check_message(&m[..10], &t, 100, RESP_HEADER).is_err());
        let mut small = vec![0u8; 3];
        fill_message(&mut small, &t, 0x0001_0203);
        assert_eq!(check_message(&small, &t, 3, REQ_HEADER), Ok(0x0001_0203));
        assert_eq!(check_message(&[], &t, 0, REQ_HEADER), Ok(0));
        // Longer than the pattern: an error, not a panic.
        let long = vec![0u8; t.len() + 1];
        assert!(check_message(&long, &t, long.len(), RESP_HEADER)
            .unwrap_err()
            .contains("exceeds"));
    }

    #[test]
    fn a_request_names_its_response_size_and_the_server_answers_with_it() {
        let t = pattern(64);
        let mut req = vec![0u8; 32];
        fill_message(&mut req, &t, 7);
        write_resp_size(&mut req, 4096);
        // The size field is outside the checked pattern.
        assert_eq!(check_message(&req, &t, 32, REQ_HEADER), Ok(7));
        assert!(check_message(&req, &t, 32, RESP_HEADER).is_err());
        assert_eq!(asked_resp_size(&req), Some(4096));
        assert_eq!(response_size(&req, 32, 8 << 20), Some(4096));
        // More than the server's largest message: refused, not allocated.
        write_resp_size(&mut req, 9 << 20);
        assert_eq!(response_size(&req, 32, 8 << 20), None);
        // Too short to ask: the server's own size.
        let mut short = vec![0u8; 11];
        write_resp_size(&mut short, 4096);
        assert_eq!(short, vec![0u8; 11]);
        assert_eq!(response_size(&short, 32, 8 << 20), Some(32));
    }

    #[test]
    fn the_background_handler_answers_the_asked_size() {
        let h = background_echo(32, 1 << 20, 0);
        let t = pattern(1 << 20);
        let mut req = vec![0u8; 16];
        fill_message(&mut req, &t, 9);
        write_resp_size(&mut req, 5000);
        let out = h(REQ_ECHO, &req);
        assert_eq!(out.len(), 5000);
        assert_eq!(check_message(&out, &t, 5000, RESP_HEADER), Ok(9));
        write_resp_size(&mut req, 2 << 20);
        assert_eq!(h(REQ_ECHO, &req).len(), 32);
    }

    #[test]
    fn a_response_of_another_size_is_wrong_even_unverified() {
        let mut p = ClientParams {
            pace: Loop::Closed,
            req_size: 8,
            resp_size: 100,
            window: 1,
            sessions: 1,
            warmup: Duration::ZERO,
            run: Duration::ZERO,
            max_requests: None,
            verify: false,
            live_every: None,
        };
        let t = pattern(100);
        let mut resp = vec![0u8; 100];
        fill_message(&mut resp, &t, 3);
        assert_eq!(judge_response(&resp, &t, &p), Ok(()));
        let e = judge_response(&resp[..32], &t, &p).unwrap_err();
        assert_eq!(e, "length 32 != expected 100");
        // Unverified bodies are not read; verified ones are.
        resp[50] ^= 1;
        assert_eq!(judge_response(&resp, &t, &p), Ok(()));
        p.verify = true;
        assert!(judge_response(&resp, &t, &p)
            .unwrap_err()
            .contains("byte 50"));
    }

    #[test]
    fn a_length_mismatch_says_why() {
        let mut p = ClientParams {
            pace: Loop::Closed,
            req_size: 8,
            resp_size: 4096,
            window: 1,
            sessions: 1,
            warmup: Duration::ZERO,
            run: Duration::ZERO,
            max_requests: None,
            verify: true,
            live_every: None,
        };
        let e = explain_bad_response("length 32 != expected 4096".into(), 32, &p);
        assert!(
            e.contains("answered 32 B where --resp-size 4096 asked for 4096 B")
                && e.contains("under 12 B"),
            "{e}"
        );
        p.req_size = 32;
        let e = explain_bad_response("x".into(), 32, &p);
        assert!(
            e.contains("asked for 4096 B") && e.contains("stopped"),
            "{e}"
        );
        assert!(explain_bad_response("byte 9".into(), 4096, &p).starts_with("bad response"));
    }
}
