//! The one resolution step: a [`TransportConfig`] plus what is known of the
//! link and the run ([`Facts`]: MTU, receive ring, the load, a measured
//! rate and round trip or nothing measured) gives the settings every
//! endpoint of the run uses ([`Resolved`]): the BDP and its source, the
//! credits of the flow mode (the BDP, or its multiple where nothing is
//! reserved), the pause thresholds, the short RTO, the DCQCN set; for a
//! pair a tool starts itself (`own_pair`), the ring grown to back the
//! credits of every session, credits lowered to what the largest ring
//! backs, and the RTO raised past the queue the load can build. Every tool
//! (rpc-server, rpc-client, rpc-bench's run, compare, sweep and incast,
//! and the lab) resolves here and nowhere else, so one link gives one set
//! of settings.

use super::check::KeyError;
use super::source::{Origins, Setting, Source};
use super::transport::{BdpSource, TransportConfig};
use crate::proto::{bdp_credits, DcqcnParams, MAX_MTU, MAX_PKTS_PER_MSG, MIN_MTU, PKT_OVERHEAD};
use crate::time::Duration;

/// Pause mode's default headroom adds one receive burst (the run loop's
/// `rx_burst` size): frames a poller may already hold when it decides to
/// send XOFF.
pub const PAUSE_BURST_ENTRIES: usize = 32;
/// What one small request costs a server worker on the virtual devices,
/// rounded up (2.4 Mrps per core is 0.42 us, and the VM's stalls stretch
/// it): only used to size a pair's RTO past its queue, with a 2x margin.
pub const SERVICE_NS_PER_PKT: u64 = 1_000;
/// Session table floor per endpoint: room for reconnects after resets
/// without waiting for freed numbers.
pub(super) const MIN_TABLE_SESSIONS: usize = 1024;
/// What resolution may change in a pair's link and timers: the ring grown
/// to back the load, the RTO raised past its queue.
pub(super) const PAIR_FITS: [&str; 2] = ["link.rx_desc", RTO_KEY];
const RTO_KEY: &str = "transport.rto_us";

/// What a measurement of the link gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The line rate: what one direction carried.
    pub line_gbps: f64,
    /// The rate the BDP is computed from (the round trip's).
    pub bdp_gbps: f64,
    /// The loaded round trip.
    pub rtt_us: f64,
    /// Which measured figure gave `bdp_gbps`.
    pub rate_from: &'static str,
}

/// The sessions and requests a run puts on its endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Load {
    /// Sessions one client worker opens.
    pub client_sessions: usize,
    /// Sessions the busiest server worker accepts.
    pub server_sessions: usize,
    /// Requests outstanding per session.
    pub window: usize,
    /// Bytes of one request.
    pub req_size: u64,
}

/// What resolution knows besides the config.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The IP MTU (`link.mtu`).
    pub mtu: usize,
    /// Receive-ring entries per queue (`link.rx_desc`).
    pub rx_ring: usize,
    /// The largest ring the link takes (memif 16,384).
    pub largest_ring: usize,
    /// The run's sessions and requests.
    pub load: Load,
    /// The link as measured in this run, if it was.
    pub measured: Option<Measured>,
    /// A measurement is still to come (rpc-bench before its floor): the
    /// line rate is not final, so the rate cap is not held against it.
    pub measurement_pending: bool,
    /// Both ends are started by the same tool (rpc-bench): the server
    /// trusts its own client (ring shares 100 %, every session from one
    /// address), the ring grows to back the load, and the RTO is raised
    /// past the queue the load can build.
    pub own_pair: bool,
}

/// The bandwidth-delay product the credits come from.
#[derive(Clone, Debug, PartialEq)]
pub struct Bdp {
    /// The rate and round trip it was computed from.
    pub gbps: f64,
    /// Round trip, us.
    pub rtt_us: f64,
    /// `ceil(gbps x rtt_us / mtu)`.
    pub packets: u16,
    /// Measured in this run, or the config's (default, file or flag).
    pub source: Source,
    /// What was measured (`rate_from`), or why the config's values were used.
    pub why: String,
    /// The measured figure the rate came from, when measured.
    pub rate_from: Option<&'static str>,
}

/// The settings of one run, resolved: the effective `[transport]` (every
/// derived value filled in, so handing it to another process resolves to
/// the same), the receive ring, and where each derived value came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The config with every value resolution set: credits, rates, round
    /// trip, RTO, short RTO, pause thresholds, DCQCN set, ring shares.
    pub transport: TransportConfig,
    /// Receive-ring entries (`link.rx_desc`), grown for an own pair.
    pub rx_ring: usize,
    /// The BDP.
    pub bdp: Bdp,
    /// Credits were lowered to what the ring backs.
    pub credits_clamped: bool,
    /// Every value resolution set, with its source and how.
    pub settings: Vec<Setting>,
    pub(super) mtu: usize,
}

/// Resolves `t` on a link and run described by `facts`; `origins` says
/// which keys the user gave (those are kept, never derived). Refuses, naming
/// the key, what the link cannot back.
pub fn resolve(
    t: &TransportConfig,
    facts: &Facts,
    origins: &Origins,
) -> Result<Resolved, KeyError> {
    check_mtu(t, facts.mtu)?;
    t.validate()?;
    let mut r = Resolver {
        t: t.clone(),
        facts,
        origins,
        rx_ring: facts.rx_ring,
        settings: Vec::new(),
    };
    let bdp = r.rates();
    if facts.own_pair {
        r.trust_own_client();
    }
    let credits_clamped = r.credits(&bdp)?;
    r.pause(&bdp)?;
    r.timers();
    r.rate_control(facts)?;
    Ok(Resolved {
        transport: r.t,
        rx_ring: r.rx_ring,
        bdp,
        credits_clamped,
        settings: r.settings,
        mtu: facts.mtu,
    })
}

fn check_mtu(t: &TransportConfig, mtu: usize) -> Result<(), KeyError> {
    if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
        return Err(KeyError::new(
            "link.mtu",
            format!("link.mtu = {mtu} must be in {MIN_MTU}..={MAX_MTU}"),
        ));
    }
    let per_pkt = mtu - PKT_OVERHEAD;
    let most = (MAX_PKTS_PER_MSG * per_pkt).min(u32::MAX as usize) as u64;
    if t.max_msg_size > most {
        return Err(KeyError::new(
            "transport.max_msg_size",
            format!(
                "transport.max_msg_size = {} must be at most {most} bytes ({MAX_PKTS_PER_MSG} packets of {per_pkt} bytes at link.mtu = {mtu})",
                t.max_msg_size
            ),
        ));
    }
    Ok(())
}

/// One resolution in progress: the config as it is being filled in, the
/// facts, and the notes so far (`ring.rs` adds the ring's part).
pub(super) struct Resolver<'a> {
    pub t: TransportConfig,
    pub facts: &'a Facts,
    pub origins: &'a Origins,
    pub rx_ring: usize,
    pub settings: Vec<Setting>,
}

impl Resolver<'_> {
    pub(super) fn note(
        &mut self,
        key: &'static str,
        value: impl ToString,
        source: Source,
        why: String,
    ) {
        self.settings.push(Setting {
            key,
            value: value.to_string(),
            source,
            why,
        });
    }

    /// The line rate, the BDP's rate and the round trip: measured when the
    /// config asks for it and a measurement exists, else the config's.
    fn rates(&mut self) -> Bdp {
        let measured = match (self.t.bdp, self.facts.measured) {
            (BdpSource::Measured, Some(m)) => Some(m),
            _ => None,
        };
        let why = match (self.t.bdp, measured) {
            (_, Some(m)) => format!("measured ({})", m.rate_from),
            (BdpSource::Config, _) => "transport.bdp = \"config\"".to_string(),
            (BdpSource::Measured, None) => "nothing measured in this run".to_string(),
        };
        if let Some(m) = measured {
            self.t.link_gbps = m.line_gbps;
            self.t.bdp_gbps = Some(m.bdp_gbps);
            self.t.rtt_us = m.rtt_us;
            self.note(
                "transport.link_gbps",
                fmt2(m.line_gbps),
                Source::Measured,
                "one-way MTU stream".into(),
            );
            self.note(
                "transport.bdp_gbps",
                fmt2(m.bdp_gbps),
                Source::Measured,
                m.rate_from.into(),
            );
            self.note(
                "transport.rtt_us",
                fmt2(m.rtt_us),
                Source::Measured,
                "round trip of an MTU burst".into(),
            );
        }
        let gbps = self.t.bdp_gbps.unwrap_or(self.t.link_gbps);
        let source = match measured {
            Some(_) => Source::Measured,
            None => self.given_source(&[
                "transport.bdp_gbps",
                "transport.link_gbps",
                "transport.rtt_us",
            ]),
        };
        Bdp {
            gbps,
            rtt_us: self.t.rtt_us,
            packets: bdp_credits(to_bps(gbps), us_f(self.t.rtt_us), self.facts.mtu),
            source,
            why,
            rate_from: measured.map(|m| m.rate_from),
        }
    }

    /// File or flag if any of `keys` was given, else default.
    fn given_source(&self, keys: &[&str]) -> Source {
        keys.iter()
            .map(|k| self.origins.of(k))
            .max()
            .unwrap_or(Source::Default)
    }

    /// The server lets its own client reserve the whole ring and hold every
    /// session it opens to one worker (shares the user set stay).
    fn trust_own_client(&mut self) {
        let t = &mut self.t;
        let shares = [
            (
                "transport.session_ring_share_pct",
                &mut t.session_ring_share_pct,
            ),
            ("transport.peer_ring_share_pct", &mut t.peer_ring_share_pct),
            ("transport.mac_ring_share_pct", &mut t.mac_ring_share_pct),
        ];
        let mut set = Vec::new();
        for (key, share) in shares.into_iter().filter(|(_, s)| s.is_none()) {
            *share = Some(100);
            set.push((key, 100));
        }
        if t.ring_reserve_pct.is_none() {
            t.ring_reserve_pct = Some(0);
            set.push(("transport.ring_reserve_pct", 0));
        }
        for (key, value) in set {
            self.note(
                key,
                value,
                Source::Derived,
                "both ends are this tool's".into(),
            );
        }
        let own = self.facts.load.server_sessions as u32;
        if own > self.t.max_sessions_per_peer {
            self.t.max_sessions_per_peer = own;
            self.note(
                "transport.max_sessions_per_peer",
                own,
                Source::Derived,
                "every session of this tool's client".into(),
            );
        }
        if self.t.max_sessions_per_mac.is_some_and(|n| own > n) {
            self.t.max_sessions_per_mac = Some(own);
            self.note(
                "transport.max_sessions_per_mac",
                own,
                Source::Derived,
                "every session of this tool's client".into(),
            );
        }
    }

    /// Sessions sharing one endpoint's ring: a client worker's or the
    /// busiest server worker's.
    pub(super) fn ring_sessions(&self) -> usize {
        let l = self.facts.load;
        l.client_sessions.max(l.server_sessions).max(1)
    }

    /// The short RTO (the engine's, capped at the RTO) and, for an own
    /// pair, the RTO raised past the queue its load can build at one server
    /// worker (twice the queued packets at ~1 us each), never lowered.
    fn timers(&mut self) {
        if self.facts.own_pair && !self.origins.given(RTO_KEY) {
            let queued = self.queued_packets();
            let need_us = 2 * queued * SERVICE_NS_PER_PKT / 1_000;
            if need_us > self.t.rto_us {
                // At most twice a 16,384-entry ring at 1 us: 33 ms, within
                // any valid session timeout (>= 1 ms, checked >= rto).
                self.t.rto_us = need_us;
                let why = format!("twice the {queued} packets {} session(s) can queue at one server worker, at ~1 us each, so queued packets are not taken for lost ones", self.ring_sessions());
                self.note(RTO_KEY, need_us, Source::Derived, why);
            }
        }
        if self.t.rto_low_us.is_none() {
            let low = self.t.rto_low().as_nanos() / 1_000;
            self.t.rto_low_us = Some(low);
            self.note(
                "transport.rto_low_us",
                low,
                Source::Derived,
                format!("the engine's 500 us, at most {RTO_KEY}"),
            );
        }
    }

    /// Packets the client can have waiting at one server worker: every
    /// session's window of requests, each as many packets as its size
    /// needs but no more than its credits, never more than the ring.
    fn queued_packets(&self) -> u64 {
        let payload = self
            .facts
            .mtu
            .saturating_sub(crate::wire::HEADERS_LEN)
            .max(1) as u64;
        let l = self.facts.load;
        let per_req = l.req_size.div_ceil(payload).max(1);
        let credits = self.t.credits.unwrap_or(u16::MAX) as u64;
        let per_session = (l.window as u64 * per_req).min(credits);
        (per_session * self.ring_sessions() as u64).min(self.rx_ring as u64)
    }

    /// DCQCN's set (the one that fits the line rate unless named) and the
    /// rate cap within the line rate, once the line rate is final.
    fn rate_control(&mut self, facts: &Facts) -> Result<(), KeyError> {
        if self.t.dcqcn.is_none() {
            let set =
                match DcqcnParams::for_link(to_bps(self.t.link_gbps)) == DcqcnParams::hpcc100g() {
                    true => super::DcqcnSet::Hpcc100g,
                    false => super::DcqcnSet::Paper40g,
                };
            self.t.dcqcn = Some(set);
            self.note(
                "transport.dcqcn",
                format!("\"{}\"", set.as_str()),
                Source::Derived,
                format!("fits a {} Gb/s line", fmt2(self.t.link_gbps)),
            );
        }
        match self.t.rate_cap_gbps {
            Some(cap) if cap > self.t.link_gbps && !facts.measurement_pending => Err(KeyError::new(
                "transport.rate_cap_gbps",
                format!(
                    "transport.rate_cap_gbps = {cap} is above the line rate, transport.link_gbps = {:.2} (rpc-bench sets link_gbps to the floor's measured rate); lower the cap or drop it",
                    self.t.link_gbps
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// "52.87 Gb/s x 16.6 us / 1500 B = 74 packets".
pub(super) fn describe(bdp: &Bdp, mtu: usize) -> String {
    format!(
        "{} Gb/s x {} us / {mtu} B = {} packets, {}",
        fmt2(bdp.gbps),
        fmt2(bdp.rtt_us),
        bdp.packets,
        bdp.why
    )
}

/// Two decimals, trailing zeros dropped.
pub(super) fn fmt2(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(super) fn to_bps(gbps: f64) -> u64 {
    (gbps.max(0.0) * 1e9).min(u64::MAX as f64) as u64
}

pub(super) fn us_f(us: f64) -> Duration {
    Duration::from_nanos((us.max(0.0) * 1e3).round().min(u64::MAX as f64) as u64)
}
