//! What a validated [`Config`] says about the run's layout, apart from the
//! transport (the engine resolves that, `resolution.rs`): the window,
//! checksum policy, worker ports, session targets and sessions per worker,
//! the binaries' `LinkArgs` and the injected-drop model.

use super::schema::*;
use crate::config::link::{LinkArgs, LinkKind, Role};
use engine::fault::DropModel;
use engine::nic::RssPorts;
use engine::proto::PeerAddr;
use engine::wire::MacAddr;

impl Config {
    /// Outstanding requests per session: `workload.window`, else 1 for the
    /// latency workload and 8 for the others.
    pub fn window(&self) -> u32 {
        self.workload.window.unwrap_or(match self.workload.kind {
            // One 8 MiB request at a time: several in flight on one session
            // queue their handlers behind each other past the RTO.
            WorkloadKind::Latency | WorkloadKind::Large => 1,
            _ => 8,
        })
    }

    /// `link.ipv4_checksum` resolved for this link: `auto` trusts only the
    /// shared-memory links, which cannot corrupt a frame.
    pub fn verify_ipv4_checksum(&self) -> bool {
        match self.link.ipv4_checksum {
            Ipv4Checksum::Verify => true,
            Ipv4Checksum::Trust => false,
            Ipv4Checksum::Auto => !matches!(self.link.kind, LinkKind::Memif | LinkKind::Ring),
        }
    }

    /// Whether the link pairs the client's queue `i` with the server's
    /// queue `i` (memif, virtio, net_ring: `engine::nic::Steering::Positional`):
    /// client worker `c`'s frames reach server worker `c` alone, whatever
    /// UDP port they address.
    pub fn positional_link(&self) -> bool {
        matches!(
            self.link.kind,
            LinkKind::Memif | LinkKind::Virtio | LinkKind::Ring
        )
    }

    /// The server worker that client worker `client_worker`'s session number
    /// `session` connects to: worker 0 for incast; on a positional link
    /// ([`Self::positional_link`]) the client worker's own peer, worker
    /// `client_worker` (validation refuses more client workers than server
    /// workers there, and incast with several); else sessions spread
    /// round-robin over the server workers.
    pub fn target_server_worker(&self, client_worker: usize, session: usize) -> usize {
        let servers = self.cores.server.len().max(1);
        match self.workload.kind {
            WorkloadKind::Incast => 0,
            _ if self.positional_link() => client_worker % servers,
            _ => (client_worker * self.workload.sessions_per_thread as usize + session) % servers,
        }
    }

    /// `link.client_port` resolved for this link: `auto` is `rss` on a real
    /// NIC (its server may steer by RSS) and `fixed` elsewhere.
    pub fn client_port_mode(&self) -> ClientPort {
        match self.link.client_port {
            ClientPort::Auto if self.link.kind == LinkKind::Pci => ClientPort::Rss,
            ClientPort::Auto => ClientPort::Fixed,
            m => m,
        }
    }

    /// Each client worker's UDP port: `udp_port + i` (`fixed`), or chosen
    /// so that its sessions' requests hash to their server workers' queues
    /// and their answers to its own (`rss`, `engine::nic::RssPorts`). A
    /// worker whose targets no port reaches together is refused, naming
    /// why and what to change.
    pub fn client_ports(&self) -> Result<Vec<u16>, ConfigError> {
        let clients = self.cores.client.len();
        if self.client_port_mode() == ClientPort::Fixed {
            return Ok((0..clients).map(|i| self.worker_port(i)).collect());
        }
        let plan = RssPorts {
            client_ip: self.link.client_ip,
            server_ip: self.link.server_ip,
            base: self.link.udp_port,
            server_workers: self.cores.server.len().max(1) as u16,
            client_workers: clients.max(1) as u16,
        };
        let targets = |c: usize| {
            let mut t: Vec<u16> = (0..self.workload.sessions_per_thread as usize)
                .map(|s| self.target_server_worker(c, s) as u16)
                .collect();
            t.sort_unstable();
            t.dedup();
            t
        };
        let ports_at = |plan: &RssPorts| {
            (0..clients)
                .map(|c| plan.port(c as u16, &targets(c)))
                .collect::<Result<Vec<u16>, _>>()
        };
        ports_at(&plan).map_err(|e| {
            // The tie moves with the server's ports: name a base that works
            // (searched only on this error path).
            let last = usize::from(u16::MAX) - self.cores.server.len();
            let other = (usize::from(plan.base) + 1..=last.min(usize::from(plan.base) + 64))
                .map(|b| RssPorts { base: b as u16, ..plan })
                .find(|p| ports_at(p).is_ok())
                .map_or(String::new(), |p| format!(" (link.udp_port = {} does)", p.base));
            ConfigError::invalid(
                "link.client_port",
                format!(
                    "link.client_port = rss: {e}; give each client worker sessions to one server worker (workload.sessions_per_thread = 1: client worker c then dials server worker c mod len(cores.server)), or choose another link.udp_port, which moves the tie{other}, or set link.client_port = fixed where the server steers by rte_flow (its startup line says `steering rte_flow`)"
                ),
            )
        })
    }

    /// UDP port of `role`'s worker `i`: the server's `udp_port + i`, the
    /// client's per [`Self::client_ports`].
    pub fn local_port(&self, role: Role, worker_index: usize) -> Result<u16, ConfigError> {
        match role {
            Role::Server => Ok(self.worker_port(worker_index)),
            Role::Client => Ok(self
                .client_ports()?
                .get(worker_index)
                .copied()
                .unwrap_or(self.worker_port(worker_index))),
        }
    }

    /// Sessions the busiest server worker accepts, per [`Self::target_server_worker`].
    pub fn max_sessions_per_server_worker(&self) -> usize {
        let mut per = vec![0usize; self.cores.server.len().max(1)];
        for c in 0..self.cores.client.len() {
            for s in 0..self.workload.sessions_per_thread as usize {
                per[self.target_server_worker(c, s)] += 1;
            }
        }
        per.into_iter().max().unwrap_or(0)
    }

    /// Server worker `i`'s address, as a client's connect target.
    pub fn server_peer(&self, server_worker: usize) -> PeerAddr {
        PeerAddr {
            mac: self.link.server_mac.map(|m| m.0),
            ip: self.link.server_ip,
            port: self.worker_port(server_worker),
        }
    }

    /// UDP port of worker `i`: the server's (`link.udp_port + i`, what
    /// per-queue flow steering on a real NIC matches on), and a client's
    /// with `link.client_port = fixed`.
    pub fn worker_port(&self, worker_index: usize) -> u16 {
        self.link.udp_port.saturating_add(worker_index as u16)
    }

    /// The configured MAC of `role`'s port, if any (else the port's own).
    pub fn mac(&self, role: Role) -> Option<MacAddr> {
        match role {
            Role::Server => self.link.server_mac.map(|m| m.0),
            Role::Client => self.link.client_mac.map(|m| m.0),
        }
    }

    pub fn cores(&self, role: Role) -> &[u32] {
        match role {
            Role::Server => &self.cores.server,
            Role::Client => &self.cores.client,
        }
    }

    /// The `[link]` section as the binaries' shared link flags.
    pub fn link_args(&self) -> LinkArgs {
        let l = &self.link;
        LinkArgs {
            link: l.kind,
            socket: l.socket.clone(),
            iface: l.iface.clone(),
            pci: l.pci.clone(),
            vdev: l.vdev.clone(),
            file_prefix: l.file_prefix.clone(),
            huge: l.huge,
            mem_mb: l.mem_mb,
            log_level: 4,
            eal_args: l.eal_args.clone(),
            client_netns: l.client_netns.clone(),
            // The raw tools' bound (floor, port-check, rpc-hostile;
            // rpc-server and rpc-client wait as their --wait says,
            // `run::waiting`). 30 s, not 10: on this shared 2-core VM a
            // two-process memif start has timed out at 10 s with nothing
            // wrong but a slow peer (right after a build, drivers loading cold).
            link_timeout_ms: 30_000,
            qdisc_bypass: l.qdisc_bypass,
        }
    }

    /// Probability that the injected marker sets ECN CE on a received
    /// ECN-capable frame (`faults.ecn_p`, 0 when unset). The DPDK run loop
    /// does not take it yet: nothing in `engine::runtime` has a field for
    /// it, so no binary passes it on.
    pub fn ecn_mark_p(&self) -> f64 {
        self.faults.ecn_p.unwrap_or(0.0)
    }

    /// The injected-drop model of `[faults]`.
    pub fn drop_model(&self) -> DropModel {
        let f = &self.faults;
        match f.drop {
            DropKind::None => DropModel::None,
            DropKind::Uniform => DropModel::Uniform {
                p: f.p.unwrap_or(0.0),
            },
            DropKind::GilbertElliott => DropModel::GilbertElliott {
                p_good_to_bad: f.ge_p_good_to_bad.unwrap_or(0.0),
                p_bad_to_good: f.ge_p_bad_to_good.unwrap_or(1.0),
                loss_good: f.ge_loss_good.unwrap_or(0.0),
                loss_bad: f.ge_loss_bad.unwrap_or(1.0),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::*;
    use engine::proto::{CcKind, FlowMode, LossPolicy, MemBudget};
    use engine::time::Duration;
    use std::net::Ipv4Addr;

    const PCI: [&str; 3] = ["link.kind=pci", "link.pci=0000:01:00.0", "link.huge=true"];

    #[test]
    fn positional_links_send_a_client_workers_sessions_to_its_peer() {
        // memif and virtio pair client queue c with server queue c: every
        // session of client worker c must go to server worker c (round
        // robin would send half of them where no frame of c arrives).
        for kind in ["link.kind=memif", "link.kind=virtio"] {
            let c = with(&[
                kind,
                "cores.server=[0, 1]",
                "cores.client=[0, 1]",
                "workload.sessions_per_thread=2",
            ])
            .unwrap();
            c.validate(&ENV).unwrap();
            for (w, s) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                assert_eq!(
                    c.target_server_worker(w, s),
                    w,
                    "{kind} worker {w} session {s}"
                );
            }
            assert_eq!(c.max_sessions_per_server_worker(), 2);
        }
        // A NIC steers by port: sessions spread round robin.
        let mut sets = PCI.to_vec();
        sets.extend([
            "cores.server=[0, 1]",
            "cores.client=[0, 1]",
            "link.client_port=fixed",
        ]);
        sets.push("workload.sessions_per_thread=2");
        let c = with(&sets).unwrap();
        let t: Vec<usize> = [(0, 0), (0, 1), (1, 0), (1, 1)]
            .iter()
            .map(|&(w, s)| c.target_server_worker(w, s))
            .collect();
        assert_eq!(t, [0, 1, 0, 1]);
    }

    #[test]
    fn client_ports_are_fixed_off_a_nic_and_chosen_for_rss_on_one() {
        let memif = with(&["cores.server=[0, 1]", "cores.client=[0, 1]"]).unwrap();
        assert_eq!(memif.client_port_mode(), ClientPort::Fixed);
        assert_eq!(memif.client_ports().unwrap(), [31851, 31852]);
        for (servers, clients) in [("[0, 1]", "[0]"), ("[0, 1]", "[0, 1]"), ("[0]", "[0, 1]")] {
            let (sc, cc) = (
                format!("cores.server={servers}"),
                format!("cores.client={clients}"),
            );
            let mut sets = PCI.to_vec();
            sets.extend([sc.as_str(), cc.as_str()]);
            let c = with(&sets).unwrap();
            c.validate(&ENV).unwrap();
            assert_eq!(c.client_port_mode(), ClientPort::Rss, "auto on a NIC");
            let plan = RssPorts {
                client_ip: c.link.client_ip,
                server_ip: c.link.server_ip,
                base: 31851,
                server_workers: c.cores.server.len() as u16,
                client_workers: c.cores.client.len() as u16,
            };
            let ports = c.client_ports().unwrap();
            assert_eq!(ports.len(), c.cores.client.len());
            for (w, &p) in ports.iter().enumerate() {
                let j = c.target_server_worker(w, 0) as u16;
                assert!(
                    plan.reaches(w as u16, p, j),
                    "{servers}/{clients}: worker {w} port {p}"
                );
                // The endpoint and the port's steering take the same port.
                let e = endpoint(&c, Role::Client, w as u16, MacAddr([2, 0, 0, 0, 0, 1]));
                assert_eq!(e.local.port, p);
                let b = c.nexus_builder(Role::Client).unwrap();
                assert_eq!(b.endpoint_config(w as u16).local.port, p);
                assert_eq!(b.config().unwrap().udp_ports, ports);
            }
            // The server keeps udp_port + i (its flow rules and RETA).
            let s = endpoint(&c, Role::Server, 0, MacAddr([2, 0, 0, 0, 0, 2]));
            assert_eq!(s.local.port, 31851);
        }
        let mut sets = PCI.to_vec();
        sets.extend(["cores.server=[0, 1]", "link.client_port=fixed"]);
        assert_eq!(with(&sets).unwrap().client_ports().unwrap(), [31851]);
    }

    #[test]
    fn memory_bounds_map_to_the_engine() {
        let c = with(&[
            "transport.mem_per_worker_mib=300",
            "transport.mem_per_peer_mib=100",
            "transport.reassembly_timeout_ms=250",
            "transport.pool_keep_mib=16",
        ])
        .unwrap();
        let mac = engine::wire::MacAddr([2, 0, 0, 0, 0, 1]);
        let mem = endpoint(&c, Role::Server, 0, mac).mem;
        assert_eq!(
            mem,
            MemBudget {
                per_worker: 300 << 20,
                per_peer: 100 << 20,
                reassembly_timeout: Duration::from_millis(250),
                pool_keep: 16 << 20,
            }
        );
        // The defaults are the engine's.
        let d = with(&[]).unwrap();
        assert_eq!(endpoint(&d, Role::Server, 0, mac).mem, MemBudget::default());
    }

    #[test]
    fn ipv4_checksum_trusted_only_on_shared_memory_by_default() {
        let verify = |sets: &[&str]| {
            let c = with(sets).unwrap();
            let e = endpoint(&c, Role::Server, 0, MacAddr([2, 0, 0, 0, 0, 1]));
            assert_eq!(e.verify_ipv4_checksum, c.verify_ipv4_checksum());
            e.verify_ipv4_checksum
        };
        assert!(!verify(&[]), "memif (the default link) cannot corrupt");
        assert!(!verify(&["link.kind=ring"]));
        assert!(verify(&["link.kind=af_packet"]));
        assert!(verify(&["link.kind=pci"]));
        assert!(verify(&["link.ipv4_checksum=verify"]));
        assert!(!verify(&[
            "link.kind=af_packet",
            "link.ipv4_checksum=trust"
        ]));
        let e = with(&["link.ipv4_checksum=sometimes"]).unwrap_err();
        assert_eq!(e.key(), Some("link.ipv4_checksum"), "{e}");
    }

    #[test]
    fn mapping_to_engine() {
        let c = with(&[
            "transport.mode=lossless",
            "transport.on_loss=reset",
            "transport.credits=12",
            "cores.server=[0, 1]",
            "faults.drop=gilbert_elliott",
            "faults.ge_p_good_to_bad=0.01",
            "faults.ge_p_bad_to_good=0.5",
        ])
        .unwrap();
        c.validate(&ENV).unwrap();
        let e = endpoint(&c, Role::Server, 1, MacAddr([2, 0, 0, 0, 0, 2]));
        e.validate().unwrap();
        assert_eq!(e.local.port, 31852);
        assert_eq!(e.local.ip, Ipv4Addr::new(127, 77, 0, 2));
        assert_eq!(e.session_credits, 12);
        assert_eq!(e.rx_ring_entries, 1024);
        assert_eq!(
            (e.mode, e.on_loss),
            (FlowMode::Lossless, LossPolicy::ResetSession)
        );
        assert_eq!(e.rto, Duration::from_micros(5000));
        let port = c
            .nexus_builder(Role::Server)
            .unwrap()
            .config()
            .unwrap()
            .port;
        assert_eq!((port.queues, port.rx_desc, port.mtu), (2, 1024, Some(1500)));
        assert!(
            matches!(c.drop_model(), DropModel::GilbertElliott { loss_bad, .. } if loss_bad == 1.0)
        );
        assert_eq!(c.link_args().link, LinkKind::Memif);
        // Round trip through TOML text (what a parent hands its children).
        let back = Config::from_toml_str(&c.to_toml_string()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn congestion_control_reaches_the_endpoint() {
        for (value, kind) in [
            ("none", CcKind::None),
            ("timely", CcKind::Timely),
            ("dcqcn", CcKind::Dcqcn),
            ("nscc", CcKind::Nscc),
        ] {
            let set = format!("transport.cc={value}");
            let c = with(&[set.as_str(), "transport.link_gbps=25"]).unwrap();
            let e = endpoint(&c, Role::Client, 0, MacAddr([2, 0, 0, 0, 0, 1]));
            assert_eq!(e.cc, kind);
            assert_eq!(e.link_bps, 25_000_000_000);
            e.validate().unwrap();
        }
    }
}
