//! The selective-retransmission window: a fixed 256-bit map of packet
//! positions just past a cumulative point (`base`), shared by the server
//! (request packets stored out of order) and the client (answers received
//! out of order, packets marked lost). Fixed size, so no allocation per
//! request; a packet further than [`SACK_WINDOW`] past the cumulative
//! point is not tracked (the sender never sends that far ahead).

use crate::time::Instant;

/// A selective request's client-side state (`client_sack.rs`), boxed and
/// recycled per session so that a go-back-N request carries none of it.
#[derive(Clone, Debug, Default)]
pub(crate) struct SackState {
    /// Answers received out of order, bit `i` for index `num_rx + i`.
    pub sacked: Window,
    /// Packets taken as lost and waiting to be resent (they hold no credit).
    pub lost: Window,
    /// Holes below this index were resent after a SACK showed them missing;
    /// later SACKs leave them to the timeout (each hole is resent once per
    /// recovery, as IRN does).
    pub recovered_upto: u32,
    /// Packets taken as lost because a switch trimmed them (`trim.rs`):
    /// their resend is under way, so a SACK showing the hole does not
    /// take them as lost again.
    pub trimmed: Window,
    /// When holes first qualified as lost.
    pub reo_since: Option<Instant>,
}

/// Positions past the cumulative point one map tracks.
pub(crate) const SACK_WINDOW: u32 = 256;

/// Bit `i` stands for position `base + i` of whoever owns the map.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Window([u64; 4]);

impl Window {
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }

    pub fn get(&self, i: u32) -> bool {
        i < SACK_WINDOW && self.0[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i`; false (and nothing set) if it is out of the window.
    pub fn set(&mut self, i: u32) -> bool {
        if i >= SACK_WINDOW {
            return false;
        }
        self.0[(i / 64) as usize] |= 1 << (i % 64);
        true
    }

    pub fn clear(&mut self, i: u32) {
        if i < SACK_WINDOW {
            self.0[(i / 64) as usize] &= !(1 << (i % 64));
        }
    }

    /// Set bits.
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// Set bits below `n`.
    pub fn count_below(&self, n: u32) -> u32 {
        let n = n.min(SACK_WINDOW);
        let mut c = 0;
        for (k, w) in self.0.iter().enumerate() {
            let lo = k as u32 * 64;
            if n <= lo {
                break;
            }
            let bits = (n - lo).min(64);
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            };
            c += (w & mask).count_ones();
        }
        c
    }

    /// Set bits at or above `i`.
    pub fn count_from(&self, i: u32) -> u32 {
        self.count() - self.count_below(i)
    }

    /// Clears every bit at or above `i`.
    pub fn clear_from(&mut self, i: u32) {
        for k in 0..4u32 {
            let lo = k * 64;
            if i <= lo {
                self.0[k as usize] = 0;
            } else if i < lo + 64 {
                self.0[k as usize] &= (1u64 << (i - lo)) - 1;
            }
        }
    }

    /// Lowest set bit.
    pub fn first(&self) -> Option<u32> {
        self.0
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(k, w)| k as u32 * 64 + w.trailing_zeros())
    }

    /// Highest set bit.
    pub fn last(&self) -> Option<u32> {
        self.0
            .iter()
            .enumerate()
            .rev()
            .find(|(_, w)| **w != 0)
            .map(|(k, w)| k as u32 * 64 + 63 - w.leading_zeros())
    }

    /// Set bits from bit 0 upwards without a gap.
    pub fn leading_run(&self) -> u32 {
        let mut n = 0;
        for w in self.0 {
            let ones = w.trailing_ones();
            n += ones;
            if ones < 64 {
                break;
            }
        }
        n
    }

    /// Moves the base up by `n`: bit `i` becomes bit `i - n` (lower bits
    /// fall off).
    pub fn shift(&mut self, n: u32) {
        if n == 0 {
            return;
        }
        if n >= SACK_WINDOW {
            *self = Window::default();
            return;
        }
        let (words, bits) = ((n / 64) as usize, n % 64);
        let old = self.0;
        for k in 0..4 {
            let lo = old.get(k + words).copied().unwrap_or(0);
            let hi = old.get(k + words + 1).copied().unwrap_or(0);
            self.0[k] = if bits == 0 {
                lo
            } else {
                lo >> bits | hi << (64 - bits)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_count_shift() {
        let mut w = Window::default();
        assert!(w.is_empty());
        for i in [0, 1, 2, 63, 64, 130, 255] {
            assert!(w.set(i));
        }
        assert!(!w.set(256));
        assert!(w.get(130) && !w.get(131) && !w.get(256));
        assert_eq!(w.count(), 7);
        assert_eq!(w.count_below(64), 4);
        assert_eq!(w.count_below(65), 5);
        assert_eq!(w.leading_run(), 3);
        assert_eq!((w.first(), w.last()), (Some(0), Some(255)));
        w.shift(3);
        assert_eq!(w.first(), Some(60));
        assert!(w.get(61) && w.get(127) && w.get(252));
        w.shift(100);
        assert_eq!((w.first(), w.count()), (Some(27), 2));
        w.clear(27);
        assert_eq!(w.count_from(100), 1);
        w.set(10);
        w.set(64);
        w.clear_from(11);
        assert_eq!((w.count(), w.last()), (1, Some(10)));
        w.shift(300);
        assert!(w.is_empty());
    }

    #[test]
    fn leading_run_crosses_words() {
        let mut w = Window::default();
        for i in 0..70 {
            w.set(i);
        }
        assert_eq!(w.leading_run(), 70);
        w.shift(64);
        assert_eq!(w.leading_run(), 6);
    }
}
