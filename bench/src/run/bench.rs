//! `rpc-bench`'s orchestration: write the run's config to a file both sides
//! read, start `rpc-server` and `rpc-client` as separate processes pinned to
//! their cores, gather both sides' counters, and merge them into one report
//! (with the raw floor from the same invocation when asked, and what else
//! ran on the pinned cores meanwhile: `run::contention`).

use crate::run::child::{last_json, ChildProc, NODE_GRACE};
use crate::run::contention::{watch_while, Watched};
use anyhow::{bail, Context};
use apps::config::link::LinkKind;
use apps::config::Config;
use apps::report::Report;
use apps::run::node::ServerSummary;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `--wait` of each child: how long rpc-server and rpc-client wait for
/// their peer's link before they fail (by themselves they wait without
/// limit; a benchmark must fail rather than hang). 30 s, not 10: on this
/// shared 2-core VM a two-process memif start has taken over 10 s with
/// nothing wrong but a slow peer (right after a build, drivers loading cold).
pub const CHILD_WAIT_SECS: u32 = 30;

/// Unique per invocation and call, so leftovers of a crashed run never collide.
pub fn unique_tag() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// A sibling binary of the running one (rpc-server next to rpc-bench).
pub fn sibling(name: &str) -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find own executable")?;
    let p = me.with_file_name(name);
    if !p.exists() {
        bail!(
            "{} not found next to {} (build the apps' binaries with rpc-bench: cargo build --release -p apps -p bench)",
            name,
            me.display()
        );
    }
    Ok(p)
}

/// Gives each run its own memif or vhost-user socket unless the user chose one.
pub fn isolate(cfg: &mut Config) {
    let socket = matches!(cfg.link.kind, LinkKind::Memif | LinkKind::Virtio);
    if socket && cfg.link.socket == Config::default().link.socket {
        cfg.link.socket = format!("/tmp/rpc-bench-{}.sock", unique_tag());
    }
}

/// Checks what the link needs before starting processes that would time out.
pub fn preflight(cfg: &Config) -> anyhow::Result<()> {
    match cfg.link.kind {
        LinkKind::AfPacket | LinkKind::AfXdp => {
            let mut ifaces = vec![cfg.link.iface.clone()];
            // The client's end is only visible here when it is not in a namespace.
            if cfg.link.client_netns.is_none() {
                ifaces.push(format!("{}p", cfg.link.iface));
            }
            for iface in ifaces {
                if !Path::new("/sys/class/net").join(&iface).exists() {
                    bail!("interface {iface} does not exist: create the pair with `scripts/veth.sh up {}`", cfg.link.iface);
                }
            }
            Ok(())
        }
        // The server's af_packet end here, the client's in its namespace.
        LinkKind::Kernel => match &cfg.link.client_netns {
            Some(_) if Path::new("/sys/class/net").join(&cfg.link.iface).exists() => Ok(()),
            _ => bail!(
                "the kernel link needs the veth pair {0} with the client's end in a namespace (link.client_netns): `scripts/kernel-link.sh up {0} --netns NS`",
                cfg.link.iface
            ),
        },
        LinkKind::Null => bail!(
            "net_null never answers, so no RPC can complete over it: `rpc-bench engine` measures the engine's cost with no wire, `rpc-bench port-check --link null` the driver path"
        ),
        LinkKind::Pcap => bail!("net_pcap replays files and cannot answer RPCs: use `rpc-bench port-check` with a pcap vdev"),
        _ => Ok(()),
    }
}

/// Runs one server+client pair on `cfg`; returns the merged report.
pub fn run_pair(cfg: &Config) -> anyhow::Result<Report> {
    run_pair_streaming(cfg, false)
}

/// `run_pair`; with `json_stream`, the client runs with `--json-stream`
/// and its interval lines reach our stdout as they arrive.
pub fn run_pair_streaming(cfg: &Config, json_stream: bool) -> anyhow::Result<Report> {
    preflight(cfg)?;
    let dir = std::env::temp_dir().join(format!("rpc-bench-{}", unique_tag()));
    std::fs::create_dir_all(&dir)?;
    let cfg_path = dir.join("run.toml");
    std::fs::write(&cfg_path, cfg.to_toml_string())?;
    let result = run_pair_with(cfg, &cfg_path, json_stream);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The client's flags: JSON out, the histogram in it, no text report, a
/// bounded wait for the server, and the interval stream if asked.
fn client_flags(conf: String, json_stream: bool) -> Vec<String> {
    // --quiet: rpc-bench prints the merged report; the child's own would
    // land on the shared stderr beside it.
    let mut args = vec![
        conf,
        format!("--wait={CHILD_WAIT_SECS}"),
        "--json".to_string(),
        "--json-hist".to_string(),
        "--quiet".to_string(),
    ];
    if json_stream {
        args.push("--json-stream".to_string());
    }
    args
}

/// Starts the client; with `json_stream` its interval lines pass through.
fn spawn_client(name: &str, args: &[String], json_stream: bool) -> anyhow::Result<ChildProc> {
    let mut c = ChildProc::spawn(name, &sibling("rpc-client")?, args)?;
    c.grace(NODE_GRACE);
    if json_stream {
        c.pass_intervals();
    }
    Ok(c)
}

fn run_pair_with(cfg: &Config, cfg_path: &Path, json_stream: bool) -> anyhow::Result<Report> {
    let w = &cfg.workload;
    let run_secs = w.seconds + w.warmup_seconds;
    let conf = format!("--config={}", cfg_path.display());
    // The server outlives the client by a margin; rpc-bench stops it by PID.
    let server_max = run_secs + 60.0;
    if cfg.link.kind == LinkKind::Ring {
        return run_loopback_child(cfg, &conf, json_stream);
    }
    // --json: its exit summary as one JSON line, which is read back.
    let mut server_args = vec![
        conf.clone(),
        format!("--max-seconds={server_max}"),
        format!("--wait={CHILD_WAIT_SECS}"),
        "--json".to_string(),
    ];
    if cfg.link.kind == LinkKind::Kernel {
        // The kernel client's server is DPDK on the pair's other end.
        server_args.push("--link=af_packet".to_string());
    }
    let mut server = ChildProc::spawn("rpc-server", &sibling("rpc-server")?, &server_args)?;
    server.grace(NODE_GRACE);
    std::thread::sleep(Duration::from_millis(300));
    let client_args = client_flags(conf, json_stream);
    let mut client = spawn_client("rpc-client", &client_args, json_stream)?;
    // Client bound: connect + warm-up + run + drain + session timeout + startup.
    let limit =
        Duration::from_secs_f64(run_secs + cfg.transport.session_timeout_ms as f64 / 1e3 + 30.0);
    let watched = [
        (&server, "server", &cfg.cores.server),
        (&client, "client", &cfg.cores.client),
    ]
    .into_iter()
    .filter_map(|(p, role, cores)| {
        Some(Watched {
            pid: p.pid()?,
            role,
            cores: cores.clone(),
        })
    })
    .collect();
    let (client_out, contention) = watch_while(watched, || client.wait_exit(limit));
    // Stop the server (SIGTERM: it prints its counters and exits 0).
    if let Some(pid) = server.pid() {
        apps::run::sys::terminate(pid);
    }
    let server_out = server.wait(Duration::from_secs(10));
    // A failed run (exit 1) still prints its report as the last line.
    let client = client_out?;
    let client_text = client.stdout;
    if !client.status.success() && !client_text.contains('{') {
        anyhow::bail!("rpc-client exited with {} and no report", client.status);
    }
    let mut rep = Report::from_json(&last_json(&client_text)?)
        .map_err(|e| anyhow::anyhow!("client report: {e}"))?;
    contention.annotate(&mut rep);
    let server = server_out.and_then(|s| {
        serde_json::from_value::<ServerSummary>(last_json(&s)?).context("server summary")
    });
    match server {
        Ok(v) => {
            if let Some(missed) = v.port["rx_missed"].as_u64().filter(|&m| m > 0) {
                rep.add_drops("server_rx_ring_overflow", missed);
            }
            rep.add_drops("server_injected", v.injected_drops);
            for (k, n) in apps::report::protocol_drops(&v.stats.counters.drops) {
                rep.add_drops(&format!("server_proto.{k}"), n);
            }
            rep.server_stats = Some(v.stats.counters);
            rep.server = serde_json::to_value(&v).ok();
        }
        Err(e) => {
            rep.extra
                .insert("server_error".into(), format!("{e:#}").into());
        }
    }
    Ok(rep)
}

/// net_ring: one process is server and client (rpc-client's loopback mode).
fn run_loopback_child(cfg: &Config, conf: &str, json_stream: bool) -> anyhow::Result<Report> {
    let w = &cfg.workload;
    let args = client_flags(conf.to_string(), json_stream);
    let mut client = spawn_client("rpc-client (loopback)", &args, json_stream)?;
    let limit = Duration::from_secs_f64(
        w.seconds + w.warmup_seconds + cfg.transport.session_timeout_ms as f64 / 1e3 + 30.0,
    );
    // One process on the client's first core (`run::node::run_loopback`).
    let watched = client.pid().map(|pid| Watched {
        pid,
        role: "loopback",
        cores: cfg.cores.client.iter().take(1).copied().collect(),
    });
    let (out, contention) = watch_while(watched.into_iter().collect(), || client.wait(limit));
    let v = last_json(&out?)?;
    let mut rep = Report::from_json(&v).map_err(|e| anyhow::anyhow!("client report: {e}"))?;
    contention.annotate(&mut rep);
    Ok(rep)
}
