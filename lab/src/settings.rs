//! The fabric lab's settings as a user gives them: [`FabricSettings`], each
//! a flag of `rpc-lab` and a key of its `-c` file (flags over the file),
//! and the run config's `[transport]` keys (`--set transport.KEY=VALUE` or
//! the file's section), type-checked and validated by the engine as
//! rpc-server checks them. What they resolve to is [`crate::cli`]'s plan.

use crate::fabric::not_applied;
use anyhow::{anyhow, bail, Context};
use clap::Args;
use engine::config::TransportConfig;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The settings of a run: each a flag, and the same name a key of the `-c`
/// file (every key optional, unknown keys an error naming the key).
#[derive(Args, Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FabricSettings {
    /// The experiment: incast, victim, slow-receiver, websearch, hadoop,
    /// permutation, alltoall or matrix (required unless the -c file names one).
    #[arg(long, value_name = "NAME")]
    pub scenario: Option<String>,
    /// Regimes to run, comma-separated, in this order [default: all ten:
    /// ib,roce,roce-nocc,irn,srd,erpc,lossy,uec,uec-rccc,uec-rcv].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub regimes: Option<Vec<String>>,
    /// Hosts: senders for incast, all hosts otherwise (scenario default if
    /// absent).
    #[arg(long, value_name = "N")]
    pub hosts: Option<usize>,
    /// Offered load per host link, in (0, 1] (websearch, hadoop).
    #[arg(long, value_name = "X")]
    pub load: Option<f64>,
    /// Bytes per flow (scenarios with fixed-size flows).
    #[arg(long, value_name = "BYTES")]
    pub flow_size: Option<u64>,
    /// Number of flows, as the scenario counts them (in all for websearch
    /// and hadoop, per sender for incast).
    #[arg(long, value_name = "N")]
    pub flows: Option<usize>,
    /// Seed of every random choice; one seed gives one result [default: 1].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Run every regime with N seeds, --seed and the N-1 after it, and
    /// report each metric's mean and 95 % confidence interval (Student's t)
    /// [default: 1, a single run].
    #[arg(long, value_name = "N")]
    pub seeds: Option<u64>,
    /// Rate of every link in Gb/s instead of the scenario's (calibration:
    /// the rate a real link sustains).
    #[arg(long, value_name = "GBPS")]
    pub link_gbps: Option<f64>,
    /// One-way delay of every link in microseconds [default: 1].
    #[arg(long, value_name = "US")]
    pub link_delay_us: Option<f64>,
    /// Probability that a host's NIC loses a frame it sends (injected,
    /// seeded), as `faults.drop = uniform` on a real link.
    #[arg(long, value_name = "P")]
    pub loss: Option<f64>,
    /// Switch buffer per port in KiB [default: 256].
    #[arg(long, value_name = "KIB")]
    pub buffer_kb: Option<u64>,
    /// Packet trimming: a switch cuts a data packet to its headers, and
    /// forwards them first, instead of queueing it behind more than this
    /// many KiB on its egress port (or dropping it); lossy regimes only,
    /// at most the per-port buffer [default: off].
    #[arg(long, value_name = "KIB")]
    pub trim_kb: Option<u64>,
    /// Receive ring entries of every host; a full ring drops
    /// (`drops_host_ring`) [default: 1024].
    #[arg(long, value_name = "N")]
    pub ring: Option<usize>,
    /// The receiver takes one frame per this many microseconds (incast's
    /// receiver, slow-receiver's slow host) [slow-receiver default: 1].
    #[arg(long, value_name = "US")]
    pub service_us: Option<f64>,
    /// The fabric's shape instead of the scenario's: star, leaf-spine or
    /// fat-tree (3 tiers, sized as uet-htsim sizes one: 16, 128, 1,024
    /// hosts), the smallest holding the scenario's hosts;
    /// leaf-spine:HxS gives H hosts and S uplinks (spines) per leaf.
    #[arg(long, value_name = "KIND")]
    pub topology: Option<String>,
    /// How the sending NICs pick each packet's entropy, over every regime:
    /// ecmp (one per flow), oblivious (random per packet) or reps (recycle
    /// entropies echoed without ECN) [default: the regime's].
    #[arg(long, value_name = "NAME")]
    pub path_selection: Option<String>,
    /// Top-tier links (leaf-spine, aggregation-core) that run at
    /// --degraded-fraction of their rate, chosen as uet-htsim's -failed.
    #[arg(long, value_name = "N")]
    pub degraded_links: Option<usize>,
    /// The rate a degraded link keeps, in (0, 1] [default: 0.25, htsim's].
    #[arg(long, value_name = "F")]
    pub degraded_fraction: Option<f64>,
    /// Top-tier links that are down; routes avoid them (an error if that
    /// cuts hosts off).
    #[arg(long, value_name = "N")]
    pub failed_links: Option<usize>,
    /// IP MTU of every endpoint in bytes (frames are 14 more) [default:
    /// 1500]; uet-htsim's packets are 4,150 bytes.
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<usize>,
    /// The connection matrix of `--scenario matrix`: a uet-htsim `.cm` or
    /// `.tm` file (`Nodes N`, `Connections C`, `SRC->DST [id I] start US
    /// size BYTES` lines), one flow per connection.
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// Move every payload byte through the endpoints, as on a real link;
    /// without it they move headers only (same results, much faster).
    #[arg(long)]
    #[serde(default)]
    pub copy_payload: bool,
    /// Run the seeds' regimes on N threads at once [default: 1]; the
    /// report is the same, byte for byte, as a serial run's. Not in the
    /// report's `config`: it says how the run went, not what it was.
    #[arg(long, value_name = "N")]
    #[serde(default, skip_serializing)]
    pub jobs: Option<usize>,
    /// The run config's `[transport]` keys given (the `-c` file's section,
    /// then `--set`), over every regime's but for those a regime or the
    /// fabric's links set (`fabric_regime::not_applied`).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<toml::Table>,
}

impl FabricSettings {
    /// These settings, each filled from `file` where it is not set here
    /// (the flags over the file).
    pub fn over(&self, file: FabricSettings) -> FabricSettings {
        let f = self.clone();
        FabricSettings {
            scenario: f.scenario.or(file.scenario),
            regimes: f.regimes.or(file.regimes),
            hosts: f.hosts.or(file.hosts),
            load: f.load.or(file.load),
            flow_size: f.flow_size.or(file.flow_size),
            flows: f.flows.or(file.flows),
            seed: f.seed.or(file.seed),
            seeds: f.seeds.or(file.seeds),
            link_gbps: f.link_gbps.or(file.link_gbps),
            link_delay_us: f.link_delay_us.or(file.link_delay_us),
            loss: f.loss.or(file.loss),
            buffer_kb: f.buffer_kb.or(file.buffer_kb),
            trim_kb: f.trim_kb.or(file.trim_kb),
            ring: f.ring.or(file.ring),
            service_us: f.service_us.or(file.service_us),
            topology: f.topology.or(file.topology),
            path_selection: f.path_selection.or(file.path_selection),
            degraded_links: f.degraded_links.or(file.degraded_links),
            degraded_fraction: f.degraded_fraction.or(file.degraded_fraction),
            failed_links: f.failed_links.or(file.failed_links),
            mtu: f.mtu.or(file.mtu),
            matrix: f.matrix.or(file.matrix),
            copy_payload: f.copy_payload || file.copy_payload,
            jobs: f.jobs.or(file.jobs),
            transport: match (file.transport, f.transport) {
                (Some(mut t), Some(flags)) => {
                    t.extend(flags);
                    Some(t)
                }
                (t, flags) => flags.or(t),
            },
        }
    }

    /// Reads and parses `path`; the error names the file, and for an
    /// unknown key or a wrong type, the key and its line.
    pub fn read(path: &Path) -> anyhow::Result<FabricSettings> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("config {}", path.display()))
    }

    /// Parses a whole TOML document: the settings above, by their names,
    /// and a run config's `[transport]` (checked as `checked_transport`
    /// checks it). A run config's other sections are noted on stderr as
    /// not used here; a `[transport]` key at the top level is an error that
    /// says where it belongs.
    pub fn parse(text: &str) -> anyhow::Result<FabricSettings> {
        let mut doc: toml::Table =
            toml::from_str(text).map_err(|e| anyhow!("{}", e.to_string().trim_end()))?;
        let transport = match doc.remove("transport") {
            Some(toml::Value::Table(t)) => Some(t),
            Some(_) => bail!("transport: expected a table ([transport]) of run-config keys"),
            None => None,
        };
        let sections: Vec<String> = doc
            .iter()
            .filter(|(_, v)| v.is_table())
            .map(|(k, _)| k.clone())
            .collect();
        for key in sections {
            doc.remove(&key);
            eprintln!("rpc-lab: [{key}] is not used in the fabric (a run config's section; rpc-lab reads [transport])");
        }
        for (key, v) in &doc {
            let mut one = toml::Table::new();
            one.insert(key.clone(), v.clone());
            if TransportConfig::deserialize(toml::Value::Table(one)).is_ok() {
                bail!("{key} is a [transport] key: put it under [transport] (or --set transport.{key}=...)");
            }
        }
        let mut s = FabricSettings::deserialize(toml::Value::Table(doc))
            .map_err(|e| anyhow!("{}", e.to_string().trim_end()))?;
        if let Some(t) = transport {
            checked_transport(&t)?;
            s.transport = Some(t);
        }
        Ok(s)
    }
}

/// The `--set transport.KEY=VALUE` items as a `[transport]` table. A value
/// is read as TOML (`16`, `true`, `"x"`), else taken as a string (`lossy`).
pub fn transport_sets(items: &[String]) -> anyhow::Result<Option<toml::Table>> {
    if items.is_empty() {
        return Ok(None);
    }
    let mut t = toml::Table::new();
    for item in items {
        let Some((key, raw)) = item.split_once('=') else {
            bail!("--set {item}: expected transport.KEY=VALUE");
        };
        let Some(key) = key
            .trim()
            .strip_prefix("transport.")
            .filter(|k| !k.contains('.'))
        else {
            bail!("--set {item}: only [transport] keys are set so (transport.KEY=VALUE); the fabric's own settings are flags (--hosts, --link-gbps, ...)");
        };
        let raw = raw.trim();
        let value = match format!("v = {raw}").parse::<toml::Table>() {
            Ok(mut one) => one.remove("v").unwrap_or_else(|| raw.into()),
            Err(_) => toml::Value::String(raw.to_string()),
        };
        t.insert(key.to_string(), value);
    }
    checked_transport(&t)?;
    Ok(Some(t))
}

/// `t` as the engine's `[transport]`, with the engine's type checks and
/// validation: a section the run config accepts, the lab accepts, and
/// refuses alike. Notes on stderr each key the fabric does not apply.
pub(crate) fn checked_transport(t: &toml::Table) -> anyhow::Result<TransportConfig> {
    let config = TransportConfig::deserialize(toml::Value::Table(t.clone()))
        .map_err(|e| anyhow!("transport: {}", e.to_string().trim_end()))?;
    config.validate()?;
    for key in t.keys().map(|k| format!("transport.{k}")) {
        if let Some(why) = not_applied(&key).filter(|_| key != LINK_GBPS) {
            eprintln!("rpc-lab: {key} is not applied in the fabric ({why})");
        }
    }
    Ok(config)
}

/// The run config's line rate, which the lab takes as every link's rate
/// (`--link-gbps`), as a calibration against a real run needs.
pub(crate) const LINK_GBPS: &str = "transport.link_gbps";
