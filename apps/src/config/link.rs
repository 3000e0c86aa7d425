//! Which link a process runs on: memif between two processes (the
//! default), af_packet or af_xdp on a veth pair, virtio (vhost-user),
//! ring / null / pcap in one process, a real PCI NIC, or (rpc-client only)
//! the kernel's own UDP socket (docs/links.md). [`LinkArgs`] is the `[link]` section resolved for one
//! process (`Config::link_args`); `config::setup` turns it into the
//! engine's device and builder. The binaries take it as config keys and
//! their shortcuts (`config::cli`), not as flags of its own.

use clap::ValueEnum;

/// `link.kind` and `--link`: one spelling (the file's, `af_packet`) on
/// every subcommand; the command-line habit `af-packet` is an alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum LinkKind {
    /// Shared-memory wire between two processes (net_memif).
    Memif,
    /// Kernel AF_PACKET on a veth pair (net_af_packet); see scripts/veth.sh.
    #[serde(alias = "af-packet")]
    #[value(alias = "af-packet")]
    AfPacket,
    /// virtio-net over vhost-user: the server is the backend (net_vhost,
    /// creating link.socket), the client the guest's driver (net_virtio_user).
    Virtio,
    /// Kernel AF_XDP on a veth pair (net_af_xdp); see scripts/veth.sh.
    #[serde(alias = "af-xdp")]
    #[value(alias = "af-xdp")]
    AfXdp,
    /// In-process loopback (net_ring): TX queue i comes back on RX queue i.
    Ring,
    /// Endless RX source and TX sink (net_null): engine cost with no wire.
    Null,
    /// Replay/capture files (net_pcap).
    Pcap,
    /// A real NIC by PCI address (bound to a DPDK driver; needs hugepages).
    Pci,
    /// rpc-client only: a plain kernel UDP socket, no DPDK, calling a DPDK
    /// rpc-server (af_packet on a veth pair); see docs/kernel-link.md.
    Kernel,
}

impl LinkKind {
    /// The canonical spelling (the file's and `--link`'s).
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Memif => "memif",
            LinkKind::AfPacket => "af_packet",
            LinkKind::Virtio => "virtio",
            LinkKind::AfXdp => "af_xdp",
            LinkKind::Ring => "ring",
            LinkKind::Null => "null",
            LinkKind::Pcap => "pcap",
            LinkKind::Pci => "pci",
            LinkKind::Kernel => "kernel",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Role {
    Server,
    Client,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

/// The engine's name for the same role (its builder names `cores.server` /
/// `cores.client` by it); this one is also a command-line value.
impl From<Role> for engine::runtime::Role {
    fn from(r: Role) -> Self {
        match r {
            Role::Server => engine::runtime::Role::Server,
            Role::Client => engine::runtime::Role::Client,
        }
    }
}

/// The link and EAL settings of one process, resolved from the config
/// (`Config::link_args`, `PortArgs::link_args`); not parsed from a command
/// line itself. Its flags (`to_args`) are the `[link]` shortcuts
/// `config::cli::PortArgs` takes, so a floor passes its resolved link to
/// the peer processes it starts.
#[derive(Clone, Debug)]
pub struct LinkArgs {
    /// Link kind.
    pub link: LinkKind,
    /// memif or vhost-user socket path (both processes must use the same one).
    pub socket: String,
    /// af_packet / af_xdp interface (the server side; the client uses IFACE + "p", as
    /// created by `scripts/veth.sh up IFACE`).
    pub iface: String,
    /// PCI address of the NIC for `--link pci`.
    pub pci: Option<String>,
    /// Raw vdev spec, overriding the one derived from --link.
    pub vdev: Option<String>,
    /// EAL file prefix (default: --no-shconf).
    pub file_prefix: Option<String>,
    /// Use hugepages instead of --no-huge (real NIC deployments).
    pub huge: bool,
    /// Memory for --no-huge mode, in MiB.
    pub mem_mb: u32,
    /// EAL log level (1 critical .. 8 debug).
    pub log_level: u32,
    /// Extra raw EAL argument (repeatable), e.g. --eal-arg=--iova-mode=va.
    pub eal_args: Vec<String>,
    /// Network namespace the client side runs in (af_packet: the veth peer's
    /// namespace, see scripts/veth.sh --netns).
    pub client_netns: Option<String>,
    /// How long to wait for link-up, in milliseconds.
    pub link_timeout_ms: u64,
    /// af_packet: send with PACKET_QDISC_BYPASS (DPDK's default, fastest).
    /// `false` sends through the interface's qdisc, so a `tbf` rate limit
    /// on it (scripts/veth.sh --rate) applies; with bypass it is skipped.
    pub qdisc_bypass: bool,
}

impl LinkArgs {
    /// Moves this process into the client's network namespace, if one is
    /// configured and this is the client. Must run before EAL starts threads.
    pub fn enter_netns(&self, role: Role) -> anyhow::Result<()> {
        let (Role::Client, Some(ns)) = (role, &self.client_netns) else {
            return Ok(());
        };
        let path = format!("/var/run/netns/{ns}");
        let file = std::fs::File::open(&path)
            .map_err(|e| anyhow::anyhow!("network namespace {ns:?} ({path}): {e}; create it with scripts/veth.sh up IFACE --netns {ns}"))?;
        use std::os::fd::AsRawFd;
        crate::run::sys::enter_net_namespace(file.as_raw_fd())
            .map_err(|e| anyhow::anyhow!("cannot enter network namespace {ns:?}: {e}"))?;
        Ok(())
    }

    /// The same flags as command-line arguments, for launching a child process.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            format!("--link={}", self.link.as_str()),
            format!("--socket={}", self.socket),
            format!("--iface={}", self.iface),
            format!("--mem-mb={}", self.mem_mb),
            format!("--log-level={}", self.log_level),
            format!("--link-timeout-ms={}", self.link_timeout_ms),
        ];
        if let Some(p) = &self.pci {
            a.push(format!("--pci={p}"));
        }
        if let Some(v) = &self.vdev {
            a.push(format!("--vdev={v}"));
        }
        if let Some(f) = &self.file_prefix {
            a.push(format!("--file-prefix={f}"));
        }
        if let Some(n) = &self.client_netns {
            a.push(format!("--client-netns={n}"));
        }
        if self.huge {
            a.push("--huge".into());
        }
        if !self.qdisc_bypass {
            a.push("--qdisc-bypass=false".into());
        }
        for e in &self.eal_args {
            a.push(format!("--eal-arg={e}"));
        }
        a
    }
}

/// Frames the kernel dropped because an AF_PACKET receive ring of this
/// process was full (`PACKET_STATISTICS` `tp_drops`, summed over the
/// process's packet sockets), or `None` when it has no packet socket.
///
/// DPDK 22.11's net_af_packet never reads these counters (it reports
/// `imissed` = 0), so ring overflow on af_packet links is otherwise
/// invisible. Reading them resets them (the kernel's semantics): call once,
/// at the end of a run, while the port is still open.
pub fn af_packet_rx_drops() -> Option<u64> {
    let mut total = None;
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(fd) = entry
            .file_name()
            .to_string_lossy()
            .parse::<std::os::fd::RawFd>()
        else {
            continue;
        };
        let is_socket = std::fs::read_link(entry.path())
            .map(|t| t.to_string_lossy().starts_with("socket:"))
            .unwrap_or(false);
        if !is_socket {
            continue;
        }
        if let Some(n) = crate::run::sys::packet_socket_drops(fd) {
            *total.get_or_insert(0) += n;
        }
    }
    total
}
