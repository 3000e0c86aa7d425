//! rpc-bench: launches a server and a client process pinned to two cores on
//! the chosen link, runs a workload, and reports. `rpc-bench floor` measures
//! raw frames with no RPC layer; `port-check` brings one port up and reports;
//! `fabric` runs the simulated fabric lab (no DPDK, no second process): the
//! `lab` crate's command, the same as `rpc-lab`.
//!
//! Every command follows one output convention
//! ([`apps::report::output`]): the text report on stdout, or with `--json`
//! on stderr while stdout carries the stamped JSON summary alone, none with
//! `-q`; output paths are checked before anything starts. And one rule for
//! how it ends ([`apps::exit`]): 0, 1 for a failed run, 2 for a usage or
//! config error, 130/143 after Ctrl-C/SIGTERM with what finished reported.

use anyhow::Context;
use apps::config::cli::{ConfigArgs, PortArgs};
use apps::config::link::{LinkKind, Role};
use apps::exit::usage;
use apps::report::meta::stamp;
use apps::report::output::{print_human, print_stdout, Stdout};
use bench::measure::bdp::{fit_lines, resolve_pair, BdpOrigin};
use bench::measure::floor::{self, ClientPlan};
use bench::measure::floor_report;
use bench::measure::link::{floor_pair, measure_once};
use bench::run::child::install_signal_handlers;
use clap::{Args, CommandFactory, Parser, Subcommand};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "rpc-bench",
    version,
    about = "Benchmarks for the RPC engine over DPDK virtual devices or real NICs",
    after_help = "Examples:\n  rpc-bench                            32 B latency over memif (server core 1, client core 0) + raw floor\n  rpc-bench run --workload throughput --window 8 --sessions 4 --json\n  rpc-bench run -c configs/af_packet.toml   af_packet on a veth pair (scripts/veth.sh up rpcveth0)\n  rpc-bench floor                      raw-frame floor over memif, cores 0 and 1\n  rpc-bench floor --json --pings 20000  same, JSON summary as the last line\n  rpc-bench floor --peer server -c configs/real-nic.toml   one side of a floor between two hosts (then --peer client on the other)\n  rpc-bench port-check --link null      bring one port up in one process\n  rpc-bench fabric -c configs/fabric-incast.toml   seven regimes on a simulated 32-to-1 incast (virtual time, no DPDK)\n  rpc-bench completions bash            shell completion (bash, zsh, fish, ...); `rpc-bench man` prints the man page"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// With no subcommand, `run`'s flags (`rpc-bench --json` = `rpc-bench run --json`).
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// (default) Server and client processes on two pinned cores; report latency, rate, loss, and the ratio to the raw floor.
    Run(RunArgs),
    /// Raw frames, no RPC: ping-pong RTT (64 B, 1 KiB) and streaming (64 B, MTU) between two pinned processes (or two hosts: --peer).
    Floor(FloorArgs),
    /// The protocol engine's own cost, no wire: two endpoints exchanging frames in memory on one thread.
    Engine(EngineArgs),
    /// Kernel UDP ping-pong over loopback between two pinned threads: the no-bypass baseline.
    KernelUdp(KernelUdpArgs),
    /// Bring one port up in a single process, send frames, report link, counts and mbuf accounting.
    PortCheck(PortCheckArgs),
    /// The same workload in each regime of --regimes (default lossless,lossy; regimes lossless, pause, lossy, irn), side by side, drops by source.
    Compare(bench::compare::CompareArgs),
    /// One run per credit value (--credits 0.5x,1x,4x,16x or absolute counts): goodput, p99 and loss rate against credits.
    Sweep(bench::compare::SweepArgs),
    /// N sessions of one client thread converging on one server thread (--fan-in 1,2,4,8,16), in each regime of --regimes.
    Incast(bench::compare::IncastArgs),
    /// Datacenter transport regimes (InfiniBand credits, RoCE with PFC and DCQCN, IRN, SRD, eRPC, ...) on a simulated datacenter fabric (deterministic, virtual time): per regime goodput, FCT slowdown by size, drops by place, pauses, ECN marks, resends.
    Fabric(lab::cli::FabricArgs),
    /// Print a shell completion script for rpc-bench (e.g. `rpc-bench completions bash > /etc/bash_completion.d/rpc-bench`).
    Completions(CompletionsArgs),
    /// Print rpc-bench's man page (roff; view with `rpc-bench man | man -l -`).
    Man,
}

#[derive(Args, Debug, Clone)]
struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Args, Debug, Clone, Default)]
struct RunArgs {
    #[command(flatten)]
    cfg: ConfigArgs,
    #[command(flatten)]
    out: apps::report::output::ReportArgs,
    /// Skip the raw floor measurement: no ratios in the report, and the
    /// BDP (so the default credits) comes from the config's
    /// transport.link_gbps x transport.rtt_us (10 Gb/s x 10 us = 9 credits
    /// at 1500 B with the defaults) instead of the link.
    #[arg(long)]
    no_floor: bool,
    /// Pings per frame size for the floor measured in the same run.
    #[arg(long, default_value_t = 10_000)]
    floor_pings: u64,
    /// Run the pair N times on the one measured link: p50, p99, p99.9,
    /// Mrps and Gb/s with their min / median / max over the runs (text,
    /// and `repeat` in the JSON); the rest of the report is the last run's.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
}

#[derive(Args, Debug, Clone)]
struct FloorArgs {
    #[command(flatten)]
    port: PortArgs,
    /// Print no text report (errors still go to stderr): with --json, the
    /// JSON line alone.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Cores for the client and server sides (client first) [default: the
    /// config's cores.client[0],cores.server[0], i.e. 0,1].
    #[arg(long, value_delimiter = ',', value_name = "CLIENT,SERVER")]
    cores: Option<Vec<u32>>,
    /// Measured pings per frame size.
    #[arg(long, default_value_t = 20_000)]
    pings: u64,
    /// Warm-up pings per frame size (not recorded).
    #[arg(long, default_value_t = 1_000)]
    warmup: u64,
    /// Seconds of streaming per frame size.
    #[arg(long, default_value_t = 1.0)]
    stream_secs: f64,
    /// Print the stamped JSON summary as the only line on stdout (the text
    /// report goes to stderr).
    #[arg(long)]
    json: bool,
    /// Run one side only, for a floor between two hosts: `--peer server` on
    /// one (start it first), `--peer client` on the other, both with the
    /// same link config (e.g. -c configs/real-nic.toml); the client prints
    /// the report. Without it both sides run here as two processes.
    #[arg(long, value_enum, value_name = "SIDE")]
    peer: Option<Role>,
    /// Hard bound on one side's run time, in seconds [default: from --pings
    /// and --stream-secs; --peer server adds five minutes to start the client].
    #[arg(long, value_name = "S")]
    max_secs: Option<f64>,
}

impl FloorArgs {
    /// What one side measures, and how long it may take.
    fn plan(&self) -> ClientPlan {
        ClientPlan::new(self.pings, self.warmup, self.stream_secs, self.max_secs)
    }
}

#[derive(Args, Debug, Clone)]
struct EngineArgs {
    #[command(flatten)]
    cfg: ConfigArgs,
    /// RPCs to run.
    #[arg(long, default_value_t = 1_000_000)]
    rpcs: u64,
    /// Print the stamped JSON summary as the only line on stdout (the text
    /// report goes to stderr).
    #[arg(long)]
    json: bool,
    /// Print no text report (errors still go to stderr): with --json, the
    /// JSON line alone.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(Args, Debug, Clone)]
struct KernelUdpArgs {
    /// Cores for the client and echo threads (client first).
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1u32])]
    cores: Vec<u32>,
    #[arg(long, default_value_t = 20_000)]
    pings: u64,
    /// Print the stamped JSON summary as the only line on stdout (the text
    /// report goes to stderr).
    #[arg(long)]
    json: bool,
    /// Print no text report (errors still go to stderr): with --json, the
    /// JSON line alone.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(Args, Debug, Clone)]
struct PortCheckArgs {
    #[command(flatten)]
    port: PortArgs,
    #[arg(long, default_value_t = 0)]
    core: u32,
    /// Frames to send.
    #[arg(long, default_value_t = 256)]
    frames: u64,
    /// How long to keep receiving after the last send, in ms.
    #[arg(long, default_value_t = 200)]
    rx_wait_ms: u64,
    /// Print the stamped JSON summary as the only line on stdout (the text
    /// report goes to stderr).
    #[arg(long)]
    json: bool,
    /// Print no text report (errors still go to stderr): with --json, the
    /// JSON line alone.
    #[arg(long, short = 'q')]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Some(Cmd::Run(a)) => run_cmd(a),
        Some(Cmd::Floor(a)) => floor_cmd(a).map(|_| ()),
        Some(Cmd::KernelUdp(a)) => kernel_udp_cmd(a),
        Some(Cmd::Engine(a)) => engine_cmd(a),
        Some(Cmd::PortCheck(a)) => port_check_cmd(a),
        Some(Cmd::Compare(a)) => bench::compare::compare_cmd(&a),
        Some(Cmd::Sweep(a)) => bench::compare::sweep_cmd(&a),
        Some(Cmd::Incast(a)) => bench::compare::incast_cmd(&a),
        Some(Cmd::Fabric(a)) => fabric_cmd(&a),
        Some(Cmd::Completions(a)) => {
            let mut script = Vec::new();
            clap_complete::generate(a.shell, &mut Cli::command(), "rpc-bench", &mut script);
            write_out(&script).context("cannot write the completion script")
        }
        Some(Cmd::Man) => man_page().context("cannot write the man page"),
        // No subcommand: `run` with the flags given (none: the default
        // benchmark, 32 B latency over memif + floor).
        None => run_cmd(cli.run),
    };
    apps::exit::finish("rpc-bench", result)
}

/// The man page, rendered whole before it is written (a reader such as
/// `head -1` that leaves early then meets one write, not hundreds).
fn man_page() -> anyhow::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    write_out(&page)
}

/// `bytes` on stdout; a reader that went away is not an error ([`Stdout`]).
fn write_out(bytes: &[u8]) -> anyhow::Result<()> {
    Stdout.write_all(bytes)?;
    Stdout.flush()?;
    Ok(())
}

/// `rpc-bench fabric`: the lab's command, Ctrl-C between regimes as the
/// other commands; a setting the lab refuses is a usage error (exit 2).
fn fabric_cmd(a: &lab::cli::FabricArgs) -> anyhow::Result<()> {
    apps::exit::install_interrupt();
    lab::cli::run_until(a, &apps::exit::interrupted).map_err(|e| {
        match e.downcast::<lab::cli::PlanError>() {
            Ok(refused) => usage(format!("{:#}", refused.0)),
            Err(e) => e,
        }
    })
}

/// Unique per invocation, so a leftover socket or prefix cannot collide.
fn unique_tag() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    )
}

fn floor_cmd(a: FloorArgs) -> anyhow::Result<serde_json::Value> {
    let cfg = a.port.load()?;
    let mut link = a.port.link_args(&cfg);
    let cores = match a.cores.as_deref() {
        None => [cfg.cores.client[0], cfg.cores.server[0]],
        Some(&[client, server]) => [client, server],
        Some(other) => {
            return Err(usage(format!(
                "--cores needs two cores (client,server), got {other:?}"
            )))
        }
    };
    if matches!(link.link, LinkKind::Ring | LinkKind::Null | LinkKind::Pcap) {
        return Err(usage(format!(
            "the floor needs a two-process link (memif, af_packet, virtio, af_xdp or pci); {} is single-process",
            link.link.as_str()
        )));
    }
    if link.link == LinkKind::Kernel {
        return Err(usage(
            "the floor needs DPDK on both ends; the kernel link's client has none (measure its wire with --link af_packet)".to_string(),
        ));
    }
    match a.peer {
        Some(role) => floor_peer(&a, &cfg, &link, role, cores),
        None => {
            // Two processes here: a private memif socket, so a leftover or
            // a concurrent floor cannot collide with this one.
            let socket = matches!(link.link, LinkKind::Memif | LinkKind::Virtio);
            if socket && link.socket == cfg_default_socket() {
                link.socket = format!("/tmp/rpc-floor-{}.sock", unique_tag());
            }
            let summary = floor_pair(&link, cores, a.plan())?;
            print_floor(&summary, &a, &cfg);
            Ok(summary)
        }
    }
}

/// The memif socket of a config with no `link.socket`.
fn cfg_default_socket() -> String {
    apps::config::LinkConfig::default().socket
}

/// One side of the floor on this host (`floor --peer`): the server
/// reflects until the client's Quit; the client measures and prints the
/// report (the last line JSON with --json).
fn floor_peer(
    a: &FloorArgs,
    cfg: &apps::config::Config,
    link: &apps::config::link::LinkArgs,
    role: Role,
    [client_core, server_core]: [u32; 2],
) -> anyhow::Result<serde_json::Value> {
    install_signal_handlers();
    let mut plan = a.plan();
    match role {
        Role::Server => {
            if a.max_secs.is_none() {
                plan.max_secs += 300.0;
            }
            let v = floor::run_server(link, server_core, plan.max_secs)?;
            if a.json {
                let mut stamped = v.clone();
                stamp(&mut stamped, Some(cfg));
                print_stdout(&format!("{stamped}\n"));
            } else if !a.quiet {
                print_stdout(&format!(
                    "floor server: echoed {} frames, ignored {}, port rx_missed {}, mbufs in use at start {} and end {}\n",
                    v["echoed"], v["ignored"], v["port_rx_missed"], v["mbufs_in_use_start"], v["mbufs_in_use_end"]
                ));
            }
            if v["quit_received"] != true {
                anyhow::bail!(
                    "floor server: no Quit from the client within {} s",
                    plan.max_secs
                );
            }
            Ok(v)
        }
        Role::Client => {
            let v = floor::run_client(link, client_core, plan)?;
            print_floor(&v, a, cfg);
            Ok(v)
        }
    }
}

/// The floor's report: the text (on stderr with `--json`, none with
/// `--quiet`), then the summary stamped with the config the link came from.
fn print_floor(v: &serde_json::Value, a: &FloorArgs, cfg: &apps::config::Config) {
    let json = a.json;
    if !a.quiet {
        print_human(json, &floor_report::render_text(v));
    }
    if json {
        let mut v = v.clone();
        stamp(&mut v, Some(cfg));
        print_stdout(&format!("{v}\n"));
    }
}

fn run_cmd(a: RunArgs) -> anyhow::Result<()> {
    // Output paths before anything starts: a typo fails at once.
    a.out.check()?;
    install_signal_handlers();
    let mut user = bench::load_pair(&a.cfg)?;
    bench::run::bench::isolate(&mut user);
    bench::run::bench::preflight(&user)?;
    let floor = measure_once(
        &user,
        a.no_floor,
        a.floor_pings,
        a.out.stdout_is_json(),
        "rpc-bench",
    )?;
    let (cfg, resolved) = resolve_pair(&user, floor.as_ref())?;
    let bdp = BdpOrigin::of(&user, &resolved);
    for line in fit_lines(&resolved) {
        eprintln!("rpc-bench: {line}");
    }
    eprintln!("rpc-bench: {}", bdp.describe());
    eprintln!(
        "rpc-bench: {} over {} ({}), {} B requests, {} B responses, {} s (+{} s warm-up); server cores {:?}, client cores {:?}",
        cfg.workload.kind.as_str(),
        format!("{:?}", cfg.link.kind).to_lowercase(),
        apps::config::cli::mode_name(&cfg),
        cfg.workload.req_size,
        cfg.workload.resp_size,
        cfg.workload.seconds,
        cfg.workload.warmup_seconds,
        cfg.cores.server,
        cfg.cores.client
    );
    let (mut rep, spread) = bench::run::repeat::run(&cfg, a.repeat, a.out.json_stream)?;
    let interrupted = apps::exit::interrupted();
    if interrupted {
        // Ctrl-C: the client stopped and reported what completed.
        rep.extra.insert("interrupted".into(), true.into());
    }
    if let Some(f) = &floor {
        rep.floor_p50_us = f["p50_us"].as_f64();
        rep.floor_p99_us = f["p99_us"].as_f64();
        rep.extra.insert("floor".into(), f.clone());
        if let Some(echo) = f["echo_mpps_64"].as_f64().filter(|e| *e > 0.0) {
            rep.extra.insert("floor_echo_mpps".into(), echo.into());
            rep.extra
                .insert("ratio_echo".into(), (rep.mrps() / echo).into());
        }
    }
    rep.extra.insert("bdp".into(), serde_json::to_value(&bdp)?);
    rep.extra
        .insert("resolved".into(), serde_json::to_value(&resolved.settings)?);
    if let (Some(cap), Some(c)) = (cfg.transport.rate_cap_gbps, rep.client_stats.as_ref()) {
        // The client sends from its first request to the end of the run:
        // its wire rate over warm-up and measured time together, against
        // the cap (a paced session should hold >= 0.98 of it).
        let secs = cfg.workload.warmup_seconds + cfg.workload.seconds;
        let wire = c.tx_bytes as f64 * 8.0 / secs / 1e9;
        rep.extra.insert("rate_cap_gbps".into(), cap.into());
        rep.extra.insert("tx_wire_gbps".into(), wire.into());
        rep.extra.insert("ratio_cap".into(), (wire / cap).into());
    }
    let mut text = format!("\n{}", rep.render_text());
    if let Some(s) = &spread {
        rep.extra.insert("repeat".into(), s.to_json());
        text.push_str(&s.render_text());
    }
    a.out.human(&text);
    let ok = rep.failed == 0
        && !rep.extra.contains_key("errors")
        && !rep.extra.contains_key("server_error");
    a.out.emit(&rep, false, Some(&cfg))?;
    if interrupted {
        // What was cut short is not a failure; the status says 130/143.
        eprintln!(
            "rpc-bench: interrupted: the report covers {:.2} s of the {} s run",
            rep.seconds, cfg.workload.seconds
        );
        return Ok(());
    }
    if !ok {
        anyhow::bail!(
            "the run had failures: {} failed request(s){}",
            rep.failed,
            rep.extra
                .get("errors")
                .map(|e| format!(", {e}"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

fn kernel_udp_cmd(a: KernelUdpArgs) -> anyhow::Result<()> {
    if a.cores.len() < 2 {
        return Err(usage(format!(
            "--cores needs two cores (client,echo), got {:?}",
            a.cores
        )));
    }
    let mut v = bench::measure::kudp::run((a.cores[0], a.cores[1]), a.pings, 1000)?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let text = format!(
        "kernel UDP over loopback, 64 B ping-pong, threads on cores {:?}: p50 {:.2} us  p99 {:.2} us  p99.9 {:.2} us  ({} pings, {} lost)\n",
        a.cores, f("kernel_udp_p50_us"), f("kernel_udp_p99_us"), f("kernel_udp_p999_us"), v["kernel_udp_pings"], v["kernel_udp_lost"]
    );
    if !a.quiet {
        print_human(a.json, &text);
    }
    if a.json {
        v["config"] = json!({"cores": a.cores, "pings": a.pings, "warmup": 1000});
        stamp(&mut v, None);
        print_stdout(&format!("{v}\n"));
    }
    Ok(())
}

fn engine_cmd(a: EngineArgs) -> anyhow::Result<()> {
    let (cfg, _) = resolve_pair(&bench::load_pair(&a.cfg)?, None)?;
    let mut v = bench::measure::enginecost::run(&cfg, a.rpcs)?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let text = format!(
        "engine cost, no wire ({} B requests, {} B responses, window {}): {:.0} ns per RPC (both endpoints), {:.0} ns per packet, {:.3} Mrps, {:.2} Gbps on one core\n",
        cfg.workload.req_size, cfg.workload.resp_size, cfg.window(), f("engine_ns_per_rpc"), f("engine_ns_per_packet"), f("engine_mrps"), f("engine_gbps")
    );
    if !a.quiet {
        print_human(a.json, &text);
    }
    if a.json {
        stamp(&mut v, Some(&cfg));
        print_stdout(&format!("{v}\n"));
    }
    Ok(())
}

fn port_check_cmd(a: PortCheckArgs) -> anyhow::Result<()> {
    let cfg = a.port.load()?;
    let link = a.port.link_args(&cfg);
    let mut v = bench::measure::portcheck::run(&link, a.core, a.frames, a.rx_wait_ms)?;
    if !a.quiet {
        print_human(a.json, &bench::measure::portcheck::render_text(&v));
    }
    if a.json {
        v["check"] = json!({
            "link": link.to_args(), "core": a.core, "frames": a.frames,
            "rx_wait_ms": a.rx_wait_ms,
        });
        stamp(&mut v, Some(&cfg));
        print_stdout(&format!("{v}\n"));
    }
    Ok(())
}
