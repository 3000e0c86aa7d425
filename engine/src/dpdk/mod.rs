//! The safe layer over DPDK: EAL initialisation from a typed builder, mempools,
//! ports with queue pairs, owned mbufs and fixed-size bursts, per-core workers
//! known to EAL, and the TSC clock. Together with `dpdk-sys` this module is the
//! only place with `unsafe`; every block says why it is sound. DPDK failures
//! become `DpdkError`s carrying `rte_strerror` text.
//!
//! Threading contract: an `RxQueue`/`TxQueue` is owned by exactly one worker
//! (DPDK queues are not thread-safe); `Eal`, `Mempool` and `Port` are shared.

mod burst_guard;
mod clock;
mod eal;
mod error;
mod flow;
mod lcore;
mod mbuf;
mod memif;
mod mempool;
mod offload;
mod port;
mod ring_wire;
mod rx_intr;
mod start;

pub use burst_guard::faults as burst_faults;
pub use clock::TscClock;
pub use eal::{Eal, EalBuilder};
pub use error::DpdkError;
pub use lcore::{current_lcore, LcoreId};
pub use mbuf::{Mbuf, MbufBatch, BURST};
pub use memif::memif_server_socket_in_use;
pub use mempool::Mempool;
pub use offload::PortSteer;
pub use port::{port_names, LinkStatus, Port, PortConfig, PortStats, RxQueue, TxQueue};
pub use ring_wire::create_crossover_ring;
pub use rx_intr::RxInterrupt;
pub use start::LinkWait;

/// The DPDK version the engine was built against (e.g. "22.11.4").
pub const DPDK_VERSION: &str = dpdk_sys::DPDK_VERSION;
