//! A timing wheel (Carousel, Saeed et al., SIGCOMM'17, as eRPC uses it in
//! `src/cc/timing_wheel.h`) that holds rate-limited sessions until their
//! next send time: O(1) insert, items out in slot order, no heap.
//!
//! Time is cut into slots of `grain`; the wheel covers `slots * grain` ahead
//! of its cursor (the horizon). An item is filed in the first slot whose
//! start is at or after its time, so it never comes out early and at most
//! one grain late (eRPC files by slot end for the same reason). Within a
//! slot items come out first in, first out.
//!
//! Items beyond the horizon are not clamped to an early release: they wait
//! in the last slot of the horizon, and when that slot comes up they are
//! filed again, as often as needed. Each item keeps its time for that. (If
//! `pop_due` is not called for several horizons, catching up re-files such
//! an item once per horizon passed.)
//!
//! A bitmap of non-empty slots lets [`TimingWheel::next_due`] and the
//! cursor skip empty stretches a 64-slot word at a time, so both cost
//! O(slots / 64) in the worst case, not O(slots).

use crate::time::{Duration, Instant};
use slot_lists::SlotLists;

/// A timing wheel of `T` (session ids, in the engine).
#[derive(Clone, Debug)]
pub struct TimingWheel<T> {
    /// Each slot's items with their times, first in, first out (nothing
    /// allocated until the first insert).
    slots: SlotLists<(Instant, T)>,
    /// The slot count less one; the slot count is a power of two.
    mask: usize,
    grain: u64,
    /// The slot whose start is `base`: the next one to drain.
    cursor: usize,
    /// Start time of the cursor slot. Stays at or before the latest `now`
    /// [`pop_due`](TimingWheel::pop_due) has seen.
    base: Instant,
    len: usize,
}

impl<T: Copy> TimingWheel<T> {
    /// A wheel of `slots` slots (a power of two) of `grain` each, whose
    /// first slot starts at `start`.
    ///
    /// # Panics
    ///
    /// If `slots` is not a power of two of at least 2 (a parked item must
    /// have another slot to move to) or `grain` is zero.
    pub fn new(grain: Duration, slots: usize, start: Instant) -> Self {
        assert!(
            slots.is_power_of_two() && slots >= 2,
            "slots must be a power of two, at least 2"
        );
        assert!(grain.as_nanos() > 0, "grain must be positive");
        TimingWheel {
            slots: SlotLists::new(slots),
            mask: slots - 1,
            grain: grain.as_nanos(),
            cursor: 0,
            base: start,
            len: 0,
        }
    }

    /// Items in the wheel.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the wheel holds no item.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How far past the cursor slot's start the wheel can file an item in
    /// its own slot (later ones wait in the last slot and are filed again):
    /// `(slots - 1) * grain`.
    #[cfg(test)]
    pub fn horizon(&self) -> Duration {
        Duration(self.grain.saturating_mul(self.mask as u64))
    }

    /// Files `item` to come out at `at` or up to one grain later. An `at`
    /// at or before the cursor slot's start is due at once. O(1).
    pub fn insert(&mut self, at: Instant, item: T) {
        self.file(at, item);
        self.len += 1;
    }

    /// The next item whose slot has come by `now`, in slot order (first in,
    /// first out within a slot). Moves the cursor up to `now`, so later
    /// inserts are filed relative to it. Amortized O(1) per item plus
    /// O(slots / 64) per call.
    pub fn pop_due(&mut self, now: Instant) -> Option<T> {
        loop {
            if now < self.base {
                return None;
            }
            if let Some((at, item)) = self.slots.pop_front(self.cursor) {
                if at > now {
                    // Parked beyond the horizon: file it again, closer.
                    self.file(at, item);
                    continue;
                }
                self.len -= 1;
                return Some(item);
            }
            // The cursor slot is drained: move on, past empty slots, but
            // never past `now`.
            let to_now = (now - self.base).as_nanos() / self.grain;
            if to_now == 0 {
                // Still within the cursor slot: nothing further can be
                // due, so skip the bitmap scan below (up to slots / 64
                // words, on every call of a run loop that polls within
                // one grain; its answer could only be `step = 0`).
                return None;
            }
            let step = match self.next_occupied(1) {
                Some(k) if (k as u64) <= to_now => k as u64,
                _ => to_now,
            };
            if step == 0 {
                return None;
            }
            self.cursor = (self.cursor + (step & self.mask as u64) as usize) & self.mask;
            self.base += Duration(step.saturating_mul(self.grain));
        }
    }

    /// The start of the earliest non-empty slot, or `None` if the wheel is
    /// empty. An item parked beyond the horizon counts at its parking slot,
    /// so the answer can be early (never late): popping then files it again.
    /// O(slots / 64) in the worst case.
    pub fn next_due(&self) -> Option<Instant> {
        if self.len == 0 {
            return None;
        }
        if self.slots.holds(self.cursor) {
            return Some(self.base);
        }
        let k = self.next_occupied(1)?;
        Some(self.base + Duration(k as u64 * self.grain))
    }

    /// Puts `item` in the slot for `at`, relative to the cursor.
    fn file(&mut self, at: Instant, item: T) {
        let d = at.saturating_since(self.base).as_nanos();
        let k = d / self.grain + u64::from(!d.is_multiple_of(self.grain));
        let k = k.min(self.mask as u64) as usize;
        let slot = (self.cursor + k) & self.mask;
        self.slots.push_back(slot, (at, item));
    }

    /// The distance from the cursor (at least `from`, below the slot
    /// count) of the first occupied slot, going forward with wrap-around.
    fn next_occupied(&self, from: usize) -> Option<usize> {
        self.slots.next_occupied(self.cursor, from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::SessionId;

    fn at_ns(n: u64) -> Instant {
        Instant::from_nanos(n)
    }

    /// Pops everything due at each step of `step` ns up to `end`, with the
    /// time each item came out.
    fn drain<T: Copy>(w: &mut TimingWheel<T>, step: u64, end: u64) -> Vec<(u64, T)> {
        let mut out = Vec::new();
        let mut now = 0;
        while now <= end {
            while let Some(x) = w.pop_due(at_ns(now)) {
                out.push((now, x));
            }
            now += step;
        }
        out
    }

    #[test]
    fn items_come_out_in_time_order_never_early() {
        let mut w = TimingWheel::new(Duration::from_nanos(1_000), 64, at_ns(0));
        let items = [
            (5_000, 'a'),
            (2_000, 'b'),
            (9_500, 'c'),
            (2_000, 'd'),
            (300, 'e'),
        ];
        for (at, x) in items {
            w.insert(at_ns(at), x);
        }
        assert_eq!(w.len(), 5);
        let out = drain(&mut w, 100, 20_000);
        let order: Vec<char> = out.iter().map(|&(_, x)| x).collect();
        assert_eq!(order, ['e', 'b', 'd', 'a', 'c']);
        for (t, x) in out {
            let at = items.iter().find(|i| i.1 == x).unwrap().0;
            assert!(t >= at && t < at + 1_000, "{x} at {t}, due {at}");
        }
        assert!(w.is_empty());
    }

    #[test]
    fn a_past_time_is_due_immediately() {
        let mut w = TimingWheel::new(Duration::from_nanos(500), 16, at_ns(100_000));
        assert_eq!(w.pop_due(at_ns(100_000)), None);
        w.insert(at_ns(10), 7u32);
        assert_eq!(w.next_due(), Some(at_ns(100_000)));
        assert_eq!(w.pop_due(at_ns(100_000)), Some(7));
        assert_eq!(w.pop_due(at_ns(100_000)), None);
    }

    #[test]
    fn beyond_the_horizon_is_kept_and_not_early() {
        let mut w = TimingWheel::new(Duration::from_nanos(1_000), 8, at_ns(0));
        assert_eq!(w.horizon(), Duration::from_nanos(7_000));
        w.insert(at_ns(50_000), 1u8);
        w.insert(at_ns(3_000), 2u8);
        assert!(w.next_due().unwrap() <= at_ns(3_000));
        let out = drain(&mut w, 250, 60_000);
        assert_eq!(out, vec![(3_000, 2), (50_000, 1)]);
        assert!(w.is_empty());
    }

    #[test]
    fn next_due_is_the_earliest_slot() {
        let mut w = TimingWheel::new(Duration::from_nanos(1_000), 128, at_ns(0));
        assert_eq!(w.next_due(), None);
        w.insert(at_ns(7_300), 1u32);
        assert_eq!(w.next_due(), Some(at_ns(8_000)), "rounded up to its slot");
        w.insert(at_ns(3_000), 2);
        assert_eq!(w.next_due(), Some(at_ns(3_000)));
        assert_eq!(w.pop_due(at_ns(2_999)), None);
        assert_eq!(w.pop_due(at_ns(3_000)), Some(2));
        assert_eq!(w.next_due(), Some(at_ns(8_000)));
        assert_eq!(w.pop_due(at_ns(8_000)), Some(1));
        // Cursor at slot 8: 125 slots ahead wraps to slot 5, across the
        // bitmap's two words.
        w.insert(at_ns(8_000 + 125_000), 3);
        assert_eq!(w.next_due(), Some(at_ns(133_000)));
        assert_eq!(w.pop_due(at_ns(132_999)), None);
        assert_eq!(w.pop_due(at_ns(200_000)), Some(3));
        assert_eq!(w.next_due(), None);
    }

    #[test]
    fn many_items_in_one_slot_come_out_in_order() {
        let mut w = TimingWheel::new(Duration::from_nanos(1_000), 16, at_ns(0));
        for i in 0..1_000u32 {
            w.insert(at_ns(4_000), i);
        }
        assert_eq!(w.pop_due(at_ns(3_999)), None);
        let got: Vec<u32> = std::iter::from_fn(|| w.pop_due(at_ns(4_000))).collect();
        assert_eq!(got, (0..1_000).collect::<Vec<_>>());
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn an_idle_wheel_catches_up_at_once() {
        let mut w = TimingWheel::new(Duration::from_nanos(1_000), 1024, at_ns(0));
        let late = 3_600_000_000_000u64; // an hour of 1 us slots
        assert_eq!(w.pop_due(at_ns(late)), None);
        w.insert(at_ns(late + 2_500), 9u64);
        assert_eq!(w.next_due(), Some(at_ns(late + 3_000)));
        assert_eq!(w.pop_due(at_ns(late + 2_999)), None);
        assert_eq!(w.pop_due(at_ns(late + 3_000)), Some(9));
    }

    #[test]
    fn holds_session_ids_and_reuses_freed_nodes() {
        // Two sessions per slot, over every slot of the wheel.
        let ids: Vec<SessionId> = (0..64).map(|n| SessionId { num: n, gen: 1 }).collect();
        let mut w = TimingWheel::new(Duration::from_nanos(1_000), 32, at_ns(0));
        let round = |w: &mut TimingWheel<SessionId>, t0: u64| {
            for (i, &id) in ids.iter().enumerate() {
                w.insert(at_ns(t0 + (i as u64 % 32) * 1_000), id);
            }
            let mut out = Vec::new();
            for t in 0..=32 {
                while let Some(id) = w.pop_due(at_ns(t0 + t * 1_000)) {
                    out.push(id);
                }
            }
            out
        };
        assert!(w.pop_due(at_ns(5_000)).is_none());
        assert!(
            !w.slots.allocated(),
            "nothing allocated before the first insert"
        );
        let first = round(&mut w, 5_000);
        assert_eq!(first.len(), ids.len());
        assert_eq!((first[0].number(), first[1].number()), (0, 32));
        assert_eq!(w.slots.nodes(), ids.len(), "one node per item at the peak");
        let second = round(&mut w, 37_000);
        assert_eq!(first, second);
        assert_eq!(w.slots.nodes(), ids.len(), "the second round reused them");
    }
}
