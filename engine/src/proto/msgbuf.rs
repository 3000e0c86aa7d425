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
//! buffers belong to one thread, so no atomics); a buffer that outlives
//! every pool handle keeps the free lists alive until it goes home, and they
//! are released to the allocator with the last one.
//!
//! What the free lists keep is bounded in bytes over all classes together
//! (`MemBudget::pool_keep` for an endpoint's own pool); a buffer returned
//! beyond it goes back to the allocator. The endpoint's ledger also makes
//! the pool give free buffers back ([`MsgPool::trim`]) when they would not
//! fit beside a peer's charge (`budget::Ledger::charge_for`).
//!
//! Contents of a buffer fresh from the pool are unspecified (old bytes are not
//! cleared: that would cost a second pass over every large message).
//!
//! How payload bytes move between buffers and frames is a type, not a
//! flag: [`PayloadCopy`], chosen by the caller of
//! [`Endpoint::handle_frame_with`](super::Endpoint::handle_frame_with) and
//! [`Endpoint::poll_transmit_with`](super::Endpoint::poll_transmit_with)
//! and compiled into that code. A real link's calls
//! ([`handle_frame`](super::Endpoint::handle_frame),
//! [`poll_transmit`](super::Endpoint::poll_transmit)) take [`CopyBytes`]:
//! the copy and nothing else, no branch and no indirect call per packet. A
//! simulation that measures the transport, not the data, brings its own
//! implementation that copies nothing (the fabric lab's `HeadersOnly`), and
//! no code of the endpoint knows that it exists.

use core::cell::UnsafeCell;
use core::fmt;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use std::rc::Rc;

/// Bytes of free buffers a pool keeps by default, over all classes
/// (`MemBudget::pool_keep`'s default): eight 8 MiB buffers, so a window of
/// the largest messages reuses its buffers.
pub const DEFAULT_POOL_KEEP: usize = 64 << 20;

/// How an endpoint moves a payload chunk: from a message buffer into the
/// frame it writes, and from a received frame into the buffer it assembles
/// a multi-packet message in (a single-packet message is handed over in its
/// frame, never copied). See the module docs.
///
/// An implementation decides only whether bytes move: headers, lengths,
/// counters and every decision of the endpoint are the same whatever it
/// does. One that copies nothing leaves a message's bytes and a frame's
/// bytes past its headers unspecified (nothing past the headers is
/// written, so a caller may lay frames out closer than their length); the
/// one payload the endpoint reads itself, an error answer's code, is
/// always copied.
pub trait PayloadCopy {
    /// Copies `src` into `dst` (slices of one length), or does nothing.
    fn copy(dst: &mut [u8], src: &[u8]);
}

/// Copies every payload byte: what a real link needs, and what
/// [`handle_frame`](super::Endpoint::handle_frame) and
/// [`poll_transmit`](super::Endpoint::poll_transmit) use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyBytes;

impl PayloadCopy for CopyBytes {
    #[inline(always)]
    fn copy(dst: &mut [u8], src: &[u8]) {
        dst.copy_from_slice(src);
    }
}

/// Smallest size class, log2: 64 bytes, one cache line; smaller messages
/// share this class so tiny buffers do not fragment the pool.
const MIN_CLASS_SHIFT: u32 = 6;

/// A contiguous message buffer. Dereferences to the message bytes
/// (`&buf[..len]`). Obtain from [`Endpoint::alloc_msg`](super::Endpoint::alloc_msg);
/// dropping it returns it to its pool.
pub struct MsgBuf {
    /// Backing storage of exactly `class_size(class)` bytes. `ManuallyDrop`
    /// because `drop` moves it into the pool (not left behind as an empty
    /// box whose drop would be checked for a deallocation).
    data: ManuallyDrop<Box<[u8]>>,
    len: usize,
    /// The pool it returns to on drop (it keeps the pool alive, so a buffer
    /// always has one to go back to).
    home: Rc<Pool>,
    /// Size class, kept so the return needs no class computation.
    class: u8,
}

impl Drop for MsgBuf {
    fn drop(&mut self) {
        // SAFETY: `data` is taken once, here, and never read again: the
        // buffer is being dropped and `ManuallyDrop` keeps the field's own
        // drop from running.
        let data = unsafe { ManuallyDrop::take(&mut self.data) };
        self.home.put(self.class as usize, data);
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

    /// Copies the first `n` bytes of `from`'s storage into this buffer's
    /// (a reassembly buffer growing into a larger one) by `C`. Copied in
    /// 2 KiB pieces, as packets are: glibc copies larger blocks with `rep
    /// movsb`, which `scripts/cost.sh`'s callgrind counts once per byte (8
    /// times its vector loop's count for the same work).
    pub(crate) fn copy_prefix<C: PayloadCopy>(&mut self, from: &MsgBuf, n: usize) {
        let (dst, src) = (&mut self.data[..n], &from.data[..n]);
        for (d, s) in dst.chunks_mut(2048).zip(src.chunks(2048)) {
            C::copy(d, s);
        }
    }

    /// Copies `src` into the message at `range` by `C` (the endpoint
    /// assembling a received packet).
    #[inline(always)]
    pub(crate) fn fill<C: PayloadCopy>(&mut self, range: core::ops::Range<usize>, src: &[u8]) {
        C::copy(&mut self.data[range], src);
    }

    /// The message bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.data[..self.len]
    }

    /// The message bytes, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.data[..self.len]
    }
}

impl Deref for MsgBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl DerefMut for MsgBuf {
    #[inline]
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
    /// Buffers given back but released to the allocator (the pool's
    /// retention reached, or beyond its largest class).
    pub released: u64,
    /// Free buffers the pool gave back to the allocator on a `trim`.
    pub trimmed: u64,
}
}

/// Per-endpoint pool of [`MsgBuf`]s in power-of-two size classes. Cloning
/// the handle shares the pool.
#[derive(Clone)]
pub struct MsgPool {
    inner: Rc<Pool>,
}

impl fmt::Debug for MsgPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsgPool")
            .field("stats", &self.stats())
            .finish()
    }
}

/// The free lists behind a pool. Every buffer allocation and return of an
/// endpoint passes here (several per RPC), so the state is in an
/// `UnsafeCell` rather than a `RefCell`: no borrow flag to set and check on
/// each one.
struct Pool {
    state: UnsafeCell<State>,
}

struct State {
    /// `classes[i]` holds free buffers of exactly `64 << i` bytes.
    classes: Vec<Vec<Box<[u8]>>>,
    stats: PoolStats,
    /// Bytes the free lists may still take: the retention limit less what
    /// they hold (one field, so a return reads one value).
    room: usize,
    /// The retention limit.
    keep_total: usize,
}

impl Pool {
    /// The pool's state, writable.
    ///
    /// # Safety
    /// No other reference to the state may live while the returned one
    /// does. `Pool` is reached only through an `Rc` (not `Send`), so on one
    /// thread; every caller uses the reference within one short function
    /// that calls nothing able to come back into the pool (a `Vec` push or
    /// pop, the allocator).
    #[allow(clippy::mut_from_ref)]
    unsafe fn state(&self) -> &mut State {
        // SAFETY: exclusive per this function's contract.
        unsafe { &mut *self.state.get() }
    }

    /// Takes a buffer's storage (of class `c`) back for reuse.
    fn put(&self, c: usize, data: Box<[u8]>) {
        // SAFETY: the only reference to the state while it lives.
        let st = unsafe { self.state() };
        st.stats.frees += 1;
        let size = data.len();
        match st.classes.get_mut(c) {
            Some(free) if size <= st.room => {
                free.push(data);
                st.room -= size;
            }
            // Beyond the largest class, or the pool holds its total: to
            // the allocator.
            _ => st.stats.released += 1,
        }
    }

    /// Storage for a buffer of class `c`: a free one, or a fresh one.
    #[inline]
    fn take(&self, c: usize) -> Box<[u8]> {
        // SAFETY: the only reference to the state while it lives.
        let st = unsafe { self.state() };
        st.stats.allocs += 1;
        match st.classes.get_mut(c).and_then(Vec::pop) {
            Some(d) => {
                st.room += d.len();
                d
            }
            None => {
                st.stats.fresh += 1;
                vec![0u8; class_size(c)].into_boxed_slice()
            }
        }
    }

    /// Frees buffers, smallest class first, until at most `limit` bytes of
    /// free buffers are left besides one of class `spare` if there is one
    /// (the buffer the caller takes next); the bytes freed. Smallest first:
    /// the steps a buffer outgrew go before the large buffers whose
    /// allocation (and zeroing) costs most to do again.
    fn trim(&self, limit: usize, spare: Option<usize>) -> usize {
        // SAFETY: the only reference to the state while it lives; dropping
        // a buffer calls the allocator only.
        let st = unsafe { self.state() };
        let spare = spare.filter(|&c| st.classes.get(c).is_some_and(|f| !f.is_empty()));
        let mut held = st.keep_total - st.room - spare.map_or(0, class_size);
        let mut freed = 0;
        for c in 0..st.classes.len() {
            let keep = usize::from(spare == Some(c));
            while held > limit && st.classes[c].len() > keep {
                let Some(d) = st.classes[c].pop() else { break };
                st.room += d.len();
                held -= d.len();
                freed += d.len();
                st.stats.trimmed += 1;
            }
            if held <= limit {
                break;
            }
        }
        freed
    }

    fn stats(&self) -> PoolStats {
        // SAFETY: the only reference to the state while it lives.
        unsafe { self.state() }.stats
    }

    /// Free buffers currently held, over all classes.
    fn free_count(&self) -> usize {
        // SAFETY: the only reference to the state while it lives.
        let st = unsafe { self.state() };
        st.classes.iter().map(Vec::len).sum()
    }

    /// Bytes of the free buffers held.
    fn free_bytes(&self) -> usize {
        // SAFETY: the only reference to the state while it lives.
        let st = unsafe { self.state() };
        st.keep_total - st.room
    }
}

impl MsgPool {
    /// A pool for messages up to `max_len` bytes (larger requests still work,
    /// they just get their own class) that keeps the default total of free
    /// buffers ([`DEFAULT_POOL_KEEP`]).
    pub fn new(max_len: usize) -> Self {
        Self::keeping(max_len, DEFAULT_POOL_KEEP)
    }

    /// A pool that keeps at most `keep_bytes` of free buffers over all size
    /// classes (`usize::MAX`: every buffer it ever handed out, so after the
    /// peak nothing is allocated again; its memory is the peak's).
    pub fn keeping(max_len: usize, keep_bytes: usize) -> Self {
        let n = class_of(max_len) + 1;
        let classes = (0..n).map(|_| Vec::new()).collect();
        MsgPool {
            inner: Rc::new(Pool {
                state: UnsafeCell::new(State {
                    classes,
                    stats: PoolStats::default(),
                    room: keep_bytes,
                    keep_total: keep_bytes,
                }),
            }),
        }
    }

    /// A buffer holding `len` bytes (contents unspecified).
    #[inline]
    pub fn alloc(&self, len: usize) -> MsgBuf {
        let c = class_of(len);
        MsgBuf {
            data: ManuallyDrop::new(self.inner.take(c)),
            len,
            home: self.inner.clone(),
            // At most 64 - MIN_CLASS_SHIFT: fits.
            class: c as u8,
        }
    }

    /// Gives free buffers back to the allocator, smallest first, until at
    /// most `limit` bytes of them are left, not counting one of the class
    /// a `take_len`-byte buffer needs (kept if free: the caller takes it
    /// next, so a buffer about to be reused is not freed and allocated
    /// again); the bytes given back.
    pub(crate) fn trim(&self, limit: usize, take_len: Option<usize>) -> usize {
        self.inner.trim(limit, take_len.map(class_of))
    }

    /// Counters: allocations, pool misses, returns.
    pub fn stats(&self) -> PoolStats {
        self.inner.stats()
    }

    /// Buffers handed out and not yet returned.
    pub fn outstanding(&self) -> u64 {
        let s = self.stats();
        s.allocs - s.frees
    }

    /// Free buffers currently held, over all classes.
    pub fn free_count(&self) -> usize {
        self.inner.free_count()
    }

    /// Bytes of the free buffers currently held, over all classes (at most
    /// the pool's total retention).
    pub fn free_bytes(&self) -> usize {
        self.inner.free_bytes()
    }
}

/// Capacity of the buffer [`MsgPool::alloc`] gives for `len` bytes: what
/// holding it costs.
#[inline]
pub(crate) fn capacity_for(len: usize) -> usize {
    class_size(class_of(len))
}

/// Index of the smallest class holding `len` bytes.
#[inline]
fn class_of(len: usize) -> usize {
    // Most messages are small: one compare for them.
    if len <= 1 << MIN_CLASS_SHIFT {
        return 0;
    }
    (usize::BITS - (len - 1).leading_zeros() - MIN_CLASS_SHIFT) as usize
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
        let default = DEFAULT_POOL_KEEP;
        let n = default / big + 4;
        for (pool, kept) in [
            (MsgPool::new(big), default / big),
            (MsgPool::keeping(big, usize::MAX), n),
        ] {
            let bufs: Vec<MsgBuf> = (0..n).map(|_| pool.alloc(big)).collect();
            drop(bufs);
            assert_eq!(pool.free_count(), kept);
            assert_eq!(pool.stats().released as usize, n - kept);
        }
    }

    #[test]
    fn the_total_retention_bounds_every_class_together() {
        let total = 3 << 20;
        let pool = MsgPool::keeping(8 << 20, total);
        // 1 MiB, 2 MiB and small buffers: what fits the total is kept.
        let bufs: Vec<MsgBuf> = [1 << 20, 2 << 20, 1 << 20, 4096, 2 << 20]
            .iter()
            .map(|&n| pool.alloc(n))
            .collect();
        drop(bufs);
        assert_eq!(pool.free_bytes(), 3 << 20, "1 MiB + 2 MiB kept");
        assert_eq!(pool.free_count(), 2);
        assert_eq!(pool.stats().released, 3);
        // Taking one out makes room again.
        let m = pool.alloc(2 << 20);
        assert_eq!(pool.free_bytes(), 1 << 20);
        drop(m);
        assert_eq!(pool.free_bytes(), 3 << 20);
    }

    #[test]
    fn a_trim_frees_the_smallest_first_and_spares_the_buffer_taken_next() {
        let pool = MsgPool::keeping(8 << 20, usize::MAX);
        let bufs: Vec<MsgBuf> = [8 << 20, 128 << 10, 128 << 10, 2048]
            .iter()
            .map(|&n| pool.alloc(n))
            .collect();
        drop(bufs);
        let all = (8 << 20) + (256 << 10) + 2048;
        assert_eq!(pool.free_bytes(), all);
        // Nothing to do within the limit.
        assert_eq!(pool.trim(all, None), 0);
        // The 2 KiB one goes first, then a 128 KiB one: the other, which
        // the caller takes next, is spared (and not counted).
        assert_eq!(pool.trim(8 << 20, Some(100 << 10)), 2048 + (128 << 10));
        assert_eq!(pool.free_bytes(), (8 << 20) + (128 << 10));
        assert_eq!(pool.stats().trimmed, 2);
        let m = pool.alloc(128 << 10);
        assert_eq!(pool.stats().fresh, 4, "the spared buffer was reused");
        drop(m);
        // The large one goes when the small ones are not enough.
        assert_eq!(pool.trim(64 << 10, None), (8 << 20) + (128 << 10));
        assert_eq!(pool.free_count(), 0);
        // The room the trim made is kept again.
        let pool = MsgPool::keeping(8 << 20, 4096);
        drop(pool.alloc(4096));
        pool.trim(0, None);
        drop(pool.alloc(4096));
        assert_eq!(pool.free_bytes(), 4096);
    }

    /// Copies nothing (what a simulation of the transport alone brings).
    struct NoCopy;
    impl PayloadCopy for NoCopy {
        fn copy(_: &mut [u8], _: &[u8]) {}
    }

    #[test]
    fn the_payload_copy_decides_whether_bytes_move() {
        let pool = MsgPool::new(1 << 20);
        let mut m = pool.alloc(8192);
        m.fill::<CopyBytes>(100..104, &[7; 4]);
        m.fill::<NoCopy>(104..108, &[9; 4]);
        assert_eq!(
            m[100..108],
            [7, 7, 7, 7, 0, 0, 0, 0],
            "a fresh buffer is zeroed"
        );
        let mut grown = pool.alloc(16 << 10);
        grown.copy_prefix::<NoCopy>(&m, 4096);
        assert_eq!(grown[100..104], [0; 4]);
        grown.copy_prefix::<CopyBytes>(&m, 4096);
        assert_eq!(grown[100..104], [7; 4]);
        assert_eq!(m.len(), 8192, "the length is the caller's either way");
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
