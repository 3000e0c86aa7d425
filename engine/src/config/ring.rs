//! Resolution's part that the receive ring decides: the flow mode's
//! credits (the BDP rule and its multiple), the ring an own pair grows to
//! back them, the check that lossless credits fit every session's
//! reservation within the server's shares, and pause mode's thresholds
//! under the headroom rule.

use super::check::KeyError;
use super::resolve::{describe, Bdp, Resolver, PAUSE_BURST_ENTRIES};
use super::source::Source;
use super::transport::CreditMultiple;
use crate::proto::{lossless_ring_entries, FlowMode, PauseConfig};
use crate::time::Duration;

impl Resolver<'_> {
    /// The most credits a lossless session can have on `ring` entries:
    /// every session reserves (credits + 1) on both ends, within the
    /// server's shares.
    fn lossless_limit(&self, ring: usize) -> u16 {
        let sessions = self.ring_sessions();
        let adm = self.t.admission();
        let session_share = ring * adm.session_ring_share_pct as usize / 100;
        let peer_share = ring * adm.peer_ring_share_pct as usize / 100;
        let mac_share = ring * adm.mac_ring_share_pct as usize / 100;
        // A client's later sessions hold entries already: the reserve is
        // not theirs.
        let below_reserve = ring - ring * adm.ring_reserve_pct as usize / 100;
        let per_session = (ring / sessions)
            .min(session_share)
            .min(peer_share.min(mac_share).min(below_reserve) / sessions);
        per_session
            .saturating_sub(lossless_ring_entries(0))
            .min(u16::MAX as usize) as u16
    }

    /// The flow mode's credits, the ring that backs them (grown for an own
    /// pair), and the check that it does. True when lowered to the ring.
    pub(super) fn credits(&mut self, bdp: &Bdp) -> Result<bool, KeyError> {
        let given = self.t.credits;
        let mode = self.t.mode;
        let (mut credits, why) = match (given, mode, self.t.lossy_credit_multiple) {
            (Some(c), _, _) => (c, String::new()),
            (None, FlowMode::Lossless, _) => (
                bdp.packets,
                format!("lossless: 1 x BDP ({})", describe(bdp, self.facts.mtu)),
            ),
            (None, _, CreditMultiple::Unbounded) => {
                (u16::MAX, format!("{}: unbounded", mode.as_str()))
            }
            (None, _, CreditMultiple::Factor(f)) => (
                (bdp.packets as f64 * f).ceil().clamp(1.0, u16::MAX as f64) as u16,
                format!(
                    "{}: {f} x BDP ({})",
                    mode.as_str(),
                    describe(bdp, self.facts.mtu)
                ),
            ),
        };
        let mut clamped = false;
        if self.facts.own_pair {
            clamped = self.fit_ring(&mut credits, given.is_some(), bdp.packets)?;
        }
        if mode == FlowMode::Lossless {
            self.check_lossless(credits, given.is_some(), bdp)?;
        }
        self.t.credits = Some(credits);
        if given.is_none() {
            let why = match clamped {
                true => format!(
                    "{why}, lowered to what link.rx_desc = {} backs for {} session(s)",
                    self.rx_ring,
                    self.ring_sessions()
                ),
                false => why,
            };
            self.note("transport.credits", credits, Source::Derived, why);
        }
        Ok(clamped)
    }

    /// An own pair's ring: grown to the next power of two that backs the
    /// load (lossless: (credits + 1) x sessions; pause with derived
    /// thresholds: the headroom + 2), at most the largest the link takes;
    /// derived lossless credits lowered to what that ring backs.
    fn fit_ring(&mut self, credits: &mut u16, given: bool, bdp: u16) -> Result<bool, KeyError> {
        let sessions = self.ring_sessions();
        let largest = self.facts.largest_ring;
        let mut clamped = false;
        let (need, what) = match self.t.mode {
            FlowMode::Lossless => {
                let most = self.lossless_limit(largest);
                if !given && *credits > most && most >= 1 {
                    *credits = most;
                    clamped = true;
                }
                (
                    lossless_ring_entries(*credits) * sessions,
                    format!(
                        "lossless mode with {credits} credit(s) x {sessions} session(s) per worker; at most {} lossless sessions per worker fit the largest ring (1 credit + 1 probe entry each): lower workload.sessions_per_thread, add cores, or use transport.mode = \"lossy\"",
                        largest / lossless_ring_entries(1)
                    ),
                )
            }
            FlowMode::Pause if self.t.pause_xoff.is_none() => {
                let h = self.headroom(bdp);
                (h + 2, format!("pause mode with a headroom of {h} entries"))
            }
            _ => return Ok(false),
        };
        if need > self.rx_ring {
            let ring = need.next_power_of_two();
            if ring > largest {
                return Err(KeyError::new(
                    "link.rx_desc",
                    format!("{what}: it needs a {need}-entry receive ring, more than the largest this link takes (link.rx_desc <= {largest})"),
                ));
            }
            self.rx_ring = ring;
            self.note(
                "link.rx_desc",
                ring,
                Source::Derived,
                format!(
                    "so {sessions} {} session(s) per worker fit the receive ring",
                    self.t.mode.as_str()
                ),
            );
        }
        Ok(clamped)
    }

    /// Lossless credits must fit every session's reservation in the ring,
    /// within the server's shares; the refusal names the key to change.
    fn check_lossless(&self, credits: u16, given: bool, bdp: &Bdp) -> Result<(), KeyError> {
        if credits <= self.lossless_limit(self.rx_ring) {
            return Ok(());
        }
        let rx = self.rx_ring;
        let origin = match given {
            true => String::new(),
            false => format!(
                " (the BDP of {:.2} Gb/s x {} us at link.mtu = {}, {})",
                bdp.gbps, bdp.rtt_us, self.facts.mtu, bdp.why
            ),
        };
        let l = self.facts.load;
        let need = lossless_ring_entries(credits);
        for (sessions, whose) in [
            (l.client_sessions, format!("for {} session(s) in lossless mode ((credits + 1 probe entry) x sessions_per_thread must be <= rx_desc)", l.client_sessions)),
            (l.server_sessions, format!("on a server worker accepting {} session(s) in lossless mode ((credits + 1 probe entry) x sessions per server worker must be <= rx_desc)", l.server_sessions)),
        ] {
            if need * sessions > rx {
                return Err(KeyError::new(
                    "transport.credits",
                    format!("transport.credits = {credits}{origin} exceeds what link.rx_desc = {rx} can back {whose}"),
                ));
            }
        }
        let adm = self.t.admission();
        Err(KeyError::new(
            "transport.peer_ring_share_pct",
            format!(
                "transport.credits = {credits}{origin} for {} session(s) from one client address is more than the server grants: one session may reserve transport.session_ring_share_pct = {} %, one address transport.peer_ring_share_pct = {} % and one MAC transport.mac_ring_share_pct = {} % of link.rx_desc = {rx}, all together at most 100 - transport.ring_reserve_pct = {} % ((credits + 1) x sessions); lower the credits or raise the shares (rpc-bench raises them to 100 for its own client)",
                self.ring_sessions(),
                adm.session_ring_share_pct,
                adm.peer_ring_share_pct,
                adm.mac_ring_share_pct,
                adm.ring_reserve_pct
            ),
        ))
    }

    /// Pause mode's headroom: given, or 2 x the BDP in packets + one
    /// receive burst (what is on the wire both ways when XOFF lands).
    fn headroom(&self, bdp: u16) -> usize {
        self.t
            .pause_headroom
            .map_or(2 * bdp as usize + PAUSE_BURST_ENTRIES, |h| h as usize)
    }

    /// Pause mode's thresholds (derived ones filled in), checked against
    /// the ring with the headroom rule.
    pub(super) fn pause(&mut self, bdp: &Bdp) -> Result<(), KeyError> {
        if self.t.mode != FlowMode::Pause {
            return Ok(());
        }
        let rx = self.rx_ring;
        let h = self.headroom(bdp.packets);
        let origin = match self.t.pause_headroom {
            Some(_) => String::new(),
            None => format!(
                " (2 x the BDP of {} packets + {PAUSE_BURST_ENTRIES})",
                bdp.packets
            ),
        };
        let rule = "link.rx_desc - transport.pause_xoff >= transport.pause_headroom, with pause_xon < pause_xoff";
        match self.t.pause_xoff.map(|x| x as usize) {
            None if h + 2 > rx => {
                return Err(KeyError::new(
                    "transport.pause_headroom",
                    format!("transport.pause_headroom = {h}{origin} does not fit link.rx_desc = {rx}: the headroom rule ({rule}) needs link.rx_desc >= {}; raise link.rx_desc or lower transport.pause_headroom", h + 2),
                ));
            }
            Some(x) if x == 0 || x + h > rx => {
                return Err(KeyError::new(
                    "transport.pause_xoff",
                    format!("transport.pause_xoff = {x} must be in 1..={} for link.rx_desc = {rx} and transport.pause_headroom = {h}{origin} (the headroom rule: {rule})", rx.saturating_sub(h)),
                ));
            }
            _ => {}
        }
        let derived = PauseConfig::for_ring(rx, h, Duration::from_micros(self.t.pause_time_us));
        let xoff = self.t.pause_xoff.map_or(derived.xoff, |x| x as usize);
        let xon = self.t.pause_xon.map_or(xoff / 2, |x| x as usize);
        if xon >= xoff {
            return Err(KeyError::new(
                "transport.pause_xon",
                format!("transport.pause_xon = {xon} must be below transport.pause_xoff = {xoff}"),
            ));
        }
        let fill: [(&'static str, &mut Option<u32>, usize, String); 3] = [
            (
                "transport.pause_headroom",
                &mut self.t.pause_headroom,
                h,
                format!("2 x BDP of {} packets + {PAUSE_BURST_ENTRIES}", bdp.packets),
            ),
            (
                "transport.pause_xoff",
                &mut self.t.pause_xoff,
                xoff,
                format!("link.rx_desc {rx} - headroom {h}"),
            ),
            (
                "transport.pause_xon",
                &mut self.t.pause_xon,
                xon,
                "half of XOFF".into(),
            ),
        ];
        let mut notes = Vec::new();
        for (key, slot, v, why) in fill {
            if slot.is_none() {
                *slot = Some(v as u32);
                notes.push((key, v, why));
            }
        }
        for (key, v, why) in notes {
            self.note(key, v, Source::Derived, why);
        }
        Ok(())
    }
}
