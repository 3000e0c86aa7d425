//! What the engine takes from a NIC's capabilities, decided without touching
//! one: which checksum offloads to use ([`checksum`]: the device's TX/RX
//! capability bits and `transport.checksum_offload` in, the offloads and the
//! per-mbuf flags out, the RX verdict from an mbuf's flags), and how several
//! workers share one port ([`steer`]: rte_flow, else RSS with client source
//! ports chosen by the [`toeplitz`](mod@toeplitz) hash, else the queue pairing of memif and
//! virtio), and the UDP port a client worker sends from so that RSS carries
//! its sessions to their server workers ([`ports`]). The `dpdk` layer asks the driver; these decide, and are tested
//! against fake drivers.

pub mod checksum;
pub mod ports;
pub mod steer;
pub mod toeplitz;

pub use checksum::{ChecksumOffload, OffloadError, Offloads, RxChecksum};
pub use ports::{worker_port, NoRssPort, RssPorts};
pub use steer::{decide, SteerDriver, SteerError, Steering};
pub use toeplitz::{hash_ipv4_udp, toeplitz, RssLayout, RSS_KEY};
