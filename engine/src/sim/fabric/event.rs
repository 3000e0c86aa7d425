//! The fabric's future: a min-heap of timed events. Ties are broken by
//! insertion order, so a run is a pure function of its inputs.

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

#[derive(Debug)]
struct Timed {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Timed {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
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
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// Pending events, earliest first.
#[derive(Debug, Default)]
pub(super) struct Events {
    heap: BinaryHeap<Timed>,
    seq: u64,
}

impl Events {
    /// Schedules `ev` at `at` (nanoseconds of virtual time).
    pub fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Timed {
            at,
            seq: self.seq,
            ev,
        });
    }

    /// The earliest event, removed.
    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        self.heap.pop().map(|t| (t.at, t.ev))
    }

    /// When the earliest event is due.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|t| t.at)
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.heap.len()
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
}
