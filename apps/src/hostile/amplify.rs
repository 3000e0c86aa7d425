//! `rpc-hostile --attack dup-amplify`: a peer that receives at its own
//! address (a real handshake, a real server token) sends one request
//! asking for a 1 MiB response and granting 65,535 response packets, then
//! only copies of that request at `--fps`, never reading what comes back.
//! Each copy is the repair of a lost Response(0) as far as the server can
//! tell: before `transport.regrants_per_request`, each brought back
//! Response(0) and the session's credits of 1,514-byte response packets
//! (1 + 42 for 102 bytes); the server's `stats.tx_bytes / rx_bytes` over the
//! run is the amplification it allowed.

use crate::hostile::pin::PinSource;
use crate::hostile::{HostileKind, HostileReport, Target};
use crate::run::message::{fill_message, pattern, write_resp_size, REQ_ECHO};
use engine::dpdk::{MbufBatch, Mempool, RxQueue, TxQueue, BURST};
use engine::wire::{
    parse_frame, HeaderTemplate, PktType, RpcRepr, SmBody, SmRepr, SmStatus, SmType, SESSION_NONE,
};
use std::time::{Duration, Instant};

/// The request's payload: the benchmark's header (sequence number and the
/// response size asked for) and pattern, 102 bytes on the wire.
const REQ_LEN: usize = 32;
/// The response it asks for: 727 packets, far more than any grant.
const RESP_LEN: usize = 1 << 20;
/// Credits asked (the server grants at most its own).
const CREDITS: u16 = 64;
/// The attacker's client session number and token.
const SESSION: u16 = 0;
const TOKEN: u64 = 0x0a77_ac00_0000_a3f1;

/// Runs the attack for `seconds` at most `rate` frames a second: a
/// handshake, the request, then its copies; what it sent (`connected`: 1
/// once the handshake completed).
pub fn run(
    rx: &mut RxQueue,
    tx: &mut TxQueue,
    pool: &Mempool,
    src: PinSource,
    target: Target,
    rate: u64,
    seconds: f64,
) -> anyhow::Result<HostileReport> {
    let template = src.template(target);
    let mut report = HostileReport::default();
    let start = Instant::now();
    let (num, token) = connect(rx, tx, pool, &template, start, seconds, &mut report)?;
    report.connected = 1;
    let mut payload = [0u8; REQ_LEN];
    fill_message(&mut payload, &pattern(REQ_LEN), 1);
    write_resp_size(&mut payload, RESP_LEN);
    let rpc = RpcRepr {
        pkt_type: PktType::Request,
        req_type: REQ_ECHO,
        msg_size: REQ_LEN as u32,
        dest_session: num,
        pkt_num: 0,
        grant: u16::MAX,
        req_num: 0,
        token,
    };
    let mut batch = MbufBatch::new();
    let per_burst = Duration::from_secs_f64(BURST as f64 / rate.max(1) as f64);
    let sending = Instant::now();
    let mut bursts = 0u32;
    while start.elapsed().as_secs_f64() < seconds {
        if let Some(wait) = (sending + per_burst * bursts).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        bursts += 1;
        batch.alloc(pool, BURST)?;
        for i in 0..batch.len() {
            let room = batch.room_mut(i);
            let n = template.write(room, &rpc, REQ_LEN);
            room[n..n + REQ_LEN].copy_from_slice(&payload);
            batch.set_len(i, n + REQ_LEN);
        }
        let n = batch.len() as u64;
        tx.tx_burst(&mut batch);
        report.not_sent += batch.len() as u64;
        report.sent += n;
        *report.by_kind.entry(HostileKind::DupAmplify).or_default() += n;
        batch.clear();
        drain(rx);
    }
    Ok(report)
}

/// One session by a real handshake (a cookie round trip when the server
/// asks for one): (server session, server token).
fn connect(
    rx: &mut RxQueue,
    tx: &mut TxQueue,
    pool: &Mempool,
    template: &HeaderTemplate,
    start: Instant,
    seconds: f64,
    report: &mut HostileReport,
) -> anyhow::Result<(u16, u64)> {
    let mut cookie = 0;
    let mut batch = MbufBatch::new();
    loop {
        if start.elapsed().as_secs_f64() >= seconds {
            anyhow::bail!("dup-amplify: not connected before the time was up");
        }
        let body = SmRepr {
            server_token: cookie,
            ..SmRepr::connect_req(SESSION, CREDITS, 1500, 8)
        };
        batch.alloc(pool, 1)?;
        let n = template.write_sm(batch.room_mut(0), SESSION_NONE, TOKEN, &body);
        batch.set_len(0, n);
        tx.tx_burst(&mut batch);
        batch.clear();
        report.sent += 1;
        *report.by_kind.entry(HostileKind::DupAmplify).or_default() += 1;
        std::thread::sleep(Duration::from_millis(20));
        while rx.rx_burst(&mut batch) > 0 {
            for i in 0..batch.len() {
                let Ok(p) = parse_frame(batch.data(i)) else {
                    continue;
                };
                if p.rpc.pkt_type != PktType::SessionMgmt || p.rpc.token != TOKEN {
                    continue;
                }
                let Ok(sm) = SmBody::new_checked(p.payload).and_then(|b| SmRepr::parse(&b)) else {
                    continue;
                };
                if sm.sm_type != SmType::ConnectResp || sm.client_session != SESSION {
                    continue;
                }
                match sm.status {
                    SmStatus::Ok => return Ok((sm.server_session, sm.server_token)),
                    SmStatus::Retry => cookie = sm.server_token,
                    s => anyhow::bail!("dup-amplify: the server refused the session: {s:?}"),
                }
            }
            batch.clear();
        }
    }
}

/// Frees what the server sent without reading it: the attacker's ring must
/// not fill, and it never returns a credit.
fn drain(rx: &mut RxQueue) {
    let mut batch = MbufBatch::new();
    while rx.rx_burst(&mut batch) > 0 {
        batch.clear();
    }
}
