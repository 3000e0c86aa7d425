//! What a [`NexusBuilder`](super::NexusBuilder) refuses before EAL starts:
//! the limits DPDK 22.11 and the kernel put on descriptor rings, memif
//! rings, socket paths, interface names and mbufs, as constants, and
//! [`BuilderError`], which says each refusal in the run config's words:
//! the `[link]` or `[cores]` key that sets the refused value
//! ([`BuilderError::key`]; the builder's setters mirror those keys, each
//! setter's docs name its key), the value and the limit. The engine owns
//! these keys as it owns `[transport]`'s (`crate::config`), so a tool
//! reports a refusal as it is and never rewords it.

/// Which process of a run a builder is for: names the `[cores]` key
/// (`cores.server`, `cores.client`) a refusal of its cores points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The process that serves requests.
    Server,
    /// The process that sends them.
    Client,
}

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
    /// The receive ring (`link.rx_desc`).
    Rx,
    /// The transmit ring (`link.tx_desc`).
    Tx,
}

impl Ring {
    /// The key that sets this ring's descriptor count.
    pub fn key(self) -> &'static str {
        match self {
            Ring::Rx => "link.rx_desc",
            Ring::Tx => "link.tx_desc",
        }
    }
}

/// A [`NexusBuilder`](super::NexusBuilder) setting that DPDK or the kernel
/// would refuse (or take and misbehave with), found before EAL starts. It
/// prints as one sentence naming [`key`](Self::key), the value given and
/// the limit, e.g. `link.rx_desc = 1000 must be a power of two in
/// 32..=32768`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuilderError {
    /// No device was named (`link.kind`: [`NexusBuilder::device`](super::NexusBuilder::device)).
    NoDevice,
    /// No core was named (`cores.server` / `cores.client`:
    /// [`NexusBuilder::cores`](super::NexusBuilder::cores)): a Nexus runs
    /// one worker per core.
    NoCores {
        /// The builder's role, which says whose `[cores]` list is empty;
        /// `None` if it was given none ([`NexusBuilder::role`](super::NexusBuilder::role)).
        role: Option<Role>,
    },
    /// A descriptor count outside the power-of-two range.
    Descriptors {
        /// Which ring.
        ring: Ring,
        /// The count asked for.
        value: u32,
    },
    /// A memif ring larger than DPDK 22.11's memif creates.
    MemifRing {
        /// Entries asked for (`2^rsize`).
        entries: usize,
        /// The RX descriptors the ring is sized from when no spec sets it.
        rx_desc: u16,
        /// The raw vdev spec (`link.vdev`) whose own `rsize` asked for the
        /// ring; `None` when the RX descriptors (`link.rx_desc`) did.
        vdev: Option<String>,
    },
    /// A memif socket path that does not fit `sun_path` (`link.socket`).
    SocketPath {
        /// The path.
        path: String,
    },
    /// An af_packet interface name that does not fit `IFNAMSIZ`
    /// (`link.iface`).
    IfaceName {
        /// The interface named ([`Device::af_packet`](super::Device::af_packet)'s
        /// argument, `link.iface`).
        iface: String,
        /// Whether the device opens its veth peer, `iface` + "p"
        /// ([`Device::af_packet_peer`](super::Device::af_packet_peer)).
        peer: bool,
    },
    /// An mbuf data room outside what a pool can hold
    /// (`link.mbuf_data_room`).
    DataRoom {
        /// Bytes asked for.
        data_room: u32,
    },
    /// An MTU whose frames do not fit one mbuf (`link.mtu`).
    MbufTooSmall {
        /// The IP MTU.
        mtu: u32,
        /// Its frame: MTU plus the Ethernet header.
        needed: u64,
        /// Bytes an mbuf holds.
        data_room: u32,
    },
    /// No memory for the no-hugepage mode (`link.mem_mb`).
    NoMemory,
    /// Worker UDP ports (base + index) outside 1..=65535 (`link.udp_port`).
    UdpPorts {
        /// Worker 0's port.
        base: u16,
        /// Workers (one port each).
        workers: usize,
    },
}

impl BuilderError {
    /// The dotted key of the run config that sets the refused value (the
    /// builder's setter for it says which; `cores` for a builder given no
    /// [`Role`]).
    pub fn key(&self) -> &'static str {
        match self {
            BuilderError::NoDevice => "link.kind",
            BuilderError::NoCores { role } => match role {
                Some(Role::Server) => "cores.server",
                Some(Role::Client) => "cores.client",
                None => "cores",
            },
            BuilderError::Descriptors { ring, .. } => ring.key(),
            BuilderError::MemifRing { vdev: Some(_), .. } => "link.vdev",
            BuilderError::MemifRing { vdev: None, .. } => "link.rx_desc",
            BuilderError::SocketPath { .. } => "link.socket",
            BuilderError::IfaceName { .. } => "link.iface",
            BuilderError::DataRoom { .. } => "link.mbuf_data_room",
            BuilderError::MbufTooSmall { .. } => "link.mtu",
            BuilderError::NoMemory => "link.mem_mb",
            BuilderError::UdpPorts { .. } => "link.udp_port",
        }
    }
}

impl std::fmt::Display for BuilderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = self.key();
        match self {
            BuilderError::NoDevice => {
                write!(f, "{key}: no device: call NexusBuilder::device(Device::...)")
            }
            BuilderError::NoCores { .. } => write!(f, "{key} is empty (one core per worker)"),
            BuilderError::Descriptors { value, .. } => write!(
                f,
                "{key} = {value} must be a power of two in {MIN_DESC}..={MAX_DESC}"
            ),
            BuilderError::MemifRing {
                entries,
                rx_desc,
                vdev,
            } => {
                match vdev {
                    Some(spec) => write!(f, "{key} = {spec:?}: its rsize asks for")?,
                    None => write!(f, "{key} = {rx_desc} asks for")?,
                }
                write!(f, " a memif ring of {entries} entries; DPDK 22.11's memif holds at most {MEMIF_MAX_RING} (rsize {MEMIF_MAX_LOG2_RING})")
            }
            BuilderError::SocketPath { path } => write!(
                f,
                "{key} = {path:?}: a memif socket path must be 1..={MAX_SOCKET_PATH} bytes (sun_path)"
            ),
            BuilderError::IfaceName { iface, peer: false } => write!(
                f,
                "{key} = {iface:?}: an af_packet interface name must be 1..={MAX_IFACE_LEN} bytes (IFNAMSIZ; the client's veth peer is {key} + \"p\")"
            ),
            BuilderError::IfaceName { iface, peer: true } => write!(
                f,
                "{key} = {iface:?}: the client opens its veth peer \"{iface}p\", which must be 1..={MAX_IFACE_LEN} bytes (IFNAMSIZ)"
            ),
            BuilderError::DataRoom { data_room } => {
                write!(f, "{key} = {data_room} must be in 1..={MAX_DATA_ROOM}")
            }
            BuilderError::MbufTooSmall {
                mtu,
                needed,
                data_room,
            } => write!(
                f,
                "{key} = {mtu} needs {needed}-byte frames but link.mbuf_data_room = {data_room}"
            ),
            BuilderError::NoMemory => write!(
                f,
                "{key} = 0 must be > 0 (EAL without hugepages needs some memory)"
            ),
            BuilderError::UdpPorts { base: 0, .. } => write!(f, "{key} = 0 must be > 0"),
            BuilderError::UdpPorts { base, workers } => write!(
                f,
                "{key} = {base} + {workers} workers runs past port 65535"
            ),
        }
    }
}

impl std::error::Error for BuilderError {}
