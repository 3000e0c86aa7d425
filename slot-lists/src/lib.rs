//! A ring of slots, each a first-in-first-out list of items, linked
//! through one node arena (freed nodes reused last-freed first), with a
//! bitmap of the slots that hold items (`bits.rs`). Under the engine's
//! pacing timing wheel (`engine::proto::cc::wheel`), which files items
//! into slots and drains one slot at a time in the order the items came;
//! the fabric lab's calendar queue (`lab::fabric::event`) keeps its
//! buckets' occupancy in the same bitmap. A crate of its own so that both
//! use one structure while the engine keeps its pacer private and the lab
//! sees no more of the engine than its public API.
//!
//! Nothing but the bitmap is allocated until the first push: the fabric
//! lab builds a timing wheel per simulated host, most of which never pace,
//! and writing out their empty slots was most of a small run's setup.

#![deny(missing_docs)]

mod bits;

pub use bits::SlotBits;

/// A list's end, and the free list's: no node.
const NIL: u32 = u32::MAX;

/// A slot's list, first and last node side by side (one cache miss, not
/// two, for a slot far from the last one touched).
#[derive(Clone, Copy, Debug)]
struct Slot {
    head: u32,
    tail: u32,
}

const EMPTY: Slot = Slot {
    head: NIL,
    tail: NIL,
};

/// One item in a slot's list (or a free node).
#[derive(Clone, Copy, Debug)]
struct Node<T> {
    item: T,
    next: u32,
}

/// A ring of `slots` FIFO lists of `T`.
#[derive(Clone, Debug)]
pub struct SlotLists<T> {
    /// Empty until the first push, then one per slot.
    slots: Vec<Slot>,
    /// Slots in the ring (a power of two is the callers' choice).
    count: usize,
    nodes: Vec<Node<T>>,
    /// Free nodes, linked through `next`.
    free: u32,
    occupied: SlotBits,
}

impl<T: Copy> SlotLists<T> {
    /// `slots` empty lists.
    pub fn new(slots: usize) -> Self {
        SlotLists {
            slots: Vec::new(),
            count: slots,
            nodes: Vec::new(),
            free: NIL,
            occupied: SlotBits::new(slots),
        }
    }

    /// Appends `item` to `slot`'s list. O(1); allocates only while the
    /// arena grows past its peak.
    pub fn push_back(&mut self, slot: usize, item: T) {
        if self.slots.is_empty() {
            self.allocate();
        }
        let n = match self.free {
            NIL => self.grow(item),
            n => {
                let node = &mut self.nodes[n as usize];
                self.free = node.next;
                *node = Node { item, next: NIL };
                n
            }
        };
        let s = &mut self.slots[slot];
        match s.tail {
            NIL => {
                s.head = n;
                self.occupied.set(slot, true);
            }
            t => self.nodes[t as usize].next = n,
        }
        s.tail = n;
    }

    /// The first item of `slot`'s list, removed; the slot counts as empty
    /// once its last item is taken.
    pub fn pop_front(&mut self, slot: usize) -> Option<T> {
        let n = self.head(slot)?;
        let Node { item, next } = self.nodes[n as usize];
        let s = &mut self.slots[slot];
        s.head = next;
        if next == NIL {
            s.tail = NIL;
            self.occupied.set(slot, false);
        }
        self.nodes[n as usize].next = self.free;
        self.free = n;
        Some(item)
    }

    /// Whether `slot`'s list holds an item.
    pub fn holds(&self, slot: usize) -> bool {
        self.head(slot).is_some()
    }

    /// The first item of `slot`'s list.
    pub fn front(&self, slot: usize) -> Option<T> {
        self.head(slot).map(|n| self.nodes[n as usize].item)
    }

    /// The distance `d` in `from..slots` of the first non-empty slot
    /// `(origin + d) % slots`, going forward with wrap-around.
    pub fn next_occupied(&self, origin: usize, from: usize) -> Option<usize> {
        self.occupied.next_from(origin, from)
    }

    /// Whether anything was ever pushed (the slots are allocated).
    pub fn allocated(&self) -> bool {
        !self.slots.is_empty()
    }

    /// Nodes in the arena, in use or free: the most items ever held at once.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The slots, at the first push (kept off the per-push path).
    #[cold]
    fn allocate(&mut self) {
        self.slots = vec![EMPTY; self.count];
    }

    /// A new node past the arena's peak (kept off the per-push path).
    #[cold]
    fn grow(&mut self, item: T) -> u32 {
        self.nodes.push(Node { item, next: NIL });
        u32::try_from(self.nodes.len() - 1).expect("fewer than 2^32 - 1 items in a ring")
    }

    fn head(&self, slot: usize) -> Option<u32> {
        match self.slots.get(slot)?.head {
            NIL => None,
            n => Some(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_slot_is_first_in_first_out_and_nodes_are_reused() {
        let mut l = SlotLists::new(8);
        assert!(!l.allocated() && l.pop_front(3).is_none());
        for (slot, x) in [(3, 'a'), (5, 'b'), (3, 'c'), (3, 'd')] {
            l.push_back(slot, x);
        }
        assert_eq!(l.front(3), Some('a'));
        assert!(l.holds(5) && !l.holds(4));
        assert_eq!(l.next_occupied(3, 1), Some(2), "slot 5");
        assert_eq!(
            (l.pop_front(3), l.pop_front(3), l.pop_front(3)),
            (Some('a'), Some('c'), Some('d'))
        );
        assert_eq!(l.pop_front(3), None);
        assert_eq!(l.next_occupied(5, 1), None, "slot 3 is empty again");
        l.push_back(7, 'e');
        l.push_back(7, 'f');
        assert_eq!(l.nodes(), 4, "freed nodes serve new items");
        assert_eq!((l.pop_front(7), l.pop_front(7)), (Some('e'), Some('f')));
        assert_eq!(l.pop_front(5), Some('b'));
    }
}
