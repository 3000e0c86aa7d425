//! [`Nexus::builder`]: a [`Nexus`] from a [`Device`] named once, with the
//! hardware-free defaults the apps use (no hugepages, no PCI scan, no shared
//! runtime files), and the per-worker [`EndpointConfig`] derived from the
//! port's real receive ring.

use super::{HandlerTable, Nexus, NexusConfig, RuntimeError};
use crate::dpdk::{EalBuilder, PortConfig};
use crate::proto::EndpointConfig;
use std::time::Duration;

/// Which DPDK device a [`Nexus`] runs on. Each constructor derives both the
/// EAL argument (`--vdev SPEC` or `-a ADDR`) and the port name, so the two
/// cannot disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Memif { server: bool, socket: String },
    Ring { name: String },
    AfPacket { iface: String },
    Pci { addr: String },
}

/// memif's ring size is `2^rsize`; DPDK 22.11 accepts at most 14.
const MEMIF_MAX_LOG2_RING: u32 = 14;

impl Device {
    /// The listening side of a shared-memory wire between two processes
    /// (`net_memif`). Start it before the client, or let the client wait.
    ///
    /// memif rings are created by the client with the client's `rsize`
    /// (the server only sets an upper bound), so this end's real RX ring is
    /// as large as the *client's*: give both processes the same RX
    /// descriptor count, or lossless accounting on the server is off.
    pub fn memif_server(socket: impl Into<String>) -> Self {
        Device {
            kind: Kind::Memif {
                server: true,
                socket: socket.into(),
            },
        }
    }

    /// The connecting side of a memif wire; it waits for the server up to
    /// the link timeout ([`NexusBuilder::link_timeout`]).
    pub fn memif_client(socket: impl Into<String>) -> Self {
        Device {
            kind: Kind::Memif {
                server: false,
                socket: socket.into(),
            },
        }
    }

    /// An in-process wire (rings, no vdev): worker `2k`'s frames arrive at
    /// worker `2k + 1` and back, so two workers of one process talk to each
    /// other; a last unpaired worker hears itself. The port is named
    /// `net_ring_NAME` (`name` as given if it starts with `net_ring_`).
    pub fn ring(name: impl Into<String>) -> Self {
        let name = name.into();
        let name = if name.starts_with("net_ring_") {
            name
        } else {
            format!("net_ring_{name}")
        };
        Device {
            kind: Kind::Ring { name },
        }
    }

    /// Kernel AF_PACKET on interface `iface` (`net_af_packet`, e.g. one end
    /// of a veth pair).
    pub fn af_packet(iface: impl Into<String>) -> Self {
        Device {
            kind: Kind::AfPacket {
                iface: iface.into(),
            },
        }
    }

    /// A real NIC by PCI address (bound to a DPDK driver; usually needs
    /// hugepages: [`NexusBuilder::hugepages`]).
    pub fn pci(addr: impl Into<String>) -> Self {
        Device {
            kind: Kind::Pci { addr: addr.into() },
        }
    }

    /// The DPDK port name (`net_memif0`, `net_af_packet0`, the ring's name,
    /// or the PCI address).
    pub fn port_name(&self) -> String {
        match &self.kind {
            Kind::Memif { .. } => "net_memif0".into(),
            Kind::Ring { name } => name.clone(),
            Kind::AfPacket { .. } => "net_af_packet0".into(),
            Kind::Pci { addr } => addr.clone(),
        }
    }

    /// The `--vdev` spec for `queues` queue pairs of `rx_desc` entries, or
    /// `None` (a PCI NIC, or the ring wire, which is created after EAL init).
    /// memif and af_packet size their rings from these devargs, not from the
    /// RX descriptor count, so the spec carries the size.
    pub fn vdev_spec(&self, queues: u16, rx_desc: u16) -> Option<String> {
        match &self.kind {
            Kind::Memif { server, socket } => Some(format!(
                "net_memif0,role={},socket={socket},rsize={}",
                if *server { "server" } else { "client" },
                memif_log2(rx_desc)
            )),
            Kind::AfPacket { iface } => Some(format!(
                "net_af_packet0,iface={iface},qpairs={},framecnt={rx_desc}",
                queues.max(1)
            )),
            Kind::Ring { .. } | Kind::Pci { .. } => None,
        }
    }

    /// Adds this device's EAL arguments to `eal`.
    pub fn apply(&self, eal: EalBuilder, queues: u16, rx_desc: u16) -> EalBuilder {
        match (&self.kind, self.vdev_spec(queues, rx_desc)) {
            (_, Some(spec)) => eal.vdev(spec),
            (Kind::Pci { addr }, None) => eal.pci(addr.clone()),
            _ => eal,
        }
    }

    /// Frames one RX queue's ring really holds with `rx_desc` descriptors:
    /// memif `2^rsize`, af_packet `framecnt`, the ring wire one less than its
    /// power-of-two size, a NIC `rx_desc`.
    pub fn rx_ring_entries(&self, rx_desc: u16) -> usize {
        match &self.kind {
            Kind::Memif { .. } => 1usize << memif_log2(rx_desc),
            Kind::AfPacket { .. } | Kind::Pci { .. } => rx_desc as usize,
            Kind::Ring { .. } => ring_slots(rx_desc) as usize - 1,
        }
    }

    /// Whether this is the client end of a memif wire.
    fn is_memif_client(&self) -> bool {
        matches!(self.kind, Kind::Memif { server: false, .. })
    }

    /// Creates a device that is not a vdev (the ring wire), after EAL init.
    pub(super) fn create_after_eal(&self, queues: u16, rx_desc: u16) -> Result<(), RuntimeError> {
        if let Kind::Ring { name } = &self.kind {
            crate::dpdk::create_crossover_ring(name, queues, ring_slots(rx_desc))?;
        }
        Ok(())
    }
}

fn memif_log2(rx_desc: u16) -> u32 {
    rx_desc.max(2).ilog2().min(MEMIF_MAX_LOG2_RING)
}

fn ring_slots(rx_desc: u16) -> u32 {
    (rx_desc as u32).max(2).next_power_of_two()
}

/// Builds a [`Nexus`] (see [`Nexus::builder`]). Defaults: core 0 only, no
/// hugepages (512 MiB of ordinary memory), no PCI scan unless a PCI device,
/// `--no-shconf` unless a file prefix is set, EAL log level 4 (warnings),
/// 1024 RX and TX descriptors, the driver's MTU, a pool sized from the queue
/// and descriptor counts, 2048-byte mbufs, a 10 s link timeout.
#[derive(Clone, Debug)]
pub struct NexusBuilder {
    device: Option<Device>,
    cores: Vec<u32>,
    file_prefix: Option<String>,
    no_huge_mb: Option<u32>,
    log_level: u32,
    eal_extra: Vec<String>,
    rx_desc: u16,
    tx_desc: u16,
    mtu: Option<u16>,
    pool_mbufs: u32,
    data_room: u16,
    link_timeout: Duration,
    steer_udp: bool,
    base_udp_port: u16,
}

impl Default for NexusBuilder {
    fn default() -> Self {
        NexusBuilder {
            device: None,
            cores: vec![0],
            file_prefix: None,
            no_huge_mb: Some(512),
            log_level: 4,
            eal_extra: Vec::new(),
            rx_desc: 1024,
            tx_desc: 1024,
            mtu: None,
            pool_mbufs: 0,
            data_room: 2048,
            link_timeout: Duration::from_secs(10),
            steer_udp: false,
            base_udp_port: EndpointConfig::default().local.port,
        }
    }
}

impl NexusBuilder {
    /// The defaults (see the type's docs); a device must still be named.
    pub fn new() -> Self {
        Self::default()
    }
    /// The device to run on (required).
    pub fn device(mut self, device: Device) -> Self {
        self.device = Some(device);
        self
    }
    /// CPU cores, one worker each; the first runs on the calling thread.
    pub fn cores(mut self, cores: &[u32]) -> Self {
        self.cores = cores.to_vec();
        self
    }
    /// EAL `--file-prefix` (runtime files under it); unset: `--no-shconf`.
    /// Two DPDK processes on one host need different prefixes if set.
    pub fn file_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.file_prefix = Some(prefix.into());
        self
    }
    /// Memory for the no-hugepage mode, in MiB (default 512).
    pub fn memory_mb(mut self, mb: u32) -> Self {
        self.no_huge_mb = Some(mb);
        self
    }
    /// Use hugepages instead of ordinary memory (real NICs).
    pub fn hugepages(mut self) -> Self {
        self.no_huge_mb = None;
        self
    }
    /// EAL log level, 1 (critical) .. 8 (debug); default 4.
    pub fn log_level(mut self, level: u32) -> Self {
        self.log_level = level;
        self
    }
    /// A raw EAL argument, appended last.
    pub fn eal_arg(mut self, arg: impl Into<String>) -> Self {
        self.eal_extra.push(arg.into());
        self
    }
    /// RX and TX descriptors per queue (default 1024 each).
    pub fn descriptors(mut self, rx: u16, tx: u16) -> Self {
        self.rx_desc = rx;
        self.tx_desc = tx;
        self
    }
    /// IP MTU to set on the device (default: the driver's).
    pub fn mtu(mut self, mtu: u16) -> Self {
        self.mtu = Some(mtu);
        self
    }
    /// Mbufs in the pool; 0 (the default) derives it from the queue and
    /// descriptor counts.
    pub fn pool_mbufs(mut self, n: u32) -> Self {
        self.pool_mbufs = n;
        self
    }
    /// Frame bytes one mbuf holds (at least the MTU plus 14; default 2048).
    pub fn data_room(mut self, bytes: u16) -> Self {
        self.data_room = bytes;
        self
    }
    /// How long to wait for link-up and, on a memif client, for the server.
    /// Takes a `std::time::Duration` or an [`engine::time::Duration`](crate::time::Duration).
    pub fn link_timeout(mut self, d: impl Into<Duration>) -> Self {
        self.link_timeout = d.into();
        self
    }
    /// With several workers on a real NIC, steer UDP port `base + i` to
    /// queue `i` with rte_flow.
    pub fn steer_udp(mut self, on: bool) -> Self {
        self.steer_udp = on;
        self
    }
    /// The UDP port of worker 0's endpoint; worker i uses base + i
    /// (default 31850).
    pub fn base_udp_port(mut self, port: u16) -> Self {
        self.base_udp_port = port;
        self
    }

    /// The endpoint configuration worker `index` will get (see
    /// [`Nexus::endpoint_config`]; the MAC is known only after `build`).
    pub fn endpoint_config(&self, index: u16) -> EndpointConfig {
        let mut c = EndpointConfig::default();
        c.local.port = self.base_udp_port + index;
        if let Some(d) = &self.device {
            c.rx_ring_entries = d.rx_ring_entries(self.rx_desc);
        }
        c
    }

    /// The [`NexusConfig`] this builder stands for (EAL arguments included).
    pub fn config(&self) -> Result<NexusConfig, RuntimeError> {
        let device = self.device.as_ref().ok_or_else(|| {
            RuntimeError::Setup("no device: call NexusBuilder::device(Device::...)".into())
        })?;
        let queues = self.cores.len() as u16;
        let mut eal = EalBuilder::new()
            .cores(&self.cores)
            .no_huge(self.no_huge_mb)
            .file_prefix(self.file_prefix.clone())
            .log_level(self.log_level);
        eal = device.apply(eal, queues, self.rx_desc);
        for a in &self.eal_extra {
            eal = eal.extra_arg(a.clone());
        }
        Ok(NexusConfig {
            eal,
            device: device.port_name(),
            port: PortConfig {
                queues,
                rx_desc: self.rx_desc,
                tx_desc: self.tx_desc,
                mtu: self.mtu,
                promiscuous: true,
                start_retry: if device.is_memif_client() {
                    self.link_timeout
                } else {
                    Duration::ZERO
                },
            },
            pool_mbufs: self.pool_mbufs,
            data_room: self.data_room,
            link_timeout: self.link_timeout,
            steer_udp_base: self.steer_udp.then_some(self.base_udp_port),
        })
    }

    /// Initialises EAL, creates the pool, opens and starts the port and
    /// waits for link-up. Once per process (EAL cannot start twice).
    pub fn build<A>(self, handlers: HandlerTable<A>) -> Result<Nexus<A>, RuntimeError> {
        let cfg = self.config()?;
        let mut nexus = Nexus::open(cfg, self.device.as_ref(), handlers)?;
        nexus.set_base_udp_port(self.base_udp_port);
        Ok(nexus)
    }

    /// [`build`](Self::build) for a process without request handlers.
    pub fn build_client(self) -> Result<Nexus, RuntimeError> {
        self.build(HandlerTable::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_name_their_port_and_eal_argument_together() {
        let d = Device::memif_client("/tmp/x.sock");
        assert_eq!(d.port_name(), "net_memif0");
        assert_eq!(
            d.vdev_spec(2, 1000).unwrap(),
            "net_memif0,role=client,socket=/tmp/x.sock,rsize=9"
        );
        assert_eq!(d.rx_ring_entries(1000), 512);
        let a = Device::af_packet("veth0");
        assert_eq!(
            a.vdev_spec(2, 1024).unwrap(),
            "net_af_packet0,iface=veth0,qpairs=2,framecnt=1024"
        );
        assert_eq!(a.rx_ring_entries(1024), 1024);
        let r = Device::ring("hello");
        assert_eq!(r.port_name(), "net_ring_hello");
        assert_eq!(r.vdev_spec(2, 1024), None);
        assert_eq!(r.rx_ring_entries(1024), 1023);
        let p = Device::pci("0000:01:00.0");
        let args = p.apply(EalBuilder::new(), 1, 512).args().unwrap();
        assert!(args.windows(2).any(|w| w == ["-a", "0000:01:00.0"]));
    }

    #[test]
    fn builder_derives_config() {
        let b = Nexus::builder()
            .device(Device::memif_server("/tmp/s.sock"))
            .cores(&[2, 3])
            .file_prefix("t");
        let c = b.config().unwrap();
        assert_eq!(c.device, "net_memif0");
        assert_eq!(c.port.queues, 2);
        assert!(c.port.start_retry.is_zero());
        let args = c.eal.args().unwrap();
        assert!(args.contains(&"--no-huge".to_string()));
        assert!(args
            .windows(2)
            .any(|w| w[0] == "--vdev" && w[1].contains("role=server")));
        assert_eq!(b.endpoint_config(1).local.port, 31851);
        assert_eq!(b.endpoint_config(0).rx_ring_entries, 1024);
        assert!(Nexus::builder().config().is_err());
    }

    #[test]
    fn link_timeout_takes_either_duration() {
        let memif = || Nexus::builder().device(Device::memif_client("/tmp/c.sock"));
        let engine_d = memif().link_timeout(crate::time::Duration::from_millis(1500));
        let std_d = memif().link_timeout(Duration::from_millis(1500));
        assert_eq!(
            engine_d.config().unwrap().link_timeout,
            Duration::from_millis(1500)
        );
        assert_eq!(
            std_d.config().unwrap().link_timeout,
            Duration::from_millis(1500)
        );
    }
}
