//! rpc-client: one endpoint per pinned core, runs the configured workload
//! against rpc-server and prints a latency report: on stdout, or on stderr
//! with --json, which leaves stdout to the stamped JSON summary alone
//! (rpc-bench reads it back as the last line).
//! It waits for its server without limit (or --wait). Exits 1 if any
//! request failed or any response had a wrong byte, 2 on a usage or config
//! error, 130 (SIGINT) or 143 (SIGTERM) when a signal cut the wait or the
//! run short: its report, marked `"interrupted": true`, covers what
//! completed (`apps::exit`).

use apps::config::cli::{client_params, client_report, node_spec, CaptureArgs, ConfigArgs};
use apps::config::link::Role;
use apps::report::output::ReportArgs;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "rpc-client",
    version,
    about = "RPC client: runs a workload against rpc-server and reports latency percentiles",
    after_help = "Examples:\n  rpc-client                                   32 B latency over memif for 3 s (core 0)\n  rpc-client --workload throughput --window 8 --sessions 4\n  rpc-client --workload large --msg-size 8388608 --resp-size 32\n  rpc-client --workload open_loop --rate 200000 --json --hist-out lat.hgrm --plot lat.svg --csv runs.csv\n  rpc-client -c configs/memif.toml --msg-size 4k --print-config   the effective config, no port opened"
)]
struct Cli {
    #[command(flatten)]
    cfg: ConfigArgs,
    #[command(flatten)]
    out: ReportArgs,
    #[command(flatten)]
    capture: CaptureArgs,
    #[command(flatten)]
    wait: apps::run::waiting::WaitArgs,
    /// Include the encoded histogram in the JSON (rpc-bench merges it).
    #[arg(long, hide = true)]
    json_hist: bool,
    /// Print the effective config (file + overrides, validated) as TOML and exit.
    #[arg(long)]
    print_config: bool,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    apps::exit::install_interrupt();
    match run(&cli) {
        Ok(false) => apps::exit::failed(),
        r => apps::exit::finish("rpc-client", r.map(drop)),
    }
}

fn run(cli: &Cli) -> anyhow::Result<bool> {
    // Every output path first: a typo fails before the port comes up.
    cli.out.check()?;
    let capture = cli.capture.spec()?;
    let cfg = cli.cfg.load(Role::Client)?;
    if cli.print_config {
        apps::report::output::print_stdout(&cfg.print_resolved(&cfg.resolved()?));
        return Ok(true);
    }
    let mut spec = node_spec(&cfg, Role::Client);
    spec.capture = capture;
    spec.wait = cli.wait.limit();
    let params = client_params(&cfg, true);
    let live = apps::run::interval::LiveOptions::client(cli.out.json_stream, &params);
    let (result, server) = if cfg.link.kind == apps::config::link::LinkKind::Kernel {
        // A plain UDP socket, no DPDK: the same endpoint, the kernel's I/O.
        let targets = |w: u16, s: usize| cfg.server_peer(cfg.target_server_worker(w as usize, s));
        (
            apps::run::kernel::run_kernel_client(&spec, &params, &targets)?,
            None,
        )
    } else if cfg.link.kind == apps::config::link::LinkKind::Ring {
        // net_ring loops frames back into this process: one endpoint serves
        // its own requests at the server's address (no rpc-server needed).
        let sp = apps::config::cli::server_params(&cfg, 0.0);
        let (r, s) = apps::run::node::run_loopback(&spec, &params, &sp, live)?;
        (r, Some(s))
    } else {
        let targets = |w: u16, s: usize| cfg.server_peer(cfg.target_server_worker(w as usize, s));
        (
            apps::run::node::run_client(&spec, &params, &targets, live)?,
            None,
        )
    };
    let mut rep = client_report(&cfg, &result);
    rep.server = server;
    if apps::exit::interrupted() {
        // A signal ended the run early: the report covers what completed.
        rep.extra.insert("interrupted".into(), true.into());
    }
    cli.out.human(&rep.render_text());
    for e in &result.errors {
        eprintln!("rpc-client: {e}");
    }
    cli.out.emit(&rep, cli.json_hist, Some(&cfg))?;
    Ok(result.failed == 0 && result.bad_responses == 0 && result.errors.is_empty())
}
