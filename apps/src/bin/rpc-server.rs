//! rpc-server: one RPC endpoint per pinned core, serving the benchmark's echo
//! RPC until SIGINT/SIGTERM or --max-seconds; prints its counters on exit.

use apps::config::cli::{node_spec, server_params, CaptureArgs, ConfigArgs};
use apps::config::link::Role;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "rpc-server",
    version,
    about = "RPC server: one endpoint per pinned core on a DPDK port (virtual device or NIC)",
    after_help = "Examples:\n  rpc-server                                   memif server on core 1 (configs/memif.toml defaults)\n  rpc-server -c configs/af_packet.toml         af_packet on the veth made by scripts/veth.sh\n  rpc-server --set cores.server=[1] --set server.work_ns=2000   a slow receiver\n\nStop it with Ctrl-C (or SIGTERM): it prints its counters as one JSON line and exits 0."
)]
struct Cli {
    #[command(flatten)]
    cfg: ConfigArgs,
    #[command(flatten)]
    capture: CaptureArgs,
    #[command(flatten)]
    metrics: apps::run::metrics::MetricsArgs,
    /// Exit after this many seconds even without a signal.
    #[arg(long, default_value_t = 3600.0)]
    max_seconds: f64,
}

fn main() {
    let cli = Cli::parse();
    let result = (|| -> anyhow::Result<()> {
        let metrics = cli.metrics.listen()?;
        let cfg = cli.cfg.load(Some(Role::Server))?;
        let mut spec = node_spec(&cfg, Role::Server);
        spec.capture = cli.capture.spec()?;
        let params = server_params(&cfg, cli.max_seconds);
        let summary = apps::run::node::run_server(&spec, &params, metrics)?;
        println!("{}", serde_json::to_string(&summary)?);
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("rpc-server: error: {e:#}");
        std::process::exit(1);
    }
}
