//! Per-session deadlines: an indexed min-heap of (deadline, session number,
//! generation) holding at most one entry per session number, so the timer
//! work of an endpoint is proportional to the sessions whose deadline is
//! due, never to the number of sessions.
//!
//! Each session keeps the deadline of its entry (its `timer_at`, `UNARMED`
//! if none). [`TimerHeap::arm`] only moves a deadline earlier (a packet
//! sent starts an RTO; O(1) when the session is armed earlier already);
//! [`TimerHeap::reset`] sets it exactly, later too, which is what keeps a
//! request that completed in time from firing its RTO for nothing: at
//! 20,000 sessions those idle firings, each touching a session out of
//! cache, were most of a client's time. The heap finds an entry through a
//! position array indexed by session number, so moving or removing one
//! touches only the heap's own compact arrays, never a session. An entry
//! whose session was freed (generation differs) is dropped by the caller
//! when it pops. Deadlines are rounded up to a multiple of the grain
//! (`scan_interval`), so sessions due within one grain fire together and a
//! timer is late by less than one grain, the same bound the periodic scan
//! had.

use super::ids::SessionId;
use crate::time::{Duration, Instant};

/// A session's `timer_at` when it has no heap entry.
pub(crate) const UNARMED: Instant = Instant(u64::MAX);

/// One heap entry; ordered by deadline, then session number (so equal
/// deadlines pop in one deterministic order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    at: Instant,
    num: u16,
    gen: u32,
}

/// A session number with no entry in the heap.
const NOWHERE: u32 = u32::MAX;

/// Bytes one session costs the heap: its entry and its position slot.
pub(crate) const ENTRY_BYTES: usize = std::mem::size_of::<Entry>() + std::mem::size_of::<u32>();

/// The endpoint's deadline heap.
#[derive(Debug)]
pub(crate) struct TimerHeap {
    heap: Vec<Entry>,
    /// Per session number: index of its entry in `heap`, or `NOWHERE`.
    pos: Vec<u32>,
    /// Deadlines are rounded up to a multiple of this (ns, > 0).
    grain: u64,
}

impl TimerHeap {
    /// A heap sized for `capacity` session numbers (it grows past that).
    pub fn new(grain: Duration, capacity: usize) -> Self {
        TimerHeap {
            heap: Vec::with_capacity(capacity),
            pos: vec![NOWHERE; capacity],
            grain: grain.as_nanos().max(1),
        }
    }

    /// `at` rounded up to the grain.
    fn round(&self, at: Instant) -> Instant {
        let g = self.grain;
        Instant(at.0.div_ceil(g).saturating_mul(g))
    }

    /// Arms session `id`, whose current deadline is `*armed`, at `at`
    /// (rounded up) unless it is already armed at or before that. O(1)
    /// when nothing changes, O(log n) when the entry moves.
    pub fn arm(&mut self, armed: &mut Instant, id: SessionId, at: Instant) {
        let at = self.round(at);
        if at >= *armed {
            return;
        }
        *armed = at;
        self.upsert(Entry {
            at,
            num: id.num,
            gen: id.gen,
        });
    }

    /// Sets session `id`'s deadline to exactly `at` (rounded up), earlier
    /// or later than before; `None` removes it. O(log n); O(1) when the
    /// rounded deadline is unchanged.
    pub fn reset(&mut self, armed: &mut Instant, id: SessionId, at: Option<Instant>) {
        let at = at.map(|a| self.round(a));
        if at == Some(*armed) {
            return;
        }
        match at {
            Some(at) => {
                *armed = at;
                self.upsert(Entry {
                    at,
                    num: id.num,
                    gen: id.gen,
                });
            }
            None => {
                *armed = UNARMED;
                self.remove(id.num);
            }
        }
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<Instant> {
        self.heap.first().map(|e| e.at)
    }

    /// Pops the earliest entry if it is due at `now`: the session it names
    /// and its deadline (the caller drops it if the session is gone).
    pub fn pop_due(&mut self, now: Instant) -> Option<(SessionId, Instant)> {
        let e = *self.heap.first()?;
        if e.at > now {
            return None;
        }
        self.remove(e.num);
        Some((
            SessionId {
                num: e.num,
                gen: e.gen,
            },
            e.at,
        ))
    }

    /// Drops every entry (all sessions are gone).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.pos.fill(NOWHERE);
    }

    /// Entries held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Inserts `e`, or moves the entry of its session number to it.
    fn upsert(&mut self, e: Entry) {
        let n = e.num as usize;
        if n >= self.pos.len() {
            self.pos.resize(n + 1, NOWHERE);
        }
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

    /// The owner's side: per key the generation and `timer_at`, as the
    /// session table holds them.
    struct Owner {
        gen: Vec<u32>,
        armed: Vec<Instant>,
    }

    impl Owner {
        fn id(&self, k: u16) -> SessionId {
            SessionId {
                num: k,
                gen: self.gen[k as usize],
            }
        }
    }

    /// Fires everything due at `now`, as `Endpoint::handle_timeout` does.
    fn fire(h: &mut TimerHeap, o: &mut Owner, now: Instant) -> Vec<(u16, Instant)> {
        let mut fired = Vec::new();
        while let Some((id, at)) = h.pop_due(now) {
            let k = id.num as usize;
            if o.gen[k] == id.gen && o.armed[k] == at {
                o.armed[k] = UNARMED;
                fired.push((id.num, at));
            }
        }
        fired
    }

    proptest! {
        /// Against a BTreeMap of each key's earliest armed deadline: the
        /// same keys fire at the same deadlines, in deadline order, freed
        /// keys never fire, and `next` is never later than the model's.
        #[test]
        fn matches_btreemap_model(grain in 1..50u64, ops in prop::collection::vec(op(), 1..200)) {
            let mut h = TimerHeap::new(Duration(grain), 4);
            let mut o = Owner { gen: vec![0; KEYS as usize], armed: vec![UNARMED; KEYS as usize] };
            let mut model: BTreeMap<u16, Instant> = BTreeMap::new();
            let mut now = Instant::ZERO;
            for op in ops {
                match op {
                    Op::Arm(k, d) => {
                        let at = now + Duration(d);
                        let id = o.id(k);
                        h.arm(&mut o.armed[k as usize], id, at);
                        let rounded = Instant(at.0.div_ceil(grain) * grain);
                        let e = model.entry(k).or_insert(rounded);
                        *e = (*e).min(rounded);
                    }
                    Op::Reset(k, d) => {
                        let id = o.id(k);
                        h.reset(&mut o.armed[k as usize], id, d.map(|d| now + Duration(d)));
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
                        o.armed[k as usize] = UNARMED;
                        model.remove(&k);
                    }
                    Op::Advance(d) => {
                        now += Duration(d);
                        let fired = fire(&mut h, &mut o, now);
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
                    prop_assert_eq!(o.armed[k as usize], at);
                }
            }
        }
    }

    #[test]
    fn arm_moves_earlier_only_and_reset_moves_either_way() {
        let mut h = TimerHeap::new(Duration(10), 4);
        let id = SessionId { num: 3, gen: 7 };
        let other = SessionId { num: 1, gen: 0 };
        let (mut armed, mut armed_other) = (UNARMED, UNARMED);
        h.arm(&mut armed, id, Instant(25));
        assert_eq!(armed, Instant(30), "rounded up to the grain");
        h.arm(&mut armed, id, Instant(90));
        assert_eq!((armed, h.len()), (Instant(30), 1), "arm never moves later");
        h.arm(&mut armed, id, Instant(11));
        assert_eq!((armed, h.len()), (Instant(20), 1), "one entry per session");
        h.arm(&mut armed_other, other, Instant(40));
        // A request completed in time: its RTO moves out to the keepalive.
        h.reset(&mut armed, id, Some(Instant(1000)));
        assert_eq!((armed, h.len()), (Instant(1000), 2));
        assert_eq!(h.next(), Some(Instant(40)));
        assert_eq!(h.pop_due(Instant(39)), None);
        assert_eq!(h.pop_due(Instant(100)), Some((other, Instant(40))));
        assert_eq!(h.pop_due(Instant(100)), None, "nothing fires for nothing");
        h.reset(&mut armed, id, None);
        assert_eq!((armed, h.len(), h.next()), (UNARMED, 0, None));
    }
}
