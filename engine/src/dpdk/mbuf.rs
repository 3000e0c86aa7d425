//! Owned packet buffers. `Mbuf` frees itself on drop; `MbufBatch` is a fixed
//! array of up to `BURST` owned mbufs, the unit of rx/tx bursts and bulk
//! alloc/free, so the hot path never allocates.

use super::{DpdkError, Mempool};
use crate::nic::Offloads;
use dpdk_sys::rte_mbuf;
use std::ptr::NonNull;

/// Packets per rx/tx burst: DPDK's customary 32 amortises the per-call cost
/// of the driver while keeping a burst within L1.
pub const BURST: usize = 32;

/// One owned, single-segment mbuf.
#[derive(Debug)]
pub struct Mbuf {
    raw: NonNull<rte_mbuf>,
}

// SAFETY: an Mbuf is uniquely owned; DPDK mbufs can be freed from any thread
// (the pool is MP/MC safe).
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Allocates one mbuf from `pool`; `PoolExhausted` if it is empty.
    pub fn alloc(pool: &Mempool) -> Result<Mbuf, DpdkError> {
        // SAFETY: the pool is alive for the call.
        let raw = unsafe { dpdk_sys::shim_pktmbuf_alloc(pool.as_ptr()) };
        NonNull::new(raw)
            .map(|raw| Mbuf { raw })
            .ok_or_else(|| DpdkError::PoolExhausted {
                name: pool.name().into(),
            })
    }

    /// Takes ownership of a raw mbuf.
    ///
    /// # Safety
    /// `raw` must be a valid, single-segment mbuf that nobody else owns.
    pub unsafe fn from_raw(raw: NonNull<rte_mbuf>) -> Mbuf {
        Mbuf { raw }
    }

    /// Gives up ownership without freeing.
    pub fn into_raw(self) -> NonNull<rte_mbuf> {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }

    /// Length of the frame in bytes (`data_len`).
    #[inline]
    pub fn len(&self) -> usize {
        // SAFETY: raw is a valid mbuf we own.
        unsafe { self.raw.as_ref().data_len as usize }
    }

    /// True if the frame is zero bytes long.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame bytes (`len()` of them).
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: see `frame_of`.
        unsafe { frame_of(self.raw.as_ptr()) }
    }

    /// The frame bytes, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: see `frame_of_mut`; &mut self gives exclusive access.
        unsafe { frame_of_mut(self.raw.as_ptr()) }
    }

    /// Bytes of frame this mbuf can hold from its data start.
    #[inline]
    pub fn capacity(&self) -> usize {
        // SAFETY: raw is a valid mbuf we own.
        unsafe { capacity_of(self.raw.as_ptr()) }
    }

    /// The whole writable room from the data start, for building a frame in place.
    #[inline]
    pub fn room_mut(&mut self) -> &mut [u8] {
        // SAFETY: see `room_of_mut`; &mut self gives exclusive access.
        unsafe { room_of_mut(self.raw.as_ptr()) }
    }

    /// Sets the frame length (data_len and pkt_len); clamped to `capacity`.
    #[inline]
    pub fn set_len(&mut self, len: usize) {
        // SAFETY: see `set_len_of`.
        unsafe { set_len_of(self.raw.as_ptr(), len) }
    }

    /// The driver's flags on a received frame (`ol_flags`: its checksum
    /// verdict among them, `nic::RxChecksum::of`).
    #[inline]
    pub fn ol_flags(&self) -> u64 {
        // SAFETY: raw is a valid mbuf we own.
        unsafe { self.raw.as_ref().ol_flags }
    }

    /// Asks the device to fill the checksums `o` offloads: the header
    /// fields as DPDK requires them (`wire::prepare_checksum_offload`),
    /// `flags` (`o.tx_mbuf_flags()`) in `ol_flags`, and the header lengths
    /// (Ethernet, IPv4 without options, UDP) in `tx_offload`. Call after
    /// `set_len`, on a frame the engine wrote.
    #[inline]
    pub fn offload_checksums(&mut self, o: &Offloads, flags: u64) {
        crate::wire::prepare_checksum_offload(self.data_mut(), o.tx_ipv4, o.tx_udp);
        // SAFETY: raw is a valid mbuf we own; ol_flags and the tx_offload
        // word are plain fields the driver reads at tx_burst.
        unsafe {
            let m = self.raw.as_mut();
            m.ol_flags |= flags;
            m.__bindgen_anon_3.tx_offload = TX_HEADER_LENS;
        }
    }
}

/// `tx_offload`'s bit-fields l2_len (7 bits), l3_len (9) and l4_len (8):
/// 14-byte Ethernet, 20-byte IPv4, 8-byte UDP header.
const TX_HEADER_LENS: u64 = 14 | (20 << 7) | (8 << 16);

impl Drop for Mbuf {
    fn drop(&mut self) {
        // SAFETY: we own the mbuf and never use it again.
        unsafe { dpdk_sys::shim_pktmbuf_free(self.raw.as_ptr()) }
    }
}

// The helpers below read fields of `rte_mbuf` directly (bound by bindgen from
// the installed headers, so the layout is the real one) instead of calling the
// C shim per packet.

/// # Safety
/// `m` is a valid single-segment mbuf, not mutated for the returned lifetime.
#[inline]
unsafe fn frame_of<'a>(m: *const rte_mbuf) -> &'a [u8] {
    // SAFETY: buf_addr + data_off is the data start and data_len bytes follow
    // inside the buffer (DPDK's invariant for a single-segment mbuf).
    unsafe {
        let m = &*m;
        std::slice::from_raw_parts(
            (m.buf_addr as *const u8).add(m.data_off as usize),
            m.data_len as usize,
        )
    }
}

/// # Safety
/// As `frame_of`, and the caller has exclusive access to the mbuf.
#[inline]
unsafe fn frame_of_mut<'a>(m: *mut rte_mbuf) -> &'a mut [u8] {
    // SAFETY: as frame_of, with exclusive access guaranteed by the caller.
    unsafe {
        let m = &*m;
        std::slice::from_raw_parts_mut(
            (m.buf_addr as *mut u8).add(m.data_off as usize),
            m.data_len as usize,
        )
    }
}

/// # Safety
/// `m` is a valid mbuf.
#[inline]
unsafe fn capacity_of(m: *const rte_mbuf) -> usize {
    // SAFETY: reading two plain fields of a valid mbuf.
    unsafe {
        let m = &*m;
        (m.buf_len as usize).saturating_sub(m.data_off as usize)
    }
}

/// # Safety
/// `m` is a valid mbuf with exclusive access.
#[inline]
unsafe fn room_of_mut<'a>(m: *mut rte_mbuf) -> &'a mut [u8] {
    // SAFETY: [data_off, buf_len) lies inside the mbuf's buffer.
    unsafe {
        let cap = capacity_of(m);
        let m = &*m;
        std::slice::from_raw_parts_mut((m.buf_addr as *mut u8).add(m.data_off as usize), cap)
    }
}

/// # Safety
/// `m` is a valid single-segment mbuf with exclusive access.
#[inline]
unsafe fn set_len_of(m: *mut rte_mbuf, len: usize) {
    // SAFETY: the length is clamped to the buffer's room, so data stays inside it.
    unsafe {
        let len = len.min(capacity_of(m)) as u16;
        (*m).data_len = len;
        (*m).pkt_len = len as u32;
    }
}

/// Up to `BURST` owned mbufs in a fixed array. Whatever is still in the batch
/// when it drops is freed in bulk.
#[derive(Debug)]
pub struct MbufBatch {
    ptrs: [*mut rte_mbuf; BURST],
    len: usize,
}

// SAFETY: the batch uniquely owns its mbufs; see `Mbuf`.
unsafe impl Send for MbufBatch {}

impl Default for MbufBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl MbufBatch {
    /// An empty batch.
    pub const fn new() -> Self {
        MbufBatch {
            ptrs: [std::ptr::null_mut(); BURST],
            len: 0,
        }
    }

    /// Number of mbufs in the batch (at most [`BURST`]).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if the batch holds no mbuf.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// True if the batch holds [`BURST`] mbufs.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len == BURST
    }

    /// Fills the batch up to `n` (at most `BURST`) fresh mbufs with one bulk
    /// allocation; all or nothing, as DPDK's bulk alloc.
    pub fn alloc(&mut self, pool: &Mempool, n: usize) -> Result<(), DpdkError> {
        let n = n.min(BURST - self.len);
        if n == 0 {
            return Ok(());
        }
        // SAFETY: the destination has room for n pointers (n <= BURST - len).
        let rc = unsafe {
            dpdk_sys::shim_pktmbuf_alloc_bulk(
                pool.as_ptr(),
                self.ptrs.as_mut_ptr().add(self.len),
                n as u32,
            )
        };
        if rc != 0 {
            return Err(DpdkError::PoolExhausted {
                name: pool.name().into(),
            });
        }
        self.len += n;
        Ok(())
    }

    /// Adds an mbuf; gives it back if the batch is full.
    #[inline]
    pub fn push(&mut self, m: Mbuf) -> Result<(), Mbuf> {
        if self.is_full() {
            return Err(m);
        }
        self.ptrs[self.len] = m.into_raw().as_ptr();
        self.len += 1;
        Ok(())
    }

    /// Removes and returns the last mbuf.
    #[inline]
    pub fn pop(&mut self) -> Option<Mbuf> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: entries below the old len are valid mbufs owned by the batch.
        Some(unsafe { Mbuf::from_raw(NonNull::new_unchecked(self.ptrs[self.len])) })
    }

    /// Frame bytes of mbuf `i`.
    #[inline]
    pub fn data(&self, i: usize) -> &[u8] {
        assert!(i < self.len);
        // SAFETY: entry i is a valid mbuf owned by the batch; &self prevents mutation.
        unsafe { frame_of(self.ptrs[i]) }
    }

    /// The driver's flags on mbuf `i` (see [`Mbuf::ol_flags`]).
    #[inline]
    pub fn ol_flags(&self, i: usize) -> u64 {
        assert!(i < self.len);
        // SAFETY: entry i is a valid mbuf owned by the batch.
        unsafe { (*self.ptrs[i]).ol_flags }
    }

    /// Frame bytes of mbuf `i`, writable. Panics if `i >= len()`.
    #[inline]
    pub fn data_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.len);
        // SAFETY: entry i is owned by the batch; &mut self gives exclusive access.
        unsafe { frame_of_mut(self.ptrs[i]) }
    }

    /// Whole writable room of mbuf `i`, for building a frame in place.
    #[inline]
    pub fn room_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.len);
        // SAFETY: as data_mut.
        unsafe { room_of_mut(self.ptrs[i]) }
    }

    /// Sets the frame length of mbuf `i` in bytes (after building it in
    /// [`Self::room_mut`]). Panics if `i >= len()`.
    #[inline]
    pub fn set_len(&mut self, i: usize, len: usize) {
        assert!(i < self.len);
        // SAFETY: as data_mut.
        unsafe { set_len_of(self.ptrs[i], len) }
    }

    /// Frees every mbuf in the batch with one bulk call.
    #[inline]
    pub fn clear(&mut self) {
        if self.len > 0 {
            // SAFETY: the first len entries are valid mbufs owned by the batch,
            // which forgets them right after.
            unsafe { dpdk_sys::rte_pktmbuf_free_bulk(self.ptrs.as_mut_ptr(), self.len as u32) };
            self.len = 0;
        }
    }

    /// Drops the first `n` entries from the batch *without freeing* (they were
    /// handed to the driver by a tx burst) and moves the rest to the front.
    #[inline]
    pub(crate) fn forget_front(&mut self, n: usize) {
        let n = n.min(self.len);
        self.ptrs.copy_within(n..self.len, 0);
        self.len -= n;
    }

    #[inline]
    pub(crate) fn raw_ptrs_mut(&mut self) -> &mut [*mut rte_mbuf; BURST] {
        &mut self.ptrs
    }

    /// # Safety
    /// The first `len` entries must be valid mbufs now owned by the batch.
    #[inline]
    pub(crate) unsafe fn set_filled(&mut self, len: usize) {
        self.len = len;
    }
}

impl Drop for MbufBatch {
    fn drop(&mut self) {
        self.clear();
    }
}
