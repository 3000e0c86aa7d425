//! rpc-hostile: sends hostile frames (random bytes, truncated, bad
//! checksums, wrong magic, spoofed sessions and guessed tokens, a
//! ConnectReq flood from made-up addresses) toward rpc-server from the
//! client side of the link, at a bounded rate, for robustness and soak
//! tests. Prints one JSON line: what it sent, by kind.

use apps::config::cli::ConfigArgs;
use apps::config::link::Role;
use apps::hostile::attacks::Attack;
use apps::hostile::inject::{inject, InjectParams};
use apps::hostile::Target;
use clap::Parser;
use engine::wire::MacAddr;

#[derive(Parser, Debug)]
#[command(
    name = "rpc-hostile",
    version,
    about = "Sends hostile frames toward rpc-server (robustness tests only; never at a network you do not own)",
    after_help = "Example:\n  rpc-hostile -c configs/af_packet.toml --set link.file_prefix=hostile --duration 10 --fps 2000"
)]
struct Cli {
    #[command(flatten)]
    cfg: ConfigArgs,
    /// How long to send, in seconds.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Frames per second, at most (it sleeps between bursts of 32).
    #[arg(long, default_value_t = 2000)]
    fps: u64,
    /// Seed of the frame generator (same seed, same frames).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The EAL core (the process sleeps between bursts; it does not poll).
    #[arg(long, default_value_t = 0)]
    core: u32,
    /// What to send: the malformed mix, or one attack by a peer that speaks
    /// the protocol (docs/reliability.md, "Hostile peers").
    #[arg(long, value_enum, default_value_t = Attack::Mix)]
    attack: Attack,
    /// Whose address a forged restart or an amplification uses; for
    /// mem-pin, dup-amplify, credit-flood and multi-addr-hog, the
    /// attacker's own (first) source address (default: the config's
    /// client address and worker 0's port).
    #[arg(long)]
    victim_ip: Option<std::net::Ipv4Addr>,
    #[arg(long)]
    victim_port: Option<u16>,
    /// multi-addr-hog: how many addresses the attacker answers for, from
    /// --victim-ip up.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..))]
    addresses: u8,
    /// mem-pin: packets sent of each 8 MiB request, a number or
    /// `all-but-last` (every buffer written through, never completed).
    #[arg(long, default_value = "150")]
    pin_packets: apps::hostile::pin::PinPackets,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = (|| -> anyhow::Result<()> {
        let cfg = cli.cfg.load(Role::Client)?;
        let target = Target {
            mac: cfg.mac(Role::Server).unwrap_or(MacAddr::BROADCAST),
            ip: cfg.link.server_ip,
            port: cfg.worker_port(0),
        };
        let p = InjectParams {
            target,
            attack: cli.attack,
            victim: (
                cli.victim_ip.unwrap_or(cfg.link.client_ip),
                cli.victim_port.unwrap_or(cfg.worker_port(0)),
            ),
            addresses: cli.addresses,
            seed: cli.seed,
            rate: cli.fps,
            seconds: cli.duration,
            core: cli.core,
            pin_packets: cli.pin_packets,
        };
        let report = inject(&cfg.link_args(), &p)?;
        let line = serde_json::to_string(&report)?;
        apps::report::output::print_stdout(&format!("{line}\n"));
        Ok(())
    })();
    apps::exit::finish("rpc-hostile", result)
}
