//! `rpc-bench port-check`: brings one port up on any link kind in a single
//! process, pushes frames through it, and reports link state, frame counts
//! and mbuf accounting. The bring-up and error-path tests drive it:
//! [`run`] returns the figures as JSON, [`render_text`] is the text report.

use crate::measure::floor::{MIN_FRAME, SERVER_IP};
use apps::config::link::{LinkArgs, LinkKind, Role};
use apps::config::setup::{self, PortShape};
use engine::dpdk::{Mbuf, MbufBatch};
use engine::runtime::HandlerTable;
use engine::wire::MacAddr;
use std::time::{Duration, Instant};

pub fn run(
    link: &LinkArgs,
    core: u32,
    frames: u64,
    rx_wait_ms: u64,
) -> anyhow::Result<serde_json::Value> {
    // One queue pair, 4095 mbufs with no per-core cache, the driver's ring
    // sizes; the Nexus has waited for link-up. On virtio the port checked
    // is the guest's driver, net_virtio_user, against a backend already
    // listening on link.socket (an rpc-server); the backend's own link has
    // nothing to come up with.
    let role = match link.link {
        LinkKind::Virtio => Role::Client,
        _ => Role::Server,
    };
    let b = setup::builder(link, role, &[core], &PortShape::raw(4095, 0))?;
    let nexus = setup::open(link, role, b, HandlerTable::<()>::new())?;
    let (port, pool, mac) = (nexus.port(), nexus.pool(), nexus.mac());
    let dev = port.name().to_string();
    let link_status = port.link()?;
    let (mut rx, mut tx) = port.queue_pair(0)?;
    // Driver rings hold mbufs from the start; measure after start-up.
    let in_use_before = pool.in_use();
    let mut sent = 0u64;
    let mut received = 0u64;
    let mut batch = MbufBatch::new();
    for i in 0..frames {
        let mut m = Mbuf::alloc(pool)?;
        let room = m.room_mut();
        room[..MIN_FRAME].fill(0);
        room[0..6].copy_from_slice(&MacAddr::BROADCAST.0);
        room[6..12].copy_from_slice(&mac.0);
        room[12..14].copy_from_slice(&0x88B5u16.to_be_bytes()); // IEEE local experimental
        room[14..18].copy_from_slice(&SERVER_IP);
        room[18..26].copy_from_slice(&i.to_le_bytes());
        m.set_len(MIN_FRAME);
        if tx.tx_one(m).is_ok() {
            sent += 1;
        }
        received += rx.rx_burst(&mut batch) as u64;
        batch.clear();
    }
    let until = Instant::now() + Duration::from_millis(rx_wait_ms);
    while Instant::now() < until && received < frames {
        received += rx.rx_burst(&mut batch) as u64;
        batch.clear();
    }
    // Let the driver finish with what it sent (af_packet frees on completion).
    std::thread::sleep(Duration::from_millis(20));
    let in_use_after = pool.in_use();
    let stats = port.stats()?;
    Ok(serde_json::json!({
        "device": dev,
        "port_id": port.id(),
        "mac": mac.to_string(),
        "link_up": link_status.up,
        "speed_mbps": link_status.speed_mbps,
        "sent": sent,
        "received": received,
        "mbufs_in_use_before": in_use_before,
        "mbufs_in_use_after": in_use_after,
        "port_tx_packets": stats.tx_packets,
        "port_rx_packets": stats.rx_packets,
    }))
}

/// The text report of a [`run`] result: the device, its link, what went
/// through, and whether every mbuf came back to the pool.
pub fn render_text(v: &serde_json::Value) -> String {
    let before = v["mbufs_in_use_before"].as_u64();
    let after = v["mbufs_in_use_after"].as_u64();
    let mbufs = match (before, after) {
        (Some(b), Some(a)) if a == b => format!("mbufs in use {b} before and after (no leak)"),
        (Some(b), Some(a)) => format!(
            "mbufs in use {b} before, {a} after: {} not returned",
            a.saturating_sub(b)
        ),
        _ => "mbuf accounting unavailable".to_string(),
    };
    format!(
        "port {} ({}), mac {}: link {}, {} Mb/s\n  sent {} frames, received {}; port counters tx {} rx {}\n  {mbufs}\n",
        v["port_id"],
        v["device"].as_str().unwrap_or("?"),
        v["mac"].as_str().unwrap_or("?"),
        if v["link_up"] == true { "up" } else { "down" },
        v["speed_mbps"],
        v["sent"],
        v["received"],
        v["port_tx_packets"],
        v["port_rx_packets"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_text_report_names_the_port_counts_and_leaks() {
        let mut v = json!({
            "device": "net_null0", "port_id": 0, "mac": "02:00:00:00:00:01",
            "link_up": true, "speed_mbps": 10000, "sent": 256, "received": 300,
            "mbufs_in_use_before": 512, "mbufs_in_use_after": 512,
            "port_tx_packets": 256, "port_rx_packets": 300,
        });
        let t = render_text(&v);
        assert!(
            t.starts_with("port 0 (net_null0), mac 02:00:00:00:00:01: link up, 10000 Mb/s"),
            "{t}"
        );
        assert!(
            t.contains("sent 256 frames, received 300") && t.contains("(no leak)"),
            "{t}"
        );
        v["mbufs_in_use_after"] = json!(515);
        v["link_up"] = json!(false);
        let t = render_text(&v);
        assert!(
            t.contains("link down") && t.contains("3 not returned"),
            "{t}"
        );
    }
}
