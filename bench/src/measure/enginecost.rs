//! `rpc-bench engine`: the protocol engine's own cost with no wire and no
//! driver. A client and a server `Endpoint` exchange frames through memory on
//! one thread; every frame is really written, parsed and answered, so the
//! time per RPC is what the sans-IO core (both sides together) costs, the
//! share of an RPC that is ours rather than the NIC's or the driver's.

use apps::config::link::Role;
use apps::config::Config;
use engine::proto::{Delivery, Endpoint, Event, PeerAddr};
use engine::time::Instant;
use engine::wire::MacAddr;
use serde_json::{json, Value};
use std::collections::VecDeque;

/// Frames in flight between the two endpoints: a queue of reused buffers.
struct Wire {
    /// (buffer, frame length); buffers keep their full size, never re-zeroed.
    frames: VecDeque<(Vec<u8>, usize)>,
    spare: Vec<Vec<u8>>,
}

impl Wire {
    fn new() -> Self {
        Wire {
            frames: VecDeque::with_capacity(1024),
            spare: Vec::new(),
        }
    }

    /// Moves everything `from` wants to send onto the wire.
    fn pull(&mut self, from: &mut Endpoint, now: Instant) {
        let need = from.min_tx_buf_len();
        loop {
            let mut b = self.spare.pop().unwrap_or_else(|| vec![0u8; need]);
            match from.poll_transmit(now, &mut b) {
                Some(n) => self.frames.push_back((b, n)),
                None => {
                    self.spare.push(b);
                    return;
                }
            }
        }
    }
}

/// Runs `n` RPCs of the config's sizes through two in-memory endpoints.
pub fn run(cfg: &Config, n: u64) -> anyhow::Result<Value> {
    let mac_c = MacAddr([2, 0, 0, 0, 0, 1]);
    let mac_s = MacAddr([2, 0, 0, 0, 0, 2]);
    let (client_w, server_w) = (
        cfg.offline_worker(Role::Client, 0, mac_c),
        cfg.offline_worker(Role::Server, 0, mac_s),
    );
    let mut client = Endpoint::new(cfg.endpoint_config(Role::Client, &client_w)?)?;
    let mut server = Endpoint::new(cfg.endpoint_config(Role::Server, &server_w)?)?;
    let (req, resp) = (
        cfg.workload.req_size as usize,
        cfg.workload.resp_size as usize,
    );
    let window = cfg.window().max(1) as u64;
    let t0 = std::time::Instant::now();
    // The engine's clock: real elapsed time, so timers behave as in a run.
    let now = || Instant::from_nanos((std::time::Instant::now() - t0).as_nanos() as u64);
    let peer = PeerAddr {
        mac: Some(mac_s),
        ip: cfg.link.server_ip,
        port: cfg.worker_port(0),
    };
    let s = client.connect(now(), peer)?;
    let (mut to_server, mut to_client) = (Wire::new(), Wire::new());
    let mut connected = false;
    let (mut issued, mut done) = (0u64, 0u64);
    let mut start = None;
    while done < n {
        let t = now();
        if connected {
            while issued < n && issued - done < window {
                let m = client.alloc_msg(req);
                client
                    .enqueue_request(t, s, apps::run::workload::REQ_ECHO, m, issued)
                    .map_err(|(e, _)| e)?;
                issued += 1;
            }
        }
        to_server.pull(&mut client, t);
        while let Some((f, len)) = to_server.frames.pop_front() {
            if let Some(Delivery::Request { handle, .. }) = server.handle_frame(t, &f[..len]) {
                let m = server.alloc_msg(resp);
                server.respond(t, handle, m)?;
            }
            to_server.spare.push(f);
        }
        to_client.pull(&mut server, t);
        while let Some((f, len)) = to_client.frames.pop_front() {
            if let Some(Delivery::Response { .. }) = client.handle_frame(t, &f[..len]) {
                done += 1;
            }
            to_client.spare.push(f);
        }
        client.handle_timeout(t);
        server.handle_timeout(t);
        while let Some(ev) = client.poll_event() {
            match ev {
                Event::Connected(_) => {
                    connected = true;
                    start = Some(std::time::Instant::now());
                }
                Event::ConnectFailed { reason, .. } => {
                    anyhow::bail!("in-memory connect failed: {reason}")
                }
                Event::RequestFailed { error, .. } => {
                    anyhow::bail!("in-memory request failed: {error}")
                }
                _ => {}
            }
        }
        while server.poll_event().is_some() {}
    }
    let secs = start.map(|s| s.elapsed().as_secs_f64()).unwrap_or(0.0);
    let st = client.stats();
    let pkts = st.tx_pkts + st.rx_pkts;
    Ok(json!({
        "engine_rpcs": n,
        "engine_req_size": req,
        "engine_resp_size": resp,
        "engine_ns_per_rpc": secs * 1e9 / n as f64,
        "engine_mrps": n as f64 / secs / 1e6,
        "engine_gbps": n as f64 * (req + resp) as f64 * 8.0 / secs / 1e9,
        "engine_ns_per_packet": secs * 1e9 / pkts.max(1) as f64,
        "engine_packets": pkts,
        "retransmissions": st.retransmissions,
    }))
}
