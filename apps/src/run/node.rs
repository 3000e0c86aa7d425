//! One process's run: open the Nexus (EAL, pool, port) through the config's
//! seam (`config::setup`) and wait for the peer (`waiting`), start one endpoint per pinned core with its own
//! `EndpointConfig`, run the server loop or the client workload, and gather
//! every worker's counters and histogram into one JSON-ready summary. While
//! they run, every worker publishes its counters into its slot of a
//! `live::Board` (about once a millisecond); a thread beside the workers
//! turns them into interval lines (client) or serves them as OpenMetrics
//! (server, `--metrics`).

use crate::config::link::Role;
use crate::config::{Config, Worker};
use crate::measure::hist::LatencyHist;
pub use crate::report::stats_json;
use crate::run::interval::{self, LiveOptions};
use crate::run::live::{Board, Publisher, Snapshot};
use crate::run::metrics::{self, MetricsListener};
use crate::run::server_events;
pub use crate::run::summary::{ServerSummary, StatsSummary};
use crate::run::waiting;
pub use crate::run::workload::ClientParams;
use crate::run::workload::{self, ClientApp, ClientSide, Loop, LoopApp, ServerApp, REQ_ECHO};
use engine::counters::Counters;
use engine::fault::DropModel;
use engine::proto::{PeerAddr, SessionId, Stats};
use engine::runtime::{Capture, FaultSide, Handler, HandlerTable, Nexus, Rpc, RunCounters};
use engine::time::Duration;

use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Everything about one process that is not the workload.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// The validated run configuration: the port, the cores and every
    /// worker's endpoint come from it (`config::setup`).
    pub config: Config,
    pub role: Role,
    pub fault: Option<(FaultSide, DropModel, u64)>,
    /// `faults.ecn_p`: the injected ECN marker's probability and seed.
    pub ecn_marker: Option<(f64, u64)>,
    /// `--capture`: every worker's frames into a pcap file.
    pub capture: Option<CaptureSpec>,
    /// `--wait`: how long to wait for the peer; `None`: as long as it takes.
    pub wait: Option<std::time::Duration>,
}

/// Where and how much to capture (`Capture::worker_path` names each worker's file).
#[derive(Clone, Debug)]
pub struct CaptureSpec {
    pub path: PathBuf,
    /// Bytes per file.
    pub limit: u64,
}

/// Worker `index`'s endpoint, its `EndpointConfig` built once from the
/// config and the port (the loopback endpoint serves at the server's
/// address), capturing into its file if `spec.capture` says so.
fn endpoint<A>(
    nx: &Nexus<A>,
    spec: &NodeSpec,
    index: u16,
    loopback: bool,
) -> anyhow::Result<Rpc<A>> {
    let w = Worker::of(nx, index);
    let cfg = match loopback {
        true => spec.config.loopback_endpoint_config(&w)?,
        false => spec.config.endpoint_config(spec.role, &w)?,
    };
    let mut rpc = Rpc::new(nx, index, cfg)?;
    if let Some(c) = &spec.capture {
        let path = Capture::worker_path(&c.path, index);
        rpc.set_capture(Capture::create(&path, c.limit, rpc.clock().now())?);
    }
    Ok(rpc)
}

/// Flushes worker `index`'s capture, if any, and says on stderr what it holds.
fn finish_capture<A>(rpc: &mut Rpc<A>, who: &str, index: u16) {
    let Some(c) = rpc.take_capture() else {
        return;
    };
    let (path, limit) = (c.path().display().to_string(), c.limit());
    match c.finish() {
        Ok(s) if s.frames_not_written > 0 => eprintln!(
            "{who}: worker {index} captured {} frames ({} bytes) into {path}; \
             {} more frames not written (capture limit of {limit} bytes reached)",
            s.frames_written, s.bytes_written, s.frames_not_written
        ),
        Ok(s) => eprintln!(
            "{who}: worker {index} captured {} frames ({} bytes) into {path}",
            s.frames_written, s.bytes_written
        ),
        Err(e) => eprintln!("{who}: worker {index}: capture stopped early: {e}"),
    }
}

/// Per-worker results, merged at the end.
#[derive(Debug, Default)]
struct WorkerOut {
    stats: Stats,
    counters: RunCounters,
    hist: LatencyHist,
    completed: u64,
    completed_measured: u64,
    failed: u64,
    bad: u64,
    handled: u64,
    injected: u64,
    error: Option<String>,
    seconds: f64,
    /// `Endpoint::bytes_per_session` of the worker's endpoint.
    bytes_per_session: usize,
}

fn merge(outs: Vec<WorkerOut>) -> (WorkerOut, Vec<String>) {
    let mut m = WorkerOut::default();
    let mut errors = Vec::new();
    for o in outs {
        m.stats.merge(&o.stats);
        m.counters.merge(&o.counters);
        m.hist.merge(&o.hist);
        m.completed += o.completed;
        m.completed_measured += o.completed_measured;
        m.failed += o.failed;
        m.bad += o.bad;
        m.handled += o.handled;
        m.injected += o.injected;
        m.seconds = m.seconds.max(o.seconds);
        m.bytes_per_session = m.bytes_per_session.max(o.bytes_per_session);
        if let Some(e) = o.error {
            errors.push(e);
        }
    }
    (m, errors)
}

fn port_json<A>(nx: &Nexus<A>) -> Value {
    match nx.port().stats() {
        Ok(s) => {
            // af_packet: the PMD reports no ring overflow; the kernel's
            // socket counters do (rx_missed = both).
            let ring = crate::config::link::af_packet_rx_drops();
            let mut v = json!({"rx_packets": s.rx_packets, "tx_packets": s.tx_packets,
                        "rx_missed": s.rx_missed + ring.unwrap_or(0),
                        "rx_errors": s.rx_errors, "tx_errors": s.tx_errors, "rx_no_mbuf": s.rx_no_mbuf});
            if let Some(n) = ring {
                v["af_packet_ring_drops"] = json!(n);
            }
            v
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[derive(Clone, Debug)]
pub struct ServerParams {
    /// Answers requests too short to ask for a size.
    pub resp_size: usize,
    /// The largest request checked and response answered.
    pub max_msg: usize,
    pub work_ns: u64,
    pub background: bool,
    pub verify: bool,
    /// Hard bound on the server's life; it also stops on SIGINT/SIGTERM.
    pub max_secs: f64,
}

/// Runs the server until SIGINT/SIGTERM or `max_secs`; returns its summary.
/// With `metrics`, a thread answers scrapes from the workers' published
/// counters from the start: zeros while the server waits for its client.
pub fn run_server(
    spec: &NodeSpec,
    p: &ServerParams,
    metrics: Option<MetricsListener>,
) -> anyhow::Result<ServerSummary> {
    // One slot per core, as the Nexus will have one worker per core.
    let board = Board::new(spec.config.cores(spec.role).len(), None);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        if let Some(l) = &metrics {
            eprintln!("rpc-server: metrics at http://{}/metrics", l.addr());
            scope.spawn(|| metrics::serve(l, &board, &stop));
        }
        let r = open_and_serve(spec, p, &board);
        match &metrics {
            Some(l) => l.stop(&stop),
            None => stop.store(true, Ordering::Relaxed),
        }
        r
    })
}

/// The server's run once the port is open, its workers publishing on `board`.
fn open_and_serve(
    spec: &NodeSpec,
    p: &ServerParams,
    board: &Board,
) -> anyhow::Result<ServerSummary> {
    let mut handlers = HandlerTable::<ServerApp>::new();
    if p.background {
        handlers.register(
            REQ_ECHO,
            Handler::Background(std::sync::Arc::new(workload::background_echo(
                p.resp_size,
                p.max_msg,
                p.work_ns,
            ))),
        );
    } else {
        handlers.register(REQ_ECHO, Handler::Inline(workload::echo_handler));
    }
    let cfg = &spec.config;
    let nx = waiting::open(cfg, spec.role, spec.wait, handlers)?;
    let mbufs_in_use_start = nx.pool().in_use() as u64;
    eprintln!(
        "rpc-server: {} on {} (mac {}), {} worker(s) on cores {:?}, udp {}..{}",
        cfg.link.server_ip,
        nx.port().name(),
        nx.mac(),
        nx.workers(),
        cfg.cores(spec.role),
        cfg.worker_port(0),
        cfg.worker_port(nx.workers() - 1)
    );
    let outs = Mutex::new(Vec::new());
    nx.run(&|w| {
        let mut out = WorkerOut::default();
        let live = board.publisher(w.index as usize);
        if let Err(e) = server_worker(&nx, spec, p, (w.index, live), &mut out) {
            out.error = Some(format!("worker {}: {e:#}", w.index));
        }
        outs.lock().map(|mut v| v.push(out)).ok();
        // Worker errors travel in `out` (merged with the counters).
        Ok::<(), std::convert::Infallible>(())
    })?;
    let (m, errors) = merge(outs.into_inner().unwrap_or_default());
    if let Some(e) = errors.first() {
        anyhow::bail!("{e}");
    }
    Ok(ServerSummary {
        role: "server".into(),
        workers: nx.workers() as u64,
        seconds: m.seconds,
        handled: m.handled,
        bad_requests: m.bad,
        injected_drops: m.injected,
        stats: StatsSummary::new(&m.stats),
        run: m.counters,
        port: port_json(&nx),
        mbufs_in_use_start,
        // Every worker's endpoint is gone: its mbufs are back in the pool.
        mbufs_in_use_end: nx.pool().in_use() as u64,
    })
}

/// One server worker's run: serves until SIGINT/SIGTERM or `max_secs`,
/// publishing its counters into `live` as it goes; its results into `out`.
fn server_worker(
    nx: &Nexus<ServerApp>,
    spec: &NodeSpec,
    p: &ServerParams,
    (index, mut live): (u16, Option<Publisher<'_>>),
    out: &mut WorkerOut,
) -> anyhow::Result<()> {
    let mut rpc = endpoint::<ServerApp>(nx, spec, index, false)?;
    if let Some((side, model, seed)) = spec.fault {
        rpc.set_fault(side, model, seed + index as u64);
    }
    if let Some((p, seed)) = spec.ecn_marker {
        rpc.set_ecn_marker(p, seed + index as u64);
    }
    let wake = rpc.set_idle(spec.config.transport.idle_policy());
    if index == 0 {
        eprintln!("rpc-server: idle: {wake}");
    }
    let mut app = ServerApp::new(p.resp_size, p.max_msg, p.work_ns, p.verify);
    let start = rpc.clock().now();
    let end = start + Duration::from_nanos((p.max_secs * 1e9) as u64);
    let mut n = 0u32;
    loop {
        rpc.run_once(&mut app);
        server_events::report(&mut rpc, index);
        n = n.wrapping_add(1);
        let mut idle = server_idle(rpc.endpoint());
        if idle {
            std::thread::sleep(IDLE_POLL);
        } else {
            // transport.idle = "adaptive": sleeps once quiet (spin: no-op).
            idle = rpc.idle_wait(Some(end));
        }
        // Check the stop flag and publish the counters every 1024 busy
        // iterations (cheap enough), every iteration when idle.
        if idle || n.is_multiple_of(1024) {
            let now = rpc.now();
            if let Some(l) = live.as_mut().filter(|l| l.due(now)) {
                l.publish(now, &server_snapshot(&rpc, &app), &[]);
            }
            if crate::run::sys::interrupted() || now >= end {
                break;
            }
        }
    }
    if let Some(l) = live.as_mut() {
        l.finish(&server_snapshot(&rpc, &app), &[]);
    }
    finish_capture(&mut rpc, "rpc-server", index);
    out.seconds = (rpc.now() - start).as_secs_f64();
    out.stats = *rpc.endpoint().stats();
    out.counters = *rpc.counters();
    out.handled = app.handled;
    out.bad = app.bad_requests;
    out.injected = out.counters.injected_drops_rx + out.counters.injected_drops_tx;
    Ok(())
}

/// What the client measured, merged over its workers.
#[derive(Debug)]
pub struct ClientResult {
    pub hist: LatencyHist,
    pub completed: u64,
    pub completed_measured: u64,
    pub failed: u64,
    pub bad_responses: u64,
    pub seconds: f64,
    pub stats: Stats,
    pub injected_drops: u64,
    pub port: Value,
    pub errors: Vec<String>,
    pub workers: usize,
    /// Pool mbufs in use after the port started and after the workers
    /// stopped (see `ServerSummary`).
    pub mbufs_in_use_start: u64,
    pub mbufs_in_use_end: u64,
    /// Memory one session costs an endpoint (`Endpoint::bytes_per_session`).
    pub bytes_per_session: usize,
}

/// Where client worker `w`'s session `s` connects.
pub type Targets<'a> = &'a (dyn Fn(u16, usize) -> PeerAddr + Sync);

/// Runs the client workload; `targets(worker, session)` names each
/// session's server endpoint; `live` says where interval records go.
pub fn run_client(
    spec: &NodeSpec,
    p: &ClientParams,
    targets: Targets<'_>,
    live: LiveOptions,
) -> anyhow::Result<ClientResult> {
    let handlers = HandlerTable::<ClientApp>::new();
    let nx = waiting::open(&spec.config, spec.role, spec.wait, handlers)?;
    let mbufs_start = nx.pool().in_use() as u64;
    let outs = Mutex::new(Vec::new());
    let board = Board::new(nx.workers(), Some(LatencyHist::new().raw()));
    with_reporter(&board, live, || {
        nx.run(&|w| {
            let mut out = WorkerOut::default();
            let make = |sessions: Vec<SessionId>, now: engine::time::Instant| {
                ClientApp::new(p.clone(), sessions, now)
            };
            let at = (targets, false);
            let slot = board.publisher(w.index as usize);
            if let Err(e) = client_worker(&nx, spec, p, at, (w.index, slot), &mut out, &make) {
                out.error = Some(format!("worker {}: {e:#}", w.index));
            }
            outs.lock().map(|mut v| v.push(out)).ok();
            // Worker errors travel in `out` (merged with the counters).
            Ok::<(), std::convert::Infallible>(())
        })
    })?;
    let (m, errors) = merge(outs.into_inner().unwrap_or_default());
    Ok(ClientResult::from_merged(m, errors, &nx, mbufs_start))
}

/// Runs `workers` with `live::report` on a thread beside them, stopped
/// when they return.
fn with_reporter<R>(board: &Board, live: LiveOptions, workers: impl FnOnce() -> R) -> R {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reporter = scope.spawn(|| interval::report(board, live, &stop));
        let r = workers();
        stop.store(true, Ordering::Release);
        reporter.thread().unpark();
        r
    })
}

impl ClientResult {
    fn from_merged<A>(m: WorkerOut, errors: Vec<String>, nx: &Nexus<A>, mbufs_start: u64) -> Self {
        ClientResult {
            hist: m.hist,
            completed: m.completed,
            completed_measured: m.completed_measured,
            failed: m.failed,
            bad_responses: m.bad,
            seconds: m.seconds,
            stats: m.stats,
            injected_drops: m.injected,
            port: port_json(nx),
            errors,
            workers: nx.workers(),
            mbufs_in_use_start: mbufs_start,
            mbufs_in_use_end: nx.pool().in_use() as u64,
            bytes_per_session: m.bytes_per_session,
        }
    }
}

/// One client worker's run; `(targets, loopback)`: where its sessions
/// connect, and whether its endpoint serves them itself (net_ring);
/// `(index, live)`: the worker's number and its slot on the live board.
fn client_worker<A: ClientSide>(
    nx: &Nexus<A>,
    spec: &NodeSpec,
    p: &ClientParams,
    (targets, loopback): (Targets<'_>, bool),
    (index, mut live): (u16, Option<Publisher<'_>>),
    out: &mut WorkerOut,
    make_app: &dyn Fn(Vec<SessionId>, engine::time::Instant) -> A,
) -> anyhow::Result<()> {
    let mut rpc = endpoint::<A>(nx, spec, index, loopback)?;
    let (connect_timeout, session_timeout) = {
        let c = rpc.endpoint().config();
        (c.connect_timeout, c.session_timeout)
    };
    out.bytes_per_session = rpc.endpoint().bytes_per_session();
    if let Some((side, model, seed)) = spec.fault {
        rpc.set_fault(side, model, seed + index as u64);
    }
    if let Some((p, seed)) = spec.ecn_marker {
        rpc.set_ecn_marker(p, seed + index as u64);
    }
    let peers: Vec<PeerAddr> = (0..p.sessions.max(1)).map(|s| targets(index, s)).collect();
    // Connect with an app placeholder: no continuation runs before start.
    let mut app = make_app(Vec::new(), rpc.clock().now());
    // Handshakes are paced (`workload::connect_all`): allow for their turns.
    let paced = Duration::from_micros(50 * peers.len() as u64);
    let connect_timeout = connect_timeout + Duration::from_secs(2) + paced;
    let sessions = workload::connect_all(&mut rpc, &mut app, &peers, connect_timeout)?;
    let mut app = make_app(sessions.clone(), rpc.clock().now());
    workload::start(&mut rpc, &mut app);
    // Bound the drain: a request still out this long after the end has failed.
    let hard_end = app.client().stop_at + Duration::from_secs(3) + session_timeout;
    loop {
        rpc.run_once(&mut app);
        if let Loop::Open { .. } = p.pace {
            workload::open_loop_tick(&mut rpc, &mut app);
        }
        let now = rpc.now();
        let c = app.client();
        if c.done(now) || now >= hard_end || crate::run::sys::interrupted() {
            break;
        }
        if let Some(l) = live.as_mut().filter(|l| l.due(now)) {
            let hists = [c.tally.hist.raw(), c.tally.hist_warm.raw()];
            l.publish(now, &client_snapshot(&rpc, c), &hists);
        }
    }
    let unfinished = app.client().in_flight as u64;
    // Say goodbye so the server frees the sessions (bounded).
    for s in &sessions {
        let _ = rpc.disconnect(*s);
    }
    let bye = rpc.now() + Duration::from_millis(200);
    while rpc.now() < bye && rpc.endpoint().sessions_by_state().disconnecting > 0 {
        rpc.run_once(&mut app);
    }
    if let Some(l) = live.as_mut() {
        let c = app.client();
        let hists = [c.tally.hist.raw(), c.tally.hist_warm.raw()];
        l.finish(&client_snapshot(&rpc, c), &hists);
    }
    finish_capture(&mut rpc, "rpc-client", index);
    out.stats = *rpc.endpoint().stats();
    out.counters = *rpc.counters();
    let c = app.client();
    let (hist, measured, secs) = c.tally.measurement();
    out.hist = hist;
    out.completed = c.tally.completed;
    out.completed_measured = measured;
    out.seconds = secs;
    out.failed = c.failed + unfinished;
    out.bad = c.bad_responses;
    out.injected = out.counters.injected_drops_rx + out.counters.injected_drops_tx;
    if let Some(e) = c.first_error.take() {
        if c.bad_responses > 0 || c.failed > 0 {
            out.error = Some(e);
        }
    }
    if unfinished > 0 {
        out.error
            .get_or_insert_with(|| format!("{unfinished} request(s) never completed"));
    }
    Ok(())
}

/// Single-process loopback (net_ring): one worker whose endpoint is both the
/// server and the client, connected to its own address; frames really go
/// through the DPDK port and come back. Returns the client's results and the
/// server half's counters.
pub fn run_loopback(
    spec: &NodeSpec,
    p: &ClientParams,
    sp: &ServerParams,
    live: LiveOptions,
) -> anyhow::Result<(ClientResult, Value)> {
    let mut handlers = HandlerTable::<LoopApp>::new();
    handlers.register(REQ_ECHO, Handler::Inline(workload::echo_handler::<LoopApp>));
    let mut one = spec.clone();
    match one.role {
        Role::Server => one.config.cores.server.truncate(1),
        Role::Client => one.config.cores.client.truncate(1),
    }
    let nx = waiting::open(&one.config, one.role, one.wait, handlers)?;
    let mbufs_start = nx.pool().in_use() as u64;
    let me = PeerAddr {
        mac: Some(nx.mac()),
        ip: one.config.link.server_ip,
        port: one.config.worker_port(0),
    };
    let handled = std::sync::atomic::AtomicU64::new(0);
    let outs = Mutex::new(Vec::new());
    let board = Board::new(nx.workers(), Some(LatencyHist::new().raw()));
    with_reporter(&board, live, || {
        nx.run(&|w| {
            let mut out = WorkerOut::default();
            let make = |sessions: Vec<SessionId>, now: engine::time::Instant| LoopApp {
                srv: ServerApp::new(sp.resp_size, sp.max_msg, sp.work_ns, sp.verify),
                cli: ClientApp::new(p.clone(), sessions, now),
            };
            let targets = |_w: u16, _s: usize| me;
            let at = (&targets as Targets<'_>, true);
            let slot = board.publisher(w.index as usize);
            if let Err(e) = client_worker(&nx, &one, p, at, (w.index, slot), &mut out, &make) {
                out.error = Some(format!("worker {}: {e:#}", w.index));
            }
            handled.fetch_add(out.stats.handler_invocations, Ordering::Relaxed);
            outs.lock().map(|mut v| v.push(out)).ok();
            // Worker errors travel in `out` (merged with the counters).
            Ok::<(), std::convert::Infallible>(())
        })
    })?;
    let (m, errors) = merge(outs.into_inner().unwrap_or_default());
    let server = json!({
        "role": "server (same endpoint, loopback)",
        "workers": 1,
        "handled": handled.load(Ordering::Relaxed),
        "stats": stats_json(&m.stats),
        "port": port_json(&nx),
    });
    Ok((
        ClientResult::from_merged(m, errors, &nx, mbufs_start),
        server,
    ))
}

/// How long a server worker with no session waits between polls.
const IDLE_POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// A server worker with no session (and no handshake under way) has nothing
/// to answer but a ConnectReq, which its client retries every 20 ms: it
/// polls every [`IDLE_POLL`] instead of spinning. That gives the core back
/// to the client on a 2-core machine, and keeps the poller out of the driver
/// when a memif client that has just disconnected closes its socket: DPDK
/// 22.11's memif can read the departing peer's rings after unmapping them
/// (the server crashed so, now and then, when a test's client exited).
/// What a server worker publishes: its endpoint's counters, requests
/// handed to the handler (inline or background) and bad requests.
fn server_snapshot<A>(rpc: &Rpc<A>, app: &ServerApp) -> Snapshot {
    let ep = rpc.endpoint();
    let s = ep.stats();
    let mut snap = Snapshot::of_endpoint(s, ep.sessions_by_state().connected);
    snap.rpcs = s.handler_invocations;
    snap.failed = app.bad_requests;
    snap
}

/// What a client worker publishes: its endpoint's counters and the
/// workload's completions, failures and requests in flight.
fn client_snapshot<A>(rpc: &Rpc<A>, c: &ClientApp) -> Snapshot {
    let ep = rpc.endpoint();
    let mut snap = Snapshot::of_endpoint(ep.stats(), ep.sessions_by_state().connected);
    snap.rpcs = c.tally.completed;
    snap.failed = c.failed;
    snap.in_flight = c.in_flight as u64;
    c.window_state(rpc.now(), &mut snap);
    snap
}

fn server_idle(ep: &engine::proto::Endpoint) -> bool {
    ep.sessions_by_state().connected == 0 && ep.handshakes_pending() == 0
}
