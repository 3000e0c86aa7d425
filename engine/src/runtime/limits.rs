//! What a [`NexusBuilder`](super::NexusBuilder) refuses before EAL starts:
//! the limits DPDK 22.11 and the kernel put on descriptor rings, memif
//! rings, socket paths, interface names and mbufs, as constants, and
//! [`BuilderError`], which names the setting and the limit it broke.

/// Descriptor ring bounds: power-of-two sizes in this range (`u16` in
/// `rte_eth_rx_queue_setup`; 32 is below every PMD's burst need).
pub const MIN_DESC: u16 = 32;
/// The largest power of two in a `u16`.
pub const MAX_DESC: u16 = 32768;
/// memif's ring holds `2^rsize` entries; DPDK 22.11 refuses `rsize` > 14.
pub const MEMIF_MAX_LOG2_RING: u32 = 14;
/// The most entries a memif ring holds (`2^14`).
pub const MEMIF_MAX_RING: usize = 1 << MEMIF_MAX_LOG2_RING;
/// Longest memif socket path: `sun_path` is 108 bytes with the NUL.
pub const MAX_SOCKET_PATH: usize = 107;
/// Longest interface name: `IFNAMSIZ` is 16 with the NUL.
pub const MAX_IFACE_LEN: usize = 15;
/// Largest mbuf data room: `rte_pktmbuf_pool_create` takes the data room
/// plus the headroom as a `u16`.
pub const MAX_DATA_ROOM: u16 = (u16::MAX as u32 - dpdk_sys::RTE_PKTMBUF_HEADROOM) as u16;
/// Ethernet header bytes an mbuf holds beyond the IP MTU (no VLAN tag, no
/// FCS: DPDK strips it).
pub const ETH_HEADER_LEN: usize = 14;

/// Which descriptor ring a [`BuilderError::Descriptors`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ring {
    /// The receive ring.
    Rx,
    /// The transmit ring.
    Tx,
}

impl std::fmt::Display for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Ring::Rx => "rx",
            Ring::Tx => "tx",
        })
    }
}

/// A [`NexusBuilder`](super::NexusBuilder) setting that DPDK or the kernel
/// would refuse (or take and misbehave with), found before EAL starts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuilderError {
    /// No device was named.
    #[error("no device: call NexusBuilder::device(Device::...)")]
    NoDevice,
    /// No core was named: a Nexus runs one worker per core.
    #[error("no cores: a Nexus runs one worker per core")]
    NoCores,
    /// A descriptor count outside the power-of-two range.
    #[error("{ring} descriptors = {value}: must be a power of two in {MIN_DESC}..={MAX_DESC}")]
    Descriptors {
        /// Which ring.
        ring: Ring,
        /// The count asked for.
        value: u16,
    },
    /// A memif ring larger than DPDK 22.11's memif creates.
    #[error("a memif ring of {entries} entries: DPDK 22.11's memif holds at most {MEMIF_MAX_RING} (rsize {MEMIF_MAX_LOG2_RING})")]
    MemifRing {
        /// Entries asked for (`2^rsize`).
        entries: usize,
    },
    /// A memif socket path that does not fit `sun_path`.
    #[error("memif socket path {path:?}: must be 1..={MAX_SOCKET_PATH} bytes (sun_path)")]
    SocketPath {
        /// The path.
        path: String,
    },
    /// An interface name that does not fit `IFNAMSIZ`.
    #[error("af_packet interface {iface:?}: must be 1..={MAX_IFACE_LEN} bytes (IFNAMSIZ)")]
    IfaceName {
        /// The name.
        iface: String,
    },
    /// An mbuf data room outside what a pool can hold.
    #[error("mbuf data room of {data_room} bytes: must be in 1..={MAX_DATA_ROOM}")]
    DataRoom {
        /// Bytes asked for.
        data_room: u16,
    },
    /// An MTU whose frames do not fit one mbuf.
    #[error("mtu {mtu} needs {needed}-byte frames but mbufs hold {data_room} bytes")]
    MbufTooSmall {
        /// The IP MTU.
        mtu: u16,
        /// Its frame: MTU plus the Ethernet header.
        needed: usize,
        /// Bytes an mbuf holds.
        data_room: u16,
    },
    /// No memory for the no-hugepage mode.
    #[error("0 MiB of memory: EAL without hugepages needs some")]
    NoMemory,
    /// Worker UDP ports (base + index) outside 1..=65535.
    #[error("worker UDP ports {base}..={}: must stay within 1..=65535", (*base as usize + workers).saturating_sub(1))]
    UdpPorts {
        /// Worker 0's port.
        base: u16,
        /// Workers (one port each).
        workers: usize,
    },
}
