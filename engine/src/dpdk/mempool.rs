//! Packet-buffer pools (`rte_pktmbuf_pool_create`), freed on drop, with the
//! in-use count that the leak tests check; a packed variant for drivers
//! that register the pool's memory as one span (net_af_xdp's UMEM).

use super::DpdkError;
use std::ffi::CString;
use std::ptr::NonNull;

/// A DPDK packet-mbuf pool, freed when dropped.
#[derive(Debug)]
pub struct Mempool {
    raw: NonNull<dpdk_sys::rte_mempool>,
    name: String,
    data_room: u16,
}

// SAFETY: DPDK mempools are multi-producer/multi-consumer safe by default
// (ring_mp_mc ops); the handle is only a pointer to shared state.
unsafe impl Send for Mempool {}
// SAFETY: see Send; all operations through &Mempool are thread-safe in DPDK.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// `n` mbufs with `data_room` bytes each after the headroom; `cache` per lcore.
    pub fn new(
        eal: &super::Eal,
        name: &str,
        n: u32,
        cache: u32,
        data_room: u16,
    ) -> Result<Self, DpdkError> {
        Self::create(eal, name, n, cache, data_room, false)
    }

    /// [`new`](Self::new) with the objects back to back in one virtually
    /// contiguous chunk. net_af_xdp (DPDK 22.11) registers the span from the
    /// pool's first object, `n` objects long, as its UMEM; without hugepages
    /// the default pool pads objects so none crosses a 4 KiB page, the span
    /// then misses the last mbufs, and the kernel silently refuses to send
    /// any frame in them (it counts them as invalid descriptors).
    pub fn new_packed(
        eal: &super::Eal,
        name: &str,
        n: u32,
        cache: u32,
        data_room: u16,
    ) -> Result<Self, DpdkError> {
        Self::create(eal, name, n, cache, data_room, true)
    }

    fn create(
        _eal: &super::Eal,
        name: &str,
        n: u32,
        cache: u32,
        data_room: u16,
        packed: bool,
    ) -> Result<Self, DpdkError> {
        let c_name = CString::new(name).map_err(|_| DpdkError::BadArgument {
            arg: name.into(),
            why: "pool name contains a NUL byte",
        })?;
        let room = data_room as u32 + dpdk_sys::RTE_PKTMBUF_HEADROOM;
        let room: u16 = room.try_into().map_err(|_| DpdkError::BadArgument {
            arg: data_room.to_string(),
            why: "mbuf data room plus headroom exceeds 65535",
        })?;
        // SAFETY: EAL is initialised; c_name is a valid C string; SOCKET_ID_ANY
        // lets DPDK pick memory.
        let (raw, op) = unsafe {
            match packed {
                false => (
                    dpdk_sys::rte_pktmbuf_pool_create(
                        c_name.as_ptr(),
                        n,
                        cache,
                        0,
                        room,
                        dpdk_sys::SOCKET_ID_ANY,
                    ),
                    "rte_pktmbuf_pool_create",
                ),
                true => (
                    dpdk_sys::shim_pktmbuf_pool_create_packed(
                        c_name.as_ptr(),
                        n,
                        cache,
                        room,
                        dpdk_sys::SOCKET_ID_ANY,
                    ),
                    "rte_pktmbuf_pool_create (packed)",
                ),
            }
        };
        let raw = NonNull::new(raw).ok_or_else(|| DpdkError::from_errno(op))?;
        Ok(Mempool {
            raw,
            name: name.into(),
            data_room,
        })
    }

    /// The raw pool, for DPDK calls.
    pub fn as_ptr(&self) -> *mut dpdk_sys::rte_mempool {
        self.raw.as_ptr()
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes of frame data one mbuf holds.
    pub fn data_room(&self) -> u16 {
        self.data_room
    }

    /// Mbufs currently allocated (includes those sitting in driver rings).
    pub fn in_use(&self) -> u32 {
        // SAFETY: the pool is alive for &self.
        unsafe { dpdk_sys::rte_mempool_in_use_count(self.raw.as_ptr()) }
    }

    /// Mbufs free in the pool (ring plus per-lcore caches).
    pub fn available(&self) -> u32 {
        // SAFETY: the pool is alive for &self.
        unsafe { dpdk_sys::rte_mempool_avail_count(self.raw.as_ptr()) }
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // An Mbuf still alive (or held by a driver ring) points into the pool:
        // leaking the pool is then the only sound choice.
        if self.in_use() != 0 {
            return;
        }
        // SAFETY: we own the pool and no mbuf of it is in use (checked above).
        unsafe { dpdk_sys::rte_mempool_free(self.raw.as_ptr()) }
    }
}
