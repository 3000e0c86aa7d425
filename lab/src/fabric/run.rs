//! One scenario under one regime, start to finish: the fabric and its
//! endpoints configured by the regime, sessions opened before the first
//! flow, flows started on time, the run bounded in virtual time, and the
//! report: flow completion, drops by place, pauses, marks, resends.

use super::config::ser_ns;
use super::flows::{self, ideal_fct, Flows};
use super::metrics::{self, Bucket, FlowOutcome, Percentiles};
use super::scenario::Workload;
use super::{Buffers, Fabric, FabricConfig, FabricRegime, FabricStats, HostEps};
use engine::config::Site;
use engine::proto::{DcqcnParams, Endpoint, EndpointConfig, Policing};
use engine::time::{Duration, Instant};

/// Virtual time given to handshakes before the first flow starts.
const WARMUP: Duration = Duration::from_micros(100);

/// What one regime did in one scenario. Every field is a pure function of
/// the scenario, the regime and the seed, except `wall_secs`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RegimeResult {
    /// The regime's name.
    pub regime: &'static str,
    /// Flows in the scenario.
    pub flows: u64,
    /// Flows whose every byte was answered.
    pub completed: u64,
    /// Session credits every endpoint used (the regime's, or the override).
    pub credits: u16,
    /// Requests, one per flow or chunk of at most 8 MiB, that completed.
    pub rpcs: u64,
    /// Flows a request of which failed (session reset, ...).
    pub failed: u64,
    /// Flows still running when the run stopped (virtual time bound).
    pub unfinished: u64,
    /// Bytes of completed flows over the time from first start to last end
    /// (makespan goodput: one straggler stretches it).
    pub goodput_gbps: f64,
    /// The mean over completed flows of each flow's bytes over its FCT
    /// ([`metrics::FctSummary::mean_flow_gbps`]; for incast, the mean
    /// per-sender rate).
    pub mean_flow_gbps: f64,
    /// The victim flow's goodput (scenario `victim`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub victim_goodput_gbps: Option<f64>,
    /// FCT slowdown over all completed flows.
    pub slowdown: Percentiles,
    /// FCT slowdown by flow size.
    pub buckets: Vec<Bucket>,
    /// Flow completion times in microseconds.
    pub fct_us: Percentiles,
    /// When the last flow completed, us from the workload's time zero (its
    /// flows' start times; 0 if none completed):
    /// what uet-htsim's validation suite calls the tail FCT (the time of
    /// its last `finished at` line, `validate_parallel.py`).
    pub last_end_us: f64,
    /// Packets dropped in switches (buffer, threshold or PFC headroom).
    pub drops_switch: u64,
    /// Of those, PFC headroom overflows.
    pub drops_headroom: u64,
    /// Packets dropped at a host's full receive ring.
    pub drops_host_ring: u64,
    /// Packets addressed to no host (dropped at the first switch).
    pub drops_unroutable: u64,
    /// Packets lost by injected loss at the sending NIC (`loss`).
    pub drops_loss: u64,
    /// Packets handed to an endpoint. Conservation: `sim_pkts` =
    /// `delivered_pkts` + the four drop counts + `in_flight_end`.
    pub delivered_pkts: u64,
    /// PFC frames (XOFF and XON).
    pub pause_frames: u64,
    /// Time links spent paused, summed over links (one direction each), us.
    pub paused_us: f64,
    /// Links (one direction each) that were ever paused.
    pub links_paused: u64,
    /// Packets marked CE.
    pub ecn_marks: u64,
    /// Data packets a switch cut to their headers (`--trim-kb`).
    pub trims: u64,
    /// Of `drops_switch`: trimmed headers dropped at a full priority queue.
    pub drops_trimmed: u64,
    /// Congestion notification packets the receivers sent (DCQCN).
    pub cnps: u64,
    /// Packets the endpoints sent again.
    pub retransmitted_pkts: u64,
    /// Go-back-N rollbacks (one per retransmission timeout that sent a
    /// request back to its first unanswered packet).
    pub rollbacks: u64,
    /// Of what receivers got, packets they already had (resent needlessly).
    pub spurious_retransmits: u64,
    /// Selective acknowledgements: request packets that arrived out of
    /// order (reordering or loss ahead of them) under selective recovery.
    pub sacks: u64,
    /// Leaf-to-spine links (a fat tree's top-of-rack uplinks) that
    /// carried traffic (how far ECMP or spraying spread it; 0 on a star).
    pub uplinks_used: u64,
    /// The most bytes one switch buffered at once.
    pub peak_buffer_bytes: u64,
    /// Frames the hosts sent.
    pub sim_pkts: u64,
    /// Events the simulator processed (arrivals, departures, timers, ...).
    pub sim_events: u64,
    /// Virtual time the run took, us.
    pub sim_time_us: f64,
    /// Packets in a queue, ring or on a link when the run stopped.
    pub in_flight_end: u64,
    /// Wall-clock seconds the run took (not part of the JSON: it differs
    /// between runs of the same seed).
    #[serde(skip)]
    pub wall_secs: f64,
}

/// A whole `rpc-lab` (`rpc-bench fabric`) run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FabricReport {
    /// The scenario's name.
    pub scenario: &'static str,
    /// The seed every random choice came from.
    pub seed: u64,
    /// Simulated frames per wall-clock second over all regimes; `None`
    /// unless asked for, because it differs between runs of one seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_pkts_per_sec: Option<f64>,
    /// One entry per regime, in the order asked.
    pub results: Vec<RegimeResult>,
}

/// Where a run is, for a live progress line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Virtual time, us.
    pub sim_us: f64,
    /// Frames sent so far.
    pub sim_pkts: u64,
    /// Flows done (completed or failed) and in all.
    pub flows_done: usize,
    /// Flows in the scenario.
    pub flows: usize,
}

/// Runs `w` under `regime` with fabric knobs `base` (rates come from the
/// workload, the mechanisms from the regime). `progress` is
/// called now and then with where the run is. The endpoints move no
/// payload bytes ([`Buffers::headers_only`]): results are the same as
/// with copies (a test checks), at a fraction of the time.
pub fn run_regime(
    w: &Workload,
    regime: FabricRegime,
    base: &FabricConfig,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<RegimeResult, String> {
    run_regime_in(
        &Buffers::headers_only(),
        w,
        regime,
        base,
        seed,
        progress,
        &|| false,
    )
}

/// [`run_regime`] with every host's message buffers from `bufs`, whose
/// pool keeps them for the next run: runs one after another in one pool
/// touch fresh memory only up to the largest run's peak (page faults on
/// fresh buffers were a quarter of a websearch run's time). The buffers'
/// contents never reach a result, so the pool (shared or not) and whether
/// payload bytes move change nothing but the speed. `stop` is asked with
/// each progress call: once it says so the run ends where it is, and its
/// result is partial (the caller, who asked, drops it).
pub fn run_regime_in(
    bufs: &Buffers,
    w: &Workload,
    regime: FabricRegime,
    base: &FabricConfig,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
    stop: &dyn Fn() -> bool,
) -> Result<RegimeResult, String> {
    let wall = std::time::Instant::now();
    let mut cfg = base.clone();
    cfg.host_link_bps = w.host_link_bps;
    cfg.fabric_link_bps = w.fabric_link_bps;
    regime.apply_fabric(&mut cfg);
    // A path selection given goes over the regime's own (srd's spraying).
    cfg.spray &= cfg.path_selection.is_none();
    cfg.validate()?;
    w.topology.validate()?;
    let hosts = w.topology.hosts();
    if let Some(bad) = w
        .flows
        .iter()
        .find(|f| f.src >= hosts || f.dst >= hosts || f.src == f.dst)
    {
        return Err(format!(
            "flow {} -> {} does not fit {hosts} hosts",
            bad.src, bad.dst
        ));
    }
    let rtt = base_rtt(&cfg, &w.topology);
    regime.apply_queues(&mut cfg, rtt);
    cfg.validate()?;
    // Sessions each host holds, both roles, sizing its table and (eRPC's
    // ring reservation) its receive ring.
    let mut per_host = vec![0usize; hosts];
    let mut pairs: Vec<(usize, usize)> = w.flows.iter().map(|f| (f.src, f.dst)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    for &(s, d) in &pairs {
        per_host[s] += 1;
        per_host[d] += 1;
    }
    let mut endpoints = Vec::with_capacity(hosts);
    let mut data_per_pkt = 0;
    let mut max_msg = 0;
    let mut window = 1;
    let t = regime.transport(cfg.host_link_bps, rtt, cfg.mtu, &cfg.transport, &cfg.given)?;
    let credits = t.credits.unwrap_or(0);
    let sack_rule = regime.settings().sack_rule;
    let default_ring = EndpointConfig::default().rx_ring_entries;
    for (h, &sessions) in per_host.iter().enumerate() {
        let site = Site {
            local: super::host_addr(h),
            // eRPC sizes its sessions to its ring; here the ring is sized
            // so every session's reservation fits.
            rx_ring_entries: default_ring.max((sessions + 1) * (credits as usize + 1)),
            sessions,
            // The fabric never corrupts a frame (a CE mark fixes the sum).
            verify_ipv4_checksum: false,
            seed: seed ^ (h as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            secret: None,
        };
        let mut ec = t.endpoint(cfg.mtu, &site);
        // The fabric's links, exactly: rate, round trip, DCQCN's set.
        ec.link_bps = cfg.host_link_bps;
        ec.base_rtt = rtt;
        ec.dcqcn = DcqcnParams::for_link(cfg.host_link_bps);
        if let Some(rule) = sack_rule {
            ec.sack_rule = rule;
        }
        // Tables sized to the host's flows, and every host is genuine: no
        // cookie round trips (they would stagger the connects of an
        // incast, which changes what the regimes are compared on).
        ec.max_sessions = sessions + 16;
        ec.max_sessions_per_peer = sessions + 16;
        ec.admission = ec.admission.trusting_peers();
        // Its hosts' stalls are modelled (a paused NIC reads on without
        // writing), and none of them is hostile: no credit policing.
        ec.police = Policing::OFF;
        data_per_pkt = ec.max_data_per_pkt();
        window = ec.req_window;
        max_msg = ec.max_msg_size;
        // One pool for every host (the fabric is one thread): buffers freed
        // by one host serve the next allocation anywhere, so a run touches
        // fresh memory only up to its peak of messages in flight, not a warm
        // pool per host and size class (a third of the run time once).
        let ep = Endpoint::with_pool(ec, bufs.pool().clone());
        endpoints.push(ep.map_err(|e| format!("endpoint of host {h}: {e}"))?);
    }
    let app = Flows::new(&w.flows, max_msg.min(flows::MAX_CHUNK), window);
    let headers_only = !bufs.copies();
    let mut fab = Fabric::build(cfg.clone(), w.topology, endpoints, app, seed, headers_only)?;
    if let Some((h, service)) = w.slow_host {
        if h >= hosts {
            return Err(format!("slow host {h} does not exist"));
        }
        fab.set_slow_host(h, service.as_nanos());
    }
    fab.app
        .connect(&mut HostEps(&mut fab.hosts), Instant::ZERO)?;
    for h in 0..hosts {
        fab.after_ep(h);
    }
    for (i, f) in w.flows.iter().enumerate() {
        fab.events.push(
            (f.start + WARMUP).as_nanos(),
            super::event::Ev::FlowStart(i as u32),
        );
    }
    let last_start = w
        .flows
        .iter()
        .map(|f| f.start.as_nanos())
        .max()
        .unwrap_or(0);
    let deadline = last_start + (WARMUP + cfg.grace).as_nanos();
    let flows_n = w.flows.len();
    let mut tick = |f: &Fabric| {
        progress(Progress {
            sim_us: f.now as f64 / 1e3,
            sim_pkts: f.stats.sim_pkts,
            flows_done: flows_n - f.app.open(),
            flows: flows_n,
        });
        !stop()
    };
    fab.run(deadline, &mut tick);
    let outcomes: Vec<FlowOutcome> = fab
        .app
        .flows
        .iter()
        .map(|st| FlowOutcome {
            size: st.spec.size,
            start: st.started.unwrap_or(st.spec.start + WARMUP),
            end: st.end,
            ideal: ideal_fct(
                &cfg,
                &w.topology,
                data_per_pkt,
                st.spec.src,
                st.spec.dst,
                st.spec.size,
            ),
            victim: st.spec.victim,
        })
        .collect();
    let sum = metrics::summarize(&outcomes);
    let failed = fab.app.flows.iter().filter(|f| f.failed).count() as u64;
    let completed = sum.completed;
    let s: FabricStats = fab.stats();
    let mut retransmitted = 0;
    let mut rollbacks = 0;
    let mut spurious = 0;
    let mut cnps = 0;
    let mut sacks = 0;
    let mut rpcs = 0;
    for h in &fab.hosts {
        let st = h.ep.stats();
        retransmitted += st.retransmissions;
        rollbacks += st.rollbacks;
        spurious += st.drops.dup_request + st.drops.dup_response;
        cnps += st.cnps_sent;
        sacks += st.sacks_sent;
        rpcs += st.requests_completed;
    }
    Ok(RegimeResult {
        regime: regime.name(),
        flows: flows_n as u64,
        completed,
        credits,
        rpcs,
        failed,
        unfinished: flows_n as u64 - completed - failed,
        goodput_gbps: sum.goodput_gbps,
        mean_flow_gbps: sum.mean_flow_gbps,
        victim_goodput_gbps: sum.victim_goodput_gbps,
        slowdown: sum.slowdown,
        buckets: sum.buckets,
        fct_us: sum.fct_us,
        // From the workload's time zero, which the run shifts by WARMUP.
        last_end_us: sum.last_end.map_or(0.0, |t| {
            t.saturating_since(Instant::ZERO + WARMUP).as_nanos() as f64 / 1e3
        }),
        drops_switch: s.drops_switch,
        drops_headroom: s.drops_headroom,
        drops_host_ring: s.drops_host_ring,
        drops_unroutable: s.drops_unroutable,
        drops_loss: s.drops_loss,
        delivered_pkts: s.delivered,
        pause_frames: s.pause_frames,
        paused_us: s.paused_ns as f64 / 1e3,
        links_paused: s.links_paused,
        ecn_marks: s.ecn_marks,
        trims: s.trims,
        drops_trimmed: s.drops_trimmed,
        cnps,
        retransmitted_pkts: retransmitted,
        rollbacks,
        spurious_retransmits: spurious,
        sacks,
        uplinks_used: fab.uplinks_used(),
        peak_buffer_bytes: s.peak_buffer_bytes,
        sim_pkts: s.sim_pkts,
        sim_events: s.events,
        sim_time_us: fab.now as f64 / 1e3,
        in_flight_end: fab.pkts_live(),
        wall_secs: wall.elapsed().as_secs_f64(),
    })
}

/// The unloaded round trip of the longest path (to the last host, in the
/// last leaf): a full frame out, a minimum frame back, every hop's
/// serialisation and delay.
pub(super) fn base_rtt(cfg: &FabricConfig, topo: &super::topology::Topology) -> Duration {
    let far = topo.hosts().saturating_sub(1);
    let ns: u64 = cfg
        .path_rates(topo, 0, far)
        .iter()
        .map(|&r| ser_ns(cfg.max_frame(), r) + ser_ns(64, r) + 2 * cfg.link_delay.as_nanos())
        .sum();
    Duration::from_nanos(ns)
}
