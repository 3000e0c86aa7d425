//! Per-session deadlines: an indexed min-heap of (deadline, session number)
//! holding at most one entry per session number, so the timer work of an
//! endpoint is proportional to the sessions whose deadline is due, never to
//! the number of sessions.
//!
//! The heap keeps, per session number, the session's deadline and the
//! generation of the session that set it (`due`), apart from the entry
//! that wakes it (`heap`): an entry is never later than its deadline, and
//! may be earlier. [`TimerHeap::arm`] only moves a deadline earlier (a
//! packet sent starts an RTO); [`TimerHeap::reset`] sets it exactly, later
//! too, which is what keeps a request that completed in time from firing
//! its RTO for nothing: at 20,000 sessions those idle firings, each
//! touching a session out of cache, were most of a client's time. A
//! deadline moved later leaves its entry where it was: when that entry
//! comes up, [`TimerHeap::pop_due`] moves it on to the deadline without
//! reporting anything, once per entry rather than once per request (a
//! closed loop moves the deadline out at every completion and back in at
//! the next send, and then the heap is not touched at all). So what fires,
//! and when, is exactly the deadlines; only `next` may be early (the
//! endpoint's `poll_timeout` says so). The heap finds an entry through a
//! position array indexed by session number, so moving or removing one
//! touches only the heap's own compact arrays, never a session. A deadline
//! whose session was freed (generation differs) is dropped by the caller
//! when it pops. Deadlines are rounded up to a multiple of the grain
//! (`scan_interval`), so sessions due within one grain fire together and a
//! timer is late by less than one grain, the same bound the periodic scan
//! had.

use super::ids::SessionId;
use crate::time::{Duration, Instant};

/// The deadline of a session number that has none.
pub(crate) const UNARMED: Instant = Instant(u64::MAX);

/// One heap entry; ordered by time, then session number (so equal times
/// pop in one deterministic order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    at: Instant,
    num: u16,
}

/// A session number's deadline and the generation of the session that set it.
#[derive(Clone, Copy, Debug)]
struct Due {
    at: Instant,
    gen: u32,
}

const NO_DUE: Due = Due {
    at: UNARMED,
    gen: 0,
};

/// A session number with no entry in the heap.
const NOWHERE: u32 = u32::MAX;

/// Bytes one session costs the heap: its entry, its position slot and its
/// deadline.
pub(crate) const ENTRY_BYTES: usize =
    std::mem::size_of::<Entry>() + std::mem::size_of::<u32>() + std::mem::size_of::<Due>();

/// The endpoint's deadline heap.
#[derive(Debug)]
pub(crate) struct TimerHeap {
    heap: Vec<Entry>,
    /// Per session number: index of its entry in `heap`, or `NOWHERE`.
    pos: Vec<u32>,
    /// Per session number: its deadline (`UNARMED` if none).
    due: Vec<Due>,
    /// Deadlines are rounded up to a multiple of this (ns, > 0).
    grain: u64,
}

impl TimerHeap {
    /// A heap sized for `capacity` session numbers (it grows past that).
    pub fn new(grain: Duration, capacity: usize) -> Self {
        TimerHeap {
            heap: Vec::with_capacity(capacity),
            pos: vec![NOWHERE; capacity],
            due: vec![NO_DUE; capacity],
            grain: grain.as_nanos().max(1),
        }
    }

    /// `at` rounded up to the grain.
    fn round(&self, at: Instant) -> Instant {
        let g = self.grain;
        Instant(at.0.div_ceil(g).saturating_mul(g))
    }

    /// Session number `num`'s deadline, the per-number arrays grown to
    /// hold it first if it is beyond them (never for an endpoint's
    /// sessions: the heap is sized for `max_sessions`).
    #[inline]
    fn due_of(&mut self, num: u16) -> Due {
        let n = num as usize;
        if n >= self.due.len() {
            self.grow(n);
        }
        self.due[n]
    }

    /// Starts loading session number `num`'s deadline, which a packet
    /// sent reads (`arm`); a hint (`prefetch.rs`).
    #[inline]
    pub fn prefetch_due(&self, num: u16) {
        super::hint::prefetch(self.due.as_ptr().wrapping_add(num as usize));
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        self.due.resize(n + 1, NO_DUE);
        self.pos.resize(n + 1, NOWHERE);
    }

    /// Arms session `id` at `at` (rounded up) unless it is already armed
    /// at or before that. O(1) when nothing changes or the entry is early
    /// enough already, O(log n) when it moves.
    #[inline]
    pub fn arm(&mut self, id: SessionId, at: Instant) {
        // Every packet sent arms: the common case, armed at or before
        // `at` rounded, costs a compare and no division. A deadline is a
        // multiple of the grain, so `round(at) >= d.at` exactly when
        // `at + grain > d.at`.
        if let Some(d) = self.due.get(id.num as usize) {
            if d.gen == id.gen && at.0.saturating_add(self.grain) > d.at.0 {
                return;
            }
        }
        self.arm_at(id, at);
    }

    /// `arm` past its first check (out of line, so that check inlines).
    #[inline(never)]
    fn arm_at(&mut self, id: SessionId, at: Instant) {
        let d = self.due_of(id.num);
        let at = self.round(at);
        if d.gen == id.gen && at >= d.at {
            return;
        }
        self.due[id.num as usize] = Due { at, gen: id.gen };
        self.wake_by(id.num, at);
    }

    /// Sets session `id`'s deadline to exactly `at` (rounded up), earlier
    /// or later than before; `None` removes it. O(1) unless the deadline
    /// moves earlier than the session's entry (O(log n)).
    pub fn reset(&mut self, id: SessionId, at: Option<Instant>) {
        let d = self.due_of(id.num);
        let at = at.map(|a| self.round(a));
        if d.gen == id.gen && at == Some(d.at) {
            return;
        }
        let at = at.unwrap_or(UNARMED);
        self.due[id.num as usize] = Due { at, gen: id.gen };
        if at == UNARMED {
            self.remove(id.num);
        } else {
            self.wake_by(id.num, at);
        }
    }

    /// Ensures session number `num` has an entry at or before `at`.
    fn wake_by(&mut self, num: u16, at: Instant) {
        match self.pos[num as usize] {
            NOWHERE => self.upsert(Entry { at, num }),
            i if self.heap[i as usize].at <= at => {}
            _ => self.upsert(Entry { at, num }),
        }
    }

    /// Starts loading the earliest entry, which every `poll_timeout`
    /// reads; a hint (`prefetch.rs`).
    #[inline]
    pub fn prefetch_next(&self) {
        super::hint::prefetch(self.heap.as_ptr());
    }

    /// The earliest entry: never later than the earliest deadline, and
    /// earlier when that entry's deadline has moved out since.
    pub fn next(&self) -> Option<Instant> {
        self.heap.first().map(|e| e.at)
    }

    /// Pops the earliest deadline if it is due at `now`: the session it
    /// names and the deadline (the caller drops it if the session is
    /// gone). Entries whose deadline moved out move on to it on the way.
    pub fn pop_due(&mut self, now: Instant) -> Option<(SessionId, Instant)> {
        loop {
            let e = *self.heap.first()?;
            if e.at > now {
                return None;
            }
            let d = self.due[e.num as usize];
            if d.at == e.at {
                self.due[e.num as usize].at = UNARMED;
                self.remove(e.num);
                let id = SessionId {
                    num: e.num,
                    gen: d.gen,
                };
                return Some((id, e.at));
            }
            if d.at == UNARMED {
                self.remove(e.num);
            } else {
                // Later than the entry (an entry is never later than its
                // deadline): the entry moves down to it.
                self.upsert(Entry {
                    at: d.at,
                    num: e.num,
                });
            }
        }
    }

    /// Drops every deadline (all sessions are gone).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.pos.fill(NOWHERE);
        self.due.fill(NO_DUE);
    }

    /// Entries held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Session `id`'s deadline, if it has one.
    #[cfg(test)]
    pub fn deadline(&self, id: SessionId) -> Option<Instant> {
        self.due
            .get(id.num as usize)
            .filter(|d| d.gen == id.gen && d.at != UNARMED)
            .map(|d| d.at)
    }

    /// Inserts `e`, or moves the entry of its session number to it.
    fn upsert(&mut self, e: Entry) {
        let n = e.num as usize;
        match self.pos[n] {
            NOWHERE => {
                self.heap.push(e);
                let i = self.heap.len() - 1;
                self.pos[n] = i as u32;
                self.sift_up(i);
            }
            i => {
                let i = i as usize;
                let earlier = e < self.heap[i];
                self.heap[i] = e;
                if earlier {
                    self.sift_up(i);
                } else {
                    self.sift_down(i);
                }
            }
        }
    }

    /// Removes the entry of session number `num`, if any.
    fn remove(&mut self, num: u16) {
        let Some(&i) = self.pos.get(num as usize) else {
            return;
        };
        if i == NOWHERE {
            return;
        }
        let i = i as usize;
        self.pos[num as usize] = NOWHERE;
        let Some(last) = self.heap.pop() else {
            return;
        };
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last.num as usize] = i as u32;
            self.sift_up(i);
            self.sift_down(self.pos[last.num as usize] as usize);
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[self.heap[a].num as usize] = a as u32;
        self.pos[self.heap[b].num as usize] = b as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i] >= self.heap[parent] {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < n && self.heap[l] < self.heap[least] {
                least = l;
            }
            if r < n && self.heap[r] < self.heap[least] {
                least = r;
            }
            if least == i {
                break;
            }
            self.swap(i, least);
            i = least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const KEYS: u16 = 8;

    #[derive(Clone, Debug)]
    enum Op {
        Arm(u16, u64),
        /// Exact deadline (later too), or none.
        Reset(u16, Option<u64>),
        /// The session is freed and its number reused (new generation).
        Free(u16),
        Advance(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..KEYS, 0..2_000u64).prop_map(|(k, d)| Op::Arm(k, d)),
            2 => (0..KEYS, prop::option::of(0..2_000u64)).prop_map(|(k, d)| Op::Reset(k, d)),
            1 => (0..KEYS).prop_map(Op::Free),
            3 => (0..300u64).prop_map(Op::Advance),
        ]
    }

    /// The owner's side: per key the generation, as the session table
    /// holds it.
    struct Owner {
        gen: Vec<u32>,
    }

    impl Owner {
        fn id(&self, k: u16) -> SessionId {
            SessionId {
                num: k,
                gen: self.gen[k as usize],
            }
        }
    }

    /// Fires everything due at `now`, as `Endpoint::handle_timeout` does
    /// (a deadline of a freed session is dropped).
    fn fire(h: &mut TimerHeap, o: &Owner, now: Instant) -> Vec<(u16, Instant)> {
        let mut fired = Vec::new();
        while let Some((id, at)) = h.pop_due(now) {
            if o.gen[id.num as usize] == id.gen {
                fired.push((id.num, at));
            }
        }
        fired
    }

    proptest! {
        /// Against a BTreeMap of each key's deadline: the same keys fire
        /// at the same deadlines, in deadline order, freed keys never
        /// fire, and `next` is never later than the model's.
        #[test]
        fn matches_btreemap_model(grain in 1..50u64, ops in prop::collection::vec(op(), 1..200)) {
            let mut h = TimerHeap::new(Duration(grain), 4);
            let mut o = Owner { gen: vec![0; KEYS as usize] };
            let mut model: BTreeMap<u16, Instant> = BTreeMap::new();
            let mut now = Instant::ZERO;
            for op in ops {
                match op {
                    Op::Arm(k, d) => {
                        let at = now + Duration(d);
                        h.arm(o.id(k), at);
                        let rounded = Instant(at.0.div_ceil(grain) * grain);
                        let e = model.entry(k).or_insert(rounded);
                        *e = (*e).min(rounded);
                    }
                    Op::Reset(k, d) => {
                        h.reset(o.id(k), d.map(|d| now + Duration(d)));
                        match d {
                            Some(d) => {
                                let at = (now + Duration(d)).0;
                                model.insert(k, Instant(at.div_ceil(grain) * grain));
                            }
                            None => {
                                model.remove(&k);
                            }
                        }
                    }
                    Op::Free(k) => {
                        o.gen[k as usize] += 1;
                        model.remove(&k);
                    }
                    Op::Advance(d) => {
                        now += Duration(d);
                        let fired = fire(&mut h, &o, now);
                        let mut want: Vec<(u16, Instant)> =
                            model.iter().filter(|(_, &at)| at <= now).map(|(&k, &at)| (k, at)).collect();
                        model.retain(|_, at| *at > now);
                        prop_assert!(fired.windows(2).all(|w| w[0].1 <= w[1].1));
                        let mut got = fired.clone();
                        got.sort();
                        want.sort();
                        prop_assert_eq!(got, want);
                    }
                }
                let model_next = model.values().min().copied();
                match (h.next(), model_next) {
                    (Some(a), Some(b)) => prop_assert!(a <= b),
                    (None, Some(b)) => prop_assert!(false, "model has {b:?}, heap is empty"),
                    _ => {}
                }
                // One entry per session number at most.
                prop_assert!(h.len() <= KEYS as usize);
                for (&k, &at) in &model {
                    prop_assert_eq!(h.deadline(o.id(k)), Some(at));
                }
            }
        }
    }

    #[test]
    fn arm_moves_earlier_only_and_reset_moves_either_way() {
        let mut h = TimerHeap::new(Duration(10), 4);
        let id = SessionId { num: 3, gen: 7 };
        let other = SessionId { num: 1, gen: 0 };
        h.arm(id, Instant(25));
        assert_eq!(h.deadline(id), Some(Instant(30)), "rounded up to the grain");
        h.arm(id, Instant(90));
        assert_eq!(
            (h.deadline(id), h.len()),
            (Some(Instant(30)), 1),
            "arm never moves later"
        );
        h.arm(id, Instant(11));
        assert_eq!(
            (h.deadline(id), h.len()),
            (Some(Instant(20)), 1),
            "one entry per session"
        );
        h.arm(other, Instant(40));
        // A request completed in time: its RTO moves out to the keepalive;
        // its entry stays, early, and moves on when it comes up.
        h.reset(id, Some(Instant(1000)));
        assert_eq!((h.deadline(id), h.len()), (Some(Instant(1000)), 2));
        assert_eq!(h.next(), Some(Instant(20)), "early, never late");
        assert_eq!(
            h.pop_due(Instant(39)),
            None,
            "the early entry fires nothing"
        );
        assert_eq!(h.next(), Some(Instant(40)));
        assert_eq!(h.pop_due(Instant(100)), Some((other, Instant(40))));
        assert_eq!(h.pop_due(Instant(100)), None, "nothing fires for nothing");
        assert_eq!(h.next(), Some(Instant(1000)));
        // Back in before the entry: the entry moves earlier.
        h.arm(id, Instant(200));
        assert_eq!(
            (h.deadline(id), h.next()),
            (Some(Instant(200)), Some(Instant(200)))
        );
        h.reset(id, None);
        assert_eq!((h.deadline(id), h.len(), h.next()), (None, 0, None));
        // A freed session's number, reused: the new generation arms later
        // than the old deadline, and only the new one fires.
        h.arm(other, Instant(300));
        let reused = SessionId { num: 1, gen: 1 };
        h.arm(reused, Instant(500));
        assert_eq!(h.pop_due(Instant(400)), None);
        assert_eq!(h.pop_due(Instant(500)), Some((reused, Instant(500))));
    }
}
