//! rpc-server: one RPC endpoint per pinned core, serving the benchmark's echo
//! RPC until SIGINT/SIGTERM or --max-seconds, after waiting for its client
//! as long as it takes (or --wait); prints its counters on exit
//! (a short text, or one JSON line with --json, which rpc-bench and the
//! tests read). It takes only the flags a server uses: the client's
//! workload shortcuts are refused as unexpected arguments.

use apps::config::cli::{node_spec, server_params, CaptureArgs, ServerConfigArgs};
use apps::config::link::Role;
use apps::report::output::print_stdout;
use apps::run::node::ServerSummary;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "rpc-server",
    version,
    about = "RPC server: one endpoint per pinned core on a DPDK port (virtual device or NIC)",
    after_help = "Examples:\n  rpc-server                                   memif server on core 1 (configs/memif.toml defaults)\n  rpc-server -c configs/af_packet.toml         af_packet on the veth made by scripts/veth.sh\n  rpc-server --set cores.server=[1] --set server.work_ns=2000   a slow receiver\n  rpc-server -c configs/real-nic.toml --print-config   the effective config, no port opened\n\nIt waits for its client without limit (--wait SECS bounds it: exit 1); Ctrl-C (or SIGTERM) while it waits exits 130 (143). Once its link is up, Ctrl-C (or SIGTERM) stops it: it prints its counters (one JSON line with --json) and exits 0."
)]
struct Cli {
    #[command(flatten)]
    cfg: ServerConfigArgs,
    #[command(flatten)]
    capture: CaptureArgs,
    #[command(flatten)]
    metrics: apps::run::metrics::MetricsArgs,
    #[command(flatten)]
    wait: apps::run::waiting::WaitArgs,
    /// Exit after this many seconds even without a signal.
    #[arg(long, default_value_t = 3600.0)]
    max_seconds: f64,
    /// Print the exit summary as one JSON line (the form rpc-bench reads).
    #[arg(long)]
    json: bool,
    /// Print the effective config (file + overrides, validated) as TOML and exit.
    #[arg(long)]
    print_config: bool,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // SIGINT/SIGTERM are how a server is stopped: its run loop's flag
    // (`run::node`), not an interruption, so the status stays 0.
    let result = (|| -> anyhow::Result<()> {
        let metrics = cli.metrics.listen()?;
        let cfg = cli.cfg.load(Role::Server)?;
        if cli.print_config {
            print_stdout(&cfg.print_resolved(&cfg.resolved()?));
            return Ok(());
        }
        let mut spec = node_spec(&cfg, Role::Server);
        spec.capture = cli.capture.spec()?;
        spec.wait = cli.wait.limit();
        let params = server_params(&cfg, cli.max_seconds);
        let summary = apps::run::node::run_server(&spec, &params, metrics)?;
        if cli.json {
            // One stdout line, read back by rpc-bench; stamped like every summary.
            let mut v = serde_json::to_value(&summary)?;
            apps::report::meta::stamp(&mut v, Some(&cfg));
            print_stdout(&format!("{v}\n"));
        } else {
            print_stdout(&render(&summary));
        }
        Ok(())
    })();
    match result {
        // Stopped by its signal while serving: the normal end, status 0.
        Ok(()) => std::process::ExitCode::SUCCESS,
        // Refused, failed, or interrupted while it waited for a client.
        r => apps::exit::finish("rpc-server", r),
    }
}

/// The exit summary for a person: what was served, what was lost, leaks.
fn render(s: &ServerSummary) -> String {
    let c = &s.stats.counters;
    format!(
        "rpc-server: {} request(s) handled by {} worker(s) in {:.2} s, {} bad\n  sessions accepted {} (reclaimed {}), drops {} (injected {}), port rx_missed {}\n  mbufs in use at start {}, at end {}\n",
        s.handled,
        s.workers,
        s.seconds,
        s.bad_requests,
        c.sessions_accepted,
        c.sessions_reclaimed,
        s.stats.drops_total,
        s.injected_drops,
        s.port["rx_missed"],
        s.mbufs_in_use_start,
        s.mbufs_in_use_end,
    )
}
