//! [`Nexus::builder`]: a [`Nexus`] from a [`Device`] named once, with the
//! hardware-free defaults (no hugepages, no PCI scan, no shared runtime
//! files), checked against DPDK's limits before EAL starts
//! ([`NexusBuilder::validate`]), and the per-worker [`EndpointConfig`]
//! derived from the port's real receive ring. The only place a
//! [`PortConfig`] is built from a device: queues, descriptors, MTU and the
//! device's promiscuous mode ([`Device::promiscuous`]).
//!
//! The setters mirror the run config's `[link]` and `[cores]` keys (each
//! one's docs name its key), so a refusal ([`BuilderError`]) names the key
//! that set the value; [`NexusBuilder::role`] says which of `[cores]`'
//! lists the cores are. The counts a config holds as `u32` (descriptors,
//! MTU, data room) are taken as `u32` and checked here, so a refusal
//! quotes the value given, not one cut to DPDK's `u16`.

use super::device::Device;
use super::limits::{BuilderError, Ring, Role, ETH_HEADER_LEN, MAX_DATA_ROOM, MAX_DESC, MIN_DESC};
use super::{HandlerTable, Nexus, NexusConfig, RuntimeError, StopHandle};
use crate::dpdk::{EalBuilder, LinkWait, PortConfig};
use crate::nic::{worker_port, ChecksumOffload};
use crate::proto::{EndpointConfig, DEFAULT_IP};
use std::net::Ipv4Addr;
use std::time::Duration;

/// Builds a [`Nexus`] (see [`Nexus::builder`]). Defaults: core 0 only, no
/// hugepages (512 MiB of ordinary memory), no PCI scan unless a PCI device,
/// `--no-shconf` unless a file prefix is set, EAL log level 4 (warnings),
/// 1024 RX and TX descriptors, the driver's MTU, a pool sized from the queue
/// and descriptor counts with a 256-mbuf cache per core, 2048-byte mbufs, a
/// 10 s link timeout, no stop handle, IP 10.0.0.1 and UDP ports from 31850.
#[derive(Clone, Debug)]
pub struct NexusBuilder {
    device: Option<Device>,
    role: Option<Role>,
    cores: Vec<u32>,
    file_prefix: Option<String>,
    no_huge_mb: Option<u32>,
    log_level: u32,
    eal_extra: Vec<String>,
    rx_desc: u32,
    tx_desc: u32,
    mtu: Option<u32>,
    pool_mbufs: u32,
    pool_cache: u32,
    data_room: u32,
    link_timeout: Option<Duration>,
    stop: Option<StopHandle>,
    steer_udp: bool,
    checksum: ChecksumOffload,
    base_udp_port: u16,
    /// Each worker's UDP port where it is not `base_udp_port + i`.
    udp_ports: Vec<u16>,
    ip: Ipv4Addr,
    rx_interrupts: bool,
}

impl Default for NexusBuilder {
    fn default() -> Self {
        NexusBuilder {
            device: None,
            role: None,
            cores: vec![0],
            file_prefix: None,
            no_huge_mb: Some(512),
            log_level: 4,
            eal_extra: Vec::new(),
            rx_desc: 1024,
            tx_desc: 1024,
            mtu: None,
            pool_mbufs: 0,
            pool_cache: 256,
            data_room: 2048,
            link_timeout: Some(Duration::from_secs(10)),
            stop: None,
            steer_udp: false,
            checksum: ChecksumOffload::Auto,
            base_udp_port: EndpointConfig::default().local.port,
            udp_ports: Vec::new(),
            ip: DEFAULT_IP,
            rx_interrupts: false,
        }
    }
}

impl NexusBuilder {
    /// The defaults (see the type's docs); a device must still be named.
    pub fn new() -> Self {
        Self::default()
    }
    /// The device to run on (required; `link.kind`, or `link.vdev`,
    /// `link.socket`, `link.iface` for what the device itself refuses).
    pub fn device(mut self, device: Device) -> Self {
        self.device = Some(device);
        self
    }
    /// Which process of a run this is; it only names the key of a refusal
    /// of [`cores`](Self::cores) (`cores.server` or `cores.client`; without
    /// a role, `cores`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = Some(role);
        self
    }
    /// CPU cores, one worker each; the first runs on the calling thread
    /// (`cores.server` / `cores.client`).
    pub fn cores(mut self, cores: &[u32]) -> Self {
        self.cores = cores.to_vec();
        self
    }
    /// EAL `--file-prefix` (runtime files under it); unset: `--no-shconf`.
    /// Two DPDK processes on one host need different prefixes if set
    /// (`link.file_prefix`).
    pub fn file_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.file_prefix = Some(prefix.into());
        self
    }
    /// Memory for the no-hugepage mode, in MiB (default 512; `link.mem_mb`).
    pub fn memory_mb(mut self, mb: u32) -> Self {
        self.no_huge_mb = Some(mb);
        self
    }
    /// Use hugepages instead of ordinary memory (real NICs; `link.huge`).
    pub fn hugepages(mut self) -> Self {
        self.no_huge_mb = None;
        self
    }
    /// EAL log level, 1 (critical) .. 8 (debug); default 4.
    pub fn log_level(mut self, level: u32) -> Self {
        self.log_level = level;
        self
    }
    /// A raw EAL argument, appended last (one of `link.eal_args`).
    pub fn eal_arg(mut self, arg: impl Into<String>) -> Self {
        self.eal_extra.push(arg.into());
        self
    }
    /// RX and TX descriptors per queue (default 1024 each; `link.rx_desc`,
    /// `link.tx_desc`).
    pub fn descriptors(mut self, rx: u32, tx: u32) -> Self {
        self.rx_desc = rx;
        self.tx_desc = tx;
        self
    }
    /// IP MTU to set on the device (default: the driver's; `link.mtu`).
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = Some(mtu);
        self
    }
    /// Mbufs in the pool; 0 (the default) derives it from the queue and
    /// descriptor counts.
    pub fn pool_mbufs(mut self, n: u32) -> Self {
        self.pool_mbufs = n;
        self
    }
    /// Mbufs each core keeps in its own cache of the pool (default 256; 0
    /// for none).
    pub fn pool_cache(mut self, n: u32) -> Self {
        self.pool_cache = n;
        self
    }
    /// Frame bytes one mbuf holds (at least the MTU plus 14; default 2048;
    /// `link.mbuf_data_room`).
    pub fn data_room(mut self, bytes: u32) -> Self {
        self.data_room = bytes;
        self
    }
    /// How long to wait for link-up and, on a memif client, for the server.
    /// Takes a `std::time::Duration` or an [`engine::time::Duration`](crate::time::Duration).
    pub fn link_timeout(mut self, d: impl Into<Duration>) -> Self {
        self.link_timeout = Some(d.into());
        self
    }
    /// Waits for link-up (and a memif client for its server) as long as it
    /// takes: a server that waits for its client, like `iperf3 -s`. Give it
    /// a [`stop_on`](Self::stop_on) handle so something can end the wait.
    pub fn no_link_timeout(mut self) -> Self {
        self.link_timeout = None;
        self
    }
    /// Ends the wait for the link as soon as `stop` is set (polled every
    /// 10 ms): [`build`](Self::build) then fails with
    /// [`RuntimeError::Stopped`]. A handle set by SIGINT
    /// (`StopHandle::from` a `signal_hook` flag) makes Ctrl-C work while a
    /// process waits for its peer.
    pub fn stop_on(mut self, stop: &StopHandle) -> Self {
        self.stop = Some(stop.clone());
        self
    }
    /// The port cannot deliver each worker's frames to its queue by
    /// itself (a real NIC): with several workers, a device that offers
    /// none of rte_flow, RSS over IPv4/UDP or paired queues is an error
    /// (`nic::steer::decide`), not an unsteered port.
    pub fn steer_udp(mut self, on: bool) -> Self {
        self.steer_udp = on;
        self
    }
    /// Configure the port with RX interrupts (the adaptive idle mode,
    /// `transport.idle = "adaptive"`; [`Rpc::set_idle`](super::Rpc::set_idle)
    /// uses them). A driver that refuses them gets a port without, and its
    /// workers sleep on a timer instead; off by default, so a spinning
    /// port is configured exactly as before.
    pub fn rx_interrupts(mut self, on: bool) -> Self {
        self.rx_interrupts = on;
        self
    }

    /// Which checksum offloads to take of what the device offers
    /// (`transport.checksum_offload`; default `Auto`).
    pub fn checksum_offload(mut self, mode: ChecksumOffload) -> Self {
        self.checksum = mode;
        self
    }
    /// The UDP port of worker 0's endpoint; worker i uses base + i
    /// (default 31850; `link.udp_port`).
    pub fn base_udp_port(mut self, port: u16) -> Self {
        self.base_udp_port = port;
        self
    }
    /// Worker `i`'s UDP port is `ports[i]` rather than base + i (a client
    /// whose ports are chosen for its server's RSS, `nic::RssPorts`):
    /// the endpoints and the port's steering use them. Workers past the
    /// list keep base + i.
    pub fn worker_udp_ports(mut self, ports: &[u16]) -> Self {
        self.udp_ports = ports.to_vec();
        self
    }

    /// This process's IPv4 address on the link: every worker's endpoint
    /// takes it as its own, and peers connect to it (default
    /// [`DEFAULT_IP`], 10.0.0.1; `link.server_ip` / `link.client_ip`). Two
    /// processes on one link need different addresses.
    pub fn ip(mut self, ip: Ipv4Addr) -> Self {
        self.ip = ip;
        self
    }

    /// Frames one RX queue's ring really holds on the device (the RX
    /// descriptor count when no device is named yet).
    pub fn rx_ring_entries(&self) -> usize {
        match &self.device {
            Some(d) => d.rx_ring_entries(to_u16(self.rx_desc)),
            None => self.rx_desc as usize,
        }
    }

    /// The endpoint configuration worker `index` will get (see
    /// [`Nexus::endpoint_config`]; the MAC is known only after `build`).
    pub fn endpoint_config(&self, index: u16) -> EndpointConfig {
        let mut c = EndpointConfig::default();
        c.local.port = worker_port(&self.udp_ports, self.base_udp_port, index);
        c.local.ip = self.ip;
        c.rx_ring_entries = self.rx_ring_entries();
        c
    }

    /// What DPDK or the kernel would refuse, before EAL starts: no device
    /// or no core, descriptor counts outside the powers of two in
    /// 32..=32768, an mbuf data room outside 1..=65407 or too small for the
    /// MTU's frames, no memory, worker UDP ports past 65535, and the
    /// device's own limits ([`Device::validate`]). [`config`](Self::config)
    /// and [`build`](Self::build) check it first.
    pub fn validate(&self) -> Result<(), BuilderError> {
        let device = self.device.as_ref().ok_or(BuilderError::NoDevice)?;
        if self.cores.is_empty() {
            return Err(BuilderError::NoCores { role: self.role });
        }
        for (ring, value) in [(Ring::Rx, self.rx_desc), (Ring::Tx, self.tx_desc)] {
            if !(MIN_DESC as u32..=MAX_DESC as u32).contains(&value) || !value.is_power_of_two() {
                return Err(BuilderError::Descriptors { ring, value });
            }
        }
        if !(1..=MAX_DATA_ROOM as u32).contains(&self.data_room) {
            return Err(BuilderError::DataRoom {
                data_room: self.data_room,
            });
        }
        if let Some(mtu) = self.mtu {
            let needed = mtu as u64 + ETH_HEADER_LEN as u64;
            if needed > self.data_room as u64 {
                return Err(BuilderError::MbufTooSmall {
                    mtu,
                    needed,
                    data_room: self.data_room,
                });
            }
        }
        if self.no_huge_mb == Some(0) {
            return Err(BuilderError::NoMemory);
        }
        let last_port = self.base_udp_port as usize + self.cores.len() - 1;
        if self.base_udp_port == 0 || last_port > u16::MAX as usize {
            return Err(BuilderError::UdpPorts {
                base: self.base_udp_port,
                workers: self.cores.len(),
            });
        }
        // The descriptors fit a u16 now (checked above).
        device.validate(to_u16(self.rx_desc))
    }

    /// The [`NexusConfig`] this builder stands for (EAL arguments included),
    /// once [`validate`](Self::validate) passed.
    pub fn config(&self) -> Result<NexusConfig, RuntimeError> {
        self.validate()?;
        let device = self.device.as_ref().ok_or(BuilderError::NoDevice)?;
        let queues = self.cores.len() as u16;
        // Validated: the descriptors, the data room and (below the data
        // room) the MTU all fit DPDK's u16.
        let (rx_desc, tx_desc) = (to_u16(self.rx_desc), to_u16(self.tx_desc));
        let mut eal = EalBuilder::new()
            .cores(&self.cores)
            .no_huge(self.no_huge_mb)
            .file_prefix(self.file_prefix.clone())
            .log_level(self.log_level);
        eal = device.apply(eal, queues, rx_desc);
        for a in &self.eal_extra {
            eal = eal.extra_arg(a.clone());
        }
        Ok(NexusConfig {
            eal,
            device: device.port_name(),
            port: PortConfig {
                queues,
                rx_desc,
                tx_desc,
                mtu: self.mtu.map(to_u16),
                promiscuous: device.promiscuous(),
                start_wait: device.is_memif_client().then(|| self.link_wait()),
                rx_interrupts: self.rx_interrupts,
                checksum: self.checksum,
            },
            pool_mbufs: self.pool_mbufs,
            pool_cache: self.pool_cache,
            data_room: to_u16(self.data_room),
            link_timeout: self.link_timeout,
            stop: self.stop.clone(),
            udp_base: self.base_udp_port,
            udp_ports: self.udp_ports.clone(),
            steer_required: self.steer_udp,
        })
    }

    /// How the port waits for its peer: the link timeout, the stop handle.
    fn link_wait(&self) -> LinkWait {
        LinkWait {
            limit: self.link_timeout,
            stop: self.stop.as_ref().map(StopHandle::flag),
        }
    }

    /// Initialises EAL, creates the pool, opens and starts the port and
    /// waits for link-up. Once per process (EAL cannot start twice). A
    /// memif server first checks that no other process holds its socket
    /// ([`Device::check_free`]).
    pub fn build<A>(self, handlers: HandlerTable<A>) -> Result<Nexus<A>, RuntimeError> {
        let cfg = self.config()?;
        let mut nexus = Nexus::open(cfg, self.device.as_ref(), handlers)?;
        nexus.set_udp_ports(self.base_udp_port, &self.udp_ports);
        nexus.set_ip(self.ip);
        Ok(nexus)
    }

    /// [`build`](Self::build) for a process without request handlers.
    pub fn build_client(self) -> Result<Nexus, RuntimeError> {
        self.build(HandlerTable::new())
    }
}

/// A count DPDK takes as `u16`: exact once [`NexusBuilder::validate`]
/// passed; before that (the ring a device would have) an out-of-range
/// count saturates, never wraps to one DPDK would take.
fn to_u16(v: u32) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_derives_config() {
        let b = Nexus::builder()
            .device(Device::memif_server("/tmp/s.sock"))
            .cores(&[2, 3])
            .file_prefix("t");
        let c = b.config().unwrap();
        assert_eq!(c.device, "net_memif0");
        assert_eq!(c.port.queues, 2);
        assert!(c.port.start_wait.is_none());
        let client = Nexus::builder().device(Device::memif_client("/tmp/s.sock"));
        let wait = client.config().unwrap().port.start_wait.unwrap();
        assert_eq!(wait.limit, Some(Duration::from_secs(10)));
        assert!(wait.stop.is_none());
        let args = c.eal.args().unwrap();
        assert!(args.contains(&"--no-huge".to_string()));
        assert!(args
            .windows(2)
            .any(|w| w[0] == "--vdev" && w[1].contains("role=server")));
        assert_eq!(b.endpoint_config(1).local.port, 31851);
        assert_eq!(b.endpoint_config(1).local.ip, DEFAULT_IP);
        let ip = Ipv4Addr::new(10, 0, 0, 2);
        assert_eq!(b.clone().ip(ip).endpoint_config(0).local.ip, ip);
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
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            std_d.config().unwrap().link_timeout,
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn a_wait_without_limit_carries_its_stop_handle_to_the_port() {
        let stop = StopHandle::new();
        let b = Nexus::builder()
            .device(Device::memif_client("/tmp/c.sock"))
            .no_link_timeout()
            .stop_on(&stop);
        let c = b.config().unwrap();
        assert_eq!(c.link_timeout, None);
        let flag = c.port.start_wait.unwrap().stop.unwrap();
        assert!(!flag.load(std::sync::atomic::Ordering::Acquire));
        stop.stop();
        assert!(
            flag.load(std::sync::atomic::Ordering::Acquire),
            "the same flag"
        );
        assert!(c.stop.unwrap().is_stopped());
    }

    #[test]
    fn validation_refuses_what_dpdk_would() {
        let b = || Nexus::builder().device(Device::memif_client("/tmp/c.sock"));
        assert_eq!(b().validate(), Ok(()));
        assert_eq!(Nexus::builder().validate(), Err(BuilderError::NoDevice));
        assert_eq!(
            b().cores(&[]).validate(),
            Err(BuilderError::NoCores { role: None })
        );
        for (rx, tx, ring, value) in [(1000, 1024, Ring::Rx, 1000), (1024, 16, Ring::Tx, 16)] {
            assert_eq!(
                b().descriptors(rx, tx).validate(),
                Err(BuilderError::Descriptors { ring, value })
            );
        }
        assert_eq!(
            b().descriptors(32768, 1024).validate(),
            Err(BuilderError::MemifRing {
                entries: 32768,
                rx_desc: 32768,
                vdev: None
            })
        );
        let err = b()
            .descriptors(32768, 1024)
            .config()
            .unwrap_err()
            .to_string();
        assert!(err.contains("at most 16384"), "{err}");
        assert_eq!(
            b().mtu(9000).validate(),
            Err(BuilderError::MbufTooSmall {
                mtu: 9000,
                needed: 9014,
                data_room: 2048
            })
        );
        assert_eq!(b().mtu(9000).data_room(9216).validate(), Ok(()));
        assert_eq!(
            b().data_room(65408).validate(),
            Err(BuilderError::DataRoom { data_room: 65408 })
        );
        assert_eq!(b().memory_mb(0).validate(), Err(BuilderError::NoMemory));
        assert_eq!(b().memory_mb(0).hugepages().validate(), Ok(()));
        assert_eq!(
            b().base_udp_port(65535).cores(&[0, 1]).validate(),
            Err(BuilderError::UdpPorts {
                base: 65535,
                workers: 2
            })
        );
    }

    #[test]
    fn refusals_name_the_key_its_value_and_the_limit() {
        let b = || Nexus::builder().device(Device::memif_client("/tmp/c.sock"));
        let refusal = |b: NexusBuilder| {
            let e = b.validate().unwrap_err();
            (e.key(), e.to_string())
        };
        let cases: Vec<(NexusBuilder, &str, &str)> = vec![
            (Nexus::builder(), "link.kind", "link.kind: no device"),
            (
                b().cores(&[]),
                "cores",
                "cores is empty (one core per worker)",
            ),
            (
                b().role(Role::Client).cores(&[]),
                "cores.client",
                "cores.client is empty (one core per worker)",
            ),
            (
                b().descriptors(1000, 1024),
                "link.rx_desc",
                "link.rx_desc = 1000 must be a power of two in 32..=32768",
            ),
            // A count beyond u16 is quoted as given, not as DPDK's u16.
            (
                b().descriptors(1024, 100_000),
                "link.tx_desc",
                "link.tx_desc = 100000 must be a power of two in 32..=32768",
            ),
            (
                b().descriptors(32768, 1024),
                "link.rx_desc",
                "link.rx_desc = 32768 asks for a memif ring of 32768 entries; DPDK 22.11's memif holds at most 16384 (rsize 14)",
            ),
            (
                Nexus::builder().device(Device::vdev("net_memif0,socket=/v,rsize=15")),
                "link.vdev",
                "link.vdev = \"net_memif0,socket=/v,rsize=15\": its rsize asks for a memif ring of 32768 entries; DPDK 22.11's memif holds at most 16384",
            ),
            (
                Nexus::builder().device(Device::memif_server("")),
                "link.socket",
                "link.socket = \"\": a memif socket path must be 1..=107 bytes (sun_path)",
            ),
            (
                Nexus::builder().device(Device::af_packet_peer("fifteen-bytes!!")),
                "link.iface",
                "link.iface = \"fifteen-bytes!!\": the client opens its veth peer \"fifteen-bytes!!p\", which must be 1..=15 bytes (IFNAMSIZ",
            ),
            (
                Nexus::builder().device(Device::af_packet("averyverylongname")),
                "link.iface",
                "link.iface = \"averyverylongname\": an af_packet interface name must be 1..=15 bytes (IFNAMSIZ",
            ),
            (
                b().data_room(70_000),
                "link.mbuf_data_room",
                "link.mbuf_data_room = 70000 must be in 1..=65407",
            ),
            (
                b().mtu(9000),
                "link.mtu",
                "link.mtu = 9000 needs 9014-byte frames but link.mbuf_data_room = 2048",
            ),
            (b().memory_mb(0), "link.mem_mb", "link.mem_mb = 0 must be > 0"),
            (b().base_udp_port(0), "link.udp_port", "link.udp_port = 0 must be > 0"),
            (
                b().base_udp_port(65535).cores(&[0, 1]),
                "link.udp_port",
                "link.udp_port = 65535 + 2 workers runs past port 65535",
            ),
        ];
        for (builder, key, msg) in cases {
            let (k, m) = refusal(builder);
            assert_eq!(k, key, "{m}");
            assert!(m.starts_with(msg), "{m}");
        }
    }

    #[test]
    fn promiscuous_off_only_on_a_real_nic() {
        let port = |d: Device| {
            let b = Nexus::builder().device(d).hugepages();
            b.config().unwrap().port
        };
        assert!(!port(Device::pci("0000:01:00.0")).promiscuous);
        assert!(port(Device::af_packet("v")).promiscuous);
        assert!(port(Device::memif_server("/tmp/s.sock")).promiscuous);
        let c = Nexus::builder()
            .device(Device::ring_loopback())
            .pool_cache(0)
            .config()
            .unwrap();
        assert_eq!((c.pool_cache, c.device.as_str()), (0, "net_ring0"));
    }
}
