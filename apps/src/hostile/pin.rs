//! `rpc-hostile --attack mem-pin`: a peer that does receive at its own
//! address (so it completes real handshakes and holds real server tokens)
//! and uses its sessions to pin server memory: on every session, every
//! request slot gets the first packets of an 8 MiB request (past the size
//! where a reassembly buffer would take its whole length), never finished,
//! renewed with new requests as the server gives the old ones up, while
//! keepalives hold the sessions. Against an unbounded server this pins
//! sessions x slots x 8 MiB; the server's per-peer budget must hold it to
//! `transport.mem_per_peer_mib`. How much of each request it sends is
//! [`PinPackets`]: the first 150 packets (the soak's default: fast), or
//! every packet but the last, so each buffer the server grants is written
//! through and the pool is left what the growth outgrew.

use crate::hostile::paced::Paced;
use crate::hostile::{HostileKind, HostileReport, Target};
use engine::dpdk::{MbufBatch, Mempool, RxQueue, TxQueue};
use engine::wire::{
    parse_frame, HeaderTemplate, MacAddr, PktType, RpcRepr, SmBody, SmRepr, SmStatus, SmType,
    SESSION_NONE,
};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// Sessions the attacker opens (of the 256 one address may hold).
const SESSIONS: u16 = 48;
/// Request slots per session (`transport.req_window`'s default).
const SLOTS: u64 = 8;
/// The message size each request announces.
const MSG: u32 = 8 << 20;
/// Packets sent of each request by default: 150 x 1444 B, past the
/// 128 KiB at which a stepwise buffer would grow to the whole 8 MiB.
const PKTS: u16 = 150;
/// Packets of the first round with `--pin-packets all-but-last`: 90 x
/// 1444 B fill a 128 KiB step without growing it to 8 MiB.
const STEP_PKTS: u16 = 90;
/// Credits asked per session: few, so that all 48 sessions' ring entries
/// fit the per-address share of a lossless server (48 x 5 <= 256 of 1024):
/// the attack is on memory, not on the ring.
const CREDITS: u16 = 4;
/// Payload bytes per packet at MTU 1500.
const DPP: usize = 1444;

/// The attacker's own address, the frames' source (replies come back to its
/// port's MAC, which it receives).
#[derive(Clone, Copy, Debug)]
pub struct PinSource {
    pub mac: MacAddr,
    pub ip: Ipv4Addr,
    pub port: u16,
}

impl PinSource {
    /// The headers of this source's frames to `target`.
    pub fn template(&self, target: Target) -> HeaderTemplate {
        HeaderTemplate::new(
            (self.mac, self.ip, self.port),
            (target.mac, target.ip, target.port),
        )
    }
}

/// How many packets of each 8 MiB request the attacker sends
/// (`rpc-hostile --pin-packets`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinPackets {
    /// The first N (`--pin-packets 150`).
    First(u16),
    /// All of them but the last (`--pin-packets all-but-last`): the request
    /// never completes, and its buffer is written to the end. The first
    /// round sends `STEP_PKTS` of each instead: every slot holds the
    /// 128 KiB step it is renewed out of, which the pool keeps when it goes
    /// (what the server's memory grew by beyond the peer's charge).
    AllButLast,
}

impl Default for PinPackets {
    fn default() -> Self {
        PinPackets::First(PKTS)
    }
}

impl std::str::FromStr for PinPackets {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "all-but-last" {
            return Ok(PinPackets::AllButLast);
        }
        match s.parse::<u16>() {
            Ok(n) if n >= 1 && n < whole() => Ok(PinPackets::First(n)),
            _ => Err(format!(
                "expected all-but-last or a number of packets from 1 to {}",
                whole() - 1
            )),
        }
    }
}

/// Packets of one `MSG`-byte request.
fn whole() -> u16 {
    (MSG as usize).div_ceil(DPP) as u16
}

impl PinPackets {
    /// Packets sent of each request of round `round` (fewer than the
    /// request has).
    fn count(self, round: u64) -> u16 {
        match self {
            PinPackets::First(n) => n.min(whole() - 1),
            PinPackets::AllButLast if round == 0 => STEP_PKTS,
            PinPackets::AllButLast => whole() - 1,
        }
    }
}

/// Runs the attack for `seconds` at most `rate` frames a second, sending
/// `pkts` of each request; what it sent, by kind (all `MemPin`), and in
/// `connected` the sessions it holds.
pub fn run(
    rx: &mut RxQueue,
    tx: &mut TxQueue,
    pool: &Mempool,
    src: PinSource,
    target: Target,
    (rate, seconds): (u64, f64),
    pkts: PinPackets,
) -> anyhow::Result<HostileReport> {
    let template = src.template(target);
    let mut out = Paced::new(tx, pool, rate, HostileKind::MemPin);
    let start = Instant::now();
    let sessions = connect(rx, &mut out, &template, start, seconds)?;
    let mut round = 0u64;
    let mut last_keepalive = Instant::now();
    // One request slot after the other; the clock, keepalives and the
    // receive ring are seen to after each slot (all but the last packet of
    // an 8 MiB request is 5,809 frames: 0.1 s at 60,000 a second).
    'attack: loop {
        for &(num, token) in &sessions {
            for slot in 0..SLOTS {
                if start.elapsed().as_secs_f64() >= seconds {
                    break 'attack;
                }
                for k in 0..pkts.count(round) {
                    let rpc = RpcRepr {
                        pkt_type: PktType::Request,
                        req_type: 1,
                        msg_size: MSG,
                        dest_session: num,
                        pkt_num: k,
                        grant: 0,
                        req_num: round * SLOTS + slot,
                        token,
                    };
                    out.frame(|buf| {
                        let n = template.write(buf, &rpc, DPP);
                        buf[n..n + DPP].fill(0xA5);
                        n + DPP
                    })?;
                }
                if last_keepalive.elapsed() > Duration::from_millis(200) {
                    last_keepalive = Instant::now();
                    keepalives(&mut out, &template, &sessions)?;
                }
                drain(rx);
            }
        }
        round += 1;
    }
    out.flush()?;
    let mut report = out.report;
    report.connected = sessions.len() as u64;
    Ok(report)
}

/// Opens `SESSIONS` sessions by real handshakes (a cookie round trip when
/// the server asks for one); their (server session, server token).
fn connect(
    rx: &mut RxQueue,
    out: &mut Paced<'_>,
    template: &HeaderTemplate,
    start: Instant,
    seconds: f64,
) -> anyhow::Result<Vec<(u16, u64)>> {
    let token = |c: u16| 0x0a77_ac00_0000_0000 | u64::from(c);
    let mut cookies = vec![0u64; SESSIONS as usize];
    let mut got: Vec<Option<(u16, u64)>> = vec![None; SESSIONS as usize];
    let mut batch = MbufBatch::new();
    while got.iter().any(Option::is_none) {
        if start.elapsed().as_secs_f64() >= seconds {
            anyhow::bail!(
                "mem-pin: {} of {SESSIONS} sessions connected before the time was up",
                got.iter().flatten().count()
            );
        }
        for c in (0..SESSIONS).filter(|&c| got[c as usize].is_none()) {
            let body = SmRepr {
                server_token: cookies[c as usize],
                ..SmRepr::connect_req(c, CREDITS, 1500, 8)
            };
            out.frame(|buf| template.write_sm(buf, SESSION_NONE, token(c), &body))?;
        }
        out.flush()?;
        std::thread::sleep(Duration::from_millis(20));
        while rx.rx_burst(&mut batch) > 0 {
            for i in 0..batch.len() {
                let Ok(p) = parse_frame(batch.data(i)) else {
                    continue;
                };
                if p.rpc.pkt_type != PktType::SessionMgmt {
                    continue;
                }
                let Ok(sm) = SmBody::new_checked(p.payload).and_then(|b| SmRepr::parse(&b)) else {
                    continue;
                };
                let c = sm.client_session as usize;
                if sm.sm_type != SmType::ConnectResp
                    || c >= got.len()
                    || p.rpc.token != token(sm.client_session)
                {
                    continue;
                }
                match sm.status {
                    SmStatus::Ok => got[c] = Some((sm.server_session, sm.server_token)),
                    SmStatus::Retry => cookies[c] = sm.server_token,
                    s => anyhow::bail!("mem-pin: the server refused session {c}: {s:?}"),
                }
            }
            batch.clear();
        }
    }
    Ok(got.into_iter().flatten().collect())
}

fn keepalives(
    out: &mut Paced<'_>,
    template: &HeaderTemplate,
    sessions: &[(u16, u64)],
) -> anyhow::Result<()> {
    for (c, &(num, token)) in sessions.iter().enumerate() {
        let body = SmRepr {
            sm_type: SmType::KeepAlive,
            server_session: num,
            ..SmRepr::connect_req(c as u16, CREDITS, 1500, 8)
        };
        out.frame(|buf| template.write_sm(buf, num, token, &body))?;
    }
    Ok(())
}

/// Reads and frees what the server sent (ErrorResponses of the requests it
/// gave up, credit returns): the attacker does not care, but its ring must
/// not fill.
fn drain(rx: &mut RxQueue) {
    let mut batch = MbufBatch::new();
    while rx.rx_burst(&mut batch) > 0 {
        batch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_packets_parse_and_never_finish_a_request() {
        let whole = whole();
        assert_eq!(whole, 5810, "8 MiB at 1,444 B a packet");
        let all: PinPackets = "all-but-last".parse().unwrap();
        assert_eq!((all.count(0), all.count(1)), (STEP_PKTS, whole - 1));
        let first: PinPackets = "150".parse().unwrap();
        assert_eq!((first.count(0), first.count(7)), (150, 150));
        assert_eq!(PinPackets::default(), first);
        for bad in ["0", "5810", "all", "-1"] {
            assert!(bad.parse::<PinPackets>().is_err(), "{bad}");
        }
    }
}
