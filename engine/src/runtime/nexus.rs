//! The process-wide object: EAL, the mbuf pool, the port with one queue pair
//! per worker core, and the handler table every worker copies. Workers run as
//! EAL lcores (pinned, with lcore ids and mempool caches).

use super::{HandlerTable, RuntimeError};
use crate::dpdk::{Eal, EalBuilder, LcoreId, Mempool, Port, PortConfig};
use crate::wire::MacAddr;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct NexusConfig {
    pub eal: EalBuilder,
    /// DPDK device name (a vdev's name, e.g. `net_memif0`, or a PCI address).
    pub device: String,
    /// Queue pairs, descriptors, MTU. `queues` is set to the number of cores.
    pub port: PortConfig,
    /// Mbufs in the pool; 0 picks a size from the queue and descriptor counts.
    pub pool_mbufs: u32,
    /// Frame bytes one mbuf holds (must fit the MTU plus the Ethernet header).
    pub data_room: u16,
    pub link_timeout: Duration,
    /// With several workers on one port, steer UDP port `base + i` to queue
    /// `i` with rte_flow (real NICs). `None`: the device pairs queues itself
    /// (memif: queue i reaches the peer's queue i) or there is one worker.
    pub steer_udp_base: Option<u16>,
}

/// Which worker a closure passed to `Nexus::run` is.
#[derive(Clone, Copy, Debug)]
pub struct WorkerInfo {
    /// 0-based; equals the worker's queue pair and UDP port offset.
    pub index: u16,
    pub lcore: LcoreId,
}

pub struct Nexus<A> {
    eal: Eal,
    pool: Arc<Mempool>,
    port: Port,
    mac: MacAddr,
    handlers: HandlerTable<A>,
}

impl<A> std::fmt::Debug for Nexus<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nexus")
            .field("port", &self.port.name())
            .field("mac", &self.mac)
            .field("lcores", &self.eal.lcores())
            .finish()
    }
}

impl<A> Nexus<A> {
    /// Initialises EAL, creates the pool, opens and starts the port with one
    /// queue pair per EAL core, and waits for link-up.
    pub fn new(mut cfg: NexusConfig, handlers: HandlerTable<A>) -> Result<Self, RuntimeError> {
        let eal = cfg.eal.clone().init()?;
        let workers = eal.lcores().len() as u16;
        cfg.port.queues = workers;
        cfg.port.start_retry = cfg.link_timeout;
        let per_queue =
            cfg.port.rx_desc as u32 + cfg.port.tx_desc as u32 + 4 * crate::dpdk::BURST as u32 + 512;
        let n = if cfg.pool_mbufs == 0 {
            per_queue * workers as u32
        } else {
            cfg.pool_mbufs
        };
        let pool = Arc::new(Mempool::new(&eal, "rpc_pool", n, 256, cfg.data_room)?);
        let port = Port::open(&eal, &cfg.device, &cfg.port, pool.clone())?;
        port.wait_link_up(cfg.link_timeout)?;
        if let (Some(base), true) = (cfg.steer_udp_base, workers > 1) {
            for q in 0..workers {
                port.steer_udp_dst_port(base + q, q).map_err(|e| {
                    RuntimeError::Setup(format!(
                        "{e}; this device cannot steer by UDP port: run one worker per process (one core in cores.*), one process per port or VF"
                    ))
                })?;
            }
        }
        let mac = port.mac()?;
        Ok(Nexus {
            eal,
            pool,
            port,
            mac,
            handlers,
        })
    }

    pub fn eal(&self) -> &Eal {
        &self.eal
    }
    pub fn pool(&self) -> &Arc<Mempool> {
        &self.pool
    }
    pub fn port(&self) -> &Port {
        &self.port
    }
    pub fn mac(&self) -> MacAddr {
        self.mac
    }
    pub fn handlers(&self) -> &HandlerTable<A> {
        &self.handlers
    }
    pub fn workers(&self) -> usize {
        self.eal.lcores().len()
    }

    /// Runs `f` once per worker core, each on its own pinned lcore, and
    /// returns when all have returned.
    pub fn run(&self, f: &(dyn Fn(WorkerInfo) + Sync)) -> Result<(), RuntimeError> {
        let lcores = self.eal.lcores().to_vec();
        self.eal.run_on_lcores(&|lcore| {
            let index = lcores.iter().position(|&l| l == lcore).unwrap_or(0) as u16;
            f(WorkerInfo { index, lcore })
        })?;
        Ok(())
    }
}

// SAFETY-free marker reasoning: Nexus holds only Sync parts (Eal is plain
// data, Mempool and Port are Sync) plus the handler table of fn pointers and
// Arc'd Sync closures, so sharing &Nexus across worker lcores is fine when A
// is anything: handlers never hold an A.
