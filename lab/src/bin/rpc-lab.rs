//! rpc-lab: the fabric lab's command line, the same flags as `rpc-bench
//! fabric` (both run [`lab::cli::run_until`]), and the same exit statuses
//! (docs/output.md): 0; 1 when a run fails; 2 when the settings are
//! refused ([`lab::cli::PlanError`]) or clap refuses the flags; 128 + N
//! when signal N (SIGINT, SIGTERM) stopped it, after the report of the
//! regimes that finished (a regime in its run stops at its next progress
//! tick, a fraction of a second, and is not reported).

use clap::Parser;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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

fn main() -> ExitCode {
    // Before anything else: it may start this process again.
    lab::malloc::reexec_with_tunables();
    let cli = Cli::parse();
    // The signal that stopped the run (0: none), checked between regimes
    // and every 2^20 events within one.
    // The lab has no DPDK and no apps crate: signal-hook's flag directly,
    // as `apps::exit` does for the other binaries.
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize) {
            eprintln!("rpc-lab: warning: cannot catch signal {sig}: {e}");
        }
    }
    let result = lab::cli::run_until(&cli.args, &|| signal.load(Ordering::SeqCst) != 0);
    let status = match result {
        Ok(()) => 0,
        // A reader that went away (`rpc-lab ... | head -1`): nothing to say.
        Err(e) if is_closed_pipe(&e) => 0,
        Err(e) => {
            eprintln!("rpc-lab: error: {e:#}");
            if e.is::<lab::cli::PlanError>() {
                2
            } else {
                1
            }
        }
    };
    match signal.load(Ordering::SeqCst) {
        0 => ExitCode::from(status),
        sig => ExitCode::from(128u8.saturating_add(sig as u8)),
    }
}

/// Whether `e` is stdout's reader going away (a broken pipe).
fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
