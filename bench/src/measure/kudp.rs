//! The kernel baseline: UDP ping-pong over loopback between two threads
//! pinned to two cores (blocking sockets, 64 B payloads). What a user would
//! get without kernel bypass on the same machine, measured in the same run.

use anyhow::Context;
use apps::measure::hist::LatencyHist;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn pin(core: u32) -> anyhow::Result<()> {
    apps::run::sys::pin_thread(core).with_context(|| format!("cannot pin to core {core}"))
}

/// RTT percentiles of `pings` 64-byte UDP ping-pongs; client on `cores.0`,
/// echo server on `cores.1`.
pub fn run(cores: (u32, u32), pings: u64, warmup: u64) -> anyhow::Result<serde_json::Value> {
    let server = UdpSocket::bind("127.0.0.1:0").context("bind server socket")?;
    let addr = server.local_addr()?;
    server.set_read_timeout(Some(Duration::from_secs(2)))?;
    let echo = std::thread::spawn(move || -> anyhow::Result<u64> {
        pin(cores.1)?;
        let mut buf = [0u8; 2048];
        let mut n = 0u64;
        loop {
            let (len, from) = match server.recv_from(&mut buf) {
                Ok(x) => x,
                Err(_) => return Ok(n), // idle for 2 s: the client is done
            };
            if len == 1 && buf[0] == 0xff {
                return Ok(n);
            }
            server.send_to(&buf[..len], from)?;
            n += 1;
        }
    });
    pin(cores.0)?;
    let client = UdpSocket::bind("127.0.0.1:0")?;
    client.connect(addr)?;
    client.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut hist = LatencyHist::new();
    let msg = [0x5au8; 64];
    let mut buf = [0u8; 2048];
    let mut lost = 0u64;
    for i in 0..warmup + pings {
        let t0 = Instant::now();
        client.send(&msg)?;
        match client.recv(&mut buf) {
            Ok(_) if i >= warmup => hist.record_ns(t0.elapsed().as_nanos() as u64),
            Ok(_) => {}
            Err(_) => lost += 1,
        }
    }
    client.send(&[0xff])?;
    let echoed = echo
        .join()
        .map_err(|_| anyhow::anyhow!("echo thread panicked"))??;
    Ok(serde_json::json!({
        "kernel_udp_p50_us": hist.percentile_us(50.0),
        "kernel_udp_p99_us": hist.percentile_us(99.0),
        "kernel_udp_p999_us": hist.percentile_us(99.9),
        "kernel_udp_pings": pings,
        "kernel_udp_lost": lost,
        "kernel_udp_echoed": echoed,
    }))
}
