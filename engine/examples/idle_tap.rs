//! idle_tap: the adaptive idle mode on a driver that has RX interrupts
//! (net_tap; memif and af_packet in DPDK 22.11 have none and sleep on a
//! timer). One worker registers its queue's interrupt, sleeps in it while
//! the port is quiet, and wakes on the frames the kernel sends into the tap
//! (the ARP requests of a few UDP datagrams sent toward it). Prints how it
//! idles, the frames it woke for, its loop count and its CPU.
//!
//! Run (root, /dev/net/tun): `cargo run --release -p engine --example idle_tap`

use engine::config::IdlePolicy;
use engine::runtime::{Device, HandlerTable, Nexus, RuntimeError};
use engine::time::Duration;
use std::process::Command;

const IFACE: &str = "rpcidle0";

/// CPU ticks (1/100 s) this process used so far: utime + stime.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
}

/// The kernel's side: the tap up with an address, then a datagram every
/// 500 ms to a neighbour that does not exist (each makes the kernel ARP
/// for it, out through the tap: a frame on the worker's queue).
fn kernel_traffic() {
    let ip = |args: &[&str]| Command::new("ip").args(args).status();
    let _ = ip(&["link", "set", IFACE, "up"]);
    let _ = ip(&["addr", "add", "10.213.0.1/24", "dev", IFACE]);
    let Ok(sock) = std::net::UdpSocket::bind("10.213.0.1:0") else {
        return;
    };
    for _ in 0..4 {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let _ = sock.send_to(b"wake", "10.213.0.2:9");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let nexus = Nexus::builder()
        .device(Device::vdev(format!("net_tap0,iface={IFACE}")))
        .rx_interrupts(true)
        .build(HandlerTable::<()>::new())?;
    println!(
        "port configured with RX interrupts: {}",
        nexus.port().rx_interrupts()
    );
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut rpc = nexus.rpc(w.index)?;
        let policy = IdlePolicy {
            after: Duration::from_micros(1000),
            sleep: Duration::from_micros(500),
        };
        println!("idle: {}", rpc.set_idle(Some(policy)));
        let kernel = std::thread::spawn(kernel_traffic);
        let (c0, t0) = (cpu_ticks(), std::time::Instant::now());
        let end = rpc.clock().now() + Duration::from_secs(3);
        while rpc.now() < end {
            rpc.run_once(&mut ());
            rpc.idle_wait(Some(end));
        }
        let (ticks, secs) = (cpu_ticks() - c0, t0.elapsed().as_secs_f64());
        let _ = kernel.join();
        let c = rpc.counters();
        println!(
            "{} loops, {} non-empty RX bursts, {:.1} % of a core over {secs:.1} s",
            c.loops,
            c.rx_bursts_nonempty,
            ticks as f64 / secs
        );
        Ok(())
    })?;
    Ok(())
}
