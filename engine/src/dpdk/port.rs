//! Ethernet ports: configure N RX/TX queue pairs with descriptor counts, MTU
//! and promiscuous mode, start, wait for link-up with a timeout, read MAC and
//! counters. Each queue pair is handed out once, as an `RxQueue` + `TxQueue`
//! owned by one worker; the port is stopped and closed when the last handle
//! (the `Port` or a queue) is dropped.

use super::burst_guard;
use super::offload;
use super::start::{link_of, start, LinkWait};
use super::{DpdkError, Mbuf, MbufBatch, Mempool, BURST};
use crate::nic::{ChecksumOffload, Offloads, RssLayout};
use crate::wire::MacAddr;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// How to configure a port before starting it.
#[derive(Clone, Debug)]
pub struct PortConfig {
    /// Queue pairs (one per worker core).
    pub queues: u16,
    /// RX ring size in descriptors, per queue.
    pub rx_desc: u16,
    /// TX ring size in descriptors, per queue.
    pub tx_desc: u16,
    /// IP MTU to set on the device; `None` keeps the driver's default.
    pub mtu: Option<u16>,
    /// Accept frames for other MACs (vdevs and shared L2 segments need it
    /// when the peer's MAC is learned late).
    pub promiscuous: bool,
    /// How long a memif client keeps retrying a failing
    /// `rte_eth_dev_start` (it cannot start until its server listens on
    /// the socket); `None`: one attempt.
    pub start_wait: Option<LinkWait>,
    /// Ask for RX interrupts (`intr_conf.rxq`, the adaptive idle mode);
    /// a driver that refuses the configuration with them is configured
    /// without ([`Port::rx_interrupts`] says which).
    pub rx_interrupts: bool,
    /// Which checksum offloads to take of what the device offers
    /// (`transport.checksum_offload`).
    pub checksum: ChecksumOffload,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            mtu: None,
            promiscuous: true,
            start_wait: None,
            rx_interrupts: false,
            checksum: ChecksumOffload::Auto,
        }
    }
}

/// The port's basic counters (`rte_eth_stats`), cumulative since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames received.
    pub rx_packets: u64,
    /// Frames transmitted.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes transmitted.
    pub tx_bytes: u64,
    /// Frames the NIC/driver dropped because the RX ring was full.
    pub rx_missed: u64,
    /// Erroneous frames received.
    pub rx_errors: u64,
    /// Frames that failed to transmit.
    pub tx_errors: u64,
    /// RX failures because the mempool had no free mbuf.
    pub rx_no_mbuf: u64,
}

/// The link state of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkStatus {
    /// True if the link is up.
    pub up: bool,
    /// Link speed in Mbit/s (0 if unknown).
    pub speed_mbps: u32,
}

#[derive(Debug)]
struct PortInner {
    id: u16,
    name: String,
    queues_taken: Vec<AtomicBool>,
    rx_desc: u16,
    /// Bursts go through the fault guard (memif: `burst_guard`).
    guarded: bool,
    /// Configured with RX interrupts (`intr_conf.rxq = 1`).
    rx_interrupts: bool,
    /// The device's driver (`rte_eth_dev_info.driver_name`).
    driver: String,
    /// The checksum offloads in use.
    offloads: Offloads,
    /// RSS over IPv4/UDP as programmed, when several queues share the port.
    rss: Option<RssLayout>,
    _pool: Arc<Mempool>,
}

impl Drop for PortInner {
    fn drop(&mut self) {
        // SAFETY: the last handle to the port is going away, so no queue is
        // in use; stopping and closing a started port is always allowed.
        unsafe {
            dpdk_sys::rte_eth_dev_stop(self.id);
            dpdk_sys::rte_eth_dev_close(self.id);
        }
    }
}

/// A started port. Cheap to clone (shared handle).
#[derive(Clone, Debug)]
pub struct Port {
    inner: Arc<PortInner>,
}

impl Port {
    /// Finds the port by device name (a vdev's name is its spec up to the first
    /// comma, e.g. `net_memif0`; a PCI NIC's is its address, e.g. `0000:01:00.0`),
    /// configures and starts it. Does not wait for link-up.
    pub fn open(
        _eal: &super::Eal,
        device: &str,
        cfg: &PortConfig,
        pool: Arc<Mempool>,
    ) -> Result<Port, DpdkError> {
        let name = device
            .split(',')
            .next()
            .unwrap_or(device)
            .trim()
            .to_string();
        let id = port_by_name(&name)?;
        let perr = |what: String| DpdkError::PortConfig { port: id, what };
        if cfg.queues == 0 {
            return Err(perr("at least one queue pair is needed".into()));
        }
        // SAFETY: rte_eth_dev_info is plain data; zero is a valid initial value.
        let mut info: dpdk_sys::rte_eth_dev_info = unsafe { std::mem::zeroed() };
        // SAFETY: id is a valid port; info is a valid out-pointer.
        let rc = unsafe { dpdk_sys::rte_eth_dev_info_get(id, &mut info) };
        if rc != 0 {
            return Err(DpdkError::from_rc("rte_eth_dev_info_get", rc));
        }
        if cfg.queues > info.max_rx_queues || cfg.queues > info.max_tx_queues {
            return Err(perr(format!(
                "{} queue pairs requested, the device supports {} RX / {} TX",
                cfg.queues, info.max_rx_queues, info.max_tx_queues
            )));
        }
        if let Some(mtu) = cfg.mtu {
            if mtu < info.min_mtu || mtu > info.max_mtu {
                return Err(perr(format!(
                    "MTU {mtu} outside the device's range {}..={}",
                    info.min_mtu, info.max_mtu
                )));
            }
            let frame = mtu as usize + 14;
            if frame > pool.data_room() as usize {
                return Err(perr(format!(
                    "MTU {mtu} needs {frame}-byte frames but mbufs hold {} bytes",
                    pool.data_room()
                )));
            }
        }
        let mut conf = dpdk_sys::rte_eth_conf::default();
        let mut chosen = offload::configure(&info, cfg.checksum, cfg.queues, &name, &mut conf)?;
        // RX interrupts first (with the offloads and RSS chosen): a driver
        // that refuses them is configured as without.
        let rx_interrupts = cfg.rx_interrupts && configure_rx_interrupts(id, cfg.queues, conf);
        let rc = if rx_interrupts {
            0 // configured already, with them
        } else {
            offload::dev_configure(id, cfg.queues, &mut conf, &mut chosen)
        };
        if rc != 0 {
            return Err(DpdkError::from_rc("rte_eth_dev_configure", rc));
        }
        if let Some(mtu) = cfg.mtu {
            // SAFETY: configured port; the value was range-checked above.
            let rc = unsafe { dpdk_sys::rte_eth_dev_set_mtu(id, mtu) };
            if rc != 0 && rc != -(libc::ENOTSUP) {
                return Err(DpdkError::from_rc("rte_eth_dev_set_mtu", rc));
            }
        }
        // SAFETY: id is valid.
        let socket = unsafe { dpdk_sys::rte_eth_dev_socket_id(id) };
        let socket = if socket < 0 { 0 } else { socket as u32 };
        for q in 0..cfg.queues {
            // SAFETY: configured port, q < queues; NULL rxconf means driver
            // defaults; the pool outlives the port (held in PortInner).
            let rc = unsafe {
                dpdk_sys::rte_eth_rx_queue_setup(
                    id,
                    q,
                    cfg.rx_desc,
                    socket,
                    std::ptr::null(),
                    pool.as_ptr(),
                )
            };
            if rc != 0 {
                return Err(DpdkError::from_rc("rte_eth_rx_queue_setup", rc));
            }
            // SAFETY: as above, NULL txconf means driver defaults.
            let rc = unsafe {
                dpdk_sys::rte_eth_tx_queue_setup(id, q, cfg.tx_desc, socket, std::ptr::null())
            };
            if rc != 0 {
                return Err(DpdkError::from_rc("rte_eth_tx_queue_setup", rc));
            }
        }
        start(_eal, id, &name, cfg.start_wait.as_ref())?;
        // A table the driver will not take leaves RSS unknown: not used.
        let rss = chosen.rss.filter(|l| offload::program_reta(id, l).is_ok());
        if cfg.promiscuous {
            // SAFETY: started port. Some vdevs do not support it; that is fine
            // because they deliver every frame anyway.
            let _ = unsafe { dpdk_sys::rte_eth_promiscuous_enable(id) };
        }
        Ok(Port {
            inner: Arc::new(PortInner {
                id,
                guarded: burst_guard::needed_for(&name),
                rx_interrupts,
                name,
                driver: chosen.driver,
                offloads: chosen.offloads,
                rss,
                queues_taken: (0..cfg.queues).map(|_| AtomicBool::new(false)).collect(),
                rx_desc: cfg.rx_desc,
                _pool: pool,
            }),
        })
    }

    /// Whether the port was configured with RX interrupts (asked for in
    /// [`PortConfig::rx_interrupts`] and accepted by the driver); each
    /// queue's own support is [`RxInterrupt::register`](super::RxInterrupt::register)'s.
    pub fn rx_interrupts(&self) -> bool {
        self.inner.rx_interrupts
    }

    /// The DPDK port id.
    pub fn id(&self) -> u16 {
        self.inner.id
    }
    /// The device name the port was opened by.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    /// RX ring size in descriptors, per queue.
    pub fn rx_desc(&self) -> u16 {
        self.inner.rx_desc
    }
    /// The device's driver name (e.g. `net_memif`).
    pub fn driver(&self) -> &str {
        &self.inner.driver
    }
    /// The checksum offloads in use (`transport.checksum_offload` applied
    /// to what the device offers).
    pub fn offloads(&self) -> Offloads {
        self.inner.offloads
    }
    /// RSS over IPv4/UDP with the engine's key and table, when configured.
    pub fn rss(&self) -> Option<RssLayout> {
        self.inner.rss
    }

    /// The port's MAC address.
    pub fn mac(&self) -> Result<MacAddr, DpdkError> {
        let mut addr = dpdk_sys::rte_ether_addr::default();
        // SAFETY: valid port, valid out-pointer.
        let rc = unsafe { dpdk_sys::rte_eth_macaddr_get(self.inner.id, &mut addr) };
        if rc != 0 {
            return Err(DpdkError::from_rc("rte_eth_macaddr_get", rc));
        }
        Ok(MacAddr(addr.addr_bytes))
    }

    /// The current link state, without waiting.
    pub fn link(&self) -> Result<LinkStatus, DpdkError> {
        link_of(self.inner.id)
    }

    /// Polls the link every 10 ms until it is up, `wait`'s limit passes
    /// ([`DpdkError::LinkDown`]) or its stop flag is set
    /// ([`DpdkError::Stopped`]). A `Duration` is a limit with no flag.
    pub fn wait_link_up(&self, wait: impl Into<LinkWait>) -> Result<LinkStatus, DpdkError> {
        let wait: LinkWait = wait.into();
        wait.link_up(self.inner.id, &self.inner.name, Instant::now())
    }

    /// The port's counters now.
    pub fn stats(&self) -> Result<PortStats, DpdkError> {
        let mut s = dpdk_sys::rte_eth_stats::default();
        // SAFETY: valid port, valid out-pointer.
        let rc = unsafe { dpdk_sys::rte_eth_stats_get(self.inner.id, &mut s) };
        if rc != 0 {
            return Err(DpdkError::from_rc("rte_eth_stats_get", rc));
        }
        Ok(PortStats {
            rx_packets: s.ipackets,
            tx_packets: s.opackets,
            rx_bytes: s.ibytes,
            tx_bytes: s.obytes,
            rx_missed: s.imissed,
            rx_errors: s.ierrors,
            tx_errors: s.oerrors,
            rx_no_mbuf: s.rx_nombuf,
        })
    }

    /// Hands out queue pair `q`, once. The returned queues must be used by one
    /// thread at a time (they are `Send`, not `Sync`).
    pub fn queue_pair(&self, q: u16) -> Result<(RxQueue, TxQueue), DpdkError> {
        let slot =
            self.inner
                .queues_taken
                .get(q as usize)
                .ok_or_else(|| DpdkError::PortConfig {
                    port: self.inner.id,
                    what: format!(
                        "queue {q} does not exist ({} configured)",
                        self.inner.queues_taken.len()
                    ),
                })?;
        if slot.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::PortConfig {
                port: self.inner.id,
                what: format!("queue {q} was already handed out"),
            });
        }
        Ok((
            RxQueue {
                port: self.inner.clone(),
                queue: q,
                guarded: self.inner.guarded,
                checks_checksums: self.inner.offloads.rx_any(),
            },
            TxQueue {
                port: self.inner.clone(),
                queue: q,
                guarded: self.inner.guarded,
                offloads: self.inner.offloads,
            },
        ))
    }
}

/// Receive side of one queue pair.
#[derive(Debug)]
pub struct RxQueue {
    port: Arc<PortInner>,
    queue: u16,
    guarded: bool,
    checks_checksums: bool,
}

/// Transmit side of one queue pair.
#[derive(Debug)]
pub struct TxQueue {
    port: Arc<PortInner>,
    queue: u16,
    guarded: bool,
    offloads: Offloads,
}

impl RxQueue {
    /// The DPDK id of the queue's port.
    pub(crate) fn port_id(&self) -> u16 {
        self.port.id
    }

    /// Whether the port was configured with RX interrupts.
    pub(crate) fn port_has_rx_interrupts(&self) -> bool {
        self.port.rx_interrupts
    }

    /// The queue index within the port.
    pub fn queue(&self) -> u16 {
        self.queue
    }
    /// Whether received mbufs carry the device's checksum verdict
    /// (`nic::RxChecksum::of` their `Mbuf::ol_flags`).
    pub fn checks_checksums(&self) -> bool {
        self.checks_checksums
    }
    /// Frames waiting in the receive ring, if the driver can tell
    /// (`rte_eth_rx_queue_count`; memif, af_packet and net_ring cannot in
    /// DPDK 22.11, and say so with a negative errno).
    pub fn queue_count(&self) -> Option<usize> {
        // SAFETY: reads the queue's descriptor state through the driver's
        // callback; this RxQueue is the only user of (port, queue).
        let n = unsafe { dpdk_sys::shim_rx_queue_count(self.port.id, self.queue) };
        usize::try_from(n).ok()
    }

    /// Receives up to the batch's free room; returns how many arrived.
    #[inline]
    pub fn rx_burst(&mut self, batch: &mut MbufBatch) -> usize {
        let start = batch.len();
        let room = (BURST - start) as u16;
        if room == 0 {
            return 0;
        }
        let ptrs = batch.raw_ptrs_mut();
        // SAFETY: this RxQueue is the only user of (port, queue) (handed out
        // once); the array has room for `room` pointers after `start`.
        let n = unsafe {
            let at = ptrs.as_mut_ptr().add(start);
            match self.guarded {
                true => burst_guard::rx(self.port.id, self.queue, at, room),
                false => dpdk_sys::shim_rx_burst(self.port.id, self.queue, at, room),
            }
        };
        // SAFETY: the driver filled n entries with mbufs it gave up to us.
        unsafe { batch.set_filled(start + n as usize) };
        n as usize
    }
}

impl TxQueue {
    /// The queue index within the port.
    pub fn queue(&self) -> u16 {
        self.queue
    }
    /// The checksum offloads sent mbufs ask of the device
    /// (`Mbuf::offload_checksums`).
    pub fn offloads(&self) -> Offloads {
        self.offloads
    }
    /// Hands the batch's mbufs to the driver; the ones it accepted leave the
    /// batch, the rest stay at the front (retry or `clear()` them).
    #[inline]
    pub fn tx_burst(&mut self, batch: &mut MbufBatch) -> usize {
        let len = batch.len() as u16;
        if len == 0 {
            return 0;
        }
        let ptrs = batch.raw_ptrs_mut();
        // SAFETY: this TxQueue is the only user of (port, queue); the first
        // len entries are valid mbufs; the driver takes ownership of the n
        // it accepts, which we then forget.
        let n = unsafe {
            match self.guarded {
                true => burst_guard::tx(self.port.id, self.queue, ptrs.as_mut_ptr(), len),
                false => dpdk_sys::shim_tx_burst(self.port.id, self.queue, ptrs.as_mut_ptr(), len),
            }
        };
        batch.forget_front(n as usize);
        n as usize
    }

    /// Sends one mbuf; gives it back if the driver's ring is full.
    pub fn tx_one(&mut self, m: Mbuf) -> Result<(), Mbuf> {
        let mut raw = m.into_raw().as_ptr();
        // SAFETY: as tx_burst, for one mbuf.
        let n = unsafe {
            match self.guarded {
                true => burst_guard::tx(self.port.id, self.queue, &mut raw, 1),
                false => dpdk_sys::shim_tx_burst(self.port.id, self.queue, &mut raw, 1),
            }
        };
        if n == 1 {
            Ok(())
        } else {
            // SAFETY: the driver did not take it; we still own it.
            Err(unsafe { Mbuf::from_raw(std::ptr::NonNull::new_unchecked(raw)) })
        }
    }
}

/// Configures the port as `conf` says plus `intr_conf.rxq = 1`: whether
/// the driver accepted it. On a refusal the port is left unconfigured and
/// the caller configures it without (the adaptive idle mode then sleeps on
/// a timer). A driver may also accept here and refuse at
/// `rx_intr_enable`; both end in the timed sleep.
fn configure_rx_interrupts(id: u16, queues: u16, mut conf: dpdk_sys::rte_eth_conf) -> bool {
    conf.intr_conf.set_rxq(1);
    // SAFETY: id is a valid, stopped port; conf is the caller's
    // rte_eth_conf (offloads and RSS the device advertises, whose key
    // pointer lives through the call) with the RX interrupt bit set.
    let rc = unsafe { dpdk_sys::rte_eth_dev_configure(id, queues, queues, &conf) };
    rc == 0
}

fn port_by_name(name: &str) -> Result<u16, DpdkError> {
    let c_name = CString::new(name).map_err(|_| DpdkError::BadArgument {
        arg: name.into(),
        why: "device name contains a NUL byte",
    })?;
    let mut id = 0u16;
    // SAFETY: valid C string and out-pointer.
    let rc = unsafe { dpdk_sys::rte_eth_dev_get_port_by_name(c_name.as_ptr(), &mut id) };
    if rc == 0 {
        return Ok(id);
    }
    let names = port_names();
    Err(DpdkError::NoSuchPort {
        name: name.into(),
        available: names.len() as u16,
        names: if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        },
    })
}

/// Names of every port EAL probed.
pub fn port_names() -> Vec<String> {
    let mut out = Vec::new();
    for id in 0..dpdk_sys::RTE_MAX_ETHPORTS as u16 {
        // SAFETY: any port number may be asked about.
        if unsafe { dpdk_sys::rte_eth_dev_is_valid_port(id) } == 0 {
            continue;
        }
        let mut buf = [0 as std::os::raw::c_char; 64];
        // SAFETY: valid port; buf holds RTE_ETH_NAME_MAX_LEN (64) bytes.
        if unsafe { dpdk_sys::rte_eth_dev_get_name_by_port(id, buf.as_mut_ptr()) } == 0 {
            // SAFETY: DPDK wrote a NUL-terminated name into buf.
            out.push(
                unsafe { CStr::from_ptr(buf.as_ptr()) }
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    out
}
