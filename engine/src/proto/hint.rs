//! The CPU's prefetch hint, for the endpoint's prefetch API
//! (`prefetch.rs`), the structures it reaches into (the session table,
//! the timer heap) and a caller that prefetches its own state the same way
//! (the fabric lab): a leaf module, so that they need not import the
//! endpoint to share it.

use std::collections::VecDeque;

/// Asks the CPU to start loading every cache line of `*p`.
#[inline(always)]
pub fn prefetch_lines<T>(p: *const T) {
    prefetch_bytes(p, core::mem::size_of::<T>());
}

/// Asks the CPU to start loading the cache lines of the first `len` bytes
/// from `p` (a struct laid out by line whose first lines are the hot ones).
#[inline(always)]
pub fn prefetch_bytes<T>(p: *const T, len: usize) {
    let base = p.cast::<u8>();
    let mut at = 0;
    while at < len {
        prefetch(base.wrapping_add(at));
        at += 64;
    }
}

/// Asks the CPU to start loading the cache line at `p`; a hint, never a
/// fault, whatever `p` is.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
    // cannot fault, even on an address outside any allocation.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p.cast::<i8>(), core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Where `q`'s first element sits (where the next push lands when it is
/// empty): an address for a hint, never read.
#[inline]
pub fn queue_front<T>(q: &VecDeque<T>) -> *const T {
    q.as_slices().0.as_ptr()
}

/// Where the next element pushed onto `q` lands, unless the buffer wraps
/// or grows: an address for a hint, never read.
#[inline]
pub fn queue_end<T>(q: &VecDeque<T>) -> *const T {
    let (a, b) = q.as_slices();
    match b.is_empty() {
        true => a.as_ptr_range().end,
        false => b.as_ptr_range().end,
    }
}
