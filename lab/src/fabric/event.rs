//! The fabric's future: timed events in a calendar queue, earliest first.
//! Ties are broken by insertion order, so a run is a pure function of its
//! inputs.

use slot_lists::SlotLists;
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

/// Bounds on the calendar's slots, one nanosecond each. The fabric asks
/// for a horizon a few hops long ([`Events::with_horizon`]): what lies
/// beyond (timeouts, flow starts) waits in a heap, and a small ring keeps
/// the slots that events land in cached (at 2^16 slots, half a MB, every
/// push missed).
const MIN_SLOTS: usize = 1 << 10;
const MAX_SLOTS: usize = 1 << 16;

/// Events [`Events::peek_ahead`] names (the run loop's prefetch stages).
pub(super) const AHEAD: usize = 7;

/// Pending events, earliest first: a calendar queue of one-nanosecond
/// slots. Every event in a slot is due at the same time, so a slot is a
/// FIFO in scheduling order and nothing is ever sorted: push and pop are
/// O(1). The slots are linked lists through one arena of nodes
/// ([`SlotLists`], reused last-freed first), so the events near now share
/// a few cache lines.
/// Most events fall within microseconds of now (serialisation, link
/// delay); those beyond the ring's horizon (timeouts) wait in a heap and
/// move into the ring as soon as the horizon covers them, before anything
/// else can be scheduled into their slot, so the order is exactly (time,
/// scheduling order), as a heap of all events would give.
#[derive(Debug)]
pub(super) struct Events {
    /// The current slot's time (its index is `cur & mask`).
    cur: u64,
    /// Slots in the ring, less one (a power of two, less one).
    mask: usize,
    /// Each slot's events, in scheduling order.
    slots: SlotLists<Ev>,
    far: BinaryHeap<Timed>,
    seq: u64,
    len: usize,
    /// The events after the current one as [`peek_ahead`](Self::peek_ahead)
    /// last walked them, kept from one event to the next.
    win: Window,
}

/// One event of the look-ahead window: its time, slot and queue node, the
/// event itself once read (the last entry's node is only prefetched), and
/// what the run loop noted for it on the way ([`Events::set_note`]).
#[derive(Clone, Copy, Debug)]
struct Ahead {
    at: u64,
    slot: usize,
    node: u32,
    ev: Option<Ev>,
    note: u32,
}

/// An entry with no note.
pub(super) const NO_NOTE: u32 = u32::MAX;

/// Entries in the look-ahead window: the [`AHEAD`] events named, and the
/// one after them whose node is prefetched. A power of two (a ring).
const WIN: usize = AHEAD + 1;

/// The look-ahead window, a ring of [`WIN`] entries in pop order, so that
/// each event moves it on by one node instead of walking [`AHEAD`] nodes
/// and their slots again (that walk was a sixth of a run's instructions on
/// 256 hosts). A pop drops its first entry; a push earlier than its last
/// entry empties it (the walk then starts again from the current slot).
/// Hints only: nothing it holds reaches the order events are popped in.
#[derive(Clone, Copy, Debug)]
struct Window {
    ents: [Ahead; WIN],
    head: usize,
    len: usize,
    /// The last entry's time while the window holds any, else 0: a push
    /// before it lands inside the window.
    last_at: u64,
    /// The note of the event popped last, if it was the window's first.
    popped_note: u32,
}

impl Window {
    const EMPTY: Window = Window {
        ents: [Ahead {
            at: 0,
            slot: 0,
            node: 0,
            ev: None,
            note: NO_NOTE,
        }; WIN],
        head: 0,
        len: 0,
        last_at: 0,
        popped_note: NO_NOTE,
    };

    fn at(&self, k: usize) -> &Ahead {
        &self.ents[(self.head + k) % WIN]
    }

    fn back_mut(&mut self) -> &mut Ahead {
        &mut self.ents[(self.head + self.len - 1) % WIN]
    }

    /// Adds the event at `node` of `slot`, due at `at`: not read yet, no note.
    fn push_node(&mut self, at: u64, slot: usize, node: u32) {
        self.ents[(self.head + self.len) % WIN] = Ahead {
            at,
            slot,
            node,
            ev: None,
            note: NO_NOTE,
        };
        self.len += 1;
        self.last_at = at;
    }

    fn clear(&mut self) {
        self.len = 0;
        self.last_at = 0;
    }

    /// Node `node` of slot `slot` was popped: the first entry, unless the
    /// window no longer matches the queue (then it starts again).
    fn popped(&mut self, slot: usize, node: u32) {
        self.popped_note = NO_NOTE;
        if self.len == 0 {
            return;
        }
        let a = self.at(0);
        if a.slot != slot || a.node != node {
            self.clear();
            return;
        }
        self.popped_note = a.note;
        self.head = (self.head + 1) % WIN;
        self.len -= 1;
        if self.len == 0 {
            self.last_at = 0;
        }
    }
}

impl Events {
    /// An empty queue whose ring covers at least `horizon_ns` ahead (within
    /// 2^10..=2^16 ns): events further ahead take the slower heap path.
    pub fn with_horizon(horizon_ns: u64) -> Self {
        let slots = (horizon_ns.max(1).next_power_of_two() as usize).clamp(MIN_SLOTS, MAX_SLOTS);
        Events {
            cur: 0,
            mask: slots - 1,
            slots: SlotLists::new(slots),
            far: BinaryHeap::new(),
            seq: 0,
            len: 0,
            win: Window::EMPTY,
        }
    }

    /// Schedules `ev` at `at` (nanoseconds of virtual time, not before the
    /// last event popped).
    pub fn push(&mut self, at: u64, ev: Ev) {
        self.len += 1;
        let at = at.max(self.cur);
        if at <= self.cur + self.mask as u64 {
            self.put(at, ev);
        } else {
            // Only the heap needs the scheduling order spelled out.
            self.seq += 1;
            self.far.push(Timed {
                at,
                seq: self.seq,
                ev,
            });
        }
    }

    /// Appends `ev` to the list of `at`'s slot.
    fn put(&mut self, at: u64, ev: Ev) {
        if at < self.win.last_at {
            // It goes before the window's last event: walk again.
            self.win.clear();
        }
        self.slots.push_back(at as usize & self.mask, ev);
    }

    /// The earliest event, removed.
    #[cfg(test)]
    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        self.pop_by(u64::MAX)
    }

    /// The earliest event, removed, if it is due by `deadline`.
    pub fn pop_by(&mut self, deadline: u64) -> Option<(u64, Ev)> {
        let i = self.current_slot()?;
        if self.cur > deadline {
            return None;
        }
        let node = self.slots.front_node(i)?;
        let ev = self.slots.pop_front(i)?;
        self.win.popped(i, node);
        self.len -= 1;
        Some((self.cur, ev))
    }

    /// The event after the one just popped, if it is in the calendar (not
    /// yet in the far heap), without moving the clock: a hint for what to
    /// prefetch, as an event scheduled meanwhile may still go before it.
    #[cfg(test)]
    pub fn peek_next(&mut self) -> Option<Ev> {
        self.peek_ahead().and_then(|(evs, _)| evs[0])
    }

    /// The next [`AHEAD`] events in the ring (`None` past its last), and
    /// where the queue node of the one after them sits (null: none in the
    /// ring), without moving the clock: the run loop's prefetch pipeline,
    /// one stage per event ahead. Reading an event's node was the run
    /// loop's costliest load on 1,024 hosts (a third of its samples), as
    /// the node was written when the event was scheduled, many events
    /// earlier; so each node is loaded [`AHEAD`] events before it is read
    /// here. Hints only: an event scheduled meanwhile may still go first.
    /// The walk is kept from one call to the next ([`Window`]): each event
    /// reads one new node, not [`AHEAD`].
    #[cfg(test)]
    pub fn peek_ahead(&mut self) -> Option<([Option<Ev>; AHEAD], *const u8)> {
        let last = self.walk_ahead()?;
        let mut evs = [None; AHEAD];
        for (k, ev) in evs.iter_mut().enumerate() {
            *ev = self.ahead(k);
        }
        Some((evs, last))
    }

    /// [`peek_ahead`](Self::peek_ahead)'s walk without copying out what it
    /// names: where the node after the [`AHEAD`] events sits (null: none
    /// in the ring); [`ahead`](Self::ahead) names the events. `None`: the
    /// ring holds nothing after the current event.
    pub fn walk_ahead(&mut self) -> Option<*const u8> {
        if self.win.len == 0 {
            let cur = self.cur as usize & self.mask;
            let (at, slot, node) = self.ring_after(self.cur, cur, 0)?;
            self.win.push_node(at, slot, node);
        }
        // Read the last entry (its node was prefetched an event ago) and
        // add the one after it, until the window is full or the ring ends.
        while self.win.len <= AHEAD {
            let last = *self.win.back_mut();
            let (ev, after) = self.slots.item_and_next(last.node);
            self.win.back_mut().ev = Some(ev);
            let next = match after {
                Some(node) => Some((last.at, last.slot, node)),
                None => self.ring_after(last.at, last.slot, 1),
            };
            let Some((at, slot, node)) = next else {
                break;
            };
            self.win.push_node(at, slot, node);
        }
        Some(match self.win.len {
            WIN => self.slots.node_addr(self.win.at(AHEAD).node),
            _ => core::ptr::null(),
        })
    }

    /// The event [`walk_ahead`](Self::walk_ahead) named at `k` (0: the
    /// next one, below [`AHEAD`]), if the ring holds that many.
    pub fn ahead(&self, k: usize) -> Option<Ev> {
        match k < self.win.len {
            true => self.win.at(k).ev,
            false => None,
        }
    }

    /// Notes `note` on the event [`peek_ahead`](Self::peek_ahead) named at
    /// `k` (0: the next one): it is [`popped_note`](Self::popped_note)
    /// when that event is popped, and [`note`](Self::note) on the way,
    /// unless an earlier push made the window walk again (then
    /// [`NO_NOTE`]).
    pub fn set_note(&mut self, k: usize, note: u32) {
        if k < self.win.len {
            let i = (self.win.head + k) % WIN;
            self.win.ents[i].note = note;
        }
    }

    /// The note on the event named at `k`, or [`NO_NOTE`].
    pub fn note(&self, k: usize) -> u32 {
        match k < self.win.len {
            true => self.win.at(k).note,
            false => NO_NOTE,
        }
    }

    /// The note on the event popped last, or [`NO_NOTE`].
    pub fn popped_note(&self) -> u32 {
        self.win.popped_note
    }

    /// The first event in the ring at `from` slots or more after `slot`,
    /// whose time is `at`: its time, slot and first node. The scan wraps;
    /// a slot found past the horizon wrapped back to times before `at`,
    /// so there is none.
    fn ring_after(&self, at: u64, slot: usize, from: usize) -> Option<(u64, usize, u32)> {
        let d = self.slots.next_occupied(slot, from)?;
        let t = at + d as u64;
        if t > self.cur + self.mask as u64 {
            return None;
        }
        let j = (slot + d) & self.mask;
        Some((t, j, self.slots.front_node(j)?))
    }

    /// The index of the earliest non-empty slot, moving the clock to it.
    #[inline(always)]
    fn current_slot(&mut self) -> Option<usize> {
        let i = self.cur as usize & self.mask;
        if self.slots.holds(i) {
            return Some(i);
        }
        if !self.advance() {
            return None;
        }
        Some(self.cur as usize & self.mask)
    }

    /// Moves the clock to the next slot with events; false when nothing
    /// is pending.
    fn advance(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        let next_ring = self.next_occupied();
        let next_far = self.far.peek().map(|t| t.at);
        let at = match (next_ring, next_far) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => return false,
            },
        };
        self.cur = at;
        // The horizon moved: far events now within it join the ring, in
        // (time, scheduling) order. Their slots are still empty: nothing
        // could be scheduled straight into a slot before the horizon
        // covered it, and it covers it only now.
        while let Some(t) = self.far.peek().copied() {
            if t.at > self.cur + self.mask as u64 {
                break;
            }
            self.far.pop();
            self.put(t.at, t.ev);
        }
        true
    }

    /// The time of the first slot after `cur` (within the ring) that holds
    /// events.
    fn next_occupied(&self) -> Option<u64> {
        let origin = self.cur as usize & self.mask;
        let d = self.slots.next_occupied(origin, 1)?;
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
        let mut q = Events::with_horizon(4096);
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
        let mut q = Events::with_horizon(4096);
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
            // The prefetch hint names the true next event whenever the
            // ring holds one (the far heap only holds later ones).
            if let Some(next) = q.peek_next() {
                let (_, m_id) = model[0];
                assert_eq!(next, Ev::FlowStart(m_id as u32));
                // And the ones after it, when the ring holds them; the one
                // after those, when the ring holds it, is named for a
                // prefetch.
                let (evs, last) = q.peek_ahead().unwrap();
                let in_ring =
                    |i: usize| model.get(i).is_some_and(|&(t, _)| t <= now + q.mask as u64);
                for (i, ev) in evs.iter().enumerate() {
                    if in_ring(i) {
                        assert_eq!(*ev, Some(Ev::FlowStart(model[i].1 as u32)), "round {round}");
                    }
                }
                if in_ring(AHEAD) {
                    assert!(!last.is_null(), "round {round}");
                }
            }
        }
        while let Some((at, ev)) = q.pop() {
            let (m_at, m_id) = model.remove(0);
            assert_eq!((at, ev), (m_at, Ev::FlowStart(m_id as u32)));
        }
        assert!(model.is_empty() && q.len() == 0);
    }

    #[test]
    fn a_note_follows_its_event_until_an_earlier_push() {
        let mut q = Events::with_horizon(4096);
        for t in 0..10 {
            q.push(t * 10, Ev::FlowStart(t as u32));
        }
        assert_eq!(q.pop(), Some((0, Ev::FlowStart(0))));
        assert!(q.walk_ahead().is_some());
        assert_eq!(q.ahead(2), Some(Ev::FlowStart(3)));
        q.set_note(2, 33);
        assert_eq!(q.note(2), 33);
        // Events pushed after the window's last one leave it as it is.
        q.push(1_000, Ev::FlowStart(100));
        assert_eq!(q.pop(), Some((10, Ev::FlowStart(1))));
        assert_eq!(q.popped_note(), NO_NOTE);
        assert!(q.walk_ahead().is_some());
        assert_eq!(q.note(1), 33, "moved on with its event");
        assert_eq!(q.pop(), Some((20, Ev::FlowStart(2))));
        assert_eq!(q.pop(), Some((30, Ev::FlowStart(3))));
        assert_eq!(q.popped_note(), 33, "given back with its event");
        // A push before the window's last event makes it walk again: the
        // notes go, the order does not change.
        assert!(q.walk_ahead().is_some());
        q.set_note(0, 44);
        q.push(45, Ev::FlowStart(200));
        assert_eq!(q.pop(), Some((40, Ev::FlowStart(4))));
        assert_eq!(q.popped_note(), NO_NOTE);
        assert!(q.walk_ahead().is_some());
        assert_eq!(q.ahead(0), Some(Ev::FlowStart(200)));
        assert_eq!(q.ahead(1), Some(Ev::FlowStart(5)));
    }
}
