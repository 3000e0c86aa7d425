//! rpc-lab: the fabric lab's command line, the same flags as `rpc-bench
//! fabric` (both run [`lab::cli::run`]).

use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "rpc-lab",
    version,
    about = "Datacenter transport regimes (InfiniBand credits, RoCE with PFC and DCQCN, IRN, SRD, eRPC, ...) on a simulated datacenter fabric (deterministic, virtual time, no DPDK): per regime goodput, FCT slowdown by size, drops by place, pauses, ECN marks, resends.",
    after_help = "Examples:\n  rpc-lab -c configs/fabric-incast.toml   all seven regimes on a simulated 32-to-1 incast\n  rpc-lab --scenario websearch --regimes roce,irn --load 0.5 --json\n  rpc-lab --scenario incast --seed 7 --seeds 5 --plot incast.svg"
)]
struct Cli {
    #[command(flatten)]
    args: lab::cli::FabricArgs,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = lab::cli::run(&cli.args) {
        eprintln!("rpc-lab: error: {e:#}");
        std::process::exit(1);
    }
}
