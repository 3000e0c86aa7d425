//! The CPU's prefetch hint, for the endpoint's prefetch API
//! (`prefetch.rs`) and the structures it reaches into (the session table,
//! the timer heap): a leaf module, so that they need not import the
//! endpoint to share it.

/// Asks the CPU to start loading every cache line of `*p`.
#[inline(always)]
pub(crate) fn prefetch_lines<T>(p: *const T) {
    let base = p.cast::<u8>();
    let mut at = 0;
    while at < core::mem::size_of::<T>() {
        prefetch(base.wrapping_add(at));
        at += 64;
    }
}

/// Asks the CPU to start loading the cache line at `p`; a hint, never a
/// fault, whatever `p` is.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
    // cannot fault, even on an address outside any allocation.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p.cast::<i8>(), core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
