//! Hostile frames for robustness tests: random bytes, truncated and
//! checksum-broken copies of valid frames, a wrong magic, requests with
//! spoofed session numbers and guessed tokens, and a flood of ConnectReqs
//! from made-up addresses. A seeded generator (same seed, same frames);
//! `inject.rs` sends them over a DPDK port.

pub mod amplify;
pub mod attacks;
pub mod credit_flood;
pub mod inject;
pub mod multi_addr;
mod paced;
pub mod pin;

use engine::rng::Rng;
use engine::wire::{HeaderTemplate, MacAddr, PktType, RpcRepr, SmRepr, SESSION_NONE};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// Byte offset of the IPv4 header checksum in a frame (14 + 10).
const IPV4_CHECKSUM_AT: usize = 24;
/// Byte offset of the RPC magic in a frame (14 + 20 + 8).
const RPC_MAGIC_AT: usize = 42;
/// An Ethernet header: the shortest frame a kernel sends.
const ETH_HEADER: usize = 14;
/// Largest frame the generator makes (a 1500-byte MTU plus Ethernet).
const MAX_FRAME: usize = 1514;

/// What a hostile frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostileKind {
    /// Uniformly random bytes, random length.
    Random,
    /// A valid request frame cut short.
    Truncated,
    /// A valid request frame with a wrong IPv4 header checksum.
    BadChecksum,
    /// A valid request frame with a wrong RPC magic.
    BadMagic,
    /// A well-formed request for a random session number with a guessed token.
    SpoofedSession,
    /// A ConnectReq from a made-up address, never followed up.
    ConnectFlood,
    /// `--attack forged-restart` (`attacks.rs`).
    ForgedRestart,
    /// `--attack ring-hog`.
    RingHog,
    /// `--attack grant-amplify`.
    GrantAmplify,
    /// `--attack mem-pin` (`pin_attack.rs`).
    MemPin,
    /// `--attack dup-amplify` (`amplify.rs`).
    DupAmplify,
    /// `--attack multi-addr-hog` (`multi_addr.rs`).
    MultiAddrHog,
    /// `--attack credit-flood` (`credit_flood.rs`).
    CreditFlood,
}

impl HostileKind {
    /// Every kind, in the order the generator cycles through them.
    pub const ALL: [HostileKind; 6] = [
        HostileKind::Random,
        HostileKind::Truncated,
        HostileKind::BadChecksum,
        HostileKind::BadMagic,
        HostileKind::SpoofedSession,
        HostileKind::ConnectFlood,
    ];
}

/// Where the hostile frames go: the server's address (MAC may be
/// broadcast: the engine accepts broadcast frames addressed to its IP/port).
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub mac: MacAddr,
    pub ip: Ipv4Addr,
    pub port: u16,
}

/// A seeded generator of hostile frames, one kind after another.
#[derive(Debug)]
pub struct HostileGen {
    rng: Rng,
    target: Target,
    next: usize,
}

impl HostileGen {
    pub fn new(seed: u64, target: Target) -> Self {
        HostileGen {
            rng: Rng::new(seed),
            target,
            next: 0,
        }
    }

    /// Writes the next frame into `buf` (at least 1514 bytes); returns its
    /// kind and length.
    pub fn next_frame(&mut self, buf: &mut [u8]) -> (HostileKind, usize) {
        let kind = HostileKind::ALL[self.next % HostileKind::ALL.len()];
        self.next += 1;
        let len = match kind {
            HostileKind::Random => {
                // At least an Ethernet header: shorter frames never leave
                // the sender's kernel, so they would test nothing.
                let len = ETH_HEADER + self.rng.below((MAX_FRAME - ETH_HEADER) as u64) as usize;
                buf[..len]
                    .iter_mut()
                    .for_each(|b| *b = self.rng.next_u32() as u8);
                len
            }
            HostileKind::Truncated => {
                let full = self.request(buf, 200);
                ETH_HEADER + self.rng.below((full - ETH_HEADER) as u64) as usize
            }
            HostileKind::BadChecksum => {
                let n = self.request(buf, 64);
                buf[IPV4_CHECKSUM_AT] ^= 1 + self.rng.below(255) as u8;
                n
            }
            HostileKind::BadMagic => {
                let n = self.request(buf, 64);
                buf[RPC_MAGIC_AT] ^= 0x5A;
                n
            }
            HostileKind::SpoofedSession => self.request(buf, 64),
            HostileKind::ConnectFlood => self.connect_req(buf),
            HostileKind::ForgedRestart
            | HostileKind::RingHog
            | HostileKind::GrantAmplify
            | HostileKind::MemPin
            | HostileKind::DupAmplify
            | HostileKind::MultiAddrHog
            | HostileKind::CreditFlood => {
                unreachable!("not in the mix: attacks.rs writes them")
            }
        };
        (kind, len)
    }

    /// A made-up source address in 127.77.128.0/17: inside the loopback
    /// range the configs use (127.77.0.x), so even the server's answers to
    /// spoofed ConnectReqs are addressed within this machine.
    fn source(&mut self) -> (MacAddr, Ipv4Addr, u16) {
        let r = self.rng.next_u64();
        let mac = MacAddr([0x02, 0x77, (r >> 8) as u8, r as u8, (r >> 16) as u8, 1]);
        let ip = Ipv4Addr::new(127, 77, 128 | (r >> 24) as u8, (r >> 32) as u8);
        (mac, ip, 40000 + (r >> 40) as u16 % 20000)
    }

    fn template(&mut self) -> HeaderTemplate {
        let t = self.target;
        HeaderTemplate::new(self.source(), (t.mac, t.ip, t.port))
    }

    /// A well-formed single-packet request for a random session number
    /// (most servers hold few, so low numbers hit real ones) with a random
    /// token.
    fn request(&mut self, buf: &mut [u8], payload: usize) -> usize {
        let rpc = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: payload as u32,
            dest_session: self.rng.below(64) as u16,
            pkt_num: 0,
            grant: 0,
            req_num: self.rng.below(1 << 20),
            token: self.rng.next_u64(),
        };
        let n = self.template().write(buf, &rpc, payload);
        buf[n..n + payload].fill(0xAB);
        n + payload
    }

    fn connect_req(&mut self, buf: &mut [u8]) -> usize {
        let body = SmRepr::connect_req(self.rng.below(1024) as u16, 8, 1500, 8);
        let token = self.rng.next_u64();
        self.template().write_sm(buf, SESSION_NONE, token, &body)
    }
}

/// What `rpc-hostile` sent: the last line of its output, as JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostileReport {
    /// Frames handed to the driver, all kinds.
    pub sent: u64,
    /// Of those, by kind.
    pub by_kind: std::collections::BTreeMap<HostileKind, u64>,
    /// Frames the driver's TX ring did not take before the run ended.
    pub not_sent: u64,
    /// `--attack mem-pin`, `dup-amplify`: sessions it opened by real handshakes (0 for
    /// the blind attacks); `multi-addr-hog`: the sessions it held at the
    /// end.
    pub connected: u64,
    /// `--attack multi-addr-hog`: the server's receive-ring entries its
    /// held sessions reserve (credits + 1 each), at the end.
    #[serde(default)]
    pub ring_entries: u64,
    /// `--attack multi-addr-hog`: ConnectResps refusing a session.
    #[serde(default)]
    pub refused: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::proto::{Endpoint, EndpointAddr, EndpointConfig};
    use engine::time::Instant as T;

    fn server() -> EndpointConfig {
        EndpointConfig {
            local: EndpointAddr {
                mac: MacAddr([0x02, 0, 0, 0, 0, 1]),
                ip: Ipv4Addr::new(10, 0, 0, 1),
                port: 31851,
            },
            seed: 1,
            ..Default::default()
        }
    }

    #[test]
    fn same_seed_same_frames_and_every_kind_appears() {
        let t = Target {
            mac: MacAddr::BROADCAST,
            ip: Ipv4Addr::new(10, 0, 0, 1),
            port: 31851,
        };
        let (mut a, mut b) = (HostileGen::new(7, t), HostileGen::new(7, t));
        let (mut fa, mut fb) = ([0u8; MAX_FRAME], [0u8; MAX_FRAME]);
        let mut kinds = std::collections::BTreeSet::new();
        for _ in 0..60 {
            let (ka, la) = a.next_frame(&mut fa);
            let (kb, lb) = b.next_frame(&mut fb);
            assert_eq!((ka, &fa[..la]), (kb, &fb[..lb]));
            kinds.insert(ka);
        }
        assert_eq!(kinds.len(), HostileKind::ALL.len());
    }

    /// Every hostile frame fed to a real endpoint is accounted for: dropped
    /// under a named reason, or (connect flood) processed as a handshake;
    /// nothing panics and nothing is delivered to the application.
    #[test]
    fn an_endpoint_accounts_for_every_hostile_frame() {
        let cfg = server();
        let t = Target {
            mac: MacAddr::BROADCAST,
            ip: cfg.local.ip,
            port: cfg.local.port,
        };
        let mut ep = Endpoint::new(cfg).unwrap();
        let mut gen = HostileGen::new(3, t);
        let mut buf = [0u8; MAX_FRAME];
        let mut out = vec![0u8; ep.min_tx_buf_len()];
        let mut floods = 0;
        for _ in 0..6000 {
            let (kind, len) = gen.next_frame(&mut buf);
            floods += (kind == HostileKind::ConnectFlood) as u64;
            assert!(
                ep.handle_frame(T::ZERO, &buf[..len]).is_none(),
                "{kind:?} delivered"
            );
            while ep.poll_transmit(T::ZERO, &mut out).is_some() {}
        }
        let s = ep.stats();
        assert!(s.rx_accounted(), "{s:?}");
        assert_eq!(s.rx_pkts, 6000);
        // Only the connect flood is processed; everything else is dropped.
        assert_eq!(s.rx_accepted, floods, "{s:?}");
        // From half the table on, a ConnectReq without a cookie is
        // answered with one and creates nothing.
        assert_eq!(
            s.sessions_accepted + s.connects_refused + s.cookies_sent,
            floods
        );
        assert!(s.cookies_sent > 0, "{s:?}");
        assert!(s.drops.malformed > 0 && s.drops.unknown_session + s.drops.bad_token > 0);
    }
}
