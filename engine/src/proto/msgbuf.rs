//! Message buffers and their per-endpoint pool. A [`MsgBuf`] is one
//! contiguous message (request or response) of `len` bytes inside a buffer
//! whose capacity is a power-of-two size class. The [`MsgPool`] keeps freed
//! buffers per class and hands them out again, so a steady stream of messages
//! allocates nothing: multi-packet messages are assembled into pooled buffers
//! by memcpy on receive, and sent by memcpy of chunks out of them.
//!
//! Contents of a buffer fresh from the pool are unspecified (old bytes are not
//! cleared: that would cost a second pass over every large message).

use core::fmt;
use core::ops::{Deref, DerefMut};

/// Smallest size class, log2: 64 bytes, one cache line; smaller messages
/// share this class so tiny buffers do not fragment the pool.
const MIN_CLASS_SHIFT: u32 = 6;
/// Free buffers a class keeps at most, counted in bytes: bounds what the pool
/// holds on to after a burst of large messages (a class always keeps at least
/// `MIN_KEEP_PER_CLASS` buffers).
const MAX_KEEP_BYTES_PER_CLASS: usize = 64 << 20;
/// Buffers a class keeps regardless of size, so a client and server that
/// exchange the largest messages still reuse them.
const MIN_KEEP_PER_CLASS: usize = 4;

/// A contiguous message buffer. Dereferences to the message bytes
/// (`&buf[..len]`). Obtain from [`Endpoint::alloc_msg`](super::Endpoint::alloc_msg)
/// and give back with [`Endpoint::free_msg`](super::Endpoint::free_msg) (dropping
/// it is safe but returns the memory to the allocator instead of the pool).
pub struct MsgBuf {
    /// Backing storage; `data.len()` is the size-class capacity.
    data: Vec<u8>,
    len: usize,
}

impl MsgBuf {
    /// Message length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the buffer can hold without reallocation.
    pub fn capacity(&self) -> usize {
        self.data.len()
    }

    /// Resizes the message within its capacity; new bytes are unspecified.
    ///
    /// # Panics
    /// If `len > capacity()`.
    pub fn set_len(&mut self, len: usize) {
        assert!(len <= self.data.len(), "MsgBuf::set_len beyond capacity");
        self.len = len;
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.data[..self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.data[..self.len]
    }
}

impl Deref for MsgBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl DerefMut for MsgBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl fmt::Debug for MsgBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsgBuf")
            .field("len", &self.len)
            .field("capacity", &self.data.len())
            .finish()
    }
}

/// Counters of a [`MsgPool`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers handed out.
    pub allocs: u64,
    /// Of those, how many needed a fresh allocation (pool miss).
    pub fresh: u64,
    /// Buffers given back.
    pub frees: u64,
    /// Buffers given back but released to the allocator (class full).
    pub released: u64,
}

/// Per-endpoint pool of [`MsgBuf`]s in power-of-two size classes.
#[derive(Debug)]
pub struct MsgPool {
    /// `classes[i]` holds free buffers of exactly `64 << i` bytes.
    classes: Vec<Vec<Vec<u8>>>,
    /// How many free buffers class `i` keeps (precomputed: `free` is on the
    /// per-message path and a division there showed up in profiles).
    keep: Vec<usize>,
    stats: PoolStats,
}

impl MsgPool {
    /// A pool for messages up to `max_len` bytes (larger requests still work,
    /// they just get their own class).
    pub fn new(max_len: usize) -> Self {
        let n = class_of(max_len) + 1;
        MsgPool {
            classes: (0..n).map(|_| Vec::new()).collect(),
            keep: (0..n)
                .map(|c| (MAX_KEEP_BYTES_PER_CLASS / class_size(c)).max(MIN_KEEP_PER_CLASS))
                .collect(),
            stats: PoolStats::default(),
        }
    }

    /// A buffer holding `len` bytes (contents unspecified).
    pub fn alloc(&mut self, len: usize) -> MsgBuf {
        let c = class_of(len);
        self.stats.allocs += 1;
        let data = match self.classes.get_mut(c).and_then(Vec::pop) {
            Some(d) => d,
            None => {
                self.stats.fresh += 1;
                vec![0u8; class_size(c)]
            }
        };
        MsgBuf { data, len }
    }

    /// Takes a buffer back for reuse.
    pub fn free(&mut self, m: MsgBuf) {
        self.stats.frees += 1;
        let cap = m.data.len();
        let c = class_of(cap);
        // Only exact class sizes are pooled (buffers from this pool always are).
        if class_size(c) != cap || c >= self.classes.len() {
            self.stats.released += 1;
            return;
        }
        let keep = self.keep[c];
        let list = &mut self.classes[c];
        if list.len() < keep {
            list.push(m.data);
        } else {
            self.stats.released += 1;
        }
    }

    pub fn stats(&self) -> PoolStats {
        self.stats
    }

    /// Free buffers currently held, over all classes.
    pub fn free_count(&self) -> usize {
        self.classes.iter().map(Vec::len).sum()
    }
}

/// Index of the smallest class holding `len` bytes.
fn class_of(len: usize) -> usize {
    let bits = usize::BITS - len.saturating_sub(1).leading_zeros();
    bits.saturating_sub(MIN_CLASS_SHIFT) as usize
}

fn class_size(c: usize) -> usize {
    1usize << (c as u32 + MIN_CLASS_SHIFT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class_of(0), 0);
        assert_eq!(class_of(1), 0);
        assert_eq!(class_of(64), 0);
        assert_eq!(class_of(65), 1);
        assert_eq!(class_of(128), 1);
        assert_eq!(class_of(8 << 20), 23 - 6);
        for len in [0, 1, 63, 64, 65, 1000, 4096, 4097, 8 << 20] {
            assert!(class_size(class_of(len)) >= len);
            assert!(class_of(len) == 0 || class_size(class_of(len) - 1) < len);
        }
    }

    #[test]
    fn reuse_without_allocation() {
        let mut p = MsgPool::new(8 << 20);
        let a = p.alloc(1000);
        assert_eq!(a.len(), 1000);
        assert_eq!(a.capacity(), 1024);
        p.free(a);
        let b = p.alloc(600);
        assert_eq!(b.capacity(), 1024);
        assert_eq!(p.stats().fresh, 1);
        p.free(b);
        assert_eq!(p.free_count(), 1);
    }
}
