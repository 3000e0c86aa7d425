//! Which link a process runs on, and how that becomes EAL arguments and a
//! port name: memif between two processes (the default), af_packet on a veth
//! pair, ring / null / pcap in one process, or a real PCI NIC.

use clap::{Args, ValueEnum};
use engine::dpdk::{Eal, EalBuilder};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// Shared-memory wire between two processes (net_memif).
    Memif,
    /// Kernel AF_PACKET on a veth pair (net_af_packet); see scripts/veth.sh.
    AfPacket,
    /// In-process loopback (net_ring): TX queue i comes back on RX queue i.
    Ring,
    /// Endless RX source and TX sink (net_null): engine cost with no wire.
    Null,
    /// Replay/capture files (net_pcap).
    Pcap,
    /// A real NIC by PCI address (bound to a DPDK driver; needs hugepages).
    Pci,
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

/// Link and EAL flags shared by every binary.
#[derive(Args, Clone, Debug)]
pub struct LinkArgs {
    /// Link kind.
    #[arg(long, value_enum, default_value = "memif")]
    pub link: LinkKind,
    /// memif socket path (both processes must use the same one).
    #[arg(long, default_value = "/tmp/rpc-engine.sock")]
    pub socket: String,
    /// af_packet interface (the server side; the client uses IFACE + "p", as
    /// created by `scripts/veth.sh up IFACE`).
    #[arg(long, default_value = "rpcveth0")]
    pub iface: String,
    /// PCI address of the NIC for `--link pci`.
    #[arg(long)]
    pub pci: Option<String>,
    /// Raw vdev spec, overriding the one derived from --link.
    #[arg(long)]
    pub vdev: Option<String>,
    /// EAL file prefix (default: --no-shconf).
    #[arg(long)]
    pub file_prefix: Option<String>,
    /// Use hugepages instead of --no-huge (real NIC deployments).
    #[arg(long)]
    pub huge: bool,
    /// Memory for --no-huge mode, in MiB.
    #[arg(long, default_value_t = 512)]
    pub mem_mb: u32,
    /// EAL log level (1 critical .. 8 debug).
    #[arg(long, default_value_t = 4)]
    pub log_level: u32,
    /// Extra raw EAL argument (repeatable), e.g. --eal-arg=--iova-mode=va.
    #[arg(long = "eal-arg", allow_hyphen_values = true)]
    pub eal_args: Vec<String>,
    /// Network namespace the client side runs in (af_packet: the veth peer's
    /// namespace, see scripts/veth.sh --netns).
    #[arg(long)]
    pub client_netns: Option<String>,
    /// How long to wait for link-up, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub link_timeout_ms: u64,
    /// af_packet: send with PACKET_QDISC_BYPASS (DPDK's default, fastest).
    /// `false` sends through the interface's qdisc, so a `tbf` rate limit
    /// on it (scripts/veth.sh --rate) applies; with bypass it is skipped.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub qdisc_bypass: bool,
}

impl LinkArgs {
    /// The vdev spec (if any) and the DPDK device name for this role.
    pub fn device(&self, role: Role) -> (Option<String>, String) {
        if let Some(spec) = &self.vdev {
            let name = spec.split(',').next().unwrap_or(spec).to_string();
            return (Some(spec.clone()), name);
        }
        let spec = match self.link {
            LinkKind::Memif => format!("net_memif0,role={},socket={}", role.as_str(), self.socket),
            LinkKind::AfPacket => {
                let iface = match role {
                    Role::Server => self.iface.clone(),
                    Role::Client => format!("{}p", self.iface),
                };
                let bypass = if self.qdisc_bypass {
                    ""
                } else {
                    ",qdisc_bypass=0"
                };
                format!("net_af_packet0,iface={iface},qpairs=1{bypass}")
            }
            LinkKind::Ring => "net_ring0".to_string(),
            LinkKind::Null => "net_null0,copy=1".to_string(),
            LinkKind::Pcap => "net_pcap0,rx_pcap=/dev/null,tx_pcap=/dev/null".to_string(),
            LinkKind::Pci => {
                let pci = self.pci.clone().unwrap_or_default();
                return (None, pci);
            }
        };
        let name = spec.split(',').next().unwrap_or(&spec).to_string();
        (Some(spec), name)
    }

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
        crate::sys::enter_net_namespace(file.as_raw_fd())
            .map_err(|e| anyhow::anyhow!("cannot enter network namespace {ns:?}: {e}"))?;
        Ok(())
    }

    /// The EAL arguments for `role` on `cores` and the DPDK device name.
    /// Enters the client's network namespace first (it must precede EAL's
    /// threads). `ring_size`: make memif/af_packet rings match the RX
    /// descriptor count unless the vdev spec already sets them.
    pub fn eal_builder(
        &self,
        role: Role,
        cores: &[u32],
        ring_size: Option<u16>,
    ) -> anyhow::Result<(EalBuilder, String)> {
        self.enter_netns(role)?;
        if self.link == LinkKind::Pci && self.pci.is_none() && self.vdev.is_none() {
            anyhow::bail!("--link pci needs --pci ADDRESS (e.g. --pci 0000:01:00.0)");
        }
        let (vdev, name) = self.device(role);
        let mut b = EalBuilder::new()
            .cores(cores)
            .no_huge((!self.huge).then_some(self.mem_mb))
            .file_prefix(self.file_prefix.clone())
            .log_level(self.log_level);
        if let Some(v) = vdev {
            b = b.vdev(match ring_size {
                Some(n) => with_ring_size(&v, n),
                None => v,
            });
        }
        if let Some(p) = &self.pci {
            b = b.pci(p.clone());
        }
        for a in &self.eal_args {
            b = b.extra_arg(a.clone());
        }
        Ok((b, name))
    }

    /// Initialises EAL on `cores` for this role; returns it with the device name.
    pub fn init_eal(&self, role: Role, cores: &[u32]) -> anyhow::Result<(Eal, String)> {
        let (b, name) = self.eal_builder(role, cores, None)?;
        Ok((b.init()?, name))
    }

    /// The same flags as command-line arguments, for launching a child process.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            format!(
                "--link={}",
                self.link
                    .to_possible_value()
                    .map(|v| v.get_name().to_string())
                    .unwrap_or_default()
            ),
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
        if let Some(n) = crate::sys::packet_socket_drops(fd) {
            *total.get_or_insert(0) += n;
        }
    }
    total
}

/// memif and af_packet size their rings from devargs, not from the queue
/// setup's descriptor count; the lossless reservation counts on `rx_desc`
/// entries, so make the driver's ring match (unless the spec sets it).
fn with_ring_size(spec: &str, rx_desc: u16) -> String {
    let has = |k: &str| spec.split(',').any(|kv| kv.starts_with(k));
    if spec.starts_with("net_memif") && !has("rsize=") {
        format!("{spec},rsize={}", rx_desc.max(2).ilog2())
    } else if spec.starts_with("net_af_packet") && !has("framecnt=") {
        format!("{spec},framecnt={rx_desc}")
    } else {
        spec.to_string()
    }
}

#[cfg(test)]
mod tests {
    //! Golden EAL arguments: what each role passes to `rte_eal_init` on each
    //! link kind, as the binaries built them (kept when the setup moves).
    use super::*;
    use crate::config::Config;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        link: LinkArgs,
    }

    fn flags(a: &[&str]) -> LinkArgs {
        Flags::parse_from(std::iter::once("t").chain(a.iter().copied())).link
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
        let (b, name) = c
            .link_args()
            .eal_builder(role, c.cores(role), Some(c.link.rx_desc as u16))
            .unwrap();
        (b.args().unwrap(), name)
    }

    /// The raw tools (floor, port-check, rpc-hostile): the driver's ring sizes.
    fn raw(l: &LinkArgs, role: Role, core: u32) -> (Vec<String>, String) {
        let (b, name) = l.eal_builder(role, &[core], None).unwrap();
        (b.args().unwrap(), name)
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
        let e = flags(&["--link", "pci"])
            .eal_builder(Role::Server, &[0], None)
            .unwrap_err();
        assert!(e.to_string().contains("--link pci needs --pci"), "{e}");
    }
}
