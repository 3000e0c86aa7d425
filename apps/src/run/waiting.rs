//! What rpc-server and rpc-client do before they run: open their port and
//! wait for its link (a memif client: for its server) as long as `--wait`
//! allows, by default as long as it takes (as `iperf3 -s` waits for its
//! client); stop at once on SIGINT or SIGTERM while they wait (the engine
//! polls the signal flag every 10 ms: `NexusBuilder::stop_on`); say on
//! stderr what they wait for; and give an interrupted process the exit
//! code 128 + the signal's number (130 for SIGINT, 143 for SIGTERM:
//! `crate::exit`).
//!
//! `rpc-bench` passes its children an explicit `--wait`, so a benchmark
//! whose peer never comes fails instead of hanging.

use crate::config::link::{LinkKind, Role};
use crate::config::setup;
use crate::config::units::parse_seconds;
use crate::config::{ClientPort, Config};
use crate::run::sys;
use engine::dpdk::DpdkError;
use engine::runtime::{HandlerTable, Nexus, RuntimeError};
use std::time::Duration;

/// `--wait SECS` of rpc-server and rpc-client.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct WaitArgs {
    /// Give up after SECS seconds without a peer (the link, a memif
    /// client's server): exit 1 naming what was waited for. Default: wait
    /// as long as it takes (Ctrl-C or SIGTERM stops it: exit 130 / 143).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub wait: Option<f64>,
}

impl WaitArgs {
    /// The bound, if any (what `run::node::NodeSpec::wait` takes).
    pub fn limit(&self) -> Option<Duration> {
        self.wait.map(Duration::from_secs_f64)
    }
}

/// A wait for the peer that SIGINT or SIGTERM ended.
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {} while waiting for a {peer} on {device}", signal_name(*signal))]
pub struct Interrupted {
    /// The signal's number.
    pub signal: i32,
    /// `client` or `server`: who was waited for.
    pub peer: &'static str,
    /// The device, as the engine names it ("memif socket /tmp/x.sock").
    pub device: String,
}

/// Opens `role`'s port on `cfg` (EAL, pool, port) and waits for its link
/// up to `wait` (`None`: as long as it takes), stopping at once on
/// SIGINT/SIGTERM ([`Interrupted`]). A server says first, once, what it
/// waits for.
pub fn open<A>(
    cfg: &Config,
    role: Role,
    wait: Option<Duration>,
    handlers: HandlerTable<A>,
) -> anyhow::Result<Nexus<A>> {
    sys::install_interrupt_flag();
    let link = cfg.link_args();
    let device = setup::device(&link, role, true)?.to_string();
    let peer = match role {
        Role::Server => "client",
        Role::Client => "server",
    };
    let has_peer = link.vdev.is_some()
        || !matches!(link.link, LinkKind::Ring | LinkKind::Null | LinkKind::Pcap);
    if role == Role::Server && has_peer {
        let bound = match wait {
            Some(d) => format!(" (up to {} s: --wait)", d.as_secs_f64()),
            None => String::new(),
        };
        eprintln!("rpc-server: waiting for a client on {device}{bound}");
    }
    let stop = sys::interrupt_stop_handle();
    let nx = cfg.open_nexus(role, handlers, wait, &stop).map_err(|e| {
        let engine = e.downcast_ref::<RuntimeError>();
        if matches!(engine, Some(RuntimeError::Stopped { .. })) {
            let signal = sys::interrupt_signal().unwrap_or(libc::SIGINT);
            return Interrupted {
                signal,
                peer,
                device,
            }
            .into();
        }
        let timed_out = matches!(engine, Some(RuntimeError::Dpdk(DpdkError::LinkDown { .. })));
        match wait {
            Some(d) if timed_out => e.context(format!(
                "no {peer} came on {device} within --wait {} s",
                d.as_secs_f64()
            )),
            _ => e,
        }
    })?;
    // What the device gave: its offloads in use and how workers are steered.
    eprintln!(
        "rpc-{}: port {}: {}",
        role.as_str(),
        nx.port().name(),
        nx.port_summary()
    );
    if role == Role::Client {
        // Where each worker's sessions leave from (`link.client_port`).
        let ports: Vec<String> = (0..nx.workers() as u16)
            .map(|i| nx.udp_port(i).to_string())
            .collect();
        let how = match cfg.client_port_mode() {
            ClientPort::Rss => "rss: each session hashes to its server worker's queue",
            _ => "fixed: udp_port + i",
        };
        eprintln!(
            "rpc-client: udp source ports {} (link.client_port {how})",
            ports.join(", ")
        );
    }
    Ok(nx)
}

fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_wait_names_the_signal_and_what_it_waited_for() {
        let e = |signal| {
            anyhow::Error::from(Interrupted {
                signal,
                peer: "client",
                device: "memif socket /tmp/x.sock".into(),
            })
        };
        assert_eq!(
            e(libc::SIGTERM).to_string(),
            "interrupted by SIGTERM while waiting for a client on memif socket /tmp/x.sock"
        );
    }

    #[test]
    fn wait_takes_positive_seconds() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            w: WaitArgs,
        }
        let limit = |a: &[&str]| Cli::try_parse_from(a).map(|c| c.w.limit());
        assert_eq!(limit(&["t"]).unwrap(), None);
        assert_eq!(
            limit(&["t", "--wait", "1.5"]).unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert!(limit(&["t", "--wait", "0"]).is_err());
        assert!(limit(&["t", "--wait", "soon"]).is_err());
    }
}
