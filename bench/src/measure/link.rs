//! Measuring the link a harness runs on, once per invocation: the raw
//! floor (frames with no RPC layer) as two processes of this binary
//! (`rpc-bench floor --peer server|client`), whose figures give the
//! engine's resolution its measured rate and round trip
//! ([`super::bdp::measured`]) and the reports their ratios. `run`,
//! `compare`, `sweep` and `incast` all measure here, so one invocation
//! derives every regime's settings from one measurement.

use crate::measure::floor::ClientPlan;
use crate::measure::floor_report;
use crate::run::child::{install_signal_handlers, last_json, ChildProc};
use anyhow::Context;
use apps::config::link::{LinkArgs, LinkKind, Role};
use apps::config::Config;
use apps::report::output::print_human;
use std::time::Duration;

impl ClientPlan {
    /// `pings` measured and `warmup` unrecorded pings per frame size,
    /// `stream_secs` per stream, bounded by `max_secs` (default: ~200 us
    /// per ping round trip bounds a slow link, plus four streams and 30 s).
    pub fn new(pings: u64, warmup: u64, stream_secs: f64, max_secs: Option<f64>) -> Self {
        ClientPlan {
            pings,
            warmup,
            stream_secs,
            max_secs: max_secs
                .unwrap_or(30.0 + (pings + warmup) as f64 * 2.0 * 200e-6 + stream_secs * 4.0),
        }
    }

    /// The floor a harness measures before its runs: `pings` pings, 1,000
    /// warm-up, 0.3 s streams.
    pub fn quick(pings: u64) -> Self {
        Self::new(pings, 1_000, 0.3, None)
    }
}

/// Pings per frame size a harness's floor takes by default.
pub const HARNESS_PINGS: u64 = 10_000;

/// Both sides of the floor as two processes of this binary (`floor
/// --peer server` and `floor --peer client`) on `cores` (client first);
/// the client's figures with the server's summary under `server`.
pub fn floor_pair(
    link: &LinkArgs,
    cores: [u32; 2],
    plan: ClientPlan,
) -> anyhow::Result<serde_json::Value> {
    install_signal_handlers();
    let exe = std::env::current_exe().context("cannot find own executable")?;
    let peer_args = |role: Role| {
        let mut v = vec![
            "floor".to_string(),
            format!("--peer={}", role.as_str()),
            format!("--cores={},{}", cores[0], cores[1]),
        ];
        v.extend(link.to_args());
        v.push(format!("--pings={}", plan.pings));
        v.push(format!("--warmup={}", plan.warmup));
        v.push(format!("--stream-secs={}", plan.stream_secs));
        v.push(format!("--max-secs={}", plan.max_secs));
        // Each side's figures as its last line, for last_json; the text
        // report is this process's to print.
        v.push("--json".to_string());
        v.push("--quiet".to_string());
        v
    };
    let mut server = ChildProc::spawn("floor server", &exe, &peer_args(Role::Server))?;
    // memif: the server creates the socket; give it a head start.
    std::thread::sleep(Duration::from_millis(300));
    let mut client = ChildProc::spawn("floor client", &exe, &peer_args(Role::Client))?;
    let limit = Duration::from_secs_f64(plan.max_secs + 10.0);
    let client_out = client.wait(limit);
    if crate::run::child::interrupted() {
        // The peers were stopped mid-measurement: nothing to report.
        anyhow::bail!("interrupted before the floor finished");
    }
    let server_out = server.wait(if client_out.is_ok() {
        Duration::from_secs(10)
    } else {
        Duration::from_millis(1)
    });
    let client_json = last_json(&client_out?)?;
    let server_json = last_json(&server_out?)?;
    let mut summary = client_json.clone();
    summary["server"] = server_json;
    Ok(summary)
}

/// Measures `cfg`'s link for a harness, unless `skip` (`--no-floor`) or
/// the link cannot be (net_ring): the floor's summary, or `None` with the
/// reason on stderr (resolution then says "nothing measured in this run"
/// and uses the config's `link_gbps` x `rtt_us`).
pub fn measure_once(
    cfg: &Config,
    skip: bool,
    pings: u64,
    text_to_stderr: bool,
    tool: &str,
) -> anyhow::Result<Option<serde_json::Value>> {
    if skip || !measurable(cfg) {
        let why = match (skip, cfg.link.kind) {
            (true, _) => "--no-floor",
            (false, LinkKind::Kernel) => {
                "the kernel link's client has no DPDK port to run the floor on"
            }
            (false, _) => "net_ring runs in one process",
        };
        eprintln!(
            "{tool}: link not measured ({why}): credits from the config's BDP, transport.link_gbps = {} x transport.rtt_us = {}",
            cfg.transport.link_gbps, cfg.transport.rtt_us
        );
        return Ok(None);
    }
    floor_for(cfg, pings, text_to_stderr)
        .context("raw floor")
        .map(Some)
}

/// Whether `cfg`'s link can be measured: the floor needs two DPDK
/// processes on a wire; net_ring runs in one, and the kernel link's client
/// is no DPDK process.
pub fn measurable(cfg: &Config) -> bool {
    !matches!(cfg.link.kind, LinkKind::Ring | LinkKind::Kernel)
}

/// The floor measured over `cfg`'s link (a memif socket of its own), its
/// text on stderr when `text_to_stderr`, else stdout.
pub fn floor_for(
    cfg: &Config,
    pings: u64,
    text_to_stderr: bool,
) -> anyhow::Result<serde_json::Value> {
    let mut link = cfg.link_args();
    if matches!(link.link, LinkKind::Memif | LinkKind::Virtio) {
        link.socket = format!("/tmp/rpc-floor-{}.sock", crate::run::bench::unique_tag());
    }
    let cores = [cfg.cores.client[0], cfg.cores.server[0]];
    let plan = ClientPlan::quick(pings);
    let summary = floor_pair(&link, cores, plan)?;
    print_human(text_to_stderr, &floor_report::render_text(&summary));
    Ok(summary)
}
