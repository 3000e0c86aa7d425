//! Validation: one pass over a loaded [`Config`] that rejects impossible
//! combinations with a message naming the key and the limit. `[transport]`
//! is the engine's to check and resolve (`engine::config`: timers, windows,
//! memory, the credits the ring backs, pause thresholds, ...); DPDK's
//! limits on `[link]` and `[cores]` are the engine's builder's, run here on
//! what each role would build (`NexusBuilder::validate`, whose refusals
//! name the key themselves); this file keeps what only the run config
//! knows: cores on this machine, addresses, the workload and the injected
//! faults. Last, a guard that each resolved endpoint passes the engine's
//! own check.

use super::schema::*;
use crate::config::link::{LinkKind, Role};
use engine::proto::{MAX_REQ_WINDOW, MAX_SESSIONS};
use engine::wire::MacAddr;
use std::collections::BTreeSet;

/// Where a worker's MAC is not configured: any unicast MAC (the port's is
/// known only once it is open).
const PLACEHOLDER_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);

/// What validation needs to know about the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidationEnv {
    /// Cores 0..online_cores exist.
    pub online_cores: usize,
}

impl ValidationEnv {
    /// This machine: the highest online CPU + 1 from
    /// /sys/devices/system/cpu/online, else `available_parallelism`.
    pub fn detect() -> Self {
        let from_sysfs = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| parse_cpu_list_end(s.trim()));
        let online_cores = from_sysfs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        ValidationEnv { online_cores }
    }
}

/// "0-3,5" -> 6 (one past the highest listed CPU).
fn parse_cpu_list_end(s: &str) -> Option<usize> {
    s.split(',')
        .filter_map(|r| r.rsplit('-').next()?.trim().parse::<usize>().ok())
        .max()
        .map(|m| m + 1)
}

impl Config {
    /// Checks every value once, both roles' cores included. See
    /// `docs/configs.md` for each key's limit.
    pub fn validate(&self, env: &ValidationEnv) -> Result<(), ConfigError> {
        self.validate_inner(env, None)
    }

    /// As [`Self::validate`], but checks only `role`'s cores against this
    /// machine (for two machines, each running one role).
    pub fn validate_for(&self, env: &ValidationEnv, role: Role) -> Result<(), ConfigError> {
        self.validate_inner(env, Some(role))
    }

    /// As [`Self::validate`] for a pair a tool starts itself (rpc-bench):
    /// its server trusts its own client and its ring grows to back the
    /// load (`engine::config::Facts::own_pair`); the link is still to be
    /// measured, so the rate cap waits for the line rate.
    pub fn validate_pair(&self, env: &ValidationEnv) -> Result<(), ConfigError> {
        self.check_sections(env, None)?;
        self.validate_core_sharing()?;
        self.validate_builders()?;
        let r = self.resolve_with(true, None, true)?;
        self.validate_workload()?;
        self.validate_steering()?;
        self.validate_faults()?;
        self.with_resolved(&r).validate_endpoints()
    }

    fn validate_inner(&self, env: &ValidationEnv, role: Option<Role>) -> Result<(), ConfigError> {
        self.validate_kernel(role)?;
        self.check_sections(env, role)?;
        self.validate_builders()?;
        // rpc-bench (no role) measures the link before its run.
        self.resolve_with(false, None, role.is_none())?;
        self.validate_workload()?;
        self.validate_steering()?;
        self.validate_faults()?;
        self.validate_endpoints()
    }

    /// The link and cores, before anything is resolved on them.
    fn check_sections(&self, env: &ValidationEnv, role: Option<Role>) -> Result<(), ConfigError> {
        self.validate_link()?;
        for r in [Role::Server, Role::Client] {
            let on_this_machine = role.is_none() || role == Some(r);
            self.validate_cores(r, on_this_machine.then_some(env))?;
        }
        Ok(())
    }

    /// A server and a client one tool runs together on this machine
    /// (rpc-bench; elsewhere a config may name two machines' cores, as
    /// `configs/real-nic.toml` does) must not share a core: two poll-mode loops would time-slice it, and
    /// every figure would measure the scheduler (milliseconds per RPC)
    /// with nothing else saying so. `cores.allow_shared = true` is for
    /// measuring that on purpose. net_ring runs one process on the
    /// client's first core and leaves the server's unused.
    fn validate_core_sharing(&self) -> Result<(), ConfigError> {
        let c = &self.cores;
        if c.allow_shared || self.link.kind == LinkKind::Ring {
            return Ok(());
        }
        match c.server.iter().find(|s| c.client.contains(s)) {
            Some(core) => Err(ConfigError::invalid(
                "cores.client",
                format!(
                    "cores.server = {:?} and cores.client = {:?} both contain core {core}: the server and the client would time-slice it, and the run would measure the scheduler; give them different cores, or set cores.allow_shared = true to measure a shared core on purpose",
                    c.server, c.client
                ),
            )),
            None => Ok(()),
        }
    }

    /// Addresses and the device keys the engine cannot judge (its limits
    /// on descriptors, MTU, mbufs, memory, UDP ports, socket paths and
    /// interface names are `NexusBuilder::validate`'s).
    fn validate_link(&self) -> Result<(), ConfigError> {
        let l = &self.link;
        for (key, mac) in [
            ("link.server_mac", l.server_mac),
            ("link.client_mac", l.client_mac),
        ] {
            if let Some(m) = mac.filter(|m| !m.0.is_unicast()) {
                return Err(ConfigError::invalid(
                    key,
                    format!("{key} = {} must be a unicast MAC", m.0),
                ));
            }
        }
        if l.server_ip == l.client_ip {
            return Err(ConfigError::invalid(
                "link.client_ip",
                format!(
                    "link.client_ip = {} must differ from link.server_ip",
                    l.client_ip
                ),
            ));
        }
        if l.vdev.is_some() {
            return Ok(()); // a raw spec overrides everything derived from kind
        }
        match l.kind {
            LinkKind::Pci if l.pci.is_none() => Err(ConfigError::invalid(
                "link.pci",
                "link.kind = pci needs link.pci (e.g. \"0000:01:00.0\")",
            )),
            LinkKind::Pci if !l.huge => Err(ConfigError::invalid(
                "link.huge",
                "link.kind = pci needs link.huge = true (NIC DMA needs hugepage memory)",
            )),
            LinkKind::Kernel if self.cores.client.len() > 1 => Err(ConfigError::invalid(
                "cores.client",
                format!(
                    "cores.client = {:?}: link.kind = kernel runs one worker (one UDP socket), name one core",
                    self.cores.client
                ),
            )),
            LinkKind::AfPacket | LinkKind::AfXdp
                if self.cores.server.len().max(self.cores.client.len()) > 1 =>
            {
                let role = match self.cores.server.len() > 1 {
                    true => Role::Server,
                    false => Role::Client,
                };
                let key = format!("cores.{}", role.as_str());
                Err(ConfigError::invalid(
                    &key,
                    format!(
                        "{key} = {:?}: link.kind = {} runs one worker per process (af_packet: one AF_PACKET socket; af_xdp: a veth pair has one queue), name one core",
                        self.cores(role),
                        l.kind.as_str()
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// `link.kind = kernel` is rpc-client's link: a server (or rpc-bench's
    /// DPDK side, `role` None, which starts its server on another link)
    /// loading it is refused by name.
    fn validate_kernel(&self, role: Option<Role>) -> Result<(), ConfigError> {
        match (self.link.kind, role) {
            (LinkKind::Kernel, Some(Role::Server)) => Err(ConfigError::invalid(
                "link.kind",
                crate::config::setup::KERNEL_HAS_NO_DEVICE,
            )),
            _ => Ok(()),
        }
    }

    /// Runs the engine's check on what each role's process would build;
    /// its refusal names the key, the value and the limit (the only copy
    /// of DPDK's limits).
    fn validate_builders(&self) -> Result<(), ConfigError> {
        if self.link.kind == LinkKind::Kernel {
            return Ok(()); // no DPDK device on the client's side (`validate_kernel`)
        }
        for r in [Role::Server, Role::Client] {
            // A config error (a client's ports, `client_ports`) keeps its key.
            let b = self
                .nexus_builder(r)
                .map_err(|e| match e.downcast::<ConfigError>() {
                    Ok(c) => c,
                    Err(e) => ConfigError::invalid("link.pci", e.to_string()),
                })?;
            b.validate()?;
        }
        Ok(())
    }

    /// A guard on resolution's contract, never expected to fire: each
    /// worker's endpoint, as resolved, passes the engine's own check.
    fn validate_endpoints(&self) -> Result<(), ConfigError> {
        for r in [Role::Server, Role::Client] {
            let mac = self.mac(r).unwrap_or(PLACEHOLDER_MAC);
            for index in 0..self.cores(r).len() as u16 {
                let e = self.endpoint_config(r, &self.offline_worker(r, index, mac))?;
                e.validate().map_err(|e| {
                    ConfigError::invalid(e.field, format!("{e} (the engine refused what resolution built: a bug, please report it)"))
                })?;
            }
        }
        Ok(())
    }

    fn validate_cores(&self, role: Role, env: Option<&ValidationEnv>) -> Result<(), ConfigError> {
        let key = format!("cores.{}", role.as_str());
        let list = self.cores(role);
        if list.is_empty() {
            return Err(ConfigError::invalid(
                &key,
                format!("{key} is empty (one core per worker)"),
            ));
        }
        let mut seen = BTreeSet::new();
        for &c in list {
            if !seen.insert(c) {
                return Err(ConfigError::invalid(
                    &key,
                    format!("{key} lists core {c} twice"),
                ));
            }
            if let Some(env) = env {
                if c as usize >= env.online_cores {
                    return Err(ConfigError::invalid(
                        &key,
                        format!(
                            "{key} contains core {c} but this machine has {} online cores (0-{})",
                            env.online_cores,
                            env.online_cores.saturating_sub(1)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_workload(&self) -> Result<(), ConfigError> {
        let w = &self.workload;
        let max = self.transport.max_msg_size;
        for (key, n) in [
            ("workload.req_size", w.req_size),
            ("workload.resp_size", w.resp_size),
        ] {
            if n > max {
                return Err(ConfigError::invalid(
                    key,
                    format!("{key} = {n} exceeds transport.max_msg_size = {max}"),
                ));
            }
        }
        range(
            "workload.window",
            self.window() as u64,
            1,
            MAX_REQ_WINDOW as u64,
        )?;
        let total = self.cores.client.len() as u64 * w.sessions_per_thread as u64;
        range(
            "workload.sessions_per_thread",
            w.sessions_per_thread as u64,
            1,
            MAX_SESSIONS as u64,
        )?;
        if total > MAX_SESSIONS as u64 {
            return Err(ConfigError::invalid(
                "workload.sessions_per_thread",
                format!(
                    "workload.sessions_per_thread = {} x {} client cores = {total} sessions exceeds {MAX_SESSIONS}",
                    w.sessions_per_thread,
                    self.cores.client.len()
                ),
            ));
        }
        self.validate_workload_flags()?;
        match w.rate_rps {
            None if w.kind == WorkloadKind::OpenLoop => {
                return Err(ConfigError::invalid(
                    "workload.rate_rps",
                    "workload.kind = open_loop needs workload.rate_rps (requests per second)",
                ));
            }
            Some(r) => positive("workload.rate_rps", r)?,
            None => {}
        }
        positive("workload.seconds", w.seconds)?;
        if !(w.warmup_seconds >= 0.0 && w.warmup_seconds.is_finite()) {
            return Err(ConfigError::invalid(
                "workload.warmup_seconds",
                format!(
                    "workload.warmup_seconds = {} must be >= 0",
                    w.warmup_seconds
                ),
            ));
        }
        if w.max_requests == Some(0) {
            return Err(ConfigError::invalid(
                "workload.max_requests",
                "workload.max_requests = 0 must be at least 1 (omit it for no bound)",
            ));
        }
        Ok(())
    }

    /// Every session must reach the server worker it targets
    /// (`Config::target_server_worker`). On memif and virtio the queues
    /// are paired by position: client worker `c`'s frames reach server
    /// worker `c` alone (a frame for another worker's UDP port would be a
    /// `not_ours` drop there and its connect would time out), so more
    /// client workers than server workers, or incast (every session to
    /// server worker 0) from several, cannot be expressed. With
    /// `link.client_port = rss`, each client worker needs a port that
    /// reaches all its targets (`Config::client_ports`).
    fn validate_steering(&self) -> Result<(), ConfigError> {
        let (clients, servers) = (self.cores.client.len(), self.cores.server.len());
        let kind = self.link.kind.as_str();
        let paired = matches!(self.link.kind, LinkKind::Memif | LinkKind::Virtio);
        if paired && clients > servers {
            return Err(ConfigError::invalid(
                "cores.client",
                format!(
                    "cores.client = {:?} names {clients} client workers but cores.server = {:?} only {servers}: link.kind = {kind} pairs client queue i with server queue i, so client worker {servers} would have no server worker to reach; name at most {servers} client cores, or as many server cores",
                    self.cores.client, self.cores.server
                ),
            ));
        }
        if paired && clients > 1 && self.workload.kind == WorkloadKind::Incast {
            return Err(ConfigError::invalid(
                "workload.kind",
                format!(
                    "workload.kind = incast sends every session to server worker 0, but link.kind = {kind} pairs client queue i with server queue i, so only client worker 0 reaches it; run incast from one client core (cores.client = [{}]) with workload.sessions_per_thread for the fan-in",
                    self.cores.client[0]
                ),
            ));
        }
        if self.link.client_port == ClientPort::Rss && self.positional_link() {
            return Err(ConfigError::invalid(
                "link.client_port",
                format!(
                    "link.client_port = rss aims at a server's RSS, but link.kind = {kind} pairs queues by position (no hash to aim at); leave it auto or fixed"
                ),
            ));
        }
        self.client_ports().map(drop)
    }

    /// Settings the chosen workload would silently ignore or contradict
    /// are refused, naming the key, its flag and the workload: a run must
    /// not report what it was not asked to measure.
    fn validate_workload_flags(&self) -> Result<(), ConfigError> {
        let w = &self.workload;
        let kind = w.kind.as_str();
        if let Some(r) = w.rate_rps.filter(|_| w.kind != WorkloadKind::OpenLoop) {
            return Err(ConfigError::invalid(
                "workload.rate_rps",
                format!(
                    "workload.rate_rps (--rate) = {r} does not apply to the {kind} workload, which sends each request as a response returns; only workload.kind = open_loop sends at a rate"
                ),
            ));
        }
        match w.window {
            Some(n) if n != 1 && w.kind == WorkloadKind::Latency => Err(ConfigError::invalid(
                "workload.window",
                format!(
                    "workload.window (--window) = {n} does not apply to the latency workload, which keeps one request outstanding per session; use workload.kind = throughput for a window"
                ),
            )),
            _ => Ok(()),
        }
    }

    fn validate_faults(&self) -> Result<(), ConfigError> {
        let f = &self.faults;
        let probs = [
            ("faults.p", f.p),
            ("faults.ge_p_good_to_bad", f.ge_p_good_to_bad),
            ("faults.ge_p_bad_to_good", f.ge_p_bad_to_good),
            ("faults.ge_loss_good", f.ge_loss_good),
            ("faults.ge_loss_bad", f.ge_loss_bad),
            ("faults.ecn_p", f.ecn_p),
        ];
        for (key, p) in probs {
            if let Some(p) = p.filter(|p| !(0.0..=1.0).contains(p)) {
                return Err(ConfigError::invalid(
                    key,
                    format!("{key} = {p} must be a probability in [0, 1]"),
                ));
            }
        }
        let need = |key: &str, v: Option<f64>| match v {
            Some(_) => Ok(()),
            None => Err(ConfigError::invalid(
                key,
                format!("faults.drop = {} needs {key}", drop_name(f.drop)),
            )),
        };
        match f.drop {
            DropKind::None => Ok(()),
            DropKind::Uniform => need("faults.p", f.p),
            DropKind::GilbertElliott => {
                need("faults.ge_p_good_to_bad", f.ge_p_good_to_bad)?;
                need("faults.ge_p_bad_to_good", f.ge_p_bad_to_good)
            }
        }
    }
}

fn drop_name(d: DropKind) -> &'static str {
    match d {
        DropKind::None => "none",
        DropKind::Uniform => "uniform",
        DropKind::GilbertElliott => "gilbert_elliott",
    }
}

fn range(key: &str, v: u64, lo: u64, hi: u64) -> Result<(), ConfigError> {
    Ok(engine::config::range(key, v, lo, hi)?)
}

fn positive(key: &str, v: f64) -> Result<(), ConfigError> {
    Ok(engine::config::positive(key, v)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::*;

    #[test]
    fn the_kernel_link_is_the_clients_alone() {
        let c = with(&["link.kind=kernel"]).unwrap();
        c.validate_for(&ENV, Role::Client).unwrap();
        let e = c.validate_for(&ENV, Role::Server).unwrap_err();
        assert_eq!(e.key(), Some("link.kind"), "{e}");
        assert!(e.to_string().contains("--link af_packet"), "{e}");
        assert_eq!(
            rejected_key(&["link.kind=kernel", "cores.client=[0,1]"]),
            "cores.client"
        );
    }

    #[test]
    fn credits_beyond_ring_rejected() {
        let c = with(&["transport.credits=4096"]).unwrap();
        let e = c.validate(&ENV).unwrap_err().to_string();
        assert!(
            e.contains("transport.credits = 4096 exceeds what link.rx_desc = 1024 can back for 1 session(s) in lossless mode"),
            "{e}"
        );
        assert_eq!(
            rejected_key(&["transport.credits=300", "workload.sessions_per_thread=4"]),
            "transport.credits"
        );
        // Computed from the BDP: 400 Gb/s x 100 us is 3334 packets.
        let e = with(&["transport.link_gbps=400", "transport.rtt_us=100"])
            .unwrap()
            .validate(&ENV)
            .unwrap_err();
        assert!(e.to_string().contains("BDP"), "{e}");
        // Server side: incast puts all sessions of both client cores on worker 0.
        assert_eq!(
            rejected_key(&[
                "transport.credits=600",
                "cores.client=[0,1]",
                "cores.server=[1]",
                "workload.kind=incast"
            ]),
            "transport.credits"
        );
        // Lossy reserves nothing.
        with(&["transport.credits=4096", "transport.mode=lossy"])
            .unwrap()
            .validate(&ENV)
            .unwrap();
    }

    #[test]
    fn memory_bounds_checked_by_key() {
        // A peer's budget must hold one 8 MiB message's buffer.
        let e = with(&["transport.mem_per_peer_mib=4"])
            .unwrap()
            .validate(&ENV)
            .unwrap_err();
        assert_eq!(e.key(), Some("transport.mem_per_peer_mib"));
        assert!(e.to_string().contains("must be >= 8"), "{e}");
        // 5 MB messages take 8 MiB buffers too.
        assert_eq!(
            rejected_key(&[
                "transport.max_msg_size=5000000",
                "transport.mem_per_peer_mib=5"
            ]),
            "transport.mem_per_peer_mib"
        );
        with(&[
            "transport.max_msg_size=1048576",
            "transport.mem_per_peer_mib=1",
        ])
        .unwrap()
        .validate(&ENV)
        .unwrap();
        assert_eq!(
            rejected_key(&["transport.mem_per_worker_mib=64"]),
            "transport.mem_per_worker_mib"
        );
        assert_eq!(
            rejected_key(&["transport.reassembly_timeout_ms=0"]),
            "transport.reassembly_timeout_ms"
        );
        assert_eq!(
            rejected_key(&["transport.pool_keep_mib=2000000000000"]),
            "transport.pool_keep_mib"
        );
        with(&["transport.pool_keep_mib=0"])
            .unwrap()
            .validate(&ENV)
            .unwrap();
    }

    #[test]
    fn mtu_vs_mbuf_room() {
        let e = with(&["link.mtu=9000"])
            .unwrap()
            .validate(&ENV)
            .unwrap_err();
        assert_eq!(e.key(), Some("link.mtu"));
        assert!(
            e.to_string()
                .contains("link.mtu = 9000 needs 9014-byte frames but link.mbuf_data_room = 2048"),
            "{e}"
        );
        with(&["link.mtu=9000", "link.mbuf_data_room=9216"])
            .unwrap()
            .validate(&ENV)
            .unwrap();
    }

    #[test]
    fn cores_checked() {
        let e = with(&["cores.server=[7]"])
            .unwrap()
            .validate(&ENV)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("cores.server contains core 7 but this machine has 2 online cores (0-1)"),
            "{e}"
        );
        assert_eq!(rejected_key(&["cores.client=[]"]), "cores.client");
        // One machine running both: a shared core is refused, naming both
        // keys and the core, unless asked for; one role alone cannot know.
        let shared = with(&["cores.client=[1]", "cores.server=[0, 1]"]).unwrap();
        let e = shared.validate_pair(&ENV).unwrap_err();
        assert_eq!(e.key(), Some("cores.client"));
        assert!(
            e.to_string()
                .contains("cores.server = [0, 1] and cores.client = [1] both contain core 1")
                && e.to_string().contains("cores.allow_shared = true"),
            "{e}"
        );
        // Two machines (or two processes started by hand): not this check's.
        shared.validate(&ENV).unwrap();
        shared.validate_for(&ENV, Role::Client).unwrap();
        shared.validate_for(&ENV, Role::Server).unwrap();
        with(&[
            "cores.client=[1]",
            "cores.server=[0, 1]",
            "cores.allow_shared=true",
        ])
        .unwrap()
        .validate_pair(&ENV)
        .unwrap();
        // net_ring is one process on the client's core.
        with(&["cores.client=[1]", "link.kind=ring"])
            .unwrap()
            .validate_pair(&ENV)
            .unwrap();
        assert_eq!(rejected_key(&["cores.server=[1, 1]"]), "cores.server");
        // Two machines: the client host checks only its own cores.
        let c = with(&["cores.server=[7]"]).unwrap();
        c.validate_for(&ENV, Role::Client).unwrap();
        assert!(c.validate_for(&ENV, Role::Server).is_err());
    }

    #[test]
    fn each_rejection_names_its_key() {
        let cases: &[(&[&str], &str)] = &[
            (&["link.mtu=0"], "link.mtu"),
            (&["link.rx_desc=0"], "link.rx_desc"),
            (&["link.tx_desc=1000"], "link.tx_desc"),
            (&["link.mbuf_data_room=0"], "link.mbuf_data_room"),
            (&["link.mem_mb=0"], "link.mem_mb"),
            (&["link.udp_port=0"], "link.udp_port"),
            (&["link.server_mac=ff:ff:ff:ff:ff:ff"], "link.server_mac"),
            (&["link.client_ip=127.77.0.2"], "link.client_ip"),
            (&["link.kind=pci"], "link.pci"),
            (&["link.kind=pci", "link.pci=0000:01:00.0"], "link.huge"),
            (
                &["link.kind=af_packet", "link.iface=averyverylongname"],
                "link.iface",
            ),
            (
                &["link.kind=af_packet", "link.iface=fifteen-bytes!!"],
                "link.iface",
            ),
            (
                &["link.kind=af_packet", "cores.client=[0, 1]"],
                "cores.client",
            ),
            (&["link.socket="], "link.socket"),
            (&["link.rx_desc=32768"], "link.rx_desc"),
            (
                &["link.vdev=net_memif0,role=client,socket=/v,rsize=15"],
                "link.vdev",
            ),
            (&["transport.credits=0"], "transport.credits"),
            (&["transport.link_gbps=0"], "transport.link_gbps"),
            (&["transport.rtt_us=-1"], "transport.rtt_us"),
            (&["transport.req_window=0"], "transport.req_window"),
            (&["transport.req_window=65"], "transport.req_window"),
            (&["transport.rto_us=100"], "transport.rto_us"),
            (&["transport.scan_us=0"], "transport.scan_us"),
            (
                &["transport.session_timeout_ms=1"],
                "transport.session_timeout_ms",
            ),
            (
                &["transport.connect_timeout_ms=0"],
                "transport.connect_timeout_ms",
            ),
            (&["transport.max_msg_size=0"], "transport.max_msg_size"),
            (
                &["transport.max_msg_size=200000000"],
                "transport.max_msg_size",
            ),
            (
                &["transport.lossy_credit_multiple=0"],
                "transport.lossy_credit_multiple",
            ),
            (
                &["transport.mode=lossy", "transport.on_loss=reset"],
                "transport.on_loss",
            ),
            (&["workload.req_size=9000000"], "workload.req_size"),
            (
                &["transport.max_msg_size=1024", "workload.resp_size=2048"],
                "workload.resp_size",
            ),
            (&["workload.window=0"], "workload.window"),
            (&["workload.window=65"], "workload.window"),
            (&["workload.window=8"], "workload.window"),
            (&["workload.rate_rps=1000"], "workload.rate_rps"),
            (
                &["workload.kind=throughput", "workload.rate_rps=1000"],
                "workload.rate_rps",
            ),
            (
                &["workload.sessions_per_thread=0"],
                "workload.sessions_per_thread",
            ),
            (&["workload.kind=open_loop"], "workload.rate_rps"),
            (
                &["workload.kind=open_loop", "workload.rate_rps=0"],
                "workload.rate_rps",
            ),
            (&["workload.seconds=0"], "workload.seconds"),
            (&["workload.seconds=-1"], "workload.seconds"),
            (&["workload.warmup_seconds=-1"], "workload.warmup_seconds"),
            (&["workload.max_requests=0"], "workload.max_requests"),
            (&["faults.p=1.5"], "faults.p"),
            (&["faults.p=-0.1"], "faults.p"),
            (&["faults.drop=uniform"], "faults.p"),
            (&["faults.drop=gilbert_elliott"], "faults.ge_p_good_to_bad"),
            (&["faults.ge_loss_bad=2"], "faults.ge_loss_bad"),
        ];
        for (overrides, key) in cases {
            assert_eq!(&rejected_key(overrides), key, "{overrides:?}");
        }
    }

    fn msg(sets: &[&str]) -> String {
        let c = with(sets).unwrap();
        c.validate(&ENV).unwrap_err().to_string()
    }

    #[test]
    fn transport_refusals_name_the_key_and_its_value() {
        assert_eq!(
            msg(&["transport.rto_us=100"]),
            "invalid config: transport.rto_us = 100 must be >= transport.scan_us = 500"
        );
        let e = msg(&["transport.half_open_timeout_ms=1000"]);
        assert!(
            e.contains("transport.half_open_timeout_ms = 1000 must be >= 2 x transport.keepalive_ms = 2000"),
            "{e}"
        );
        let e = msg(&["transport.nak=true"]);
        assert!(
            e.contains("transport.nak = true needs transport.mode = lossy or pause"),
            "{e}"
        );
        let e = msg(&["transport.session_ring_share_pct=101"]);
        assert!(
            e.contains("transport.session_ring_share_pct = 101 must be in 1..=100"),
            "{e}"
        );
    }

    #[test]
    fn idle_keys_are_refused_by_name() {
        // An unknown mode fails at parse, naming the key and both choices.
        let e = with(&["transport.idle=nap"]).unwrap_err().to_string();
        assert!(
            e.contains("transport.idle") && e.contains("`spin` or `adaptive`"),
            "{e}"
        );
        let e = msg(&["transport.idle=adaptive", "transport.idle_sleep_us=60000"]);
        assert!(
            e.contains("transport.idle_sleep_us = 60000 must be in 10..=50000"),
            "{e}"
        );
        let c = with(&["transport.idle=adaptive", "transport.idle_after_us=0"]).unwrap();
        assert!(c.validate(&ENV).is_ok());
        assert!(c.transport.idle_policy().is_some());
    }

    #[test]
    fn a_ring_smaller_than_its_descriptors_is_what_backs_the_credits() {
        // net_ring's rings hold 1023 frames, whatever link.rx_desc says.
        let e = msg(&[
            "link.kind=ring",
            "transport.credits=1023",
            "transport.session_ring_share_pct=100",
            "transport.peer_ring_share_pct=100",
        ]);
        assert!(e.contains("link.rx_desc = 1023 can back"), "{e}");
    }

    #[test]
    fn link_refusals_name_the_key() {
        let e = msg(&["link.mtu=9000"]);
        assert!(e.contains("link.mtu = 9000 needs 9014-byte frames"), "{e}");
        assert_eq!(rejected_key(&["link.udp_port=0"]), "link.udp_port");
        // The engine quotes the value as written, even past DPDK's u16.
        for (set, said) in [
            (
                "link.rx_desc=100000",
                "link.rx_desc = 100000 must be a power of two in 32..=32768",
            ),
            (
                "link.mbuf_data_room=70000",
                "link.mbuf_data_room = 70000 must be in 1..=65407",
            ),
            ("link.mtu=70000", "link.mtu = 70000 needs 70014-byte frames"),
        ] {
            let e = msg(&[set]);
            assert!(e.contains(said), "{e}");
        }
        let e = msg(&["link.kind=af_packet", "link.iface=averyverylongname"]);
        assert!(
            e.contains(r#"link.iface = "averyverylongname": an af_packet interface name must be 1..=15 bytes"#),
            "{e}"
        );
        // The client's af_packet interface is link.iface + "p".
        let e = msg(&["link.kind=af_packet", "link.iface=fifteen-bytes!!"]);
        assert!(
            e.contains(r#"link.iface = "fifteen-bytes!!": the client opens its veth peer "fifteen-bytes!!p", which must be 1..=15 bytes"#),
            "{e}"
        );
    }

    #[test]
    fn a_setting_the_workload_ignores_is_refused_naming_flag_and_workload() {
        let e = msg(&["workload.rate_rps=1000"]);
        assert!(
            e.contains("workload.rate_rps (--rate) = 1000 does not apply to the latency workload"),
            "{e}"
        );
        let e = msg(&["workload.window=4"]);
        assert!(
            e.contains("workload.window (--window) = 4 does not apply to the latency workload"),
            "{e}"
        );
        for ok in [
            &["workload.kind=open_loop", "workload.rate_rps=1000"][..],
            &["workload.window=1"],
            &["workload.kind=throughput", "workload.window=4"],
        ] {
            with(ok).unwrap().validate(&ENV).unwrap();
        }
    }

    #[test]
    fn a_session_a_positional_link_cannot_carry_is_refused() {
        // memif/virtio: client worker c reaches server worker c alone.
        for kind in ["link.kind=memif", "link.kind=virtio"] {
            let e = msg(&[kind, "cores.server=[1]", "cores.client=[0, 1]"]);
            assert!(
                e.contains(
                    "cores.client = [0, 1] names 2 client workers but cores.server = [1] only 1"
                ) && e.contains("pairs client queue i with server queue i")
                    && e.contains("name at most 1 client cores"),
                "{e}"
            );
            let incast = [
                kind,
                "cores.server=[0, 1]",
                "cores.client=[0, 1]",
                "workload.kind=incast",
            ];
            assert_eq!(rejected_key(&incast), "workload.kind");
            assert!(msg(&incast).contains("run incast from one client core (cores.client = [0])"));
            // Fewer client workers than server workers is fine, and so is
            // incast from one.
            for ok in [
                &[kind, "cores.server=[0, 1]", "cores.client=[0]"][..],
                &[kind, "cores.server=[0, 1]", "workload.kind=incast"],
            ] {
                with(ok).unwrap().validate(&ENV).unwrap();
            }
            let e = msg(&[kind, "link.client_port=rss"]);
            assert!(e.contains("pairs queues by position"), "{e}");
        }
        // net_ring runs one process (its server cores unused).
        with(&["link.kind=ring", "cores.client=[0, 1]", "cores.server=[1]"])
            .unwrap()
            .validate(&ENV)
            .unwrap();
    }

    #[test]
    fn rss_client_ports_that_cannot_reach_every_target_are_refused() {
        // One client worker with sessions on both server workers of a NIC:
        // whether one source port reaches both depends on the tie of the
        // two server ports' hashes, so some udp_port is refused, naming
        // the worker, why and what to change; another is accepted.
        let outcome = |base: u16| {
            let port = format!("link.udp_port={base}");
            with(&[
                "link.kind=pci",
                "link.pci=0000:01:00.0",
                "link.huge=true",
                "cores.server=[0, 1]",
                "workload.sessions_per_thread=2",
                port.as_str(),
            ])
            .unwrap()
            .validate(&ENV)
        };
        let refused = (31000..31100)
            .find_map(|b| outcome(b).err())
            .expect("some base ties both server ports to one queue");
        assert_eq!(refused.key(), Some("link.client_port"));
        let e = refused.to_string();
        assert!(
            e.contains("no UDP source port of client worker 0 reaches server workers [0, 1]")
                && e.contains("workload.sessions_per_thread = 1")
                && e.contains("link.client_port = fixed"),
            "{e}"
        );
        // It names a base that works, and that base validates.
        let named = e.split("(link.udp_port = ").nth(1).expect("a base named");
        let base: u16 = named.split(' ').next().unwrap().parse().unwrap();
        outcome(base).unwrap();
        // The default base: 31851 and 31852 tie to one queue of two; the
        // first base above that unties them (the hash, computed apart).
        let e = outcome(31851).unwrap_err().to_string();
        assert!(e.contains("(link.udp_port = 31863 does)"), "{e}");
        assert!((31000..31100).any(|b| outcome(b).is_ok()));
    }

    #[test]
    fn cpu_list() {
        assert_eq!(parse_cpu_list_end("0-1"), Some(2));
        assert_eq!(parse_cpu_list_end("0-3,8"), Some(9));
        assert_eq!(parse_cpu_list_end("0"), Some(1));
        assert!(ValidationEnv::detect().online_cores >= 1);
    }
}
