//! The process-wide object: EAL, the mbuf pool, the port with one queue pair
//! per worker core, and the handler table every worker copies. Workers run as
//! EAL lcores (pinned, with lcore ids and mempool caches).

use super::builder::NexusBuilder;
use super::device::Device;
use super::{HandlerTable, Rpc, RuntimeError, StopHandle};
use crate::dpdk::{
    DpdkError, Eal, EalBuilder, LcoreId, LinkWait, Mempool, Port, PortConfig, PortSteer,
};
use crate::nic::{self, worker_port, Steering};
use crate::proto::{EndpointConfig, PeerAddr, DEFAULT_IP};
use crate::wire::MacAddr;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything [`Nexus::new`] needs, spelled out. Prefer [`Nexus::builder`]
/// (the examples and the apps use it), which derives the EAL arguments, the
/// port name, the ring sizes and promiscuous mode from one [`Device`] and
/// checks DPDK's limits first; [`NexusBuilder::config`] shows what it
/// derived.
#[derive(Clone, Debug)]
pub struct NexusConfig {
    /// EAL arguments (cores, vdevs, memory).
    pub eal: EalBuilder,
    /// DPDK device name (a vdev's name, e.g. `net_memif0`, or a PCI address).
    pub device: String,
    /// Queue pairs, descriptors, MTU. `queues` is set to the number of cores.
    pub port: PortConfig,
    /// Mbufs in the pool; 0 picks a size from the queue and descriptor counts.
    pub pool_mbufs: u32,
    /// Mbufs each core caches from the pool (0: no cache).
    pub pool_cache: u32,
    /// Frame bytes one mbuf holds (must fit the MTU plus the Ethernet header).
    pub data_room: u16,
    /// How long to wait for link-up (and for a memif client's server);
    /// `None`: as long as it takes.
    pub link_timeout: Option<Duration>,
    /// Ends that wait when set ([`RuntimeError::Stopped`]).
    pub stop: Option<StopHandle>,
    /// Worker 0's UDP port (worker `i` listens on `udp_base + i`): what
    /// steering matches with several workers on one port.
    pub udp_base: u16,
    /// Each worker's UDP port where it is not `udp_base + i` (a client's
    /// ports chosen for RSS); empty: `udp_base + i` for all.
    pub udp_ports: Vec<u16>,
    /// The device cannot deliver each worker's frames to its queue by
    /// itself (a real NIC): no steering method ([`nic::decide`]) is an
    /// error rather than an unsteered port.
    pub steer_required: bool,
}

/// Which worker a closure passed to `Nexus::run` is.
#[derive(Clone, Copy, Debug)]
pub struct WorkerInfo {
    /// 0-based; equals the worker's queue pair and UDP port offset.
    pub index: u16,
    /// The EAL lcore (CPU core) it runs on.
    pub lcore: LcoreId,
}

/// A worker's failure, as [`Nexus::run`] reports it.
#[derive(Debug)]
pub struct WorkerError<E> {
    /// The worker's index ([`WorkerInfo::index`]).
    pub index: u16,
    /// What its closure returned.
    pub error: E,
}

/// Why [`Nexus::run`] failed.
#[derive(Debug)]
pub enum RunError<E> {
    /// The workers could not be launched, or one panicked.
    Launch(RuntimeError),
    /// These workers returned an error (by index; the others succeeded).
    Workers(Vec<WorkerError<E>>),
}

impl<E: std::fmt::Display> std::fmt::Display for RunError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Launch(e) => write!(f, "launching the workers: {e}"),
            RunError::Workers(errs) => {
                for (i, w) in errs.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "worker {}: {}", w.index, w.error)?;
                }
                Ok(())
            }
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for RunError<E> {}

/// The process-wide object of the DPDK runtime: EAL, the mbuf pool, the
/// port with one queue pair per worker core, and the request handlers of
/// application state `A` (`()` for a process without handlers).
pub struct Nexus<A = ()> {
    eal: Eal,
    pool: Arc<Mempool>,
    port: Port,
    mac: MacAddr,
    handlers: HandlerTable<A>,
    /// Frames the port's RX ring really holds (for lossless reservations).
    rx_ring_entries: usize,
    /// How each worker's frames reach its queue.
    steering: Steering,
    /// UDP port of worker 0's endpoint; worker i listens on base + i
    /// unless `udp_ports` names its port.
    base_udp_port: u16,
    /// Each worker's UDP port where it is not base + i.
    udp_ports: Vec<u16>,
    /// The process's IPv4 address, every worker's (`NexusBuilder::ip`).
    ip: Ipv4Addr,
}

impl Nexus<()> {
    /// A builder with safe defaults (no hugepages, no PCI scan, 1024
    /// descriptors, derived pool size); name the device with
    /// [`NexusBuilder::device`], then [`NexusBuilder::build`].
    pub fn builder() -> NexusBuilder {
        NexusBuilder::new()
    }
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
    /// queue pair per EAL core, and waits for link-up (as long as
    /// `cfg.link_timeout` says, or until `cfg.stop` is set).
    pub fn new(cfg: NexusConfig, handlers: HandlerTable<A>) -> Result<Self, RuntimeError> {
        Self::open(cfg, None, handlers)
    }

    /// `new`, creating the device after EAL init when it is not a vdev
    /// (the in-process ring wire).
    pub(super) fn open(
        mut cfg: NexusConfig,
        device: Option<&Device>,
        handlers: HandlerTable<A>,
    ) -> Result<Self, RuntimeError> {
        let wait = LinkWait {
            limit: cfg.link_timeout,
            stop: cfg.stop.as_ref().map(StopHandle::flag),
        };
        if let Some(d) = device {
            d.check_free()?;
            if let Some(need) = d.peer_need() {
                super::peer_check::check(need, &wait)?;
            }
        }
        let eal = cfg.eal.clone().init()?;
        let workers = eal.lcores().len() as u16;
        cfg.port.queues = workers;
        cfg.port.start_wait = Some(wait.clone());
        // What a stopped wait names: the device as a person knows it.
        let stopped = |e: DpdkError| match e {
            DpdkError::Stopped { .. } => RuntimeError::Stopped {
                device: device.map_or_else(|| cfg.device.clone(), Device::to_string),
            },
            e => e.into(),
        };
        let per_queue =
            cfg.port.rx_desc as u32 + cfg.port.tx_desc as u32 + 4 * crate::dpdk::BURST as u32 + 512;
        let n = if cfg.pool_mbufs == 0 {
            per_queue * workers as u32
        } else {
            cfg.pool_mbufs
        };
        let create = match device.is_some_and(Device::needs_packed_pool) {
            true => Mempool::new_packed,
            false => Mempool::new,
        };
        let pool = Arc::new(create(&eal, "rpc_pool", n, cfg.pool_cache, cfg.data_room)?);
        if let Some(d) = device {
            d.create_after_eal(workers, cfg.port.rx_desc)?;
        }
        let rx_ring_entries = match device {
            Some(d) => d.rx_ring_entries(cfg.port.rx_desc),
            None => cfg.port.rx_desc as usize,
        };
        let port = Port::open(&eal, &cfg.device, &cfg.port, pool.clone()).map_err(stopped)?;
        port.wait_link_up(wait).map_err(stopped)?;
        let ports: Vec<u16> = (0..workers)
            .map(|i| worker_port(&cfg.udp_ports, cfg.udp_base, i))
            .collect();
        let steering = nic::decide(
            &mut PortSteer::new(&port),
            port.name(),
            &ports,
            cfg.steer_required,
        )
        .map_err(|e| RuntimeError::Setup(e.to_string()))?;
        let mac = port.mac()?;
        Ok(Nexus {
            eal,
            pool,
            port,
            mac,
            handlers,
            rx_ring_entries,
            steering,
            base_udp_port: EndpointConfig::default().local.port,
            udp_ports: Vec::new(),
            ip: DEFAULT_IP,
        })
    }

    pub(super) fn set_udp_ports(&mut self, base: u16, ports: &[u16]) {
        self.base_udp_port = base;
        self.udp_ports = ports.to_vec();
    }

    pub(super) fn set_ip(&mut self, ip: Ipv4Addr) {
        self.ip = ip;
    }

    /// The initialised EAL.
    pub fn eal(&self) -> &Eal {
        &self.eal
    }
    /// The mbuf pool every worker allocates frames from.
    pub fn pool(&self) -> &Arc<Mempool> {
        &self.pool
    }
    /// The started port.
    pub fn port(&self) -> &Port {
        &self.port
    }
    /// The port's MAC address.
    pub fn mac(&self) -> MacAddr {
        self.mac
    }
    /// How each worker's frames reach its queue (decided at startup).
    pub fn steering(&self) -> Steering {
        self.steering
    }
    /// What a process prints at startup about its port: driver, checksum
    /// offloads in use, steering.
    pub fn port_summary(&self) -> String {
        format!(
            "driver {}, {}, {}",
            self.port.driver(),
            self.port.offloads(),
            self.steering
        )
    }
    /// The request handlers every worker's [`Rpc`] copies.
    pub fn handlers(&self) -> &HandlerTable<A> {
        &self.handlers
    }
    /// Number of workers (EAL lcores, queue pairs).
    pub fn workers(&self) -> usize {
        self.eal.lcores().len()
    }
    /// Frames the port's RX ring really holds per queue (memif and
    /// af_packet size it from devargs, not from the RX descriptor count).
    pub fn rx_ring_entries(&self) -> usize {
        self.rx_ring_entries
    }
    /// The process's IPv4 address (`NexusBuilder::ip`), every worker's.
    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }
    /// The UDP port of worker `index`'s endpoint (base + index, unless
    /// `NexusBuilder::worker_udp_ports` named it).
    pub fn udp_port(&self, index: u16) -> u16 {
        worker_port(&self.udp_ports, self.base_udp_port, index)
    }

    /// Where worker `index`'s endpoint listens when it runs with
    /// [`endpoint_config`](Self::endpoint_config) unchanged (this port's MAC,
    /// [`ip`](Self::ip), [`udp_port`](Self::udp_port)): what another worker
    /// of the same process connects to. It prints as `IP:PORT`, the
    /// address a process elsewhere on the link parses into a [`PeerAddr`].
    pub fn worker_addr(&self, index: u16) -> PeerAddr {
        PeerAddr {
            mac: Some(self.mac),
            ip: self.ip,
            port: self.udp_port(index),
        }
    }

    /// The endpoint configuration of worker `index`: `EndpointConfig::default()`
    /// (a fresh random seed) with `local.ip` = [`ip`](Self::ip), `local.port` =
    /// [`udp_port`](Self::udp_port) and `rx_ring_entries` from the port's
    /// real RX ring. Change anything and hand it to [`Rpc::new`]
    /// (`local.mac` is the port's whatever it says).
    pub fn endpoint_config(&self, index: u16) -> EndpointConfig {
        let mut c = EndpointConfig::default();
        c.local.port = self.udp_port(index);
        c.local.mac = self.mac;
        c.rx_ring_entries = self.rx_ring_entries;
        c
    }

    /// The endpoint of worker `index` with [`endpoint_config`](Self::endpoint_config):
    /// the way to make a worker's [`Rpc`]. (`Rpc::new` takes a changed
    /// configuration instead, for settings of your own.)
    pub fn rpc(&self, index: u16) -> Result<Rpc<A>, RuntimeError> {
        Rpc::new(self, index, self.endpoint_config(index))
    }

    /// Runs `f` once per worker core, each on its own pinned lcore (worker
    /// 0 on the calling thread), and returns when all have returned: `Ok`
    /// if every worker did, else every failing worker's index and error.
    ///
    /// ```no_run
    /// # use engine::runtime::{Nexus, Device, RuntimeError};
    /// let nexus = Nexus::builder().device(Device::ring("demo")).cores(&[0, 1]).build_client()?;
    /// nexus.run(&|w| -> Result<(), RuntimeError> {
    ///     let _rpc = nexus.rpc(w.index)?;
    ///     Ok(())
    /// }).map_err(|e| RuntimeError::Setup(e.to_string()))?;
    /// # Ok::<(), RuntimeError>(())
    /// ```
    pub fn run<E: Send>(
        &self,
        f: &(dyn Fn(WorkerInfo) -> Result<(), E> + Sync),
    ) -> Result<(), RunError<E>> {
        let failed = Mutex::new(Vec::new());
        let launched = self.launch(&|w| {
            if let Err(error) = f(w) {
                let mut v = failed.lock().unwrap_or_else(|p| p.into_inner());
                v.push(WorkerError {
                    index: w.index,
                    error,
                });
            }
        });
        let mut failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
        launched.map_err(RunError::Launch)?;
        if failed.is_empty() {
            return Ok(());
        }
        failed.sort_by_key(|w| w.index);
        Err(RunError::Workers(failed))
    }

    /// Runs `f` once per worker core, each on its own pinned lcore, and
    /// returns when all have returned (the launch behind [`run`](Self::run)).
    fn launch(&self, f: &(dyn Fn(WorkerInfo) + Sync)) -> Result<(), RuntimeError> {
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
