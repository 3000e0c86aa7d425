//! Which slots of a ring hold something: one bit per slot, and the first
//! occupied slot ahead of a position (with wrap-around), found a 64-slot
//! word at a time. Kept by [`SlotLists`](crate::SlotLists), the ring
//! behind the rate limiter's timing wheel, and by the fabric lab's
//! calendar queue for its buckets.

/// The occupancy bits of a ring of slots.
#[derive(Clone, Debug)]
pub struct SlotBits {
    words: Vec<u64>,
    slots: usize,
}

impl SlotBits {
    /// A ring of `slots` empty slots.
    #[inline]
    pub fn new(slots: usize) -> Self {
        SlotBits {
            words: vec![0; slots.div_ceil(64)],
            slots,
        }
    }

    /// Marks slot `i` occupied (`on`) or empty.
    #[inline]
    pub fn set(&mut self, i: usize, on: bool) {
        let bit = 1u64 << (i % 64);
        if on {
            self.words[i / 64] |= bit;
        } else {
            self.words[i / 64] &= !bit;
        }
    }

    /// The distance `d` in `from..slots` of the first occupied slot
    /// `(origin + d) % slots`, going forward from `origin` with wrap-around.
    #[inline]
    pub fn next_from(&self, origin: usize, from: usize) -> Option<usize> {
        let n = self.slots;
        let start = origin + from;
        if start < n {
            self.first_set(start, n)
                .map(|s| s - origin)
                .or_else(|| self.first_set(0, origin).map(|s| s + n - origin))
        } else {
            self.first_set(start - n, origin).map(|s| s + n - origin)
        }
    }

    /// The first occupied slot index in `lo..hi`.
    #[inline]
    fn first_set(&self, lo: usize, hi: usize) -> Option<usize> {
        let mut i = lo;
        while i < hi {
            let word = self.words[i / 64] >> (i % 64);
            if word != 0 {
                let s = i + word.trailing_zeros() as usize;
                return (s < hi).then_some(s);
            }
            i = (i / 64 + 1) * 64;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_next_occupied_slot_with_wrap_around() {
        let mut b = SlotBits::new(256);
        assert_eq!(b.next_from(10, 0), None);
        b.set(3, true);
        b.set(200, true);
        assert_eq!(b.next_from(10, 1), Some(190));
        assert_eq!(b.next_from(200, 0), Some(0));
        assert_eq!(b.next_from(200, 1), Some(59), "wraps to slot 3");
        assert_eq!(b.next_from(250, 9), Some(9), "starts past the end");
        assert_eq!(
            b.next_from(250, 10),
            Some(206),
            "slot 3 is nearer than `from`"
        );
        b.set(200, false);
        assert_eq!(b.next_from(10, 1), Some(249));
        assert_eq!(b.next_from(3, 1), None, "slot 3 itself is not ahead");
    }
}
