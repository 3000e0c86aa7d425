//! What a server lets one peer hold and replace: the credits it grants a
//! session (its own limit, never the client's word alone), the share of the
//! receive ring one session, one peer address and one source MAC may
//! reserve, the reserve that only newcomers reach, and the rule
//! by which a ConnectReq with a new token replaces a live session (only once
//! the old session has failed a liveness probe sent with its old token, or
//! has been silent past its timeout), so a peer that sees no traffic cannot
//! kill or crowd out another's session. Pure decisions here; the handshake
//! (`handshake.rs`) applies them.

use super::error::EndpointConfigError;
use crate::time::{Duration, Instant};

/// The server's admission limits (`EndpointConfig::admission`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Admission {
    /// Most of the receive ring one server session may reserve (lossless
    /// mode), in per cent of `rx_ring_entries`.
    pub session_ring_share_pct: u8,
    /// Most of the receive ring the server sessions of one peer address may
    /// reserve together, in per cent of `rx_ring_entries`.
    pub peer_ring_share_pct: u8,
    /// The same for all the addresses behind one source MAC: the server
    /// answers a frame's source MAC, so one host that answers for many
    /// addresses on the segment is one peer here.
    pub mac_ring_share_pct: u8,
    /// Server sessions all the addresses behind one source MAC may hold
    /// together (beside `max_sessions_per_peer` per address); more are
    /// refused with `PeerLimit`.
    pub max_sessions_per_mac: usize,
    /// The last part of the receive ring, in per cent of
    /// `rx_ring_entries`, that only a newcomer (a MAC and an address that
    /// hold no entries) may take, at most a quarter of it each
    /// ([`RESERVE_SPLIT`]): peers that hold entries cannot take the ring
    /// past `100 - ring_reserve_pct` per cent. 0: no reserve.
    pub ring_reserve_pct: u8,
    /// How long a liveness probe of a live session may go unanswered before
    /// a ConnectReq with a new token for the same client address and
    /// session number replaces it. A restarted client is connected again
    /// within this plus one `connect_retry`.
    pub restart_probe_wait: Duration,
    /// Copies of a request's last packet whose grant (up to the session's
    /// credits of response packets after Response(0)) a server serves
    /// again, per request: the repair of a lost Response(0). Later copies
    /// bring Response(0) alone. 0: never re-served.
    pub regrants_per_request: u8,
    /// From how full the session table is (live sessions, in per cent of
    /// `max_sessions`) the server answers a ConnectReq without a valid
    /// cookie with ConnectResp(Retry) and its cookie, creating nothing, so
    /// a connect flood from spoofed addresses cannot fill the table. 0:
    /// always; 100: only once the table is full.
    pub cookie_above_pct: u8,
    /// Wrong tokens one source address may send per second before the
    /// server withholds the replies and probes a stranger could draw from
    /// it, and reports the source (`wrong_tokens.rs`).
    pub wrong_tokens_per_sec: u32,
}

impl Admission {
    /// This policy for peers that are all genuine (a simulated fabric's
    /// own hosts, each table sized to its flows): no cookie round trip at
    /// any fill of the table, and every copy of a request's last packet
    /// served its grant again (as many as a `u8` counts).
    pub fn trusting_peers(self) -> Admission {
        Admission {
            cookie_above_pct: 100,
            regrants_per_request: u8::MAX,
            mac_ring_share_pct: 100,
            max_sessions_per_mac: usize::MAX,
            ring_reserve_pct: 0,
            ..self
        }
    }
}

/// How many newcomers the reserve holds at once: one newcomer takes at
/// most `1 / RESERVE_SPLIT` of it, so a host that brings fresh MACs takes
/// it only a quarter at a time. With the defaults a quarter of the
/// reserve is 64 of 1,024 entries, 63 credits: more than the one-BDP
/// credits of every link this project runs on (memif's measured 58).
pub const RESERVE_SPLIT: usize = 4;

impl Default for Admission {
    /// A quarter of the ring per session, per peer address and per source
    /// MAC, and the last quarter kept for newcomers. One MAC, whatever
    /// addresses it speaks for, holds at most 256 of 1,024 entries; peers
    /// that hold entries stop at 768, so a newcomer always finds at least
    /// 64 entries (63 credits) unless seven MACs' worth of hostile hosts
    /// (three at their share, four in the reserve) hold the ring. 256
    /// sessions per MAC as per address: a quarter of the server's 1,024.
    /// And 100 ms for a probe's answer: a live client answers in one round
    /// trip, microseconds, and 100 ms outlasts this kind of VM's vCPU
    /// stalls (a few ms) by far while a restarted client still reconnects
    /// well within the 1 s connect timeout.
    /// One re-grant per request: a lost Response(0) (or a spurious
    /// timeout) is repaired in one round trip as before; only a second
    /// copy of the same request's last packet finds its grant spent, and
    /// its client fetches the rest with RFRs after a timeout.
    fn default() -> Self {
        Admission {
            session_ring_share_pct: 25,
            peer_ring_share_pct: 25,
            mac_ring_share_pct: 25,
            max_sessions_per_mac: 256,
            ring_reserve_pct: 25,
            restart_probe_wait: Duration::from_millis(100),
            regrants_per_request: 1,
            cookie_above_pct: 50,
            wrong_tokens_per_sec: 64,
        }
    }
}

impl Admission {
    /// Shares within 1..=100 per cent, a probe wait above zero.
    pub fn validate(&self) -> Result<(), EndpointConfigError> {
        for (field, pct) in [
            (
                "admission.session_ring_share_pct",
                self.session_ring_share_pct,
            ),
            ("admission.peer_ring_share_pct", self.peer_ring_share_pct),
            ("admission.mac_ring_share_pct", self.mac_ring_share_pct),
        ] {
            if !(1..=100).contains(&pct) {
                return Err(EndpointConfigError::new(
                    field,
                    pct,
                    "a share in per cent, 1..=100",
                ));
            }
        }
        if self.ring_reserve_pct > 99 {
            return Err(EndpointConfigError::new(
                "admission.ring_reserve_pct",
                self.ring_reserve_pct,
                "a share in per cent, 0..=99",
            ));
        }
        if self.max_sessions_per_mac == 0 {
            return Err(EndpointConfigError::new(
                "admission.max_sessions_per_mac",
                0,
                "must be at least 1",
            ));
        }
        if self.restart_probe_wait == Duration::ZERO {
            return Err(EndpointConfigError::new(
                "admission.restart_probe_wait",
                0,
                "must be above zero",
            ));
        }
        if self.wrong_tokens_per_sec == 0 {
            return Err(EndpointConfigError::new(
                "admission.wrong_tokens_per_sec",
                0,
                "must be at least 1",
            ));
        }
        if self.cookie_above_pct > 100 {
            return Err(EndpointConfigError::new(
                "admission.cookie_above_pct",
                self.cookie_above_pct,
                "a share in per cent, 0..=100",
            ));
        }
        Ok(())
    }

    /// Whether a ConnectReq needs a valid cookie, with `live` of `max`
    /// session numbers in use.
    pub(crate) fn cookie_needed(&self, live: usize, max: usize) -> bool {
        live * 100 >= max * self.cookie_above_pct as usize
    }

    /// The credits a new server session gets: what the client asked, at
    /// most the server's own `limit`, and in lossless mode (`lossless`: a
    /// session of `c` credits reserves `c + 1` ring entries) at most what
    /// [`ring_room`](Self::ring_room) leaves the peer. `Err`: not one
    /// credit fits (refuse with NoRingSpace), and which limit said so.
    pub(crate) fn grant(
        &self,
        asked: u16,
        limit: u16,
        lossless: Option<RingView>,
    ) -> Result<u16, Bound> {
        let mut granted = asked.min(limit);
        let mut bound = Bound::Asked;
        if let Some(r) = lossless {
            let (entries, b) = self.ring_room(r);
            let credits = entries.saturating_sub(1).min(u16::MAX as usize) as u16;
            if credits < granted {
                (granted, bound) = (credits, b);
            }
        }
        if granted > 0 {
            Ok(granted)
        } else {
            Err(bound)
        }
    }

    /// The most ring entries one more session of the peer `r` describes
    /// may reserve now, and the limit that sets it: one session's share,
    /// what is left of its address's share and of its MAC's, and of the
    /// ring: up to `100 - ring_reserve_pct` per cent for a peer that holds
    /// entries, plus a `RESERVE_SPLIT`th of the reserve for a newcomer.
    pub(crate) fn ring_room(&self, r: RingView) -> (usize, Bound) {
        let reserve = share(r.entries, self.ring_reserve_pct);
        let newcomer = r.ip_held == 0 && r.mac_held == 0;
        let below_reserve = (r.entries - reserve).saturating_sub(r.reserved);
        let ring_left = if newcomer {
            let into_reserve = reserve.div_ceil(RESERVE_SPLIT);
            (below_reserve + into_reserve).min(r.entries.saturating_sub(r.reserved))
        } else {
            below_reserve
        };
        let ring_bound = if r.reserved + ring_left < r.entries {
            Bound::Reserve
        } else {
            Bound::Ring
        };
        [
            (
                share(r.entries, self.session_ring_share_pct),
                Bound::Session,
            ),
            (
                share(r.entries, self.peer_ring_share_pct).saturating_sub(r.ip_held),
                Bound::Address,
            ),
            (
                share(r.entries, self.mac_ring_share_pct).saturating_sub(r.mac_held),
                Bound::Mac,
            ),
            (ring_left, ring_bound),
        ]
        .into_iter()
        .min_by_key(|&(n, _)| n)
        .unwrap_or((0, Bound::Ring))
    }
}

/// Which limit bounded a grant (the smallest one; the first listed of
/// equal ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// The client's ask or the server's own credits.
    Asked,
    /// One session's ring share.
    Session,
    /// What is left of the address's share.
    Address,
    /// What is left of the source MAC's share.
    Mac,
    /// The ring past `100 - ring_reserve_pct` is the newcomers'.
    Reserve,
    /// The ring is full.
    Ring,
}

/// Ring entries `pct` per cent of `entries` (rounded down).
fn share(entries: usize, pct: u8) -> usize {
    entries * pct as usize / 100
}

/// The receive ring as a lossless grant sees it: its size, what all
/// sessions reserve, and what the asking peer's address and MAC hold
/// already.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingView {
    pub entries: usize,
    pub reserved: usize,
    pub ip_held: usize,
    pub mac_held: usize,
}

/// What to do with a ConnectReq whose client address and session number
/// belong to a live session but whose token is new.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Restart {
    /// Probe the old session with its own token; drop the request (the
    /// client retries).
    Probe,
    /// A probe is out and not yet overdue; drop the request.
    Wait,
    /// The old session is dead (silent past its timeout, or its probe went
    /// unanswered): free it and accept the request.
    Replace,
    /// The old session answered its probe: it is alive and the request is
    /// not its client's (forged, or a stale copy); drop it.
    Refuse,
}

/// The restart rule. `heard_at`: when the old session was last heard;
/// `probe_at`: when it was last probed, if ever.
pub(crate) fn restart(
    now: Instant,
    heard_at: Instant,
    probe_at: Option<Instant>,
    adm: &Admission,
    session_timeout: Duration,
) -> Restart {
    if now.saturating_since(heard_at) >= session_timeout {
        return Restart::Replace;
    }
    let Some(probed) = probe_at else {
        return Restart::Probe;
    };
    let overdue = now.saturating_since(probed) >= adm.restart_probe_wait;
    // Heard at the probe's instant counts as alive (the probe and the
    // client's packet met in one receive burst).
    match (heard_at >= probed, overdue) {
        // Alive; one probe per wait at most, so requests cannot turn the
        // server into a reflector towards the real client.
        (true, true) => Restart::Probe,
        (true, false) => Restart::Refuse,
        (false, true) => Restart::Replace,
        (false, false) => Restart::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(ms: u64) -> Instant {
        Instant(ms * MS)
    }

    fn view(reserved: usize, ip_held: usize, mac_held: usize) -> Option<RingView> {
        Some(RingView {
            entries: 1024,
            reserved,
            ip_held,
            mac_held,
        })
    }

    #[test]
    fn grants_are_the_servers_and_fit_the_shares() {
        let a = Admission::default();
        let ring = |held| view(held, held, held);
        // Lossy: the server's own limit caps the ask.
        assert_eq!(a.grant(1023, 73, None), Ok(73));
        assert_eq!(a.grant(9, 73, None), Ok(9));
        // Lossless: a quarter of 1024 entries is 256, so 255 credits.
        assert_eq!(a.grant(1023, u16::MAX, ring(0)), Ok(255));
        // What is left of the peer's share caps a second session.
        assert_eq!(a.grant(1023, u16::MAX, ring(200)), Ok(55));
        // Nothing left for this peer: refused.
        assert_eq!(a.grant(10, u16::MAX, ring(255)), Err(Bound::Address));
        assert_eq!(a.grant(0, 73, None), Err(Bound::Asked));
    }

    #[test]
    fn one_mac_holds_its_share_whatever_addresses_it_speaks_for() {
        let a = Admission::default();
        // A fresh address behind a MAC that holds 200 entries: the MAC's
        // share (256) leaves 56 entries, 55 credits.
        assert_eq!(a.grant(1023, u16::MAX, view(200, 0, 200)), Ok(55));
        assert_eq!(a.ring_room(view(200, 0, 200).unwrap()).1, Bound::Mac);
        // Its share taken: a fifth address is refused, naming the MAC.
        assert_eq!(a.grant(8, u16::MAX, view(256, 0, 256)), Err(Bound::Mac));
        // Without the MAC share (the old rule) four addresses took it all.
        let old = Admission {
            mac_ring_share_pct: 100,
            ring_reserve_pct: 0,
            ..a
        };
        assert_eq!(old.grant(1023, u16::MAX, view(768, 0, 768)), Ok(255));
        assert!(old.grant(8, u16::MAX, view(1024, 0, 1024)).is_err());
    }

    #[test]
    fn the_reserve_is_the_newcomers_a_quarter_each() {
        let a = Admission::default();
        // Holders stop at 768 of 1024 (100 - 25 %).
        assert_eq!(a.grant(1023, u16::MAX, view(700, 0, 10)), Ok(67));
        assert_eq!(a.grant(8, u16::MAX, view(768, 10, 10)), Err(Bound::Reserve));
        assert_eq!(a.grant(8, u16::MAX, view(768, 0, 10)), Err(Bound::Reserve));
        // A newcomer (address and MAC hold nothing) reaches 64 entries of
        // the reserve (63 credits), wherever the others stand...
        assert_eq!(a.grant(1023, u16::MAX, view(768, 0, 0)), Ok(63));
        assert_eq!(a.grant(1023, u16::MAX, view(900, 0, 0)), Ok(63));
        assert_eq!(a.grant(1023, u16::MAX, view(740, 0, 0)), Ok(91));
        // ... until the ring itself is full.
        assert_eq!(a.grant(1023, u16::MAX, view(1000, 0, 0)), Ok(23));
        assert_eq!(a.grant(8, u16::MAX, view(1024, 0, 0)), Err(Bound::Ring));
        // Four newcomers fit in the reserve at once; the fifth finds the
        // ring full.
        let mut reserved = 768;
        for _ in 0..4 {
            let (room, _) = a.ring_room(view(reserved, 0, 0).unwrap());
            assert_eq!(room, 64);
            reserved += room;
        }
        assert_eq!(a.ring_room(view(reserved, 0, 0).unwrap()), (0, Bound::Ring));
        // No reserve: a holder may take the ring to the last entry.
        let none = Admission {
            ring_reserve_pct: 0,
            ..a
        };
        assert_eq!(none.grant(1023, u16::MAX, view(1000, 0, 10)), Ok(23));
    }

    /// Whatever N addresses behind M MACs do, one at a time in any order,
    /// a newcomer still finds a credit while fewer than seven MACs hold the
    /// ring, and the MACs' total stays within their shares.
    #[test]
    fn a_newcomer_gets_a_credit_against_any_addresses_behind_six_macs() {
        let a = Admission::default();
        let mut reserved = 0;
        let mut mac = [0usize; 6];
        let mut ip = [[0usize; 5]; 6];
        // Every address of every MAC asks for everything, round after round.
        for _ in 0..50 {
            for (m_held, ips) in mac.iter_mut().zip(ip.iter_mut()) {
                for ip_held in ips.iter_mut() {
                    let r = RingView {
                        entries: 1024,
                        reserved,
                        ip_held: *ip_held,
                        mac_held: *m_held,
                    };
                    if let Ok(c) = a.grant(u16::MAX, u16::MAX, Some(r)) {
                        let need = c as usize + 1;
                        reserved += need;
                        *m_held += need;
                        *ip_held += need;
                    }
                }
            }
        }
        assert!(mac.iter().all(|&m| m <= 256), "{mac:?}");
        assert!(reserved <= 1024);
        let fresh = view(reserved, 0, 0).unwrap();
        assert!(a.ring_room(fresh).0 >= 2, "{reserved} reserved");
    }

    #[test]
    fn a_restart_replaces_only_a_dead_session() {
        let a = Admission::default();
        let timeout = Duration::from_secs(1);
        // First request for a live key: probe.
        assert_eq!(restart(at(500), at(490), None, &a, timeout), Restart::Probe);
        // Probe out, no answer yet: wait; overdue: replace.
        assert_eq!(
            restart(at(520), at(490), Some(at(500)), &a, timeout),
            Restart::Wait
        );
        assert_eq!(
            restart(at(600), at(490), Some(at(500)), &a, timeout),
            Restart::Replace
        );
        // The old session answered: the request is refused until the wait
        // is over, then probed again.
        assert_eq!(
            restart(at(520), at(501), Some(at(500)), &a, timeout),
            Restart::Refuse
        );
        assert_eq!(
            restart(at(600), at(501), Some(at(500)), &a, timeout),
            Restart::Probe
        );
        // Silent past its timeout: replaced without a probe.
        assert_eq!(
            restart(at(1500), at(490), None, &a, timeout),
            Restart::Replace
        );
    }

    #[test]
    fn shares_and_wait_are_validated() {
        assert!(Admission::default().validate().is_ok());
        let bad = Admission {
            peer_ring_share_pct: 0,
            ..Admission::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            "admission.peer_ring_share_pct"
        );
        let bad = Admission {
            session_ring_share_pct: 101,
            ..Admission::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            "admission.session_ring_share_pct"
        );
        let bad = Admission {
            mac_ring_share_pct: 0,
            ..Admission::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            "admission.mac_ring_share_pct"
        );
        let bad = Admission {
            ring_reserve_pct: 100,
            ..Admission::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            "admission.ring_reserve_pct"
        );
        let bad = Admission {
            restart_probe_wait: Duration::ZERO,
            ..Admission::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            "admission.restart_probe_wait"
        );
    }
}
