//! The one seam from the apps' configuration to the engine's public builder,
//! the same API the engine's examples use: which [`Device`] a role opens on
//! a link (memif's role, af_packet's interface for the server and its veth
//! peer for the client, qdisc bypass, a raw `vdev`, a PCI address), the
//! [`NexusBuilder`] of one process (its role, cores, EAL memory and flags,
//! descriptors, MTU, pool, link timeout, UDP steering on a NIC), and each
//! worker's [`EndpointConfig`], built once from the config and that
//! worker's own facts ([`Worker`]: its index, its port's MAC, the receive
//! ring the port really has).
//!
//! rpc-server and rpc-client ([`Config::open_nexus`]) and the raw tools
//! (`floor`, `port-check`, `rpc-hostile`: [`open`] with
//! [`PortShape::raw`]) all open their port here. Device strings, ring
//! sizes, promiscuous mode and DPDK's limits are the engine's
//! (`engine::runtime::Device`, `NexusBuilder::validate`); nothing else in the
//! apps builds a vdev string or a `PortConfig`. The builder's setters mirror
//! `[link]` and `[cores]` and are handed the config's values as they are, so
//! the engine's refusals name the key and the value the user wrote.

use super::schema::*;
use crate::config::link::{LinkArgs, LinkKind, Role};
use engine::config::{IdleMode, Site};
use engine::proto::{EndpointAddr, EndpointConfig, SecretKey};
use engine::runtime::{Device, HandlerTable, Nexus, NexusBuilder, StopHandle};
use engine::wire::MacAddr;
use std::net::Ipv4Addr;

/// The port and pool one process opens, apart from its link and cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortShape {
    /// RX and TX descriptors per queue.
    pub rx_desc: u32,
    pub tx_desc: u32,
    /// IP MTU to set on the port; `None` keeps the driver's.
    pub mtu: Option<u32>,
    /// Frame bytes one mbuf holds.
    pub data_room: u32,
    /// Mbufs in the pool; 0 derives it from the queue and descriptor counts.
    pub pool_mbufs: u32,
    /// Mbufs each core caches from the pool.
    pub pool_cache: u32,
    /// Size memif's and af_packet's rings from `rx_desc` (the RPC binaries:
    /// lossless reservations count on the real ring), or leave the
    /// driver's default (the raw tools).
    pub size_rings: bool,
}

impl PortShape {
    /// The raw tools' port: 1024 descriptors each way, the driver's MTU and
    /// ring sizes, `pool_mbufs` mbufs of 2048 bytes, `pool_cache` per core.
    pub fn raw(pool_mbufs: u32, pool_cache: u32) -> Self {
        PortShape {
            rx_desc: 1024,
            tx_desc: 1024,
            mtu: None,
            data_room: 2048,
            pool_mbufs,
            pool_cache,
            size_rings: false,
        }
    }
}

/// The device `role` opens on `link`: a raw `vdev` spec as given, else the
/// kind's device (the server opens af_packet's `iface`, the client its veth
/// peer, `iface` + "p": `Device::af_packet_peer`).
pub fn device(link: &LinkArgs, role: Role, size_rings: bool) -> anyhow::Result<Device> {
    let d = match (&link.vdev, link.link) {
        (Some(spec), _) => Device::vdev(spec),
        (None, LinkKind::Memif) => match role {
            Role::Server => Device::memif_server(&link.socket),
            Role::Client => Device::memif_client(&link.socket),
        },
        (None, LinkKind::AfPacket) => match role {
            Role::Server => Device::af_packet(&link.iface),
            Role::Client => Device::af_packet_peer(&link.iface),
        }
        .qdisc_bypass(link.qdisc_bypass),
        // The server is the vhost-user backend (it creates the socket and
        // takes a driver that comes and goes), the client the driver: see
        // docs/links.md for why not the reverse.
        (None, LinkKind::Virtio) => match role {
            Role::Server => Device::vhost(&link.socket),
            Role::Client => Device::virtio_user(&link.socket),
        },
        (None, LinkKind::AfXdp) => match role {
            Role::Server => Device::af_xdp(&link.iface),
            Role::Client => Device::af_xdp_peer(&link.iface),
        },
        (None, LinkKind::Ring) => Device::ring_loopback(),
        (None, LinkKind::Null) => Device::null(),
        (None, LinkKind::Pcap) => Device::pcap("/dev/null", "/dev/null"),
        (None, LinkKind::Pci) => match &link.pci {
            Some(addr) => Device::pci(addr),
            None => anyhow::bail!("--link pci needs --pci ADDRESS (e.g. --pci 0000:01:00.0)"),
        },
        (None, LinkKind::Kernel) => anyhow::bail!("{KERNEL_HAS_NO_DEVICE}"),
    };
    Ok(if size_rings { d } else { d.driver_ring_size() })
}

/// Why `link.kind = kernel` opens no DPDK device, in every refusal.
pub const KERNEL_HAS_NO_DEVICE: &str = "link.kind = kernel is rpc-client's UDP socket, not a DPDK device: rpc-server (and rpc-bench's raw tools) run on the DPDK end of the wire, --link af_packet on the veth pair (docs/kernel-link.md)";

/// The engine builder for one process of `role` on `cores`: the device, the
/// EAL flags of `link`, the port and pool of `shape`. The role names the
/// `[cores]` key a refusal of the cores points at.
pub fn builder(
    link: &LinkArgs,
    role: Role,
    cores: &[u32],
    shape: &PortShape,
) -> anyhow::Result<NexusBuilder> {
    let mut b = Nexus::builder()
        .device(device(link, role, shape.size_rings)?)
        .role(role.into())
        .cores(cores)
        .log_level(link.log_level)
        .descriptors(shape.rx_desc, shape.tx_desc)
        .data_room(shape.data_room)
        .pool_mbufs(shape.pool_mbufs)
        .pool_cache(shape.pool_cache)
        .link_timeout(std::time::Duration::from_millis(link.link_timeout_ms));
    b = match link.huge {
        true => b.hugepages(),
        false => b.memory_mb(link.mem_mb),
    };
    if let Some(p) = &link.file_prefix {
        b = b.file_prefix(p);
    }
    if let Some(mtu) = shape.mtu {
        b = b.mtu(mtu);
    }
    for a in &link.eal_args {
        b = b.eal_arg(a);
    }
    Ok(b)
}

/// Enters the client's network namespace if `link` names one (it must
/// precede EAL's threads), then starts EAL, the pool and the port.
pub fn open<A>(
    link: &LinkArgs,
    role: Role,
    builder: NexusBuilder,
    handlers: HandlerTable<A>,
) -> anyhow::Result<Nexus<A>> {
    link.enter_netns(role)?;
    Ok(builder.build(handlers)?)
}

/// What a worker's endpoint takes from its port rather than the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Worker {
    /// 0-based; the queue pair and the UDP port offset.
    pub index: u16,
    /// The port's MAC.
    pub mac: MacAddr,
    /// Frames the port's RX ring really holds (lossless reservations).
    pub rx_ring_entries: usize,
}

impl Worker {
    /// Worker `index` of a running Nexus.
    pub fn of<A>(nexus: &Nexus<A>, index: u16) -> Self {
        Worker {
            index,
            mac: nexus.mac(),
            rx_ring_entries: nexus.rx_ring_entries(),
        }
    }
}

impl Config {
    /// The port and pool of the RPC binaries: `[link]`'s descriptors, MTU
    /// and mbuf size, a pool derived from them, rings sized from `rx_desc`.
    pub fn port_shape(&self) -> PortShape {
        let l = &self.link;
        PortShape {
            rx_desc: l.rx_desc,
            tx_desc: l.tx_desc,
            mtu: Some(l.mtu),
            data_room: l.mbuf_data_room,
            pool_mbufs: 0,
            pool_cache: 256,
            size_rings: true,
        }
    }

    /// The engine builder of `role`'s process: [`builder`] with
    /// [`Self::port_shape`], worker `i` on UDP port `link.udp_port + i`
    /// (a client's per `link.client_port`, [`Config::client_ports`]),
    /// `transport.checksum_offload`, steering of those ports to their
    /// queues required on a real NIC (`engine::nic::decide`: rte_flow, else
    /// RSS, else memif's and virtio's queue pairing) and on af_packet and
    /// af_xdp (a raw `link.vdev` with several queues is spread by the
    /// kernel's own hash, which no client can aim at), and RX interrupts
    /// asked for when `transport.idle = "adaptive"`.
    pub fn nexus_builder(&self, role: Role) -> anyhow::Result<NexusBuilder> {
        let ports = match role {
            Role::Server => Vec::new(),
            Role::Client => self.client_ports()?,
        };
        Ok(builder(
            &self.link_args(),
            role,
            self.cores(role),
            &self.port_shape(),
        )?
        .base_udp_port(self.link.udp_port)
        .worker_udp_ports(&ports)
        .checksum_offload(self.transport.checksum_offload)
        .steer_udp(matches!(
            self.link.kind,
            LinkKind::Pci | LinkKind::AfPacket | LinkKind::AfXdp
        ))
        .rx_interrupts(self.transport.idle == IdleMode::Adaptive))
    }

    /// Starts `role`'s Nexus (EAL, pool, port) on its cores and waits for
    /// its link up to `wait` (`None`: as long as it takes; the raw tools'
    /// bound, `link_args`, is not theirs) or until `stop` is set.
    pub fn open_nexus<A>(
        &self,
        role: Role,
        handlers: HandlerTable<A>,
        wait: Option<std::time::Duration>,
        stop: &StopHandle,
    ) -> anyhow::Result<Nexus<A>> {
        let b = self.nexus_builder(role)?;
        let b = match wait {
            Some(d) => b.link_timeout(d),
            None => b.no_link_timeout(),
        };
        open(&self.link_args(), role, b.stop_on(stop), handlers)
    }

    /// Worker `index` of `role` before any port is open (validation, the
    /// engine-cost bench): MAC `mac` and the ring the configured device
    /// would have.
    pub fn offline_worker(&self, role: Role, index: u16, mac: MacAddr) -> Worker {
        let ring = self.nexus_builder(role).map(|b| b.rx_ring_entries());
        Worker {
            index,
            mac,
            rx_ring_entries: ring.unwrap_or(self.link.rx_desc as usize),
        }
    }

    /// The engine configuration of `role`'s worker `w`: the resolved
    /// transport ([`Config::resolved`]) at the worker's site, built once.
    pub fn endpoint_config(&self, role: Role, w: &Worker) -> Result<EndpointConfig, ConfigError> {
        let ip = match role {
            Role::Server => self.link.server_ip,
            Role::Client => self.link.client_ip,
        };
        self.endpoint_at(role, ip, w)
    }

    /// The endpoint of rpc-client on net_ring, which loops its frames back:
    /// a client worker that serves its own requests at the server's address.
    pub fn loopback_endpoint_config(&self, w: &Worker) -> Result<EndpointConfig, ConfigError> {
        self.endpoint_at(Role::Client, self.link.server_ip, w)
    }

    fn endpoint_at(
        &self,
        role: Role,
        ip: Ipv4Addr,
        w: &Worker,
    ) -> Result<EndpointConfig, ConfigError> {
        let sessions = match role {
            Role::Server => self.max_sessions_per_server_worker(),
            Role::Client => self.workload.sessions_per_thread as usize,
        };
        let mut e = self.resolved()?.endpoint(&Site {
            local: EndpointAddr {
                mac: w.mac,
                ip,
                port: self.local_port(role, w.index as usize)?,
            },
            rx_ring_entries: w.rx_ring_entries,
            sessions,
            verify_ipv4_checksum: self.verify_ipv4_checksum(),
            seed: token_seed(role, w.index),
            // Server tokens and cookies under 128 OS-random bits; the
            // seed-derived key is the fallback if the OS source fails.
            secret: SecretKey::from_os(),
        });
        // A real host stalls (a descheduled vCPU or run loop): Timely takes
        // such silences off its samples (the lab's simulated hosts do not).
        e.host_stalls = true;
        Ok(e)
    }
}

/// Session-token seed: random per process and worker (a restarted server
/// must not hand out the tokens of its previous run, or stale packets would
/// be accepted).
fn token_seed(role: Role, worker_index: u16) -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one((
        role.as_str(),
        worker_index,
        std::process::id(),
    ))
}
#[cfg(test)]
mod tests {
    //! Golden EAL arguments: what each role passes to `rte_eal_init` on each
    //! link kind, the strings `link.rs` built before this seam (commit
    //! befb726 pins them against that code).
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        port: crate::config::cli::PortArgs,
    }

    /// The link the raw tools' flags (`floor`, `port-check`) resolve to.
    fn flags(a: &[&str]) -> LinkArgs {
        let f = Flags::parse_from(std::iter::once("t").chain(a.iter().copied()));
        f.port.link_args(&f.port.load().expect("flags load"))
    }

    fn cfg(sets: &[&str]) -> Config {
        let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Config::load(None, &o).unwrap()
    }

    /// `-l CORES --no-huge -m 512 --no-pci --vdev SPEC --no-shconf --log-level=4`.
    fn vdev_args(cores: &str, spec: &str) -> Vec<String> {
        [
            "rpc-engine",
            "-l",
            cores,
            "--no-huge",
            "-m",
            "512",
            "--no-pci",
            "--vdev",
            spec,
            "--no-shconf",
            "--log-level=4",
        ]
        .map(String::from)
        .to_vec()
    }

    /// The RPC binaries (rpc-server, rpc-client): rings sized from rx_desc.
    fn node(c: &Config, role: Role) -> (Vec<String>, String) {
        let n = c.nexus_builder(role).unwrap().config().unwrap();
        (n.eal.args().unwrap(), n.device)
    }

    /// The raw tools (floor, port-check, rpc-hostile): the driver's ring sizes.
    fn raw(l: &LinkArgs, role: Role, core: u32) -> (Vec<String>, String) {
        let n = builder(l, role, &[core], &PortShape::raw(8191, 256))
            .unwrap()
            .config()
            .unwrap();
        (n.eal.args().unwrap(), n.device)
    }

    #[test]
    fn node_eal_args_per_role_and_link_kind() {
        let sock = "socket=/tmp/rpc-engine.sock";
        let cases: &[(&[&str], Role, &str, &str)] = &[
            (
                &[],
                Role::Server,
                "1",
                &format!("net_memif0,role=server,{sock},rsize=10"),
            ),
            (
                &[],
                Role::Client,
                "0",
                &format!("net_memif0,role=client,{sock},rsize=10"),
            ),
            (
                &["link.rx_desc=4096"],
                Role::Server,
                "1",
                &format!("net_memif0,role=server,{sock},rsize=12"),
            ),
            (
                &["link.rx_desc=16384"],
                Role::Client,
                "0",
                &format!("net_memif0,role=client,{sock},rsize=14"),
            ),
            (
                &["link.kind=af_packet"],
                Role::Server,
                "1",
                "net_af_packet0,iface=rpcveth0,qpairs=1,framecnt=1024",
            ),
            (
                &["link.kind=af_packet"],
                Role::Client,
                "0",
                "net_af_packet0,iface=rpcveth0p,qpairs=1,framecnt=1024",
            ),
            (
                &[
                    "link.kind=af_packet",
                    "link.qdisc_bypass=false",
                    "link.rx_desc=64",
                ],
                Role::Server,
                "1",
                "net_af_packet0,iface=rpcveth0,qpairs=1,qdisc_bypass=0,framecnt=64",
            ),
            (
                &["link.kind=virtio"],
                Role::Server,
                "1",
                "net_vhost0,iface=/tmp/rpc-engine.sock,queues=1",
            ),
            (
                &["link.kind=virtio", "link.rx_desc=512"],
                Role::Client,
                "0",
                "virtio_user0,path=/tmp/rpc-engine.sock,queues=1,queue_size=512",
            ),
            (
                &["link.kind=virtio", "cores.server=[0, 1]"],
                Role::Server,
                "0,1",
                "net_vhost0,iface=/tmp/rpc-engine.sock,queues=2",
            ),
            (
                &["link.kind=af_xdp"],
                Role::Server,
                "1",
                "net_af_xdp0,iface=rpcveth0,start_queue=0,queue_count=1",
            ),
            (
                &["link.kind=af_xdp"],
                Role::Client,
                "0",
                "net_af_xdp0,iface=rpcveth0p,start_queue=0,queue_count=1",
            ),
            (&["link.kind=ring"], Role::Server, "1", "net_ring0"),
            (&["link.kind=ring"], Role::Client, "0", "net_ring0"),
            (&["link.kind=null"], Role::Server, "1", "net_null0,copy=1"),
            (&["link.kind=null"], Role::Client, "0", "net_null0,copy=1"),
            (
                &["link.kind=pcap"],
                Role::Server,
                "1",
                "net_pcap0,rx_pcap=/dev/null,tx_pcap=/dev/null",
            ),
            (
                &["link.vdev=net_memif0,role=server,socket=/tmp/v.sock"],
                Role::Server,
                "1",
                "net_memif0,role=server,socket=/tmp/v.sock,rsize=10",
            ),
            (
                &["link.vdev=net_memif0,role=client,socket=/tmp/v.sock,rsize=8"],
                Role::Client,
                "0",
                "net_memif0,role=client,socket=/tmp/v.sock,rsize=8",
            ),
            (
                &["link.vdev=net_af_packet0,iface=x"],
                Role::Server,
                "1",
                "net_af_packet0,iface=x,framecnt=1024",
            ),
            (&["link.vdev=net_null0"], Role::Server, "1", "net_null0"),
            (
                &["cores.server=[0, 1]"],
                Role::Server,
                "0,1",
                &format!("net_memif0,role=server,{sock},rsize=10"),
            ),
        ];
        for (sets, role, cores, spec) in cases {
            let name = spec.split(',').next().unwrap();
            assert_eq!(
                node(&cfg(sets), *role),
                (vdev_args(cores, spec), name.to_string()),
                "{sets:?} {role:?}"
            );
        }
        // A real NIC: hugepages, the PCI address instead of --no-pci and a vdev.
        let c = cfg(&["link.kind=pci", "link.pci=0000:01:00.0", "link.huge=true"]);
        let args = [
            "rpc-engine",
            "-l",
            "1",
            "-a",
            "0000:01:00.0",
            "--no-shconf",
            "--log-level=4",
        ];
        assert_eq!(
            node(&c, Role::Server),
            (args.map(String::from).to_vec(), "0000:01:00.0".into())
        );
        // EAL memory, file prefix and extra arguments.
        let c = cfg(&[
            "link.mem_mb=256",
            "link.file_prefix=p1",
            "link.eal_args=[\"--iova-mode=va\"]",
        ]);
        let args = [
            "rpc-engine",
            "-l",
            "1",
            "--no-huge",
            "-m",
            "256",
            "--no-pci",
            "--vdev",
            "net_memif0,role=server,socket=/tmp/rpc-engine.sock,rsize=10",
            "--file-prefix",
            "p1",
            "--log-level=4",
            "--iova-mode=va",
        ];
        assert_eq!(node(&c, Role::Server).0, args.map(String::from).to_vec());
    }

    #[test]
    fn raw_tool_eal_args_leave_ring_sizes_to_the_driver() {
        let cases: &[(&[&str], Role, &str)] = &[
            (
                &[],
                Role::Server,
                "net_memif0,role=server,socket=/tmp/rpc-engine.sock",
            ),
            (
                &["--socket", "/tmp/f.sock"],
                Role::Client,
                "net_memif0,role=client,socket=/tmp/f.sock",
            ),
            (
                &["--link", "af-packet"],
                Role::Server,
                "net_af_packet0,iface=rpcveth0,qpairs=1",
            ),
            (
                &["--link", "af-packet", "--iface", "v0"],
                Role::Client,
                "net_af_packet0,iface=v0p,qpairs=1",
            ),
            (
                &["--link", "af-packet", "--qdisc-bypass", "false"],
                Role::Client,
                "net_af_packet0,iface=rpcveth0p,qpairs=1,qdisc_bypass=0",
            ),
            (&["--link", "ring"], Role::Server, "net_ring0"),
            (&["--link", "null"], Role::Server, "net_null0,copy=1"),
            (
                &["--link", "pcap"],
                Role::Server,
                "net_pcap0,rx_pcap=/dev/null,tx_pcap=/dev/null",
            ),
            (
                &[
                    "--vdev",
                    "net_pcap0,rx_pcap=/tmp/in.pcap,tx_pcap=/tmp/out.pcap",
                ],
                Role::Server,
                "net_pcap0,rx_pcap=/tmp/in.pcap,tx_pcap=/tmp/out.pcap",
            ),
            (
                &["--vdev", "net_nosuchdriver0"],
                Role::Server,
                "net_nosuchdriver0",
            ),
        ];
        for (a, role, spec) in cases {
            let name = spec.split(',').next().unwrap();
            assert_eq!(
                raw(&flags(a), *role, 1),
                (vdev_args("1", spec), name.to_string()),
                "{a:?} {role:?}"
            );
        }
        let l = flags(&["--link", "pci", "--pci", "0000:99:00.0"]);
        let args = [
            "rpc-engine",
            "-l",
            "0",
            "--no-huge",
            "-m",
            "512",
            "-a",
            "0000:99:00.0",
            "--no-shconf",
            "--log-level=4",
        ];
        assert_eq!(
            raw(&l, Role::Server, 0),
            (args.map(String::from).to_vec(), "0000:99:00.0".into())
        );
        let l = flags(&[
            "--file-prefix",
            "f",
            "--huge",
            "--log-level",
            "6",
            "--eal-arg=--iova-mode=pa",
        ]);
        let args = [
            "rpc-engine",
            "-l",
            "1",
            "--no-pci",
            "--vdev",
            "net_memif0,role=server,socket=/tmp/rpc-engine.sock",
            "--file-prefix",
            "f",
            "--log-level=6",
            "--iova-mode=pa",
        ];
        assert_eq!(raw(&l, Role::Server, 1).0, args.map(String::from).to_vec());
        let e = device(&flags(&["--link", "pci"]), Role::Server, false).unwrap_err();
        assert!(e.to_string().contains("--link pci needs --pci"), "{e}");
    }

    #[test]
    fn each_tool_gets_its_port_and_pool() {
        use std::time::Duration as Std;
        // rpc-server / rpc-client: [link]'s geometry, a derived pool, 30 s
        // (open_nexus then waits as their --wait says).
        let c = cfg(&[
            "cores.server=[0, 1]",
            "link.rx_desc=512",
            "link.tx_desc=256",
        ]);
        let n = c.nexus_builder(Role::Server).unwrap().config().unwrap();
        let p = &n.port;
        assert_eq!(
            (p.queues, p.rx_desc, p.tx_desc, p.mtu, p.promiscuous),
            (2, 512, 256, Some(1500), true)
        );
        assert_eq!((n.pool_mbufs, n.pool_cache, n.data_room), (0, 256, 2048));
        assert_eq!(
            (n.link_timeout, n.steer_required, n.udp_base),
            (Some(Std::from_secs(30)), false, 31851)
        );
        // floor, port-check, rpc-hostile: one queue, the driver's MTU.
        for (mbufs, cache) in [(8191, 256), (4095, 0), (4095, 256)] {
            let b = builder(
                &flags(&[]),
                Role::Server,
                &[1],
                &PortShape::raw(mbufs, cache),
            );
            let n = b.unwrap().config().unwrap();
            let p = &n.port;
            assert_eq!(
                (p.queues, p.rx_desc, p.tx_desc, p.mtu, p.promiscuous),
                (1, 1024, 1024, None, true)
            );
            assert_eq!(
                (n.pool_mbufs, n.pool_cache, n.data_room),
                (mbufs, cache, 2048)
            );
            assert_eq!(n.link_timeout, Some(Std::from_secs(30)));
        }
    }

    #[test]
    fn pci_means_promiscuous_off_and_steered_queues() {
        let c = cfg(&[
            "link.kind=pci",
            "link.pci=0000:01:00.0",
            "link.huge=true",
            "cores.server=[0, 1]",
        ]);
        let n = c.nexus_builder(Role::Server).unwrap().config().unwrap();
        assert!(!n.port.promiscuous, "a real NIC filters by MAC");
        assert!(n.steer_required);
        assert_eq!(n.udp_base, 31851);
        let l = flags(&["--link", "pci", "--pci", "0000:99:00.0"]);
        let b = builder(&l, Role::Server, &[0], &PortShape::raw(4095, 0)).unwrap();
        assert!(!b.config().unwrap().port.promiscuous);
        // Every virtual device stays promiscuous.
        for kind in [
            "memif",
            "af_packet",
            "virtio",
            "af_xdp",
            "ring",
            "null",
            "pcap",
        ] {
            let c = cfg(&[&format!("link.kind={kind}")]);
            let n = c.nexus_builder(Role::Client).unwrap().config().unwrap();
            assert!(n.port.promiscuous, "{kind}");
        }
    }

    #[test]
    fn memif_ring_over_2_pow_14_is_refused_naming_the_key() {
        let env = crate::config::ValidationEnv { online_cores: 2 };
        let e = cfg(&["link.rx_desc=32768"]).validate(&env).unwrap_err();
        assert_eq!(e.key(), Some("link.rx_desc"), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("link.rx_desc = 32768") && msg.contains("at most 16384"),
            "{msg}"
        );
        // Not a memif ring: the descriptor limit is DPDK's 32768.
        let ok = cfg(&[
            "link.rx_desc=32768",
            "link.kind=af_packet",
            "transport.peer_ring_share_pct=100",
            "transport.session_ring_share_pct=100",
        ]);
        ok.validate(&env).unwrap();
        cfg(&["link.rx_desc=16384"]).validate(&env).unwrap();
    }

    #[test]
    fn af_xdp_on_veth_takes_one_worker_and_virtio_several() {
        let env = crate::config::ValidationEnv { online_cores: 4 };
        let e = cfg(&["link.kind=af_xdp", "cores.server=[1, 2]"])
            .validate(&env)
            .unwrap_err();
        assert_eq!(e.key(), Some("cores.server"), "{e}");
        assert!(e.to_string().contains("link.kind = af_xdp"), "{e}");
        cfg(&[
            "link.kind=virtio",
            "cores.server=[1, 2]",
            "cores.client=[0, 3]",
        ])
        .validate(&env)
        .unwrap();
        // Both virtio ends' receive rings are virtqueues of the driver's size.
        let c = cfg(&["link.kind=virtio", "link.rx_desc=512"]);
        for role in [Role::Server, Role::Client] {
            let b = c.nexus_builder(role).unwrap();
            assert_eq!(b.rx_ring_entries(), 512, "{role:?}");
        }
    }

    #[test]
    fn each_worker_gets_its_own_endpoint_config() {
        let c = cfg(&["cores.client=[0, 1]", "link.kind=ring"]);
        let mac = MacAddr([2, 0, 0, 0, 0, 7]);
        let w = |index| Worker {
            index,
            mac,
            rx_ring_entries: 777,
        };
        let (a, b) = (
            c.endpoint_config(Role::Client, &w(0)).unwrap(),
            c.endpoint_config(Role::Client, &w(1)).unwrap(),
        );
        assert_eq!((a.local.port, b.local.port), (31851, 31852));
        assert_eq!((a.local.mac, a.rx_ring_entries), (mac, 777));
        assert_eq!(a.local.ip, c.link.client_ip);
        assert_ne!(a.seed, b.seed);
        // rpc-client's loopback endpoint serves at the server's address.
        let l = c.loopback_endpoint_config(&w(0)).unwrap();
        assert_eq!((l.local.ip, l.local.port), (c.link.server_ip, 31851));
        // Before a port is open: the ring the device would have.
        assert_eq!(c.offline_worker(Role::Client, 0, mac).rx_ring_entries, 1023);
        let m = cfg(&["link.rx_desc=4096"]);
        assert_eq!(m.offline_worker(Role::Server, 0, mac).rx_ring_entries, 4096);
    }
}
