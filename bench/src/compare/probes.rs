//! Host probes read around a run: the qdiscs on the path (`tc` in the
//! right namespace, the af_packet sender's own egress, the switch port) and
//! the hypervisor's CPU steal from /proc/stat.

use super::tc::*;
use apps::config::link::LinkKind;
use apps::config::Config;
use std::path::Path;
use std::process::{Command, Stdio};

/// A device whose qdisc counters a run reads, optionally in a namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QdiscProbe {
    pub dev: String,
    pub netns: Option<String>,
    /// The interface an af_packet endpoint itself sends on: a refused frame
    /// stays in the sender's TX ring (not lost).
    pub own_egress: bool,
}

impl QdiscProbe {
    /// `DEV` or `DEV@NETNS`, classified against the run's link.
    pub fn parse(spec: &str, cfg: &Config) -> QdiscProbe {
        let (dev, netns) = match spec.split_once('@') {
            Some((d, ns)) => (d.to_string(), Some(ns.to_string())),
            None => (spec.to_string(), None),
        };
        let l = &cfg.link;
        let server_end = dev == l.iface && netns.is_none();
        let client_end = dev == format!("{}p", l.iface) && netns == l.client_netns;
        QdiscProbe {
            own_egress: l.kind == LinkKind::AfPacket && (server_end || client_end),
            dev,
            netns,
        }
    }

    pub fn label(&self) -> String {
        match &self.netns {
            Some(ns) => format!("{}@{ns}", self.dev),
            None => self.dev.clone(),
        }
    }

    /// The device's qdiscs, or `None` when the device, the namespace or
    /// `tc` is missing (counted as no drops).
    pub fn read(&self) -> Option<Vec<QdiscStats>> {
        let tc = ["tc", "-s", "qdisc", "show", "dev", &self.dev];
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).args(tc);
                c
            }
            None => {
                let mut c = Command::new(tc[0]);
                c.args(&tc[1..]);
                c
            }
        };
        let out = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| parse_tc_qdisc(&String::from_utf8_lossy(&out.stdout)))
    }
}

/// Where to read qdisc drops when the user names nothing: on af_packet, the
/// server's interface, and the switch port toward the client when
/// `scripts/veth.sh up IFACE --switch` built one (`IFACEq` in netns `IFACEsw`).
pub fn default_probes(cfg: &Config) -> Vec<QdiscProbe> {
    if cfg.link.kind != LinkKind::AfPacket {
        return Vec::new();
    }
    let iface = &cfg.link.iface;
    let mut v = vec![QdiscProbe::parse(iface, cfg)];
    let sw = format!("{iface}sw");
    if Path::new("/var/run/netns").join(&sw).exists() {
        v.push(QdiscProbe::parse(&format!("{iface}q@{sw}"), cfg));
    }
    v
}

pub(super) fn probes_for(cfg: &Config, specs: &[String]) -> Vec<QdiscProbe> {
    if specs.is_empty() {
        default_probes(cfg)
    } else {
        specs.iter().map(|s| QdiscProbe::parse(s, cfg)).collect()
    }
}

/// Warns when a shaper sits on the af_packet sender's own egress but the
/// PMD bypasses qdiscs (DPDK's default): the shaper would see no traffic.
pub(super) fn warn_bypassed(cfg: &Config, probes: &[QdiscProbe]) {
    if cfg.link.kind != LinkKind::AfPacket || !cfg.link.qdisc_bypass {
        return;
    }
    for p in probes.iter().filter(|p| p.own_egress) {
        if let Some(q) = p.read() {
            if let Some(s) = q.iter().find(|q| q.root && q.kind != "noqueue") {
                eprintln!(
                    "rpc-bench: warning: {} has a {} qdisc but af_packet bypasses qdiscs (link.qdisc_bypass = true): it will see no traffic; add --set link.qdisc_bypass=false",
                    p.label(),
                    s.kind
                );
            }
        }
    }
}

/// (steal, total) jiffies of all CPUs from /proc/stat: time the hypervisor
/// ran something else while this VM's vCPUs wanted to run.
pub fn cpu_steal() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_steal(&text)
}

/// The `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ...
pub fn parse_cpu_steal(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|t| t.parse().ok())
        .collect();
    (v.len() == 8).then(|| (v[7], v.iter().sum()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use apps::config::Config;

    #[test]
    fn parses_cpu_steal() {
        let stat =
            "cpu  427101 32016 29508 299298 5285 0 8568 103166 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        let (steal, total) = parse_cpu_steal(stat).unwrap();
        assert_eq!(steal, 103166);
        assert_eq!(
            total,
            427101 + 32016 + 29508 + 299298 + 5285 + 8568 + 103166
        );
        assert!(parse_cpu_steal("cpu0 1 2 3\n").is_none());
    }

    #[test]
    fn probes_know_the_senders_own_egress() {
        let mut c = Config::default();
        c.link.kind = LinkKind::AfPacket;
        c.link.iface = "lv0".into();
        c.link.client_netns = Some("lv0ns".into());
        assert!(QdiscProbe::parse("lv0", &c).own_egress);
        assert!(QdiscProbe::parse("lv0p@lv0ns", &c).own_egress);
        let sw = QdiscProbe::parse("lv0q@lv0sw", &c);
        assert!(!sw.own_egress);
        assert_eq!(sw.label(), "lv0q@lv0sw");
        assert_eq!(default_probes(&c)[0].dev, "lv0");
        assert!(default_probes(&Config::default()).is_empty());
    }
}
