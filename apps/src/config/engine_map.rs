//! What a validated [`Config`] says about the run's layout, apart from the
//! transport (the engine resolves that, `resolution.rs`): the window,
//! checksum policy, worker ports, session targets and sessions per worker,
//! the binaries' `LinkArgs` and the injected-drop model.

use super::schema::*;
use crate::config::link::{LinkArgs, LinkKind, Role};
use engine::fault::DropModel;
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

    /// The server worker that client worker `client_worker`'s session number
    /// `session` connects to: worker 0 for incast, else sessions spread
    /// round-robin over the server workers.
    pub fn target_server_worker(&self, client_worker: usize, session: usize) -> usize {
        let servers = self.cores.server.len().max(1);
        match self.workload.kind {
            WorkloadKind::Incast => 0,
            _ => (client_worker * self.workload.sessions_per_thread as usize + session) % servers,
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

    /// UDP port of worker `i` (both roles): `link.udp_port + i`, which is
    /// what per-queue flow steering on a real NIC matches on.
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
