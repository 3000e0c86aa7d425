//! Message buffers and their per-endpoint pool. A [`MsgBuf`] is one
//! contiguous message (request or response) of `len` bytes inside a buffer
//! whose capacity is a power-of-two size class. The [`MsgPool`] keeps freed
//! buffers per class and hands them out again, so a steady stream of messages
//! allocates nothing: multi-packet messages are assembled into pooled buffers
//! by memcpy on receive, and sent by memcpy of chunks out of them.
//!
//! Buffers go home by ownership: a `MsgBuf` from a pool returns to it when
//! dropped, wherever that happens (the endpoint after a response, the
//! application after a handler), so no path has to remember a `free` call.
//! The pool is shared with its buffers through an `Rc` (an endpoint and its
//! buffers belong to one thread, so no atomics); a buffer that outlives its
//! pool is simply released to the allocator.
//!
//! Contents of a buffer fresh from the pool are unspecified (old bytes are not
//! cleared: that would cost a second pass over every large message).
//!
//! A *phantom* pool ([`MsgPool::phantom`]) is for simulations that measure
//! the transport, not the data: the endpoint moves no payload bytes into or
//! out of its buffers (frames still have every length and header right; their
//! payload bytes are unspecified), so a simulated fabric does not spend its
//! time and cache on copies nobody reads.

use core::cell::RefCell;
use core::fmt;
use core::ops::{Deref, DerefMut};
use std::rc::Rc;

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
/// (`&buf[..len]`). Obtain from [`Endpoint::alloc_msg`](super::Endpoint::alloc_msg);
/// dropping it returns it to its pool.
pub struct MsgBuf {
    /// Backing storage; `data.len()` is the size-class capacity.
    data: Vec<u8>,
    len: usize,
    /// The pool it returns to on drop.
    home: Option<Rc<RefCell<Classes>>>,
    /// From a phantom pool: the endpoint copies no payload in or out.
    /// Copied from the pool at allocation, so the per-packet check reads
    /// the buffer, not the pool behind its `RefCell`.
    phantom: bool,
    /// The size class of `data` (`data.len() == class_size(class)`), kept
    /// so the way home does not work it out again.
    class: u8,
}

impl Drop for MsgBuf {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            home.borrow_mut()
                .put(self.class as usize, core::mem::take(&mut self.data));
        }
    }
}

impl MsgBuf {
    /// Message length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the message is empty.
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

    /// Whether it comes from a [phantom](MsgPool::phantom) pool, whose
    /// buffers the endpoint neither fills nor sends the bytes of.
    pub fn is_phantom(&self) -> bool {
        self.phantom
    }

    /// Copies `src` into the message at `range` (the endpoint assembling a
    /// received packet), unless the buffer is phantom.
    pub(crate) fn fill(&mut self, range: core::ops::Range<usize>, src: &[u8]) {
        if !self.phantom {
            self.data[range].copy_from_slice(src);
        }
    }

    /// The message bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.data[..self.len]
    }

    /// The message bytes, writable.
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

crate::counters! {
/// Counters of a [`MsgPool`].
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
}

/// Per-endpoint pool of [`MsgBuf`]s in power-of-two size classes. Cloning
/// the handle shares the pool.
#[derive(Clone)]
pub struct MsgPool {
    inner: Rc<RefCell<Classes>>,
}

impl fmt::Debug for MsgPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.inner.borrow();
        f.debug_struct("MsgPool").field("stats", &c.stats).finish()
    }
}

/// The free lists behind a pool.
struct Classes {
    /// `lists[i]` holds free buffers of exactly `64 << i` bytes.
    lists: Vec<Vec<Vec<u8>>>,
    /// How many free buffers class `i` keeps (precomputed: `put` is on the
    /// per-message path and a division there showed up in profiles).
    keep: Vec<usize>,
    stats: PoolStats,
    phantom: bool,
}

impl Classes {
    /// Takes back the storage of a buffer of class `c` (`alloc` gave it
    /// exactly `class_size(c)` bytes) for reuse, if the class keeps it.
    fn put(&mut self, c: usize, data: Vec<u8>) {
        self.stats.frees += 1;
        match self.lists.get_mut(c) {
            Some(list) if list.len() < self.keep[c] => list.push(data),
            _ => self.stats.released += 1,
        }
    }
}

impl MsgPool {
    /// A pool for messages up to `max_len` bytes (larger requests still work,
    /// they just get their own class).
    pub fn new(max_len: usize) -> Self {
        Self::keeping(max_len, MAX_KEEP_BYTES_PER_CLASS)
    }

    /// A pool that keeps up to `keep_bytes` of free buffers per size class
    /// (`usize::MAX`: every buffer it ever handed out, so after the peak
    /// nothing is allocated again; its memory is the peak's).
    pub fn keeping(max_len: usize, keep_bytes: usize) -> Self {
        let n = class_of(max_len) + 1;
        let classes = Classes {
            lists: (0..n).map(|_| Vec::new()).collect(),
            keep: (0..n)
                .map(|c| (keep_bytes / class_size(c)).max(MIN_KEEP_PER_CLASS))
                .collect(),
            stats: PoolStats::default(),
            phantom: false,
        };
        MsgPool {
            inner: Rc::new(RefCell::new(classes)),
        }
    }

    /// A pool like [`keeping`](Self::keeping)`(max_len, usize::MAX)` whose
    /// buffers are phantom: endpoints using it move no payload bytes (see
    /// the module docs). Only for simulation: an application reading a
    /// received message from it reads unspecified bytes. Its buffers are
    /// allocated zeroed and never written by the endpoint, so they cost
    /// address space, not memory.
    pub fn phantom(max_len: usize) -> Self {
        let pool = Self::keeping(max_len, usize::MAX);
        pool.inner.borrow_mut().phantom = true;
        pool
    }

    /// Whether this pool's buffers are phantom.
    pub fn is_phantom(&self) -> bool {
        self.inner.borrow().phantom
    }

    /// A buffer holding `len` bytes (contents unspecified).
    pub fn alloc(&self, len: usize) -> MsgBuf {
        let c = class_of(len);
        let mut classes = self.inner.borrow_mut();
        classes.stats.allocs += 1;
        let data = match classes.lists.get_mut(c).and_then(Vec::pop) {
            Some(d) => d,
            None => {
                classes.stats.fresh += 1;
                vec![0u8; class_size(c)]
            }
        };
        MsgBuf {
            data,
            len,
            class: c as u8,
            phantom: classes.phantom,
            home: Some(self.inner.clone()),
        }
    }

    /// Counters: allocations, pool misses, returns.
    pub fn stats(&self) -> PoolStats {
        self.inner.borrow().stats
    }

    /// Buffers handed out and not yet returned.
    pub fn outstanding(&self) -> u64 {
        let s = self.inner.borrow().stats;
        s.allocs - s.frees
    }

    /// Free buffers currently held, over all classes.
    pub fn free_count(&self) -> usize {
        self.inner.borrow().lists.iter().map(Vec::len).sum()
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
    fn a_pool_keeping_everything_reuses_past_the_default_limit() {
        let big = 8 << 20;
        let n = MAX_KEEP_BYTES_PER_CLASS / big + 4;
        for (pool, kept) in [
            (MsgPool::new(big), MAX_KEEP_BYTES_PER_CLASS / big),
            (MsgPool::keeping(big, usize::MAX), n),
        ] {
            let bufs: Vec<MsgBuf> = (0..n).map(|_| pool.alloc(big)).collect();
            drop(bufs);
            assert_eq!(pool.free_count(), kept);
            assert_eq!(pool.stats().released as usize, n - kept);
        }
    }

    #[test]
    fn a_phantom_buffer_is_never_filled() {
        let real = MsgPool::new(1 << 20);
        let phantom = MsgPool::phantom(1 << 20);
        assert!(phantom.is_phantom() && !real.is_phantom());
        for (pool, expect) in [(real, 7u8), (phantom, 0u8)] {
            let mut m = pool.alloc(4096);
            assert_eq!(m.is_phantom(), expect == 0);
            m.fill(100..104, &[7; 4]);
            assert_eq!(m[100..104], [expect; 4]);
            assert_eq!(m.len(), 4096, "the length is real either way");
        }
    }

    #[test]
    fn reuse_without_allocation() {
        let p = MsgPool::new(8 << 20);
        let a = p.alloc(1000);
        assert_eq!(a.len(), 1000);
        assert_eq!(a.capacity(), 1024);
        assert_eq!(p.outstanding(), 1);
        drop(a);
        assert_eq!(p.outstanding(), 0);
        let b = p.alloc(600);
        assert_eq!(b.capacity(), 1024);
        assert_eq!(p.stats().fresh, 1);
        drop(b);
        assert_eq!(p.free_count(), 1);
        assert_eq!(p.outstanding(), 0);
    }
}
