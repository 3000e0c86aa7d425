//! What a server lets one peer hold and replace: the credits it grants a
//! session (its own limit, never the client's word alone), the share of the
//! receive ring one session and one peer address may reserve, and the rule
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
            ..self
        }
    }
}

impl Default for Admission {
    /// A quarter of the ring per session and per peer (well under half: two
    /// peers can never starve a third), and 100 ms for a probe's answer: a
    /// live client answers in one round trip, microseconds, and 100 ms
    /// outlasts this kind of VM's vCPU stalls (a few ms) by far while a
    /// restarted client still reconnects well within the 1 s connect timeout.
    /// One re-grant per request: a lost Response(0) (or a spurious
    /// timeout) is repaired in one round trip as before; only a second
    /// copy of the same request's last packet finds its grant spent, and
    /// its client fetches the rest with RFRs after a timeout.
    fn default() -> Self {
        Admission {
            session_ring_share_pct: 25,
            peer_ring_share_pct: 25,
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
        ] {
            if !(1..=100).contains(&pct) {
                return Err(EndpointConfigError::new(
                    field,
                    pct,
                    "a share in per cent, 1..=100",
                ));
            }
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
    /// the session's ring share and what is left of its peer's share back.
    /// `None`: not one credit fits (refuse with NoRingSpace).
    pub(crate) fn grant(&self, asked: u16, limit: u16, lossless: Option<RingView>) -> Option<u16> {
        let mut granted = asked.min(limit);
        if let Some(r) = lossless {
            let session_cap = share(r.entries, self.session_ring_share_pct);
            let peer_left = share(r.entries, self.peer_ring_share_pct).saturating_sub(r.peer_held);
            let entries = session_cap.min(peer_left);
            let credits = entries.saturating_sub(1).min(u16::MAX as usize) as u16;
            granted = granted.min(credits);
        }
        (granted > 0).then_some(granted)
    }
}

/// Ring entries `pct` per cent of `entries` (rounded down).
fn share(entries: usize, pct: u8) -> usize {
    entries * pct as usize / 100
}

/// The receive ring as a lossless grant sees it: its size and what the
/// asking peer's sessions hold already.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingView {
    pub entries: usize,
    pub peer_held: usize,
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

    #[test]
    fn grants_are_the_servers_and_fit_the_shares() {
        let a = Admission::default();
        let ring = |held| {
            Some(RingView {
                entries: 1024,
                peer_held: held,
            })
        };
        // Lossy: the server's own limit caps the ask.
        assert_eq!(a.grant(1023, 73, None), Some(73));
        assert_eq!(a.grant(9, 73, None), Some(9));
        // Lossless: a quarter of 1024 entries is 256, so 255 credits.
        assert_eq!(a.grant(1023, u16::MAX, ring(0)), Some(255));
        // What is left of the peer's share caps a second session.
        assert_eq!(a.grant(1023, u16::MAX, ring(200)), Some(55));
        // Nothing left for this peer: refused.
        assert_eq!(a.grant(10, u16::MAX, ring(255)), None);
        assert_eq!(a.grant(0, 73, None), None);
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
            restart_probe_wait: Duration::ZERO,
            ..Admission::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            "admission.restart_probe_wait"
        );
    }
}
