//! Values a validated [`Config`] derives for the engine: window, credits
//! (the BDP), admission limits, worker ports, session targets, the
//! binaries' `LinkArgs` and the injected-drop model. `setup.rs` assembles
//! them into the engine's builder and each worker's `EndpointConfig`.

use super::schema::*;
use crate::config::link::{LinkArgs, LinkKind, Role};
use engine::fault::DropModel;
use engine::proto::{bdp_credits, Admission, PeerAddr};
use engine::time::Duration;
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

    /// rpc-bench starts both processes: its server lets its own client
    /// reserve the whole ring (ring shares unset become 100 %), as the lab's
    /// sessions all come from one address, and lets that one address hold
    /// every session the client opens to one server worker
    /// (`transport.max_sessions_per_peer` raised to it, never lowered), so
    /// `--sessions 1000` is not refused with PeerLimit. A share the config
    /// sets stays.
    pub fn trust_own_client(&mut self) {
        let own = self.max_sessions_per_server_worker() as u32;
        let t = &mut self.transport;
        t.session_ring_share_pct.get_or_insert(100);
        t.peer_ring_share_pct.get_or_insert(100);
        t.max_sessions_per_peer = t.max_sessions_per_peer.max(own);
    }

    /// The server's admission limits: the configured shares (the engine's
    /// defaults when unset) and the restart probe's wait.
    pub fn admission(&self) -> Admission {
        let t = &self.transport;
        let d = Admission::default();
        Admission {
            session_ring_share_pct: t.session_ring_share_pct.unwrap_or(d.session_ring_share_pct),
            peer_ring_share_pct: t.peer_ring_share_pct.unwrap_or(d.peer_ring_share_pct),
            restart_probe_wait: Duration::from_millis(t.restart_probe_wait_ms),
            cookie_above_pct: t.cookie_above_pct,
            wrong_tokens_per_sec: t.wrong_tokens_per_sec,
        }
    }

    /// The bandwidth-delay product in packets for `transport.bdp_gbps`
    /// (`link_gbps` when unset), `transport.rtt_us` and `link.mtu`:
    /// `ceil(rate x RTT / MTU)`.
    pub fn bdp_credits(&self) -> u16 {
        let t = &self.transport;
        let gbps = t.bdp_gbps.unwrap_or(t.link_gbps);
        let bps = (gbps.max(0.0) * 1e9).min(u64::MAX as f64) as u64;
        let rtt_ns = (t.rtt_us.max(0.0) * 1e3).round().min(u64::MAX as f64) as u64;
        bdp_credits(bps, Duration::from_nanos(rtt_ns), self.link.mtu as usize)
    }

    /// Session credits: `transport.credits` when set; else the BDP in
    /// lossless mode, and `lossy_credit_multiple` x BDP (or `u16::MAX` when
    /// unbounded) in lossy and pause modes (neither reserves ring entries).
    pub fn effective_credits(&self) -> u16 {
        if let Some(c) = self.transport.credits {
            return c;
        }
        let bdp = self.bdp_credits();
        match (self.transport.mode, self.transport.lossy_credit_multiple) {
            (Mode::Lossless, _) => bdp,
            (Mode::Lossy | Mode::Pause, CreditMultiple::Unbounded) => u16::MAX,
            (Mode::Lossy | Mode::Pause, CreditMultiple::Factor(f)) => {
                (bdp as f64 * f).ceil().clamp(1.0, u16::MAX as f64) as u16
            }
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
            // 30 s, not 10: on this shared 2-core VM a two-process memif
            // start has timed out at 10 s with nothing wrong but a slow
            // peer (right after a build, DPDK's drivers loading cold).
            link_timeout_ms: 30_000,
            qdisc_bypass: l.qdisc_bypass,
        }
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
    fn credits_by_mode() {
        let c = with(&["transport.mode=lossy"]).unwrap();
        assert_eq!(c.effective_credits(), 36);
        let c = with(&[
            "transport.mode=lossy",
            "transport.lossy_credit_multiple=unbounded",
        ])
        .unwrap();
        assert_eq!(c.effective_credits(), u16::MAX);
        let c = with(&["transport.mode=lossy", "transport.credits=5"]).unwrap();
        assert_eq!(c.effective_credits(), 5);
        let e = with(&["transport.lossy_credit_multiple=lots"]).unwrap_err();
        assert_eq!(e.key(), Some("transport.lossy_credit_multiple"), "{e}");
    }

    #[test]
    fn lossless_credit_limit_is_the_validation_boundary() {
        let base = [
            "link.rx_desc=256",
            "workload.sessions_per_thread=4",
            "transport.peer_ring_share_pct=100",
            "transport.session_ring_share_pct=100",
        ];
        let c = with(&base).unwrap();
        // 256 entries / 4 sessions, less the probe entry.
        assert_eq!(c.lossless_credit_limit(), 63);
        let ok = with(&[&base[..], &["transport.credits=63"]].concat()).unwrap();
        assert!(ok.validate(&ENV).is_ok());
        let over = [&base[..], &["transport.credits=64"]].concat();
        assert_eq!(rejected_key(&over), "transport.credits");
        let e = with(&over).unwrap().validate(&ENV).unwrap_err();
        assert!(e.to_string().contains("sessions_per_thread"), "{e}");
        // The server's default shares: a quarter of 256 entries for the 4
        // sessions of one address, 15 credits each; more is refused naming
        // the share.
        let shared = with(&base[..2]).unwrap();
        assert_eq!(shared.lossless_credit_limit(), 15);
        let over = [base[0], base[1], "transport.credits=16"];
        assert_eq!(rejected_key(&over), "transport.peer_ring_share_pct");
        let mut own = with(&over).unwrap();
        own.trust_own_client();
        assert!(own.validate(&ENV).is_ok(), "rpc-bench's own pair");
        assert_eq!(
            rejected_key(&["transport.peer_ring_share_pct=0"]),
            "transport.peer_ring_share_pct"
        );
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
            e.mode,
            FlowMode::Lossless {
                on_loss: LossPolicy::ResetSession
            }
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
        ] {
            let set = format!("transport.cc={value}");
            let c = with(&[set.as_str(), "transport.link_gbps=25"]).unwrap();
            let e = endpoint(&c, Role::Client, 0, MacAddr([2, 0, 0, 0, 0, 1]));
            assert_eq!(e.cc, kind);
            assert_eq!(e.link_bps, 25_000_000_000);
            e.validate().unwrap();
        }
    }

    #[test]
    fn rpc_bench_lets_its_own_client_hold_all_its_sessions() {
        let mut c = with(&["workload.sessions_per_thread=1000"]).unwrap();
        assert_eq!(c.transport.max_sessions_per_peer, 256);
        c.trust_own_client();
        assert_eq!(c.transport.max_sessions_per_peer, 1000);
        // Never lowered: a larger configured limit stays.
        let mut c = with(&["transport.max_sessions_per_peer=4000"]).unwrap();
        c.trust_own_client();
        assert_eq!(c.transport.max_sessions_per_peer, 4000);
    }
}
