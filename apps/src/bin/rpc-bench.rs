//! rpc-bench: launches a server and a client process pinned to two cores on
//! the chosen link, runs a workload, and reports. `rpc-bench floor` measures
//! raw frames with no RPC layer; `port-check` brings one port up and reports;
//! `fabric` runs the simulated fabric lab (no DPDK, no second process): the
//! `lab` crate's command, the same as `rpc-lab`.

use anyhow::Context;
use apps::config::cli::ConfigArgs;
use apps::config::link::{LinkArgs, LinkKind, Role};
use apps::measure::floor::{self, ClientPlan};
use apps::run::child::{install_signal_handlers, last_json, ChildProc};
use clap::{Args, Parser, Subcommand};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "rpc-bench",
    version,
    about = "Benchmarks for the RPC engine over DPDK virtual devices or real NICs",
    after_help = "Examples:\n  rpc-bench                            32 B latency over memif (server core 1, client core 0) + raw floor\n  rpc-bench run --workload throughput --window 8 --sessions 4 --json\n  rpc-bench run -c configs/af_packet.toml   af_packet on a veth pair (scripts/veth.sh up rpcveth0)\n  rpc-bench floor                      raw-frame floor over memif, cores 0 and 1\n  rpc-bench floor --json --pings 20000  same, JSON summary as the last line\n  rpc-bench port-check --link null      bring one port up in one process\n  rpc-bench fabric -c configs/fabric-incast.toml   six regimes on a simulated 32-to-1 incast (virtual time, no DPDK)"
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
    /// Raw frames, no RPC: ping-pong RTT (64 B, 1 KiB) and streaming (64 B, MTU) between two pinned processes.
    Floor(FloorArgs),
    /// Internal: one side of the floor benchmark (started by `floor`).
    #[command(hide = true)]
    FloorPeer(FloorPeerArgs),
    /// The protocol engine's own cost, no wire: two endpoints exchanging frames in memory on one thread.
    Engine(EngineArgs),
    /// Kernel UDP ping-pong over loopback between two pinned threads: the no-bypass baseline.
    KernelUdp(KernelUdpArgs),
    /// Bring one port up in a single process, send frames, report link, counts and mbuf accounting.
    PortCheck(PortCheckArgs),
    /// The same workload in each mode of --modes (default lossless,lossy; presets lossless, pause, lossy, irn), side by side, drops by source.
    Compare(apps::compare::CompareArgs),
    /// One run per credit value (--credits 0.5x,1x,4x,16x or absolute counts): goodput, p99 and loss rate against credits.
    Sweep(apps::compare::SweepArgs),
    /// N sessions of one client thread converging on one server thread (--fan-in 1,2,4,8,16), in each mode of --modes.
    Incast(apps::compare::IncastArgs),
    /// The seeds' regimes on a simulated datacenter fabric (deterministic, virtual time): per regime goodput, FCT slowdown by size, drops by place, pauses, ECN marks, resends.
    Fabric(lab::cli::FabricArgs),
}

#[derive(Args, Debug, Clone, Default)]
struct RunArgs {
    #[command(flatten)]
    cfg: ConfigArgs,
    #[command(flatten)]
    out: apps::report::output::ReportArgs,
    /// Skip the raw floor measurement (no ratios in the report).
    #[arg(long)]
    no_floor: bool,
    /// Pings per frame size for the floor measured in the same run.
    #[arg(long, default_value_t = 10_000)]
    floor_pings: u64,
}

#[derive(Args, Debug, Clone)]
struct FloorArgs {
    #[command(flatten)]
    link: LinkArgs,
    /// Cores for the client and server processes (client first).
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1u32])]
    cores: Vec<u32>,
    /// Measured pings per frame size.
    #[arg(long, default_value_t = 20_000)]
    pings: u64,
    /// Warm-up pings per frame size (not recorded).
    #[arg(long, default_value_t = 1_000)]
    warmup: u64,
    /// Seconds of streaming per frame size.
    #[arg(long, default_value_t = 1.0)]
    stream_secs: f64,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug, Clone)]
struct FloorPeerArgs {
    #[command(flatten)]
    link: LinkArgs,
    #[arg(long, value_enum)]
    role: Role,
    #[arg(long)]
    core: u32,
    #[arg(long, default_value_t = 20_000)]
    pings: u64,
    #[arg(long, default_value_t = 1_000)]
    warmup: u64,
    #[arg(long, default_value_t = 1.0)]
    stream_secs: f64,
    /// Hard bound on this process's run time.
    #[arg(long, default_value_t = 120.0)]
    max_secs: f64,
}

#[derive(Args, Debug, Clone)]
struct EngineArgs {
    #[command(flatten)]
    cfg: ConfigArgs,
    /// RPCs to run.
    #[arg(long, default_value_t = 1_000_000)]
    rpcs: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug, Clone)]
struct KernelUdpArgs {
    /// Cores for the client and echo threads (client first).
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1u32])]
    cores: Vec<u32>,
    #[arg(long, default_value_t = 20_000)]
    pings: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug, Clone)]
struct PortCheckArgs {
    #[command(flatten)]
    link: LinkArgs,
    #[arg(long, default_value_t = 0)]
    core: u32,
    /// Frames to send.
    #[arg(long, default_value_t = 256)]
    frames: u64,
    /// How long to keep receiving after the last send, in ms.
    #[arg(long, default_value_t = 200)]
    rx_wait_ms: u64,
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Some(Cmd::Run(a)) => run_cmd(a),
        Some(Cmd::Floor(a)) => floor_cmd(a).map(|_| ()),
        Some(Cmd::FloorPeer(a)) => floor_peer(a),
        Some(Cmd::KernelUdp(a)) => kernel_udp_cmd(a),
        Some(Cmd::Engine(a)) => engine_cmd(a),
        Some(Cmd::PortCheck(a)) => {
            apps::measure::portcheck::run(&a.link, a.core, a.frames, a.rx_wait_ms)
                .map(|v| println!("{v}"))
        }
        Some(Cmd::Compare(a)) => apps::compare::compare_cmd(&a),
        Some(Cmd::Sweep(a)) => apps::compare::sweep_cmd(&a),
        Some(Cmd::Incast(a)) => apps::compare::incast_cmd(&a),
        Some(Cmd::Fabric(a)) => lab::cli::run(&a),
        // No subcommand: `run` with the flags given (none: the default
        // benchmark, 32 B latency over memif + floor).
        None => run_cmd(cli.run),
    };
    if let Err(e) = result {
        eprintln!("rpc-bench: error: {e:#}");
        std::process::exit(1);
    }
}

fn floor_peer(a: FloorPeerArgs) -> anyhow::Result<()> {
    match a.role {
        Role::Server => floor::run_server(&a.link, a.core, a.max_secs),
        Role::Client => {
            let plan = ClientPlan {
                pings: a.pings,
                warmup: a.warmup,
                stream_secs: a.stream_secs,
                max_secs: a.max_secs,
            };
            let v = floor::run_client(&a.link, a.core, plan)?;
            println!("{v}");
            Ok(())
        }
    }
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

fn floor_cmd(mut a: FloorArgs) -> anyhow::Result<serde_json::Value> {
    install_signal_handlers();
    if a.cores.len() < 2 {
        anyhow::bail!("--cores needs two cores (client,server), got {:?}", a.cores);
    }
    if matches!(
        a.link.link,
        LinkKind::Ring | LinkKind::Null | LinkKind::Pcap
    ) {
        anyhow::bail!(
            "the floor needs a two-process link (memif, af_packet or pci); {:?} is single-process",
            a.link.link
        );
    }
    if a.link.link == LinkKind::Memif && a.link.socket == "/tmp/rpc-engine.sock" {
        a.link.socket = format!("/tmp/rpc-floor-{}.sock", unique_tag());
    }
    let exe = std::env::current_exe().context("cannot find own executable")?;
    let max_secs = 30.0 + (a.pings + a.warmup) as f64 * 2.0 * 200e-6 + a.stream_secs * 4.0;
    let peer_args = |role: Role, core: u32| {
        let mut v = vec![
            "floor-peer".to_string(),
            format!("--role={}", role.as_str()),
            format!("--core={core}"),
        ];
        v.extend(a.link.to_args());
        v.push(format!("--pings={}", a.pings));
        v.push(format!("--warmup={}", a.warmup));
        v.push(format!("--stream-secs={}", a.stream_secs));
        v.push(format!("--max-secs={max_secs}"));
        v
    };
    let mut server = ChildProc::spawn("floor server", &exe, &peer_args(Role::Server, a.cores[1]))?;
    // memif: the server creates the socket; give it a head start.
    std::thread::sleep(Duration::from_millis(300));
    let mut client = ChildProc::spawn("floor client", &exe, &peer_args(Role::Client, a.cores[0]))?;
    let limit = Duration::from_secs_f64(max_secs + 10.0);
    let client_out = client.wait(limit);
    let server_out = server.wait(if client_out.is_ok() {
        Duration::from_secs(10)
    } else {
        Duration::from_millis(1)
    });
    let client_json = last_json(&client_out?)?;
    let server_json = last_json(&server_out?)?;
    let mut summary = client_json.clone();
    summary["server"] = server_json;
    print_floor(&summary, a.json);
    Ok(summary)
}

fn print_floor(v: &serde_json::Value, json: bool) {
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "raw floor over {} (no RPC layer), two processes pinned to two cores",
        v["link"].as_str().unwrap_or("?")
    );
    println!("  ping-pong RTT    64 B: p50 {:>8.2} us  p99 {:>8.2} us  p99.9 {:>8.2} us  ({} pings, {} lost)", f("p50_us"), f("p99_us"), f("p999_us"), v["pings"], v["lost_64"]);
    println!(
        "  ping-pong RTT  1 KiB: p50 {:>8.2} us  p99 {:>8.2} us  p99.9 {:>8.2} us  ({} lost)",
        f("p50_us_1k"),
        f("p99_us_1k"),
        f("p999_us_1k"),
        v["lost_1k"]
    );
    println!(
        "  stream 64 B  (bursts of 32): {:>7.3} Mpps {:>7.3} Gbps",
        f("stream_mpps_64"),
        f("stream_gbps_64")
    );
    println!(
        "  stream 1514 B(bursts of 32): {:>7.3} Mpps {:>7.3} Gbps (median of {} ms windows {:.3} Gbps)",
        f("stream_mpps_mtu"),
        f("stream_gbps_mtu"),
        v["stream_window_ms"],
        f("stream_gbps_mtu_median")
    );
    println!(
        "  echo 64 B   (4 bursts out) : {:>7.3} Mpps (the raw request-response ceiling)",
        f("echo_mpps_64")
    );
    println!(
        "  burst RTT 32 x 1514 B      : p50 {:>8.2} us  p99 {:>8.2} us  ({} bursts, {} lost)",
        f("burst_rtt_p50_us_mtu"),
        f("burst_rtt_p99_us_mtu"),
        v["bursts"],
        v["bursts_lost"]
    );
    let train = |i: usize| v["train_rtt_p50_us_mtu"][i].as_f64().unwrap_or(f64::NAN);
    println!(
        "  trains of 2 / 8 bursts     : p50 {:>8.2} / {:.2} us -> {:.3} Gbps round trip (the BDP's rate; {} trains each, {} lost)",
        train(0),
        train(1),
        f("train_gbps_mtu"),
        v["trains"],
        v["trains_lost"]
    );
    if json {
        println!("{v}");
    }
}

/// The floor measured over the same link as the RPC run, for ratios.
fn floor_for(cfg: &apps::config::Config, pings: u64) -> anyhow::Result<serde_json::Value> {
    let mut link = cfg.link_args();
    if link.link == LinkKind::Memif {
        link.socket = format!("/tmp/rpc-floor-{}.sock", apps::run::bench::unique_tag());
    }
    let cores = vec![cfg.cores.client[0], cfg.cores.server[0]];
    let a = FloorArgs {
        link,
        cores,
        pings,
        warmup: 1000,
        stream_secs: 0.3,
        json: false,
    };
    floor_cmd(a)
}

fn run_cmd(a: RunArgs) -> anyhow::Result<()> {
    install_signal_handlers();
    let mut cfg = a.cfg.load(None)?;
    apps::run::bench::isolate(&mut cfg);
    apps::run::bench::preflight(&cfg)?;
    // The floor needs two processes on a wire; net_ring runs in one.
    let floor = if a.no_floor || cfg.link.kind == LinkKind::Ring {
        None
    } else {
        Some(floor_for(&cfg, a.floor_pings).context("raw floor")?)
    };
    let bdp = apps::measure::bdp::apply(&mut cfg, floor.as_ref());
    cfg.check_rate_cap()?;
    eprintln!(
        "rpc-bench: {} credits per session; BDP {} credits from {}{} ({:.2} Gb/s x {:.1} us / {} B; line rate {:.2} Gb/s){}",
        bdp.credits,
        bdp.bdp_credits,
        bdp.source,
        match bdp.rate_from {
            Some("train_gbps_mtu") => " (round-trip rate of echoed MTU burst trains)",
            Some("stream_gbps_mtu_median") => " (median 20 ms window of the MTU stream)",
            Some(_) => " (mean of the MTU stream)",
            None => "",
        },
        bdp.bdp_gbps,
        bdp.rtt_us,
        bdp.mtu,
        bdp.link_gbps,
        if bdp.clamped_to_ring { ", lowered to what the receive ring backs" } else { "" }
    );
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
    let mut rep = apps::run::bench::run_pair_streaming(&cfg, a.out.json_stream)?;
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
    println!();
    print!("{}", rep.render_text());
    let ok = rep.failed == 0
        && !rep.extra.contains_key("errors")
        && !rep.extra.contains_key("server_error");
    a.out.emit(&rep, false)?;
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
        anyhow::bail!("--cores needs two cores (client,echo), got {:?}", a.cores);
    }
    let v = apps::measure::kudp::run((a.cores[0], a.cores[1]), a.pings, 1000)?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "kernel UDP over loopback, 64 B ping-pong, threads on cores {:?}: p50 {:.2} us  p99 {:.2} us  p99.9 {:.2} us  ({} pings, {} lost)",
        a.cores, f("kernel_udp_p50_us"), f("kernel_udp_p99_us"), f("kernel_udp_p999_us"), v["kernel_udp_pings"], v["kernel_udp_lost"]
    );
    if a.json {
        println!("{v}");
    }
    Ok(())
}

fn engine_cmd(a: EngineArgs) -> anyhow::Result<()> {
    let cfg = a.cfg.load(None)?;
    let v = apps::measure::enginecost::run(&cfg, a.rpcs)?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "engine cost, no wire ({} B requests, {} B responses, window {}): {:.0} ns per RPC (both endpoints), {:.0} ns per packet, {:.3} Mrps, {:.2} Gbps on one core",
        cfg.workload.req_size, cfg.workload.resp_size, cfg.window(), f("engine_ns_per_rpc"), f("engine_ns_per_packet"), f("engine_mrps"), f("engine_gbps")
    );
    if a.json {
        println!("{v}");
    }
    Ok(())
}
