//! The intervals of a live run: what the board's counters did between two
//! readings (RPCs, bytes on the wire, the interval's own p50/p99,
//! retransmissions, drops), and the reporter thread that reads the board
//! once per second and prints each interval as a `--json-stream` line and
//! the human progress line.

use super::live::{Board, Snapshot};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where an interval lies against the measured window, so a reader of
/// `--json-stream` can tell which lines the summary's totals count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Connecting or warming up: some RPCs of the interval are outside the
    /// totals, or a worker has not reached its measured window yet.
    Warmup,
    /// Every RPC completed in the interval is in the summary's totals.
    Measure,
    /// After the measured window: the drain of the last requests.
    Drain,
}

impl Phase {
    /// Its name in the `phase` key.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Measure => "measure",
            Phase::Drain => "drain",
        }
    }

    /// The phase of the interval from `a` to `b` on a board of `workers`,
    /// from the workers' window gauges and the measured completions (a
    /// worker that has not published yet counts as warming up).
    pub fn between(a: &Snapshot, b: &Snapshot, workers: usize) -> Phase {
        let warming = |s: &Snapshot| (workers as u64).saturating_sub(s.in_window + s.past_window);
        let rpcs = b.rpcs.saturating_sub(a.rpcs);
        let unmeasured = rpcs.saturating_sub(b.measured.saturating_sub(a.measured));
        if warming(b) > 0 || (warming(a) > 0 && unmeasured > 0) {
            Phase::Warmup
        } else if b.past_window > 0 && (unmeasured > 0 || a.past_window > 0) {
            Phase::Drain
        } else {
            Phase::Measure
        }
    }
}

/// What happened between two readings of a board.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalRecord {
    pub phase: Phase,
    /// Seconds since the board was made, at the end of the interval.
    pub t_s: f64,
    pub interval_s: f64,
    /// RPCs completed in the interval, and those of them inside the
    /// measured window (what the summary's `completed` adds up).
    pub rpcs: u64,
    pub measured_rpcs: u64,
    pub failed: u64,
    /// Frames' bytes sent and received in the interval, both directions.
    pub bytes: u64,
    /// Latency percentiles of the RPCs completed in the interval (`None`:
    /// none recorded, e.g. during the drain after the measured window).
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub retransmissions: u64,
    pub drops: u64,
    /// Totals and gauges at the end of the interval.
    pub completed: u64,
    pub in_flight: u64,
    pub workers: usize,
}

impl IntervalRecord {
    /// The interval from `(t0, a)` to `(t1, b)` (seconds since the board
    /// was made), with `hist` the interval's own latencies (ns).
    pub fn between(
        (t0, a): (f64, &Snapshot),
        (t1, b): (f64, &Snapshot),
        hist: Option<&Histogram<u64>>,
        workers: usize,
    ) -> IntervalRecord {
        let d = |x: u64, y: u64| y.saturating_sub(x);
        let pct = |q: f64| {
            hist.filter(|h| !h.is_empty())
                .map(|h| h.value_at_quantile(q) as f64 / 1e3)
        };
        IntervalRecord {
            phase: Phase::between(a, b, workers),
            t_s: t1,
            interval_s: (t1 - t0).max(0.0),
            rpcs: d(a.rpcs, b.rpcs),
            measured_rpcs: d(a.measured, b.measured),
            failed: d(a.failed, b.failed),
            bytes: d(a.tx_bytes + a.rx_bytes, b.tx_bytes + b.rx_bytes),
            p50_us: pct(0.5),
            p99_us: pct(0.99),
            retransmissions: d(a.retransmissions, b.retransmissions),
            drops: d(a.drops_total(), b.drops_total()),
            completed: b.rpcs,
            in_flight: b.in_flight,
            workers,
        }
    }

    pub fn mrps(&self) -> f64 {
        per_sec(self.rpcs as f64, self.interval_s) / 1e6
    }

    /// Frames on the wire, both directions, headers and resends included
    /// (not the report's goodput, which counts payload bytes only).
    pub fn wire_gbps(&self) -> f64 {
        per_sec(self.bytes as f64 * 8.0, self.interval_s) / 1e9
    }

    /// The `--json-stream` line (iperf3's `interval` event, flattened),
    /// keys in a fixed order with `event` first.
    pub fn json_line(&self) -> String {
        let r3 = |x: f64| (x * 1e3).round() / 1e3;
        let line = IntervalLine {
            event: "interval",
            phase: self.phase.as_str(),
            t_s: r3(self.t_s),
            interval_s: r3(self.interval_s),
            rpcs: self.rpcs,
            measured_rpcs: self.measured_rpcs,
            mrps: (self.mrps() * 1e6).round() / 1e6,
            wire_gbps: r3(self.wire_gbps()),
            p50_us: self.p50_us.map(r3),
            p99_us: self.p99_us.map(r3),
            retransmissions: self.retransmissions,
            drops: self.drops,
            failed: self.failed,
            completed: self.completed,
            in_flight: self.in_flight,
            workers: self.workers,
        };
        // Plain numbers and strings: serialising cannot fail.
        serde_json::to_string(&line).unwrap_or_default()
    }

    /// The human progress line (stderr).
    pub fn human(&self) -> String {
        let us = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
        let phase = match self.phase {
            Phase::Measure => "",
            Phase::Warmup => " (warm-up: not in the totals)",
            Phase::Drain => " (drain: after the measured window)",
        };
        format!(
            "  [{:>5.1} s] {} worker(s): {:>8.3} Mrps, {:>6.2} Gb/s on the wire, p50 {} us, p99 {} us, \
             {} completed, {} failed, {} in flight, {} retransmitted, {} dropped{phase}",
            self.t_s,
            self.workers,
            self.mrps(),
            self.wire_gbps(),
            us(self.p50_us),
            us(self.p99_us),
            self.completed,
            self.failed,
            self.in_flight,
            self.retransmissions,
            self.drops
        )
    }
}

/// The shape of a `--json-stream` line (a struct, so the keys keep this order).
#[derive(serde::Serialize)]
struct IntervalLine {
    event: &'static str,
    phase: &'static str,
    t_s: f64,
    interval_s: f64,
    rpcs: u64,
    measured_rpcs: u64,
    mrps: f64,
    wire_gbps: f64,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    retransmissions: u64,
    drops: u64,
    failed: u64,
    completed: u64,
    in_flight: u64,
    workers: usize,
}

fn per_sec(x: f64, secs: f64) -> f64 {
    if secs > 0.0 {
        x / secs
    } else {
        0.0
    }
}

// ------------------------------------------------------------ reporter

/// Where interval records go.
#[derive(Clone, Copy, Debug, Default)]
pub struct LiveOptions {
    /// `--json-stream`: one JSON line per interval on stdout.
    pub json_stream: bool,
    /// The human progress line on stderr.
    pub progress: bool,
    /// Interval length.
    pub every: std::time::Duration,
}

impl LiveOptions {
    /// A client's options: progress lines for any run (warm-up included)
    /// of 2 s or more, JSON lines when asked, every `p.live_every` (1 s
    /// when unset: `live_every` sets the period, not whether lines appear).
    pub fn client(json_stream: bool, p: &crate::run::workload::ClientParams) -> LiveOptions {
        let total = std::time::Duration::from_nanos((p.warmup + p.run).as_nanos());
        let every = p.live_every.map_or(1_000_000_000, |d| d.as_nanos().max(1));
        LiveOptions {
            json_stream,
            progress: total >= std::time::Duration::from_secs(2),
            every: std::time::Duration::from_nanos(every),
        }
    }

    pub(crate) fn any(&self) -> bool {
        self.json_stream || self.progress
    }
}

/// How long a reporter waits for workers to hand their histograms over:
/// far longer than a publish period, far shorter than an interval.
const HANDOVER_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// Reads a board once per interval until `stop` (or every worker is done)
/// and prints its interval records as `opts` says. Run it on its own
/// thread (`std::thread::scope`) beside the workers; set `stop`, then
/// unpark the thread.
pub fn report(board: &Board, opts: LiveOptions, stop: &AtomicBool) {
    if !opts.any() {
        return;
    }
    let mut prev = (0.0, Snapshot::default(), None);
    let mut next = opts.every;
    loop {
        // Parked until the interval ends; whoever sets `stop` unparks us
        // (`run::node`), so the process never waits on us at exit, and a
        // worker's core (which we may share) sees one wakeup a second.
        while let Some(left) = next.checked_sub(board.started.elapsed()) {
            if stop.load(Ordering::Acquire) || board.all_done() {
                // The last, partial interval, unless it is a sliver: the
                // interval lines then add up to the whole run.
                let left = board.started.elapsed().as_secs_f64() - prev.0;
                if left >= opts.every.as_secs_f64() / 10.0 {
                    emit(
                        &read_interval(board, &mut prev, std::time::Duration::ZERO),
                        opts,
                    );
                }
                return;
            }
            std::thread::park_timeout(left);
        }
        next += opts.every;
        emit(&read_interval(board, &mut prev, HANDOVER_WAIT), opts);
    }
}

/// The time, the summed snapshot and the summed histogram of one reading.
type Reading = (f64, Snapshot, Option<Histogram<u64>>);

/// Reads the board (waiting at most `wait` for histograms); returns the
/// interval since `prev` and makes the reading the new `prev`.
fn read_interval(board: &Board, prev: &mut Reading, wait: std::time::Duration) -> IntervalRecord {
    let hist = board.gather_hists(wait);
    let now: Reading = (board.started.elapsed().as_secs_f64(), board.sum(), hist);
    let interval = now.2.as_ref().map(|h| {
        let mut d = h.clone();
        if let Some(p) = &prev.2 {
            // Cumulative sums only grow: cannot go negative.
            let _ = d.subtract(p);
        }
        d
    });
    let rec = IntervalRecord::between(
        (prev.0, &prev.1),
        (now.0, &now.1),
        interval.as_ref(),
        board.workers(),
    );
    *prev = now;
    rec
}

fn emit(rec: &IntervalRecord, opts: LiveOptions) {
    use std::io::Write;
    if opts.progress {
        eprintln!("{}", rec.human());
    }
    if opts.json_stream {
        // One whole line per write, flushed now: a reader (rpc-bench, jq)
        // sees each interval as it ends.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", rec.json_line());
        let _ = out.flush();
    }
}
