//! `rpc-hostile --attack credit-flood`: a peer that receives at its own
//! address (so it completes a real handshake and holds a real server
//! token) and then ignores the credits it was granted: it opens one session
//! asking for `CREDITS` credits and sends one-packet requests on it as fast
//! as `--fps` allows, never waiting for an answer (it drains what comes
//! back unread). Every `RECONNECT` it asks for a new session and moves its
//! flood there once granted, as an attacker whose session was closed
//! would. Against a server that does not police credits the flood overruns
//! the receive ring for every other client; the server must drop the
//! excess at first look, close the session and refuse the source for a
//! while (docs/reliability.md, "Hostile peers that speak the protocol").

use crate::hostile::pin::PinSource;
use crate::hostile::{HostileKind, HostileReport, Target};
use crate::run::message::{fill_message, pattern, write_resp_size};
use engine::dpdk::{MbufBatch, Mempool, RxQueue, TxQueue, BURST};
use engine::wire::{
    parse_frame, HeaderTemplate, PktType, RpcRepr, SmBody, SmRepr, SmStatus, SmType, SESSION_NONE,
};
use std::time::{Duration, Instant};

/// Credits asked for (and granted: far under every server limit).
const CREDITS: u16 = 8;
/// Request slots per session (`transport.req_window`'s default).
const WINDOW: u16 = 8;
/// Payload bytes of each request.
const PAYLOAD: usize = 32;
/// How often it asks for a new session while flooding.
const RECONNECT: Duration = Duration::from_millis(250);

/// Runs the attack for `seconds` at most `rate` frames a second (requests
/// and ConnectReqs); what it sent (all `CreditFlood`), and in `connected`
/// the sessions the server granted it.
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
    let mut f = Flood {
        template,
        report: HostileReport::default(),
        session: None,
        asking: 0,
        cookie: 0,
        asked_at: None,
        req_num: 0,
        pattern: pattern(PAYLOAD),
    };
    let mut batch = MbufBatch::new();
    let start = Instant::now();
    let per_burst = Duration::from_secs_f64(BURST as f64 / rate.max(1) as f64);
    let mut bursts = 0u32;
    while start.elapsed().as_secs_f64() < seconds {
        f.read_replies(rx);
        let ask = f.asked_at.is_none_or(|t| t.elapsed() >= RECONNECT);
        let n = match f.session {
            Some(_) => BURST,
            None => ask as usize,
        };
        batch.alloc(pool, n)?;
        for i in 0..batch.len() {
            let len = if ask && i == 0 {
                f.asked_at = Some(Instant::now());
                f.connect_req(batch.room_mut(i))
            } else {
                f.request(batch.room_mut(i))
            };
            batch.set_len(i, len);
        }
        f.report.sent += n as u64;
        *f.report
            .by_kind
            .entry(HostileKind::CreditFlood)
            .or_default() += n as u64;
        tx.tx_burst(&mut batch);
        f.report.not_sent += batch.len() as u64;
        batch.clear();
        if f.session.is_none() {
            // Nothing to flood yet: wait for the ConnectResp, not a core.
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        bursts += 1;
        let due = start + per_burst * bursts;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    if f.report.connected == 0 {
        anyhow::bail!("credit-flood: no session was granted within {seconds} s");
    }
    Ok(f.report)
}

/// The flood's state: the session it sends on and the one it asks for.
struct Flood {
    template: HeaderTemplate,
    report: HostileReport,
    /// The newest granted session: (server session, server token).
    session: Option<(u16, u64)>,
    /// The client session number of the ConnectReq out now.
    asking: u16,
    /// The server's cookie for `asking`, once it asked for one.
    cookie: u64,
    asked_at: Option<Instant>,
    req_num: u64,
    /// The echo workload's body pattern.
    pattern: Vec<u8>,
}

impl Flood {
    fn token(c: u16) -> u64 {
        0x0a77_cf00_0000_0000 | u64::from(c)
    }

    /// Writes a ConnectReq for the session it is asking for.
    fn connect_req(&mut self, room: &mut [u8]) -> usize {
        let body = SmRepr {
            server_token: self.cookie,
            ..SmRepr::connect_req(self.asking, CREDITS, 1500, WINDOW)
        };
        self.template
            .write_sm(room, SESSION_NONE, Self::token(self.asking), &body)
    }

    /// The next one-packet request of the flood, a new request number each
    /// (so the server delivers every one it takes to its handler).
    fn request(&mut self, room: &mut [u8]) -> usize {
        let (num, token) = self.session.unwrap_or_default();
        let rpc = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: PAYLOAD as u32,
            dest_session: num,
            pkt_num: 0,
            grant: 0,
            req_num: self.req_num,
            token,
        };
        self.req_num += 1;
        let n = self.template.write(room, &rpc, PAYLOAD);
        // A well-formed echo request (sequence number, the response size
        // asked, pattern bytes): the flood is of valid work, and the
        // server's checks count none of it as a bad request.
        let body = &mut room[n..n + PAYLOAD];
        fill_message(body, &self.pattern, self.req_num);
        write_resp_size(body, PAYLOAD);
        n + PAYLOAD
    }

    /// Reads what came back: a ConnectResp moves the flood to its new
    /// session (or brings the cookie to ask again with); the rest (the
    /// answers the flood never waits for) is freed unread.
    fn read_replies(&mut self, rx: &mut RxQueue) {
        let mut batch = MbufBatch::new();
        while rx.rx_burst(&mut batch) > 0 {
            for i in 0..batch.len() {
                let Ok(p) = parse_frame(batch.data(i)) else {
                    continue;
                };
                if p.rpc.pkt_type != PktType::SessionMgmt || p.rpc.token != Self::token(self.asking)
                {
                    continue;
                }
                let Ok(sm) = SmBody::new_checked(p.payload).and_then(|b| SmRepr::parse(&b)) else {
                    continue;
                };
                if sm.sm_type != SmType::ConnectResp || sm.client_session != self.asking {
                    continue;
                }
                match sm.status {
                    SmStatus::Ok => {
                        self.session = Some((sm.server_session, sm.server_token));
                        self.report.connected += 1;
                        self.asking += 1;
                        self.cookie = 0;
                        self.req_num = 0;
                    }
                    SmStatus::Retry => {
                        self.cookie = sm.server_token;
                        // Ask again with the cookie at once.
                        self.asked_at = None;
                    }
                    // Refused: the next ConnectReq asks again, later.
                    _ => {}
                }
            }
            batch.clear();
        }
    }
}
