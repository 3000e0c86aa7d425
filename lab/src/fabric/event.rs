//! The fabric's future: timed events in a calendar queue, earliest first.
//! Ties are broken by insertion order, so a run is a pure function of its
//! inputs.

use slot_lists::SlotBits;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Something that happens at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ev {
    /// Host `0`'s NIC finished serialising a frame: it may take the next.
    HostTxDone(u32),
    /// Host `0`'s endpoint timer, armed for this event's time.
    HostTimer(u32),
    /// Host `0`'s endpoint takes the next frame from its receive ring.
    HostServe(u32),
    /// Packet `pkt` arrives at host `host`.
    AtHost { host: u32, pkt: u32 },
    /// Packet `pkt` arrives at a switch by port `ingress` (global id).
    AtSwitch { ingress: u32, pkt: u32 },
    /// Egress port `0` (global id) finished serialising a frame.
    PortTxDone(u32),
    /// A PFC frame reaches egress port `port` (global id): stop or resume.
    Pause { port: u32, on: bool },
    /// A link-level credit return reaches egress port `port`.
    Credit { port: u32, units: u32 },
    /// Flow `0` starts.
    FlowStart(u32),
}

#[derive(Clone, Copy, Debug)]
struct Timed {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl Timed {
    fn key(&self) -> (u64, u64) {
        (self.at, self.seq)
    }
}

impl PartialEq for Timed {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timed {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

/// The widest calendar bucket, in bits of nanoseconds ([`bucket_shift`]).
const MAX_SHIFT: u32 = 6;
/// Bounds on the buckets in the ring. The fabric asks for a horizon a few
/// hops long ([`Events::with_horizon`]); what lies beyond (timeouts, flow
/// starts) waits in a heap.
const MIN_BUCKETS: usize = 1 << 5;
const MAX_BUCKETS: usize = 1 << 16;

/// Events [`Events::ahead`] names (the run loop's prefetch stages).
pub(super) const AHEAD: usize = 13;

/// An event in the run: its time, the event, and what the
/// run loop noted for it on the way ([`Events::set_note`]).
#[derive(Clone, Copy, Debug)]
struct Item {
    at: u64,
    ev: Ev,
    note: u32,
}

/// An event waiting in its bucket: the event and its time within the
/// bucket (the bucket gives the rest). 16 bytes, as each is written a
/// hop's delay before it is read, by when its line has left the caches.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    ev: Ev,
    within: u32,
}

/// No bucket vector: the ring slot is empty.
const NO_VEC: u32 = u32::MAX;

/// Pending events, earliest first, ties in scheduling order: a calendar
/// queue of buckets a power of two nanoseconds wide ([`bucket_shift`]).
///
/// - A push appends to its bucket's vector (the vectors come from a pool,
///   last freed first, so the one being filled is one just read).
/// - The run loop consumes the *run*: the buckets merged so far, each
///   sorted by time when merged (stably, so ties keep their scheduling
///   order). A bucket is merged when fewer than [`AHEAD`] events remain
///   in the run, so the run names the next events, in one array: the
///   prefetch reads them ahead without chasing nodes.
/// - A push into a bucket already merged (a short serialisation, an event
///   at `now`) is inserted into the run after the events of its time,
///   near the run's end, where it is named for the prefetch like the rest.
/// - Events beyond the ring's horizon wait in the *far* heap and join
///   their bucket when the horizon covers it, before anything can be
///   pushed there directly, so each bucket holds its events in
///   scheduling order.
///
/// So the order is exactly (time, scheduling order), as one heap of all
/// events would give.
#[derive(Debug)]
pub(super) struct Events {
    /// The time of the last event popped; a push before it is clamped.
    cur: u64,
    /// Bits of nanoseconds a bucket spans ([`bucket_shift`]).
    shift: u32,
    /// The first bucket not merged into the run yet (absolute: time >>
    /// `shift`). The ring holds buckets `merged..merged + slots`.
    merged: u64,
    /// Ring slots, less one (a power of two, less one).
    mask: usize,
    /// Each ring slot's vector in `pool`, or [`NO_VEC`].
    slot_vec: Vec<u32>,
    /// One bit per ring slot that holds events.
    occupied: SlotBits,
    /// Ring slots that hold events.
    occupied_slots: usize,
    pool: Vec<Vec<Waiting>>,
    free_vecs: Vec<u32>,
    /// Merged events, sorted; `run[pos]` is the next.
    run: Vec<Item>,
    pos: usize,
    far: BinaryHeap<Timed>,
    seq: u64,
    len: usize,
    /// The note of the event popped last, if it came from the run.
    popped_note: u32,
}

/// An event with no note.
pub(super) const NO_NOTE: u32 = u32::MAX;

impl Events {
    /// An empty queue for a fabric of `hosts`, whose ring covers at least
    /// `horizon_ns` ahead (within the bounds above): events further ahead
    /// take the slower heap path.
    pub fn with_horizon(horizon_ns: u64, hosts: usize) -> Self {
        let shift = bucket_shift(hosts);
        let buckets = ((horizon_ns.max(1) >> shift) + 1).next_power_of_two() as usize;
        let slots = buckets.clamp(MIN_BUCKETS, MAX_BUCKETS);
        Events {
            shift,
            cur: 0,
            merged: 0,
            mask: slots - 1,
            slot_vec: vec![NO_VEC; slots],
            occupied: SlotBits::new(slots),
            occupied_slots: 0,
            pool: Vec::new(),
            free_vecs: Vec::new(),
            run: Vec::new(),
            pos: 0,
            far: BinaryHeap::new(),
            seq: 0,
            len: 0,
            popped_note: NO_NOTE,
        }
    }

    /// Schedules `ev` at `at` (nanoseconds of virtual time, not before the
    /// last event popped).
    #[inline(always)]
    pub fn push(&mut self, at: u64, ev: Ev) {
        self.len += 1;
        let at = at.max(self.cur);
        let b = at >> self.shift;
        if b < self.merged {
            self.insert(at, ev);
        } else if b <= self.merged + self.mask as u64 {
            self.put(at, ev);
        } else {
            self.seq += 1;
            self.far.push(Timed {
                at,
                seq: self.seq,
                ev,
            });
        }
    }

    /// Appends `ev` to the vector of `at`'s bucket, which the ring covers.
    #[inline(always)]
    fn put(&mut self, at: u64, ev: Ev) {
        let slot = (at >> self.shift) as usize & self.mask;
        let mut v = self.slot_vec[slot];
        if v == NO_VEC {
            v = match self.free_vecs.pop() {
                Some(v) => v,
                None => {
                    self.pool.push(Vec::new());
                    (self.pool.len() - 1) as u32
                }
            };
            self.slot_vec[slot] = v;
            self.occupied.set(slot, true);
            self.occupied_slots += 1;
        }
        self.pool[v as usize].push(Waiting {
            ev,
            within: at as u32 & ((1 << self.shift) - 1),
        });
    }

    /// Inserts `ev`, due at `at` in a bucket the run holds already, after
    /// the run's events due by then (it was scheduled after them all).
    /// Such a time is within a bucket or two of the run's end.
    fn insert(&mut self, at: u64, ev: Ev) {
        let mut k = self.run.len();
        while k > self.pos && self.run[k - 1].at > at {
            k -= 1;
        }
        self.run.insert(
            k,
            Item {
                at,
                ev,
                note: NO_NOTE,
            },
        );
    }

    /// The earliest event, removed.
    #[cfg(test)]
    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        self.pop_by(u64::MAX)
    }

    /// The earliest event, removed, if it is due by `deadline`.
    #[inline]
    pub fn pop_by(&mut self, deadline: u64) -> Option<(u64, Ev)> {
        // Keep the run naming the next events; everything not merged is
        // later than all that is.
        while self.run.len() - self.pos <= AHEAD && self.merge_next() {}
        let r = *self.run.get(self.pos)?;
        if r.at > deadline {
            return None;
        }
        self.pos += 1;
        let (at, ev, note) = (r.at, r.ev, r.note);
        self.popped_note = note;
        self.cur = at;
        self.len -= 1;
        Some((at, ev))
    }

    /// Merges the next bucket that holds events into the run; false when
    /// none does. The run's consumed head is dropped first.
    fn merge_next(&mut self) -> bool {
        let b = match self.next_bucket() {
            Some(b) => b,
            None => return false,
        };
        let slot = b as usize & self.mask;
        let v = self.slot_vec[slot];
        self.slot_vec[slot] = NO_VEC;
        self.occupied.set(slot, false);
        self.occupied_slots -= 1;
        self.run.drain(..self.pos);
        self.pos = 0;
        let bucket = &mut self.pool[v as usize];
        sort_into(b << self.shift, 1 << self.shift, bucket, &mut self.run);
        bucket.clear();
        self.free_vecs.push(v);
        self.merged = b + 1;
        self.admit_far();
        true
    }

    /// The horizon moved: far events now within it join their buckets, in
    /// (time, scheduling) order, before anything else can be pushed there
    /// (nothing could while they lay beyond it).
    fn admit_far(&mut self) {
        while let Some(t) = self.far.peek().copied() {
            if t.at >> self.shift > self.merged + self.mask as u64 {
                break;
            }
            self.far.pop();
            self.put(t.at, t.ev);
        }
    }

    /// The first bucket not merged yet that holds events, in the ring or,
    /// if the ring is empty, the far heap's first (then the horizon jumps
    /// to it and the far events it covers join the ring).
    fn next_bucket(&mut self) -> Option<u64> {
        if self.occupied_slots > 0 {
            let origin = self.merged as usize & self.mask;
            let d = self.occupied.next_from(origin, 0)?;
            return Some(self.merged + d as u64);
        }
        let first = self.far.peek()?.at >> self.shift;
        self.merged = first;
        self.admit_far();
        Some(first)
    }

    /// The next [`AHEAD`] events as the run names them (`None` past its
    /// last), without moving the clock: the run loop's prefetch pipeline,
    /// one stage per event ahead. Hints: a push may still go before them.
    #[cfg(test)]
    pub fn peek_ahead(&mut self) -> [Option<Ev>; AHEAD] {
        let mut evs = [None; AHEAD];
        for (k, ev) in evs.iter_mut().enumerate() {
            *ev = self.ahead(k);
        }
        evs
    }

    /// The event the run names next, a hint (see
    /// [`peek_ahead`](Self::peek_ahead)).
    #[cfg(test)]
    pub fn peek_next(&mut self) -> Option<Ev> {
        self.ahead(0)
    }

    /// The event the run names at `k` (0: the next one), if it holds that
    /// many.
    #[inline]
    pub fn ahead(&self, k: usize) -> Option<Ev> {
        self.run.get(self.pos + k).map(|i| i.ev)
    }

    /// Notes `note` on the event [`ahead`](Self::ahead) named at `k`: it
    /// is [`popped_note`](Self::popped_note) when that event is popped,
    /// and [`note`](Self::note) on the way.
    #[inline]
    pub fn set_note(&mut self, k: usize, note: u32) {
        if let Some(i) = self.run.get_mut(self.pos + k) {
            i.note = note;
        }
    }

    /// The note on the event named at `k`, or [`NO_NOTE`].
    #[inline]
    pub fn note(&self, k: usize) -> u32 {
        self.run.get(self.pos + k).map_or(NO_NOTE, |i| i.note)
    }

    /// The note on the event popped last, or [`NO_NOTE`].
    #[inline]
    pub fn popped_note(&self) -> u32 {
        self.popped_note
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.len
    }
}

/// The width of a bucket, in bits of nanoseconds, for a fabric of
/// `hosts`: a bucket should hold a few dozen events. Fabrics of 1,024
/// hosts schedule about fifteen per nanosecond; the rate goes with the
/// hosts.
fn bucket_shift(hosts: usize) -> u32 {
    (13 - hosts.max(1).ilog2().min(12)).clamp(2, MAX_SHIFT)
}

/// Appends the events of the bucket that starts at `start`, `width`
/// nanoseconds wide, to `run`,
/// sorted by time, ties in the order they sit in: a counting sort on the
/// time within the bucket (one pass to count, one to place; a comparison
/// sort was a tenth of a run's instructions).
fn sort_into(start: u64, width: usize, bucket: &[Waiting], run: &mut Vec<Item>) {
    let mut starts = [0u32; 1 << MAX_SHIFT];
    for w in bucket {
        starts[w.within as usize] += 1;
    }
    let mut sum = run.len() as u32;
    for s in starts[..width].iter_mut() {
        let n = *s;
        *s = sum;
        sum += n;
    }
    let Some(&first) = bucket.first() else {
        return;
    };
    let fill = Item {
        at: start,
        ev: first.ev,
        note: NO_NOTE,
    };
    run.resize(sum as usize, fill);
    for w in bucket {
        let s = &mut starts[w.within as usize];
        run[*s as usize] = Item {
            at: start + w.within as u64,
            ev: w.ev,
            note: NO_NOTE,
        };
        *s += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_insertion_order() {
        let mut q = Events::with_horizon(4096, 64);
        q.push(5, Ev::FlowStart(0));
        q.push(3, Ev::FlowStart(1));
        q.push(5, Ev::FlowStart(2));
        q.push(3, Ev::FlowStart(3));
        let order: Vec<Ev> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            [1, 3, 0, 2].map(Ev::FlowStart).to_vec(),
            "time, then the order they were scheduled in"
        );
    }

    #[test]
    fn matches_a_heap_across_slots_and_the_horizon() {
        // Random pushes near and far, interleaved with pops, against a
        // plain sort by (time, order).
        let mut rng = engine::rng::Rng::new(9);
        let mut q = Events::with_horizon(4096, 64);
        let mut model: Vec<(u64, u64)> = Vec::new();
        let (mut now, mut id) = (0u64, 0u64);
        for round in 0..20_000 {
            let pushes = if round % 3 == 0 { 3 } else { 1 };
            for _ in 0..pushes {
                let ahead = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(200),
                    2 => rng.below(5_000),
                    _ => rng.below(5_000_000),
                };
                q.push(now + ahead, Ev::FlowStart(id as u32));
                model.push((now + ahead, id));
                id += 1;
            }
            model.sort_unstable();
            let (at, ev) = q.pop().unwrap();
            let (m_at, m_id) = model.remove(0);
            assert_eq!((at, ev), (m_at, Ev::FlowStart(m_id as u32)));
            now = at;
            // The run names the true next events, in order; the one after
            // them is named for a prefetch when the run holds it.
            let evs = q.peek_ahead();
            for (i, ev) in evs.iter().enumerate() {
                if let Some(ev) = ev {
                    assert_eq!(*ev, Ev::FlowStart(model[i].1 as u32), "round {round}");
                }
            }
            assert_eq!(q.peek_next(), evs[0]);
            if q.len() > 0 {
                assert!(q.ahead(0).is_some(), "round {round}");
            }
        }
        while let Some((at, ev)) = q.pop() {
            let (m_at, m_id) = model.remove(0);
            assert_eq!((at, ev), (m_at, Ev::FlowStart(m_id as u32)));
        }
        assert!(model.is_empty() && q.len() == 0);
    }

    #[test]
    fn a_note_follows_its_event_past_a_push_into_the_run() {
        let mut q = Events::with_horizon(4096, 64);
        for t in 0..20 {
            q.push(t * 3, Ev::FlowStart(t as u32));
        }
        assert_eq!(q.pop(), Some((0, Ev::FlowStart(0))));
        assert_eq!(q.ahead(2), Some(Ev::FlowStart(3)));
        q.set_note(2, 33);
        assert_eq!(q.note(2), 33);
        // A push into a bucket the run holds already goes into the run,
        // after its events of the same time.
        q.push(6, Ev::FlowStart(100));
        assert_eq!(q.pop(), Some((3, Ev::FlowStart(1))));
        assert_eq!(q.popped_note(), NO_NOTE);
        assert_eq!(q.ahead(1), Some(Ev::FlowStart(100)));
        assert_eq!(q.note(2), 33, "moved on with its event");
        assert_eq!(q.pop(), Some((6, Ev::FlowStart(2))));
        assert_eq!(q.pop(), Some((6, Ev::FlowStart(100))));
        assert_eq!(q.popped_note(), NO_NOTE);
        assert_eq!(q.note(0), 33, "still on its event");
        assert_eq!(q.pop(), Some((9, Ev::FlowStart(3))));
        assert_eq!(q.popped_note(), 33, "given back with its event");
        // A dense queue names a whole window of events ahead.
        for t in 0..100 {
            q.push(1_000 + t, Ev::FlowStart(200 + t as u32));
        }
        while q.pop().is_some_and(|(at, _)| at < 1_000) {}
        for k in 0..AHEAD {
            assert_eq!(q.ahead(k), Some(Ev::FlowStart(201 + k as u32)));
        }
    }
}
