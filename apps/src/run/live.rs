//! Live counters: what a running process's workers have done so far, read
//! by another thread while they run, off the data path.
//!
//! Each worker owns one [`Slot`] of a [`Board`] and publishes a
//! [`Snapshot`] of its counters into it through a [`Publisher`] at most
//! every [`PUBLISH_EVERY`] (the caller passes the time it already read; the
//! publisher reads no clock). Publishing is a seqlock write of a few dozen
//! relaxed atomic stores: no lock, no allocation, nothing a reader can make
//! the worker wait on. Readers ([`Board::sum`]) retry a slot whose sequence
//! changed under them, so every slot they return is one consistent moment
//! of its worker.
//!
//! Latency: a client worker's slot also holds a pre-allocated histogram.
//! When a reader wants interval percentiles it raises the slot's flag
//! ([`Board::request_hists`]); the worker, at its next publish, `try_lock`s
//! the slot's histogram (never waiting: a busy lock means "next time") and
//! copies its cumulative latency histogram into it (a memcpy of the
//! pre-allocated counts array, about 200 KiB, once per request, i.e. once
//! per second). The reader subtracts the previous second's sum from the new
//! one, so the interval's p50/p99 are exact to the histogram's precision;
//! nothing is recorded twice on the per-RPC path.
//!
//! `super::interval` turns the board into interval records once per
//! second: `--json-stream` lines on stdout and the human progress line on
//! stderr.

use crossbeam_utils::CachePadded;
use engine::proto::Drops;
use engine::time::{Duration, Instant};
use hdrhistogram::Histogram;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// How often a worker publishes its counters: often enough that a reader
/// once a second (or a scrape) is at most a millisecond stale, rarely
/// enough that the stores cost nothing next to a millisecond of RPCs.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(1);

/// The drop reasons that partition received-and-dropped frames (those
/// [`Drops::total`] adds up), in that order: the `reason` label values.
pub const DROP_REASONS: [&str; 13] = [
    "malformed",
    "not_ours",
    "unknown_session",
    "bad_token",
    "bad_state",
    "too_large",
    "reassembly_budget",
    "stale",
    "duplicate",
    "future",
    "restart_pending",
    "restart_refused",
    "no_ring_space",
];

/// `d`'s counters of [`DROP_REASONS`], in that order.
pub fn drop_reasons(d: &Drops) -> [u64; DROP_REASONS.len()] {
    [
        d.malformed,
        d.not_ours,
        d.unknown_session,
        d.bad_token,
        d.bad_state,
        d.too_large,
        d.reassembly_budget,
        d.stale,
        d.duplicate,
        d.future,
        d.restart_pending,
        d.restart_refused,
        d.no_ring_space,
    ]
}

/// One worker's counters at one moment (or several workers' summed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Client: requests completed with a response. Server: requests handed
    /// to the handler.
    pub rpcs: u64,
    /// Client: requests failed. Server: requests whose bytes were wrong.
    pub failed: u64,
    /// Client: requests outstanding now (a gauge). Server: 0.
    pub in_flight: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub rx_pkts: u64,
    pub rx_bytes: u64,
    pub retransmissions: u64,
    pub credit_stalls: u64,
    /// Sessions connected now (a gauge).
    pub sessions_open: u64,
    pub sessions_accepted: u64,
    pub sessions_reclaimed: u64,
    /// Client: completions inside the measured window (the summary's
    /// `completed`). Server: 0.
    pub measured: u64,
    /// Client: workers inside their measured window now, and workers past
    /// it (gauges; a worker in neither is connecting or warming up).
    pub in_window: u64,
    pub past_window: u64,
    /// Received frames dropped, by [`DROP_REASONS`].
    pub drops: [u64; DROP_REASONS.len()],
}

/// Scalar fields of a [`Snapshot`] before its drops.
const SCALARS: usize = 15;
/// Words one snapshot takes in a slot.
const WORDS: usize = SCALARS + DROP_REASONS.len();

impl Snapshot {
    /// A snapshot of an endpoint's counters; the caller adds what the
    /// application counts (`rpcs`, `failed`, `in_flight`).
    pub fn of_endpoint(s: &engine::proto::Stats, sessions_open: usize) -> Snapshot {
        Snapshot {
            tx_pkts: s.tx_pkts,
            tx_bytes: s.tx_bytes,
            rx_pkts: s.rx_pkts,
            rx_bytes: s.rx_bytes,
            retransmissions: s.retransmissions,
            credit_stalls: s.credit_stalls,
            sessions_open: sessions_open as u64,
            sessions_accepted: s.sessions_accepted,
            sessions_reclaimed: s.sessions_reclaimed,
            drops: drop_reasons(&s.drops),
            ..Snapshot::default()
        }
    }

    /// Every received frame dropped, over all reasons.
    pub fn drops_total(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Adds `o` field by field (gauges too: the sum over workers).
    pub fn add(&mut self, o: &Snapshot) {
        let mut w = self.to_words();
        for (a, b) in w.iter_mut().zip(o.to_words()) {
            *a += b;
        }
        *self = Snapshot::from_words(&w);
    }

    fn to_words(self) -> [u64; WORDS] {
        let mut w = [0u64; WORDS];
        w[..SCALARS].copy_from_slice(&[
            self.rpcs,
            self.failed,
            self.in_flight,
            self.tx_pkts,
            self.tx_bytes,
            self.rx_pkts,
            self.rx_bytes,
            self.retransmissions,
            self.credit_stalls,
            self.sessions_open,
            self.sessions_accepted,
            self.sessions_reclaimed,
            self.measured,
            self.in_window,
            self.past_window,
        ]);
        w[SCALARS..].copy_from_slice(&self.drops);
        w
    }

    fn from_words(w: &[u64; WORDS]) -> Snapshot {
        let mut drops = [0u64; DROP_REASONS.len()];
        drops.copy_from_slice(&w[SCALARS..]);
        Snapshot {
            rpcs: w[0],
            failed: w[1],
            in_flight: w[2],
            tx_pkts: w[3],
            tx_bytes: w[4],
            rx_pkts: w[5],
            rx_bytes: w[6],
            retransmissions: w[7],
            credit_stalls: w[8],
            sessions_open: w[9],
            sessions_accepted: w[10],
            sessions_reclaimed: w[11],
            measured: w[12],
            in_window: w[13],
            past_window: w[14],
            drops,
        }
    }
}

/// One worker's published state: a seqlock over its snapshot, and the
/// latency histogram handed over on request.
#[derive(Debug)]
pub struct Slot {
    /// Odd while the worker writes `words`.
    seq: AtomicU64,
    words: [AtomicU64; WORDS],
    /// Raised by a reader that wants the histogram, lowered by the worker
    /// once it has copied it in.
    hist_wanted: AtomicBool,
    /// The worker's cumulative latencies as of its last handover; `None`
    /// on boards that carry no latencies (the server's).
    hist: Mutex<Option<Histogram<u64>>>,
    /// The worker has stopped and published its last snapshot.
    done: AtomicBool,
}

impl Slot {
    fn new(hist: Option<Histogram<u64>>) -> Slot {
        Slot {
            seq: AtomicU64::new(0),
            words: std::array::from_fn(|_| AtomicU64::new(0)),
            hist_wanted: AtomicBool::new(false),
            hist: Mutex::new(hist),
            done: AtomicBool::new(false),
        }
    }

    /// Writes `s` (one writer per slot: its worker).
    fn store(&self, s: &Snapshot) {
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        // Orders the odd sequence before the data stores (seqlock writer).
        fence(Ordering::Release);
        for (w, v) in self.words.iter().zip(s.to_words()) {
            w.store(v, Ordering::Relaxed);
        }
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// The last snapshot written, whole (retries a torn read; yields the
    /// core now and then, in case the writer was preempted mid-write on it).
    pub fn load(&self) -> Snapshot {
        for attempt in 0u32.. {
            if attempt % 64 == 63 {
                std::thread::yield_now();
            }
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let w: [u64; WORDS] = std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
            // Orders the data loads before the second sequence load.
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == before {
                return Snapshot::from_words(&w);
            }
        }
        unreachable!("the attempts above never end without a whole read")
    }

    /// Copies `parts` (summed) into the slot's histogram if a reader asked
    /// and the lock is free now; `force` copies even unasked and waits for
    /// the lock (the worker's last publish, off the data path).
    fn hand_over(&self, parts: &[&Histogram<u64>], force: bool) {
        if !force && !self.hist_wanted.load(Ordering::Relaxed) {
            return;
        }
        let guard = match force {
            true => Some(self.hist.lock().unwrap_or_else(|p| p.into_inner())),
            false => self.hist.try_lock().ok(),
        };
        let Some(mut guard) = guard else {
            return;
        };
        if let Some(h) = guard.as_mut() {
            h.reset();
            for p in parts {
                // Same bounds as the worker's (made by `new_from`): cannot fail.
                let _ = h.add(*p);
            }
        }
        drop(guard);
        self.hist_wanted.store(false, Ordering::Release);
    }
}

/// Every worker's slot, each on its own cache lines.
#[derive(Debug)]
pub struct Board {
    slots: Box<[CachePadded<Slot>]>,
    /// When the board was made: `t_s` of interval records and the server's
    /// uptime count from here.
    pub started: std::time::Instant,
}

impl Board {
    /// A board for `workers` workers; `hist`: the shape of their latency
    /// histograms, if they hand latencies over (each slot gets an empty
    /// one of that shape now, never later).
    pub fn new(workers: usize, hist: Option<&Histogram<u64>>) -> Board {
        let slots = (0..workers)
            .map(|_| CachePadded::new(Slot::new(hist.map(Histogram::new_from))))
            .collect();
        Board {
            slots,
            started: std::time::Instant::now(),
        }
    }

    pub fn workers(&self) -> usize {
        self.slots.len()
    }

    /// Worker `index`'s publisher (`None` past the board's end).
    pub fn publisher(&self, index: usize) -> Option<Publisher<'_>> {
        self.slots.get(index).map(|s| Publisher {
            slot: s,
            last: None,
        })
    }

    /// Every worker's last snapshot, summed.
    pub fn sum(&self) -> Snapshot {
        let mut total = Snapshot::default();
        for s in self.slots.iter() {
            total.add(&s.load());
        }
        total
    }

    /// Whether every worker has published its last snapshot.
    pub fn all_done(&self) -> bool {
        self.slots.iter().all(|s| s.done.load(Ordering::Acquire))
    }

    /// Asks every running worker for its histogram and waits (at most
    /// `wait`) until each has handed it over or stopped; then returns the
    /// sum of every slot's histogram (`None` on a board without them).
    pub fn gather_hists(&self, wait: std::time::Duration) -> Option<Histogram<u64>> {
        for s in self.slots.iter() {
            s.hist_wanted.store(true, Ordering::Relaxed);
        }
        let until = std::time::Instant::now() + wait;
        while std::time::Instant::now() < until
            && self
                .slots
                .iter()
                .any(|s| s.hist_wanted.load(Ordering::Acquire) && !s.done.load(Ordering::Acquire))
        {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let mut sum: Option<Histogram<u64>> = None;
        for s in self.slots.iter() {
            let g = s.hist.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(h) = g.as_ref() {
                let total = sum.get_or_insert_with(|| Histogram::new_from(h));
                let _ = total.add(h);
            }
        }
        sum
    }
}

/// A worker's handle on its slot.
#[derive(Debug)]
pub struct Publisher<'a> {
    slot: &'a Slot,
    last: Option<Instant>,
}

impl Publisher<'_> {
    /// Whether [`PUBLISH_EVERY`] has passed since the last publish.
    #[inline]
    pub fn due(&self, now: Instant) -> bool {
        self.last.is_none_or(|l| now - l >= PUBLISH_EVERY)
    }

    /// Publishes `s`, and the latency histograms `hists` (summed) if a
    /// reader asked for them.
    pub fn publish(&mut self, now: Instant, s: &Snapshot, hists: &[&Histogram<u64>]) {
        self.last = Some(now);
        self.slot.hand_over(hists, false);
        self.slot.store(s);
    }

    /// The worker's last publish: everything, histogram included, then
    /// marks the slot done.
    pub fn finish(&mut self, s: &Snapshot, hists: &[&Histogram<u64>]) {
        self.slot.hand_over(hists, true);
        self.slot.store(s);
        self.slot.done.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::interval::{IntervalRecord, LiveOptions};
    use engine::counters::Counters;

    fn hist() -> Histogram<u64> {
        Histogram::new_with_bounds(1, 100_000_000_000, 3).unwrap()
    }

    #[test]
    fn drop_reasons_name_real_fields_and_add_up_to_the_total() {
        let mut d = Drops::default();
        for name in DROP_REASONS {
            assert!(d.get(name).is_some(), "{name} is not a field of Drops");
        }
        // Distinct powers of two per reason, and a refinement that must not count.
        d.malformed = 1;
        d.not_ours = 2;
        d.unknown_session = 4;
        d.bad_token = 8;
        d.bad_state = 16;
        d.too_large = 32;
        d.reassembly_budget = 64;
        d.stale = 128;
        d.duplicate = 256;
        d.future = 512;
        d.restart_pending = 1024;
        d.restart_refused = 2048;
        d.no_ring_space = 4096;
        d.dup_request = 99;
        let r = drop_reasons(&d);
        assert_eq!(r.iter().sum::<u64>(), d.total());
        for (k, name) in DROP_REASONS.iter().enumerate() {
            assert_eq!(d.get(name), Some(r[k]), "{name}");
        }
    }

    fn snap(k: u64) -> Snapshot {
        let mut s = Snapshot {
            rpcs: k,
            failed: k + 1,
            in_flight: k + 2,
            tx_pkts: k + 3,
            tx_bytes: k + 4,
            rx_pkts: k + 5,
            rx_bytes: k + 6,
            retransmissions: k + 7,
            credit_stalls: k + 8,
            sessions_open: k + 9,
            sessions_accepted: k + 10,
            sessions_reclaimed: k + 11,
            measured: k + 12,
            in_window: k + 13,
            past_window: k + 14,
            drops: [0; DROP_REASONS.len()],
        };
        for (i, d) in s.drops.iter_mut().enumerate() {
            *d = k * 100 + i as u64;
        }
        s
    }

    #[test]
    fn snapshots_round_trip_through_a_slot_and_sum_over_workers() {
        let board = Board::new(3, None);
        for w in 0..3 {
            let mut p = board.publisher(w).unwrap();
            assert!(p.due(Instant::ZERO));
            p.publish(Instant::ZERO, &snap(w as u64 * 1000), &[]);
            assert!(!p.due(Instant::ZERO + Duration::from_micros(999)));
            assert!(p.due(Instant::ZERO + PUBLISH_EVERY));
        }
        assert!(board.publisher(3).is_none());
        assert_eq!(board.slots[1].load(), snap(1000));
        let s = board.sum();
        assert_eq!(s.rpcs, 3000);
        assert_eq!(s.sessions_reclaimed, 3000 + 33);
        assert_eq!(s.drops[12], 300_000 + 36);
        assert_eq!(s.drops_total(), snap(0).drops_total() * 3 + 300_000 * 13);
        assert!(!board.all_done());
        for w in 0..3 {
            board.publisher(w).unwrap().finish(&snap(w as u64), &[]);
        }
        assert!(board.all_done());
        assert_eq!(board.sum().rpcs, 3);
    }

    #[test]
    fn a_reader_never_sees_a_torn_snapshot() {
        // Every field of each published snapshot equals its `rpcs` (plus a
        // fixed offset): a torn read would mix two of them. The writer
        // yields between publishes, as a worker publishing once a
        // millisecond leaves gaps (a writer storing back to back could
        // starve any seqlock reader).
        let board = Board::new(1, None);
        let mut p = board.publisher(0).unwrap();
        // The slot's initial zeros are no `snap(k)`: publish one first.
        p.publish(Instant::ZERO, &snap(0), &[]);
        let stop = AtomicBool::new(false);
        let torn = std::thread::scope(|s| {
            s.spawn(|| {
                let mut k = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    k += 1;
                    p.publish(Instant::ZERO, &snap(k), &[]);
                    std::thread::yield_now();
                }
            });
            // Count, not assert, in here: a panic would leave the writer running.
            let torn = (0..20_000)
                .map(|_| board.slots[0].load())
                .filter(|got| *got != snap(got.rpcs))
                .count();
            stop.store(true, Ordering::Relaxed);
            torn
        });
        assert_eq!(torn, 0);
    }

    #[test]
    fn histograms_are_handed_over_only_when_asked_and_subtract_to_the_interval() {
        let shape = hist();
        let board = Board::new(2, Some(&shape));
        let mut p = board.publisher(0).unwrap();
        let mut mine = hist();
        mine.record(1_000).unwrap();
        // Unasked: nothing copied.
        p.publish(Instant::ZERO, &snap(1), &[&mine]);
        assert!(board.slots[0]
            .hist
            .lock()
            .unwrap()
            .as_ref()
            .unwrap()
            .is_empty());
        // Asked: the reader's wait ends once worker 0 answers (worker 1
        // is done, so not waited for).
        board.publisher(1).unwrap().finish(&snap(0), &[]);
        let first = std::thread::scope(|s| {
            let r = s.spawn(|| board.gather_hists(std::time::Duration::from_secs(5)));
            while !board.slots[0].hist_wanted.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            p.publish(Instant::ZERO, &snap(1), &[&mine]);
            r.join().unwrap().unwrap()
        });
        assert_eq!(first.len(), 1);
        // A second interval: two more samples at 10 us; the difference holds only them.
        mine.record(10_000).unwrap();
        mine.record(10_000).unwrap();
        p.finish(&snap(2), &[&mine]);
        let second = board.gather_hists(std::time::Duration::ZERO).unwrap();
        let mut d = second.clone();
        d.subtract(&first).unwrap();
        assert_eq!(d.len(), 2);
        let rec = IntervalRecord::between((1.0, &snap(1)), (2.0, &snap(2)), Some(&d), 2);
        assert!((rec.p50_us.unwrap() - 10.0).abs() < 0.01, "{rec:?}");
        assert_eq!(rec.rpcs, 1);
        assert_eq!(rec.drops, DROP_REASONS.len() as u64 * 100);
    }

    #[test]
    fn interval_records_rate_and_json_shape() {
        let a = Snapshot {
            rpcs: 1_000,
            tx_bytes: 500,
            rx_bytes: 500,
            ..Snapshot::default()
        };
        let b = Snapshot {
            rpcs: 2_001_000,
            tx_bytes: 500 + 125_000_000,
            rx_bytes: 500 + 125_000_000,
            retransmissions: 3,
            in_flight: 8,
            ..Snapshot::default()
        };
        let r = IntervalRecord::between((1.0, &a), (3.0, &b), None, 2);
        assert_eq!(r.rpcs, 2_000_000);
        assert!((r.mrps() - 1.0).abs() < 1e-9);
        assert!((r.wire_gbps() - 1.0).abs() < 1e-9);
        let line = r.json_line();
        // No worker has reached its measured window: a warm-up interval.
        assert!(
            line.starts_with(r#"{"event":"interval","phase":"warmup","t_s":3.0,"#),
            "{line}"
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        for k in [
            "event",
            "phase",
            "measured_rpcs",
            "t_s",
            "interval_s",
            "rpcs",
            "mrps",
            "wire_gbps",
            "p50_us",
            "p99_us",
            "retransmissions",
            "drops",
            "workers",
        ] {
            assert!(v.get(k).is_some(), "{k} missing in {v}");
        }
        assert_eq!(v["event"], "interval");
        assert_eq!(v["interval_s"], 2.0);
        assert_eq!(v["workers"], 2);
        assert!(v["p50_us"].is_null(), "no latencies: null, not 0");
        assert!(r.human().contains("2 worker(s)"), "{}", r.human());
        // Counters that went backwards (a worker restarted) read as 0, not a wrap.
        let back = IntervalRecord::between((0.0, &b), (1.0, &a), None, 1);
        assert_eq!(back.rpcs, 0);
    }

    #[test]
    fn each_interval_says_whether_the_totals_count_it() {
        use crate::run::interval::Phase;
        // Two workers; `w` in window, `p` past it, `m` measured, `r` rpcs.
        let s = |w: u64, p: u64, m: u64, r: u64| Snapshot {
            in_window: w,
            past_window: p,
            measured: m,
            rpcs: r,
            ..Snapshot::default()
        };
        let start = Snapshot::default();
        // Nobody published yet, or one still warming at the end: warm-up.
        assert_eq!(Phase::between(&start, &s(0, 0, 0, 500), 2), Phase::Warmup);
        assert_eq!(Phase::between(&start, &s(1, 0, 100, 500), 2), Phase::Warmup);
        // Both in the window at the end, but warm-up RPCs in the interval.
        assert_eq!(Phase::between(&start, &s(2, 0, 300, 500), 2), Phase::Warmup);
        // No warm-up (warmup_seconds = 0): every RPC measured from the start.
        assert_eq!(
            Phase::between(&start, &s(2, 0, 500, 500), 2),
            Phase::Measure
        );
        assert_eq!(
            Phase::between(&s(2, 0, 500, 500), &s(2, 0, 900, 900), 2),
            Phase::Measure
        );
        // Past the window with RPCs outside it, or wholly after it: drain.
        assert_eq!(
            Phase::between(&s(2, 0, 900, 900), &s(0, 2, 1000, 1010), 2),
            Phase::Drain
        );
        assert_eq!(
            Phase::between(&s(0, 2, 1000, 1010), &s(0, 2, 1000, 1010), 2),
            Phase::Drain
        );
        let r = IntervalRecord::between((0.0, &start), (1.0, &s(2, 0, 300, 500)), None, 2);
        assert_eq!((r.rpcs, r.measured_rpcs), (500, 300));
        assert!(
            r.json_line().contains(r#""phase":"warmup""#),
            "{}",
            r.json_line()
        );
        assert!(
            r.human().ends_with("(warm-up: not in the totals)"),
            "{}",
            r.human()
        );
    }

    #[test]
    fn progress_lines_for_runs_of_two_seconds_or_more() {
        let params = |ms: u64| crate::run::workload::ClientParams {
            pace: crate::run::workload::Loop::Closed,
            req_size: 32,
            resp_size: 32,
            window: 1,
            sessions: 1,
            warmup: Duration::from_millis(500),
            run: Duration::from_millis(ms),
            max_requests: None,
            verify: false,
            live_every: None,
        };
        assert!(!LiveOptions::client(false, &params(1_499)).progress);
        assert!(LiveOptions::client(false, &params(1_500)).progress);
        assert!(!LiveOptions::client(false, &params(100)).any());
        let json = LiveOptions::client(true, &params(100));
        assert!(json.any() && json.every == std::time::Duration::from_secs(1));
    }
}
