//! The fabric's future: timed events in a calendar queue, earliest first.
//! Ties are broken by insertion order, so a run is a pure function of its
//! inputs.

use crate::slot_bits::SlotBits;
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
    /// Packet `pkt` arrives at switch `sw` on port `port`.
    AtSwitch { sw: u32, port: u32, pkt: u32 },
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

/// Width of a calendar slot: 2^SLOT_SHIFT ns (about one MTU frame at
/// 100 Gb/s), and the slots in the calendar (a 512 us horizon).
const SLOT_SHIFT: u32 = 7;
const SLOTS: usize = 4096;

/// Pending events, earliest first: a calendar queue. Most events fall
/// within microseconds of now (serialisation, link delay), so they go
/// into a ring of time slots (O(1)); a slot is sorted when the clock
/// reaches it. Events beyond the ring's horizon (timeouts) wait in a heap
/// and move into the ring as the clock nears them. The order is exactly
/// (time, scheduling order), as a heap of all events would give.
#[derive(Debug)]
pub(super) struct Events {
    /// The current slot's events, sorted latest first (pop from the end).
    current: Vec<Timed>,
    /// Index (time >> SLOT_SHIFT) of the current slot.
    cur: u64,
    slots: Vec<Vec<Timed>>,
    /// Which slots hold events.
    occupied: SlotBits,
    far: BinaryHeap<Timed>,
    seq: u64,
    len: usize,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            current: Vec::new(),
            cur: 0,
            slots: vec![Vec::new(); SLOTS],
            occupied: SlotBits::new(SLOTS),
            far: BinaryHeap::new(),
            seq: 0,
            len: 0,
        }
    }
}

impl Events {
    /// Schedules `ev` at `at` (nanoseconds of virtual time, not before the
    /// last event popped).
    pub fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.len += 1;
        let t = Timed {
            at,
            seq: self.seq,
            ev,
        };
        let slot = (at >> SLOT_SHIFT).max(self.cur);
        if slot == self.cur {
            // Latest first: it goes before every event that sorts after it.
            let i = self.current.partition_point(|e| e.key() > t.key());
            self.current.insert(i, t);
        } else if slot < self.cur + SLOTS as u64 {
            self.put(slot, t);
        } else {
            self.far.push(t);
        }
    }

    fn put(&mut self, slot: u64, t: Timed) {
        let i = slot as usize % SLOTS;
        self.slots[i].push(t);
        self.occupied.set(i, true);
    }

    /// The earliest event, removed.
    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        if self.current.is_empty() && !self.advance() {
            return None;
        }
        let t = self.current.pop()?;
        self.len -= 1;
        Some((t.at, t.ev))
    }

    /// When the earliest event is due.
    pub fn peek_time(&mut self) -> Option<u64> {
        if self.current.is_empty() && !self.advance() {
            return None;
        }
        self.current.last().map(|t| t.at)
    }

    /// Moves the clock to the next slot with events and loads it into
    /// `current`; false when nothing is pending.
    fn advance(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        let next_ring = self.next_occupied();
        let next_far = self.far.peek().map(|t| t.at >> SLOT_SHIFT);
        let slot = match (next_ring, next_far) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(s) => s,
                None => return false,
            },
        };
        self.cur = slot;
        let i = slot as usize % SLOTS;
        std::mem::swap(&mut self.current, &mut self.slots[i]);
        self.occupied.set(i, false);
        // The horizon moved: far events now within it join the ring (or
        // this slot).
        while let Some(t) = self.far.peek().copied() {
            let s = t.at >> SLOT_SHIFT;
            if s >= self.cur + SLOTS as u64 {
                break;
            }
            self.far.pop();
            if s == self.cur {
                self.current.push(t);
            } else {
                self.put(s, t);
            }
        }
        self.current
            .sort_unstable_by_key(|t| std::cmp::Reverse(t.key()));
        true
    }

    /// The first slot after `cur` (within the ring) that holds events.
    fn next_occupied(&self) -> Option<u64> {
        let origin = (self.cur % SLOTS as u64) as usize;
        let d = self.occupied.next_from(origin, 1)?;
        Some(self.cur + d as u64)
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_insertion_order() {
        let mut q = Events::default();
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
        let mut rng = crate::rng::Rng::new(9);
        let mut q = Events::default();
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
        }
        while let Some((at, ev)) = q.pop() {
            let (m_at, m_id) = model.remove(0);
            assert_eq!((at, ev), (m_at, Ev::FlowStart(m_id as u32)));
        }
        assert!(model.is_empty() && q.len() == 0);
    }
}
