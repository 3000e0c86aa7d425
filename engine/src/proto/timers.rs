//! Per-session deadlines: a min-heap of (deadline, session number,
//! generation) with lazy invalidation, so the timer work of an endpoint is
//! proportional to the sessions whose deadline is due, never to the number
//! of sessions.
//!
//! Each session keeps the deadline of its one valid heap entry (its
//! `timer_at`, `UNARMED` if none). Arming earlier than that pushes a new
//! entry and the older one goes stale; arming later does nothing, because
//! every deadline a session has only moves later between firings (progress,
//! sends, heard packets): the entry fires early, the endpoint checks the
//! session's real state, then re-arms it at its next deadline. An entry is
//! stale when its session is gone (generation differs) or its deadline is
//! not the session's `timer_at` any more; stale entries are dropped when
//! they reach the top. Deadlines are rounded up to a multiple of the grain
//! (`scan_interval`), so sessions due within one grain fire together and a
//! timer is late by less than one grain, the same bound the periodic scan
//! had.

use super::ids::SessionId;
use crate::time::{Duration, Instant};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A session's `timer_at` when it has no valid heap entry.
pub(crate) const UNARMED: Instant = Instant(u64::MAX);

/// One heap entry; ordered by deadline first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    at: Instant,
    num: u16,
    gen: u32,
}

/// Bytes one heap entry takes (for the per-session memory figure).
pub(crate) const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

/// The endpoint's deadline heap.
#[derive(Debug)]
pub(crate) struct TimerHeap {
    heap: BinaryHeap<Reverse<Entry>>,
    /// Deadlines are rounded up to a multiple of this (ns, > 0).
    grain: u64,
}

impl TimerHeap {
    /// A heap with room for `capacity` entries before it grows.
    pub fn new(grain: Duration, capacity: usize) -> Self {
        TimerHeap {
            heap: BinaryHeap::with_capacity(capacity),
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
    /// when nothing changes, O(log n) when an entry is pushed.
    pub fn arm(&mut self, armed: &mut Instant, id: SessionId, at: Instant) {
        let at = self.round(at);
        if at >= *armed {
            return;
        }
        *armed = at;
        self.heap.push(Reverse(Entry {
            at,
            num: id.num,
            gen: id.gen,
        }));
    }

    /// The earliest entry's deadline (possibly a stale one: early, never late).
    pub fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.0.at)
    }

    /// Pops the earliest entry if it is due at `now`: the session it names
    /// and the deadline it was armed at (the caller checks it against the
    /// session's `timer_at` to tell a valid entry from a stale one).
    pub fn pop_due(&mut self, now: Instant) -> Option<(SessionId, Instant)> {
        if self.heap.peek()?.0.at > now {
            return None;
        }
        let e = self.heap.pop()?.0;
        Some((
            SessionId {
                num: e.num,
                gen: e.gen,
            },
            e.at,
        ))
    }

    /// Drops every entry (all sessions are gone, so all are stale).
    pub fn clear(&mut self) {
        self.heap.clear();
    }

    /// Entries held, stale ones included.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
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
        /// The session is freed and its number reused (new generation).
        Free(u16),
        Advance(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..KEYS, 0..2_000u64).prop_map(|(k, d)| Op::Arm(k, d)),
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
                for (&k, &at) in &model {
                    prop_assert_eq!(o.armed[k as usize], at);
                }
            }
        }
    }

    #[test]
    fn arming_later_pushes_nothing_and_earlier_stales_the_old_entry() {
        let mut h = TimerHeap::new(Duration(10), 4);
        let id = SessionId { num: 3, gen: 7 };
        let mut armed = UNARMED;
        h.arm(&mut armed, id, Instant(25));
        assert_eq!(armed, Instant(30), "rounded up to the grain");
        h.arm(&mut armed, id, Instant(90));
        assert_eq!((armed, h.len()), (Instant(30), 1));
        h.arm(&mut armed, id, Instant(11));
        assert_eq!((armed, h.len()), (Instant(20), 2));
        assert_eq!(h.next(), Some(Instant(20)));
        assert_eq!(h.pop_due(Instant(19)), None);
        assert_eq!(h.pop_due(Instant(20)), Some((id, Instant(20))));
        // The entry at 30 is stale: the owner's timer_at says 20.
        assert_eq!(h.pop_due(Instant(100)), Some((id, Instant(30))));
        assert_eq!(h.pop_due(Instant(100)), None);
    }
}
