//! rpc-client on the kernel link (`link.kind = "kernel"`): one endpoint on a
//! plain UDP socket (`engine::kernel`), no DPDK, calling a DPDK rpc-server
//! on the other end of the wire (af_packet on a veth pair: the client in
//! the veth peer's network namespace, whose kernel owns `link.client_ip`;
//! see `scripts/kernel-link.sh`). The workload is the closed loop of
//! `workload` (a window per session, warm-up then the measured window,
//! every response checked), written against the socket endpoint since the
//! DPDK one's continuations take an `Rpc`; its result is the DPDK client's
//! `ClientResult`, so the report is the same. One worker (one socket, on
//! `cores.client`'s core, spinning on a non-blocking socket as the DPDK
//! worker spins on its queue); open-loop rates and live interval lines are
//! the DPDK client's only.

use crate::config::link::Role;
use crate::config::Worker;
use crate::run::message::{check_message, fill_message, pattern, write_resp_size, write_seq};
use crate::run::message::{REQ_ECHO, RESP_HEADER};
use crate::run::node::{ClientResult, NodeSpec, Targets};
use crate::run::tally::Tally;
use crate::run::workload::{ClientParams, Loop};
use engine::kernel::KernelEndpoint;
use engine::proto::{Delivery, Endpoint, Event, PeerAddr, SessionId};
use engine::time::{Duration, Instant};
use engine::wire::MacAddr;

/// The endpoint's MAC when `link.client_mac` sets none: the kernel
/// addresses every frame, so it only marks the frames the socket hands in.
const SOCKET_MAC: MacAddr = MacAddr([0x02, 0x6b, 0x65, 0x72, 0x6e, 0x02]);

/// Runs the client workload over a UDP socket; `targets(0, session)`
/// names each session's server endpoint.
pub fn run_kernel_client(
    spec: &NodeSpec,
    p: &ClientParams,
    targets: Targets<'_>,
) -> anyhow::Result<ClientResult> {
    let cfg = &spec.config;
    if let Loop::Open { .. } = p.pace {
        anyhow::bail!("link.kind = kernel runs the closed loop only (workload.kind = open_loop with a rate is the DPDK client's)");
    }
    // The veth peer, with its address, lives in the client's namespace.
    cfg.link_args().enter_netns(Role::Client)?;
    // On the client's core, as the DPDK client's worker: the same spin
    // loop, measured on the same core.
    if let Some(&core) = cfg.cores(Role::Client).first() {
        crate::run::sys::pin_thread(core)
            .map_err(|e| anyhow::anyhow!("cannot pin to cores.client = [{core}]: {e}"))?;
    }
    let w = Worker {
        index: 0,
        mac: cfg.mac(Role::Client).unwrap_or(SOCKET_MAC),
        rx_ring_entries: cfg.link.rx_desc as usize,
    };
    let mut k = KernelEndpoint::bind(cfg.endpoint_config(Role::Client, &w)?)?;
    let peers: Vec<PeerAddr> = (0..p.sessions.max(1)).map(|s| targets(0, s)).collect();
    let sessions = connect(&mut k, &peers)?;
    let mut run = Closed::new(p.clone(), sessions.len(), k.clock());
    for (i, s) in sessions.iter().enumerate() {
        for slot in 0..run.window {
            let now = k.now();
            run.issue(k.endpoint_mut(), now, *s, i * run.window + slot);
        }
    }
    // Bound the drain as the DPDK client does.
    let hard_end = run.stop_at + Duration::from_secs(3) + k.endpoint().config().session_timeout;
    loop {
        k.run_once(|ep, now, d| run.on_delivery(ep, now, d));
        while let Some(ev) = k.endpoint_mut().poll_event() {
            let now = k.now();
            run.on_event(k.endpoint_mut(), now, ev);
        }
        let now = k.now();
        if run.done(now) || now >= hard_end || crate::run::sys::interrupted() {
            break;
        }
    }
    let unfinished = run.in_flight as u64;
    for s in &sessions {
        let now = k.now();
        let _ = k.endpoint_mut().disconnect(now, *s);
    }
    let bye = k.clock() + Duration::from_millis(200);
    while k.now() < bye && k.endpoint().sessions_by_state().disconnecting > 0 {
        k.run_once(|_, _, _| {});
    }
    let mut errors = Vec::new();
    if let Some(e) = run.first_error.take().filter(|_| run.failed + run.bad > 0) {
        errors.push(format!("worker 0: {e}"));
    }
    if unfinished > 0 {
        errors.push(format!("worker 0: {unfinished} request(s) never completed"));
    }
    let (hist, measured, seconds) = run.tally.measurement();
    Ok(ClientResult {
        hist,
        completed: run.tally.completed,
        completed_measured: measured,
        failed: run.failed + unfinished,
        bad_responses: run.bad,
        seconds,
        stats: *k.endpoint().stats(),
        injected_drops: 0,
        port: serde_json::json!({"kernel_socket": k.counters(), "rx_missed": 0}),
        errors,
        workers: 1,
        mbufs_in_use_start: 0,
        mbufs_in_use_end: 0,
        bytes_per_session: k.endpoint().bytes_per_session(),
    })
}

/// Opens one session to each of `peers` and waits for all of them, up to
/// the endpoint's connect timeout plus two seconds (as the DPDK client);
/// no answer is an error naming what to check, never a hang.
fn connect(k: &mut KernelEndpoint, peers: &[PeerAddr]) -> anyhow::Result<Vec<SessionId>> {
    let timeout = k.endpoint().config().connect_timeout + Duration::from_secs(2);
    let deadline = k.clock() + timeout;
    let mut pending = Vec::with_capacity(peers.len());
    for p in peers {
        let now = k.clock();
        pending.push(k.endpoint_mut().connect(now, *p)?);
    }
    let mut connected = 0;
    while connected < peers.len() {
        k.run_once(|_, _, _| {});
        while let Some(ev) = k.endpoint_mut().poll_event() {
            match ev {
                Event::Connected(_) => connected += 1,
                Event::ConnectFailed { session, reason } => {
                    let i = pending.iter().position(|s| *s == session).unwrap_or(0);
                    let (ip, port) = (peers[i].ip, peers[i].port);
                    anyhow::bail!(
                        "connect to {ip}:{port} over the kernel link failed: {reason} ({}); {}",
                        sent_what(k),
                        hint(ip)
                    )
                }
                _ => {}
            }
        }
        if crate::run::sys::interrupted() {
            anyhow::bail!(
                "interrupted while connecting: {connected} of {} sessions connected",
                peers.len()
            );
        }
        if k.now() > deadline {
            anyhow::bail!(
                "{connected} of {} sessions connected to {}:{} within {:?} over the kernel link ({}); {}",
                peers.len(),
                peers[0].ip,
                peers[0].port,
                std::time::Duration::from(timeout),
                sent_what(k),
                hint(peers[0].ip)
            );
        }
    }
    Ok(pending)
}

/// What the socket saw of the handshake, for a connect that failed.
fn sent_what(k: &KernelEndpoint) -> String {
    match k.send_error() {
        Some(e) => format!("the kernel refused to send: {e}"),
        None => "sent, no answer".into(),
    }
}

/// What to check when a server does not answer over the kernel link.
fn hint(server: std::net::Ipv4Addr) -> String {
    format!("is rpc-server running on the DPDK end of the wire (--link af_packet), and does this host reach {server} there, with a neighbour entry for the server's MAC (scripts/kernel-link.sh up)?")
}

/// The closed loop: each session keeps `window` requests outstanding;
/// slot `i` of the `sessions x window` slots is the request's tag.
struct Closed {
    p: ClientParams,
    window: usize,
    template: Vec<u8>,
    /// When each slot's request started (its latency counts from there).
    starts: Vec<Instant>,
    next_seq: u64,
    issued: u64,
    in_flight: usize,
    failed: u64,
    bad: u64,
    first_error: Option<String>,
    tally: Tally,
    stop_at: Instant,
}

impl Closed {
    fn new(p: ClientParams, sessions: usize, now: Instant) -> Self {
        let window = p.window.max(1);
        Closed {
            window,
            template: pattern(p.req_size.max(p.resp_size)),
            starts: vec![Instant::ZERO; sessions * window],
            next_seq: 0,
            issued: 0,
            in_flight: 0,
            failed: 0,
            bad: 0,
            first_error: None,
            tally: Tally::new(now, p.warmup, p.run),
            stop_at: now + p.warmup + p.run,
            p,
        }
    }

    fn may_issue(&self, now: Instant) -> bool {
        now < self.stop_at && self.p.max_requests.is_none_or(|m| self.issued < m)
    }

    fn done(&self, now: Instant) -> bool {
        !self.may_issue(now) && self.in_flight == 0
    }

    /// Sends the next request on session `s` in `slot`, if the run still issues.
    fn issue(&mut self, ep: &mut Endpoint, now: Instant, s: SessionId, slot: usize) {
        if !self.may_issue(now) {
            return;
        }
        let mut m = ep.alloc_msg(self.p.req_size);
        match self.p.verify {
            true => fill_message(m.as_mut_slice(), &self.template, self.next_seq),
            false => write_seq(m.as_mut_slice(), self.next_seq),
        }
        write_resp_size(m.as_mut_slice(), self.p.resp_size);
        match ep.enqueue_request(now, s, REQ_ECHO, m, slot as u64) {
            Ok(()) => {
                self.starts[slot] = now;
                self.next_seq += 1;
                self.issued += 1;
                self.in_flight += 1;
            }
            Err((e, _)) => {
                self.first_error
                    .get_or_insert_with(|| format!("enqueue failed: {e}"));
                self.stop_at = self.stop_at.min(now);
            }
        }
    }

    fn on_delivery(&mut self, ep: &mut Endpoint, now: Instant, d: Delivery<'_>) {
        let Delivery::Response {
            session,
            tag,
            payload,
        } = d
        else {
            return; // a client answers no requests
        };
        let slot = tag as usize;
        let resp = payload.as_slice();
        self.in_flight -= 1;
        let start = self.starts[slot];
        let bad = if resp.len() != self.p.resp_size {
            Some(format!(
                "the server answered {} B where --resp-size {} asked for {} B",
                resp.len(),
                self.p.resp_size,
                self.p.resp_size
            ))
        } else if self.p.verify {
            check_message(resp, &self.template, self.p.resp_size, RESP_HEADER)
                .err()
                .map(|e| format!("bad response: {e}"))
        } else {
            None
        };
        match bad {
            Some(e) => {
                self.bad += 1;
                self.failed += 1;
                self.stop_at = self.stop_at.min(now);
                self.first_error.get_or_insert(e);
            }
            None => self.tally.record(start, now),
        }
        self.issue(ep, now, session, slot);
    }

    fn on_event(&mut self, ep: &mut Endpoint, now: Instant, ev: Event) {
        if let Event::RequestFailed {
            session,
            tag,
            error,
        } = ev
        {
            self.in_flight -= 1;
            self.failed += 1;
            self.first_error
                .get_or_insert_with(|| format!("request failed: {error}"));
            self.issue(ep, now, session, tag as usize);
        }
    }
}
