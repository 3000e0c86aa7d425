//! `rpc-hostile --attack multi-addr-hog`: one host (one port, so one
//! source MAC) that answers for several IPv4 addresses on the segment and
//! takes all the receive ring it can with real handshakes. The server
//! answers a frame's source MAC, so every reply reaches it, whatever
//! address it used. From each address it opens 64 sessions asking for
//! 1023 credits, completes every handshake the server allows (cookies
//! included), confirms each session with a one-packet request (its first
//! packet: the server reserves the session's ring entries then) and keeps
//! the sessions it holds alive with a request every round; sessions the
//! server refused or closed are asked for again every round. Against a
//! server that bounds only each address's share, four addresses hold a
//! whole 1,024-entry ring; the per-MAC share and the newcomers' reserve
//! must leave a normal client its credits.

use crate::hostile::paced::Paced;
use crate::hostile::{HostileKind, HostileReport, Target};
use crate::run::message::{pattern_byte, write_resp_size};
use engine::dpdk::{MbufBatch, Mempool, RxQueue, TxQueue};
use engine::wire::{
    parse_frame, HeaderTemplate, MacAddr, PktType, RpcRepr, SmBody, SmRepr, SmStatus, SmType,
    SESSION_NONE,
};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// Sessions asked for from each address: enough for a quarter of a
/// 1,024-entry ring at the few credits a server grants by default (its
/// own `credits`, 9 on af_packet: 10 entries a session, 26 sessions).
const SESSIONS_PER_ADDR: u16 = 64;
/// Credits each session asks for: the whole ring (the server grants its
/// own credits and its shares at most).
const CREDITS: u16 = 1023;
/// One round: every slot's ConnectReq or request goes out once.
const ROUND: Duration = Duration::from_millis(100);
/// A session that drew no answer to its requests this long is taken as
/// closed by the server (at its first packet: no ring space) and asked
/// for again.
const SILENT: Duration = Duration::from_millis(350);

/// The attacker's own source MAC: a host of its own on the segment. (The
/// tests' clients share one veth end, so the port's MAC is also the normal
/// client's; the port receives frames to any MAC.)
pub const MULTI_ADDR_MAC: MacAddr = MacAddr([0x02, 0xee, 0xad, 0xd7, 0x00, 0x01]);

/// The attacker's MAC and port, and the addresses it answers for
/// (`first`, `first + 1`, ...).
#[derive(Clone, Copy, Debug)]
pub struct MultiSource {
    pub mac: MacAddr,
    pub first: Ipv4Addr,
    pub addresses: u8,
    pub port: u16,
}

/// One session the attacker wants.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// Asking (ConnectReq with this generation's token, and the cookie if
    /// the server sent one).
    Asking { cookie: u64 },
    /// Granted: server session, server token, credits, and when it last
    /// answered (or was granted).
    Granted {
        num: u16,
        token: u64,
        credits: u16,
        heard: Instant,
        confirmed: bool,
    },
}

/// Runs the attack for `seconds`, at most `rate` frames a second. The
/// report's `connected` is the sessions that answered in the last rounds
/// and `ring_entries` the ring entries they reserve (`credits + 1` each),
/// both at the end of the run; `refused` the refusals it drew.
pub fn run(
    rx: &mut RxQueue,
    tx: &mut TxQueue,
    pool: &Mempool,
    src: MultiSource,
    target: Target,
    rate: u64,
    seconds: f64,
) -> anyhow::Result<HostileReport> {
    let n = usize::from(src.addresses) * usize::from(SESSIONS_PER_ADDR);
    let templates: Vec<HeaderTemplate> = (0..src.addresses)
        .map(|a| {
            let ip = Ipv4Addr::from(u32::from(src.first) + u32::from(a));
            HeaderTemplate::new(
                (src.mac, ip, src.port),
                (target.mac, target.ip, target.port),
            )
        })
        .collect();
    let mut slots = vec![Slot::Asking { cookie: 0 }; n];
    let mut generation = vec![0u64; n];
    let mut out = Paced::new(tx, pool, rate, HostileKind::MultiAddrHog);
    let start = Instant::now();
    let mut req_num = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        let round = Instant::now();
        for i in 0..n {
            let t = &templates[i / usize::from(SESSIONS_PER_ADDR)];
            // Client session numbers unique over all addresses: a reply's
            // number names its slot.
            let c = i as u16;
            if i % 32 == 31 {
                // Replies come back as fast as the asks go out: read them
                // before the port's receive ring overflows.
                out.flush()?;
                receive(rx, &mut slots, &generation, &mut out.report);
            }
            match slots[i] {
                Slot::Asking { cookie } => {
                    let body = SmRepr {
                        server_token: cookie,
                        ..SmRepr::connect_req(c, CREDITS, 1500, 8)
                    };
                    let token = client_token(c, generation[i]);
                    out.frame(|b| t.write_sm(b, SESSION_NONE, token, &body))?;
                }
                Slot::Granted { heard, .. } if round.duration_since(heard) > SILENT => {
                    generation[i] += 1;
                    slots[i] = Slot::Asking { cookie: 0 };
                }
                Slot::Granted { num, token, .. } => {
                    req_num += 1;
                    out.frame(|b| request(t, b, num, token, req_num))?;
                }
            }
        }
        out.flush()?;
        while round.elapsed() < ROUND {
            std::thread::sleep(Duration::from_millis(5));
            receive(rx, &mut slots, &generation, &mut out.report);
        }
    }
    out.flush()?;
    let mut report = out.report;
    let held = slots.iter().filter_map(|s| match *s {
        Slot::Granted {
            credits,
            confirmed: true,
            ..
        } => Some(u64::from(credits) + 1),
        _ => None,
    });
    report.connected = held.clone().count() as u64;
    report.ring_entries = held.sum();
    Ok(report)
}

/// Client token of session `c` in its `generation` (a new one for each
/// ask after a closed session, so the server sees a new connect).
fn client_token(c: u16, generation: u64) -> u64 {
    0x3a11_ad00_0000_0000 | generation << 16 | u64::from(c)
}

/// A one-packet 32 B request on server session `num`: the session's first
/// packet (the server reserves its ring entries then), and after it the
/// proof that the session is still held. Its bytes are a well-formed
/// echo request (sequence number, a 32 B response asked, the pattern), so
/// the server's application counts no bad request: what is hostile is how
/// much ring the sessions hold, not their bytes.
fn request(t: &HeaderTemplate, buf: &mut [u8], num: u16, token: u64, req_num: u64) -> usize {
    let rpc = RpcRepr {
        pkt_type: PktType::Request,
        req_type: 1,
        msg_size: 32,
        dest_session: num,
        pkt_num: 0,
        grant: 0,
        req_num,
        token,
    };
    let n = t.write(buf, &rpc, 32);
    let body = &mut buf[n..n + 32];
    for (i, b) in body.iter_mut().enumerate() {
        *b = pattern_byte(i);
    }
    body[..8].copy_from_slice(&req_num.to_le_bytes());
    write_resp_size(body, 32);
    n + 32
}

/// Reads the server's replies: ConnectResps (grants, cookies, refusals)
/// and the answers to the sessions' requests.
fn receive(rx: &mut RxQueue, slots: &mut [Slot], generation: &[u64], report: &mut HostileReport) {
    let mut batch = MbufBatch::new();
    while rx.rx_burst(&mut batch) > 0 {
        for i in 0..batch.len() {
            let Ok(p) = parse_frame(batch.data(i)) else {
                continue;
            };
            let c = usize::from(p.rpc.dest_session);
            if c >= slots.len() {
                continue;
            }
            match p.rpc.pkt_type {
                PktType::SessionMgmt => {
                    let Ok(sm) = SmBody::new_checked(p.payload).and_then(|b| SmRepr::parse(&b))
                    else {
                        continue;
                    };
                    let ours = p.rpc.token == client_token(c as u16, generation[c]);
                    if sm.sm_type != SmType::ConnectResp || !ours {
                        continue;
                    }
                    match (sm.status, slots[c]) {
                        (SmStatus::Ok, Slot::Asking { .. }) => {
                            slots[c] = Slot::Granted {
                                num: sm.server_session,
                                token: sm.server_token,
                                credits: sm.credits,
                                heard: Instant::now(),
                                confirmed: false,
                            }
                        }
                        (SmStatus::Retry, Slot::Asking { .. }) => {
                            slots[c] = Slot::Asking {
                                cookie: sm.server_token,
                            }
                        }
                        (SmStatus::Ok | SmStatus::Retry, _) => {}
                        _ => report.refused += 1,
                    }
                }
                PktType::Response | PktType::ErrorResponse => {
                    if let Slot::Granted {
                        token,
                        ref mut heard,
                        ref mut confirmed,
                        ..
                    } = slots[c]
                    {
                        if p.rpc.token == token {
                            *heard = Instant::now();
                            *confirmed = true;
                        }
                    }
                }
                _ => {}
            }
        }
        batch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::message::{asked_resp_size, check_message, pattern, REQ_HEADER};

    #[test]
    fn asks_and_requests_carry_what_the_server_checks() {
        let t = HeaderTemplate::new(
            (MULTI_ADDR_MAC, Ipv4Addr::new(127, 77, 4, 3), 31851),
            (
                MacAddr([2, 0, 0, 0, 0, 1]),
                Ipv4Addr::new(127, 77, 0, 2),
                31851,
            ),
        );
        let mut buf = vec![0u8; 1514];
        let n = request(&t, &mut buf, 7, 0xfeed, 42);
        let p = parse_frame(&buf[..n]).unwrap();
        assert_eq!(p.src_mac, MULTI_ADDR_MAC);
        assert_eq!(
            (
                p.rpc.pkt_type,
                p.rpc.dest_session,
                p.rpc.token,
                p.rpc.req_num
            ),
            (PktType::Request, 7, 0xfeed, 42)
        );
        assert_eq!(p.payload.len(), 32);
        // A request the echo server takes as well-formed.
        let template = pattern(64);
        assert_eq!(check_message(p.payload, &template, 32, REQ_HEADER), Ok(42));
        assert_eq!(asked_resp_size(p.payload), Some(32));
        // A new generation is a new token (a new connect to the server),
        // and slots never share one.
        assert_ne!(client_token(3, 0), client_token(3, 1));
        assert_ne!(client_token(3, 0), client_token(4, 0));
    }
}
