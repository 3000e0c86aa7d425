//! Attacks by a peer that speaks the protocol, for `rpc-hostile --attack`:
//! each one frame generator a blind attacker on the segment could run
//! (it sees no traffic but its own): a forged restart (ConnectReqs with a
//! live client's address and session numbers and guessed tokens, from the
//! attacker's MAC), a ring hog (ConnectReqs asking for 1023 credits from a
//! spoofed address, renewed with fresh tokens and session numbers), and a
//! grant amplification (a spoofed ConnectReq, then requests granting 65,535
//! response packets to guessed sessions and tokens, towards a spoofed
//! victim), and a connect flood (ConnectReqs from ever new spoofed
//! addresses, each asking for a session). Seeded: same seed, same frames.

use crate::hostile::{HostileKind, Target};
use clap::ValueEnum;
use engine::rng::Rng;
use engine::wire::{HeaderTemplate, MacAddr, PktType, RpcRepr, SmRepr, SESSION_NONE};
use std::net::Ipv4Addr;

/// Which attack `rpc-hostile` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Attack {
    /// Malformed and spoofed frames of every kind (`hostile::HostileGen`).
    Mix,
    /// ConnectReqs in a live client's name: it must not lose its session.
    ForgedRestart,
    /// ConnectReqs asking for the whole receive ring from a spoofed address.
    RingHog,
    /// Requests granting 65,535 response packets, from a spoofed source.
    GrantAmplify,
    /// ConnectReqs from ever new spoofed addresses, to fill the session
    /// table.
    ConnectFlood,
    /// Real sessions from the attacker's own address, each request slot
    /// holding the start of an 8 MiB request (`pin_attack.rs`).
    MemPin,
    /// One real session from the attacker's own address: a request for a
    /// 1 MiB response, then only copies of it, never read (`amplify.rs`).
    DupAmplify,
    /// Real sessions for the whole ring from several addresses behind one
    /// MAC (`multi_addr.rs`).
    MultiAddrHog,
    /// A real session from the attacker's own address that sends
    /// requests as fast as it may, ignoring its credits (`credit_flood.rs`).
    CreditFlood,
}

/// The attacker's own MAC (the frames' source on the segment).
const ATTACKER_MAC: MacAddr = MacAddr([0x02, 0xee, 0xa7, 0x7a, 0xc4, 0x01]);
/// Client session numbers a forged restart cycles through: the low ones,
/// which a live client's first sessions have.
const FORGED_SESSIONS: u64 = 8;

/// The frames of one attack.
#[derive(Debug)]
pub struct AttackGen {
    attack: Attack,
    rng: Rng,
    target: Target,
    /// Whose name the attack uses: the live client (forged restart) or the
    /// spoofed victim of an amplification.
    victim: (Ipv4Addr, u16),
    n: u64,
}

impl AttackGen {
    pub fn new(attack: Attack, seed: u64, target: Target, victim: (Ipv4Addr, u16)) -> Self {
        AttackGen {
            attack,
            rng: Rng::new(seed),
            target,
            victim,
            n: 0,
        }
    }

    /// Writes the next frame into `buf` (at least 1514 bytes); returns its
    /// kind and length.
    pub fn next_frame(&mut self, buf: &mut [u8]) -> (HostileKind, usize) {
        self.n += 1;
        let token = self.rng.next_u64();
        match self.attack {
            Attack::ForgedRestart => {
                let from = (ATTACKER_MAC, self.victim.0, self.victim.1);
                let num = (self.n % FORGED_SESSIONS) as u16;
                let len = self.connect(buf, from, num, token, 8);
                (HostileKind::ForgedRestart, len)
            }
            Attack::RingHog => {
                let from = (ATTACKER_MAC, Ipv4Addr::new(127, 77, 200, 1), 40000);
                let num = (self.n % 1024) as u16;
                (
                    HostileKind::RingHog,
                    self.connect(buf, from, num, token, 1023),
                )
            }
            Attack::GrantAmplify => {
                let from = (ATTACKER_MAC, self.victim.0, self.victim.1);
                let len = if self.n % 2 == 1 {
                    self.connect(buf, from, (self.n % 64) as u16, token, 1023)
                } else {
                    self.greedy_request(buf, from, token)
                };
                (HostileKind::GrantAmplify, len)
            }
            Attack::ConnectFlood => {
                // A new source per frame: 2^16 addresses, 1000 ports.
                let b = (self.n as u32).to_be_bytes();
                let mac = MacAddr([0x02, 0xee, 0xf1, b[1], b[2], b[3]]);
                let ip = Ipv4Addr::new(127, 88, b[2], b[3]);
                let from = (mac, ip, 40000 + (self.n % 1000) as u16);
                (
                    HostileKind::ConnectFlood,
                    self.connect(buf, from, (self.n % 64) as u16, token, 8),
                )
            }
            Attack::Mix => unreachable!("the mix is HostileGen's"),
            Attack::MemPin => unreachable!("mem-pin receives too: pin_attack.rs"),
            Attack::DupAmplify => unreachable!("dup-amplify receives too: amplify.rs"),
            Attack::MultiAddrHog => unreachable!("multi-addr-hog receives too: multi_addr.rs"),
            Attack::CreditFlood => unreachable!("credit-flood receives too: credit_flood.rs"),
        }
    }

    fn template(&self, from: (MacAddr, Ipv4Addr, u16)) -> HeaderTemplate {
        let t = self.target;
        HeaderTemplate::new(from, (t.mac, t.ip, t.port))
    }

    fn connect(
        &self,
        buf: &mut [u8],
        from: (MacAddr, Ipv4Addr, u16),
        num: u16,
        token: u64,
        credits: u16,
    ) -> usize {
        let body = SmRepr::connect_req(num, credits, 1500, 8);
        self.template(from)
            .write_sm(buf, SESSION_NONE, token, &body)
    }

    /// A one-packet request to a guessed server session (numbers are
    /// handed out from 0) with a guessed token, granting the most response
    /// packets a u16 says.
    fn greedy_request(
        &mut self,
        buf: &mut [u8],
        from: (MacAddr, Ipv4Addr, u16),
        token: u64,
    ) -> usize {
        let payload = 32;
        let rpc = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: payload as u32,
            dest_session: self.rng.below(16) as u16,
            pkt_num: 0,
            grant: u16::MAX,
            req_num: self.n,
            token,
        };
        let n = self.template(from).write(buf, &rpc, payload);
        buf[n..n + payload].fill(0x42);
        n + payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::wire::{parse_frame, SmBody, SmType};

    fn target() -> Target {
        Target {
            mac: MacAddr([2, 0, 0, 0, 0, 1]),
            ip: Ipv4Addr::new(127, 77, 0, 2),
            port: 31850,
        }
    }

    #[test]
    fn each_attack_writes_what_it_says() {
        let victim = (Ipv4Addr::new(127, 77, 0, 1), 31850);
        let mut buf = vec![0u8; 1514];
        let mut g = AttackGen::new(Attack::ForgedRestart, 1, target(), victim);
        let (kind, n) = g.next_frame(&mut buf);
        assert_eq!(kind, HostileKind::ForgedRestart);
        let p = parse_frame(&buf[..n]).unwrap();
        assert_eq!(
            (p.src_ip, p.src_port, p.src_mac),
            (victim.0, victim.1, ATTACKER_MAC)
        );
        let sm = SmRepr::parse(&SmBody::new_checked(p.payload).unwrap()).unwrap();
        assert_eq!(sm.sm_type, SmType::ConnectReq);

        let mut g = AttackGen::new(Attack::RingHog, 1, target(), victim);
        let (_, n) = g.next_frame(&mut buf);
        let p = parse_frame(&buf[..n]).unwrap();
        let sm = SmRepr::parse(&SmBody::new_checked(p.payload).unwrap()).unwrap();
        assert_eq!(sm.credits, 1023);

        let mut g = AttackGen::new(Attack::GrantAmplify, 1, target(), victim);
        let _ = g.next_frame(&mut buf);
        let (_, n) = g.next_frame(&mut buf);
        let p = parse_frame(&buf[..n]).unwrap();
        assert_eq!((p.rpc.pkt_type, p.rpc.grant), (PktType::Request, u16::MAX));

        // A connect flood: every frame from another source.
        let mut g = AttackGen::new(Attack::ConnectFlood, 1, target(), victim);
        let mut sources = std::collections::HashSet::new();
        for _ in 0..100 {
            let (kind, n) = g.next_frame(&mut buf);
            assert_eq!(kind, HostileKind::ConnectFlood);
            let p = parse_frame(&buf[..n]).unwrap();
            sources.insert((p.src_ip, p.src_port));
        }
        assert_eq!(sources.len(), 100);
        // Same seed, same frames.
        let mut a = AttackGen::new(Attack::GrantAmplify, 9, target(), victim);
        let mut b = AttackGen::new(Attack::GrantAmplify, 9, target(), victim);
        let (mut x, mut y) = (vec![0u8; 1514], vec![0u8; 1514]);
        for _ in 0..4 {
            let (nx, ny) = (a.next_frame(&mut x).1, b.next_frame(&mut y).1);
            assert_eq!(x[..nx], y[..ny]);
        }
    }
}
