//! Endpoint configuration: the endpoint's address (its types in `addr`),
//! packet geometry, flow control (credits, request window, receive-ring
//! reservation), timers and the lossless/lossy mode.
//! [`EndpointConfig::validate`] checks every value once against the limits
//! below, so the rest of the core can trust it; `Endpoint::new` calls it.

pub use super::addr::{EndpointAddr, PeerAddr, DEFAULT_IP, DEFAULT_UDP_PORT};
use super::admission::Admission;
pub use super::budget::MemBudget;
pub use super::cc::{CcKind, DcqcnParams};
use super::defaults;
use super::error::EndpointConfigError;
use super::police::Policing;
use super::secrets::SecretKey;
use crate::time::Duration;
use crate::wire::{MacAddr, IPV4_HEADER_LEN, RPC_HEADER_LEN, SM_BODY_LEN, UDP_HEADER_LEN};

/// Bytes of every packet's MTU taken by the IPv4, UDP and RPC headers.
pub const PKT_OVERHEAD: usize = IPV4_HEADER_LEN + UDP_HEADER_LEN + RPC_HEADER_LEN;
/// Smallest MTU accepted: keeps the per-packet header overhead under 50 % and
/// leaves room for the 20-byte session-management body.
pub const MIN_MTU: usize = 128;
// The session-management body must fit one packet at the smallest MTU.
const _: () = assert!(SM_BODY_LEN <= MIN_MTU - PKT_OVERHEAD);

/// Largest MTU accepted: a 9000-byte jumbo frame, the most common NIC maximum.
pub const MAX_MTU: usize = 9000;
/// Largest request window: bounds the per-session slot arrays (both roles).
pub const MAX_REQ_WINDOW: usize = 64;
/// Largest number of sessions per endpoint: session numbers are u16 and
/// 0xFFFF means "no session" on the wire.
pub const MAX_SESSIONS: usize = 0xFFFF;
/// Most packets one message may span: `pkt_num` is a u16.
pub const MAX_PKTS_PER_MSG: usize = 1 << 16;
/// Selective mode: at most this many packets in flight and the short
/// timeout `rto_low` applies (IRN's N = 3).
pub const RTO_LOW_MAX_IN_FLIGHT: u32 = 3;
/// Message size eRPC supports and this engine must too (the default limit).
pub const DEFAULT_MAX_MSG_SIZE: usize = 8 << 20;

/// What a loss means in lossless mode (`transport.on_loss`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LossPolicy {
    /// Count the violation, then repair it with go-back-N like lossy mode.
    #[default]
    #[serde(rename = "retransmit")]
    Retransmit,
    /// Count the violation and reset the session (InfiniBand-RC-like).
    #[serde(rename = "reset")]
    ResetSession,
}

/// The flow mode (`transport.mode`): how the endpoints keep a receiver from
/// dropping, if at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowMode {
    /// Every session reserves `credits` entries of `rx_ring_entries`, on both
    /// ends; connects that do not fit are refused. A retransmission timeout
    /// is a fault, counted in `lossless_violations` and handled per
    /// [`EndpointConfig::on_loss`].
    #[default]
    Lossless,
    /// Nothing reserved; credits may exceed the BDP; retransmission repairs loss.
    Lossy,
    /// Nothing reserved per session: the receiver watches its receive ring
    /// and pauses every peer sending to it above a threshold
    /// ([`EndpointConfig::pause`]), as PFC pauses a priority, but end to end
    /// (`pause.rs`). Loss that happens anyway (headroom too small) is
    /// repaired like lossy mode.
    Pause,
}

impl Retransmit {
    /// The name in the config file and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Retransmit::GoBackN => "go_back_n",
            Retransmit::Selective => "selective",
        }
    }
}

impl FlowMode {
    /// The name in the config file and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowMode::Lossless => "lossless",
            FlowMode::Lossy => "lossy",
            FlowMode::Pause => "pause",
        }
    }
}

/// Thresholds of the reactive pause ([`FlowMode::Pause`]), in receive-ring
/// entries as the driver reports them to [`Endpoint::observe_rx_ring`].
/// [`Default`] is [`PauseConfig::for_ring`] of the default 4096-entry ring,
/// a 64-entry headroom and a 200 us pause.
///
/// [`Endpoint::observe_rx_ring`]: super::Endpoint::observe_rx_ring
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseConfig {
    /// Occupancy at or above which XOFF goes to every peer.
    pub xoff: usize,
    /// Occupancy at or below which XON releases them.
    pub xon: usize,
    /// How long one XOFF stops a sender (PFC's pause quanta): the receiver
    /// refreshes it while still above `xon`, so a lost XON costs at most
    /// this much idle time.
    pub pause_time: Duration,
    /// Ring entries above `xoff` that must stay free to absorb what is on
    /// the wire when the XOFF lands (the BDP of the receiver's link, plus
    /// a receive burst): `validate` checks `rx_ring_entries - xoff >=
    /// headroom`, as a PFC switch reserves headroom per port.
    pub headroom: usize,
}

/// How a sender repairs loss (`transport.retransmit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retransmit {
    /// Resend everything from the first unanswered packet (eRPC, RoCE).
    #[default]
    GoBackN,
    /// The receiver keeps out-of-order packets and names what is missing
    /// (a SACK per out-of-order packet); the sender resends only that, at
    /// once, and on a short timeout when few packets are in flight (IRN).
    Selective,
}

/// Selective retransmission: when the sender takes a hole as lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SackRule {
    /// At the first Sack that shows it (IRN, SIGCOMM'18 §3.2: the sender
    /// enters recovery on the first NACK). Right on paths that keep order.
    #[default]
    FirstNack,
    /// Once three packets sent after it were answered and it stayed a hole
    /// for a reordering window (TCP's duplicate-ACK threshold with RACK's
    /// RTT/4): for paths that reorder, such as SRD's per-packet spraying.
    Reordering,
    /// Never from Sacks: a hole is lost when a NACK names it (a trimmed
    /// packet's `TrimNak`) or its timeout fires. UEC's default on a
    /// trimming fabric, where a packet is rarely lost without a NACK and
    /// sprayed paths reorder freely (uet-htsim `uec.cpp`: the out-of-order
    /// heuristic SLEEK is off unless `-sleek`).
    NackOnly,
}

/// Configuration of one [`Endpoint`](super::Endpoint). See the field docs for
/// units; [`Default`] gives eRPC's values on a 1500-byte MTU.
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointConfig {
    /// This endpoint's MAC, IPv4 address and UDP port.
    pub local: EndpointAddr,
    /// Max IP packet size (IP + UDP + RPC headers + data). Both ends of a
    /// session must use the same value (a mismatch is refused with BadMtu).
    pub mtu: usize,
    /// Credits of every session this endpoint opens: packets in flight.
    /// See [`bdp_credits`].
    pub session_credits: u16,
    /// Outstanding requests per session. Both ends must use the same value:
    /// the server finds a request's slot as `req_num % req_window`.
    pub req_window: usize,
    /// Receive-ring entries this endpoint can dedicate to sessions (lossless).
    pub rx_ring_entries: usize,
    /// Session table size (client and server sessions together).
    pub max_sessions: usize,
    /// Largest request or response, in bytes; at most
    /// `MAX_PKTS_PER_MSG * max_data_per_pkt`.
    pub max_msg_size: usize,
    /// Retransmission timeout: a request with packets in flight and no
    /// progress for this long is rolled back (go-back-N).
    pub rto: Duration,
    /// Grain of the per-session timers: deadlines are rounded up to a
    /// multiple of it (a timer fires less than this late), so sessions due
    /// close together are handled in one `handle_timeout`.
    pub scan_interval: Duration,
    /// A request with no progress for this long resets its session, failing
    /// all its requests. `session_timeout / rto` bounds the retries.
    pub session_timeout: Duration,
    /// Handshake (ConnectReq / DisconnectReq) retransmission period.
    pub connect_retry: Duration,
    /// Give up a connect (ConnectFailed) or disconnect after this long.
    pub connect_timeout: Duration,
    /// Server: a session whose client has sent nothing for this long is
    /// reclaimed (freed, its ring reservation returned,
    /// `Event::PeerSessionReclaimed`). Bounds how long a dead client holds
    /// resources; live idle clients keep theirs with keepalives.
    pub idle_timeout: Duration,
    /// Server: a session that has heard nothing since its ConnectReq (a
    /// half-open handshake, e.g. one of a spoofed connect flood) is
    /// reclaimed after this long. At least twice `keepalive_interval`.
    pub half_open_timeout: Duration,
    /// Client: a connected session that has sent nothing for this long
    /// sends a keepalive (one small SM packet; the server does not answer).
    pub keepalive_interval: Duration,
    /// Client: requests one session holds waiting for a free slot; one more
    /// is refused with `RpcError::BacklogFull` (counted in `backlog_full`).
    pub max_backlog: usize,
    /// Server: sessions one client IP address may hold at once; more
    /// ConnectReqs from it are refused with `PeerLimit`.
    pub max_sessions_per_peer: usize,
    /// Server: the ring shares one session and one peer may reserve and
    /// the rule for replacing a live session (`admission.rs`).
    pub admission: Admission,
    /// Server: memory held for peers (reassembly and stored responses, per
    /// worker and per address), its expiry, and the pool's retention.
    pub mem: MemBudget,
    /// Server: credit policing (`police.rs`).
    pub police: Policing,
    /// Lossless (credits backed by ring reservations), lossy, or pause.
    pub mode: FlowMode,
    /// Lossless mode: what a loss does.
    pub on_loss: LossPolicy,
    /// Pause mode: the thresholds (unused in the other modes).
    pub pause: PauseConfig,
    /// Go-back-N or selective retransmission.
    pub retransmit: Retransmit,
    /// Selective mode: the retransmission timeout when at most
    /// [`RTO_LOW_MAX_IN_FLIGHT`] packets of a request are in flight, so a
    /// loss no later packet reveals is repaired quickly (IRN's RTO_low).
    pub rto_low: Duration,
    /// Client-side rate control of every session this endpoint opens.
    pub cc: CcKind,
    /// The link rate congestion control starts at and never exceeds, and
    /// the most `rate_cap_bps` may be (bits/s). Unused without either.
    pub link_bps: u64,
    /// A cap on every client session's sending rate, bits/s: sessions are
    /// paced at the lower of it and congestion control's rate. `None`: no
    /// cap. Must be in `1..=link_bps`.
    pub rate_cap_bps: Option<u64>,
    /// The path's unloaded round trip: Timely's minimum RTT, which
    /// normalises its gradient (measured by `rpc-bench`, computed by the
    /// fabric, `transport.rtt_us` otherwise).
    pub base_rtt: Duration,
    /// Timely takes a silence of a session's answers longer than its
    /// `t_high` for a host's stall and off its samples (`cc::Timely::
    /// on_answer`): on for the binaries' real hosts (`apps`), which stall;
    /// off by default, as in the fabric lab, whose simulated hosts never
    /// do (there a silence is the fabric's: a loss waiting for its
    /// timeout, a pause).
    pub host_stalls: bool,
    /// DCQCN's reaction-point constants (and the CNP interval the server
    /// side keeps). Unused unless `cc` is DCQCN.
    pub dcqcn: DcqcnParams,
    /// Go-back-N: the server answers the first out-of-order request packet
    /// of a gap with a NAK naming the packet it expects (once per gap), and
    /// a client rolls back at once on a NAK, or on a gap in the response
    /// packets it pulls, as RoCE and InfiniBand NICs do; the timeout stays
    /// the backstop. Off: out-of-order packets are dropped silently and
    /// only the timeout recovers (eRPC).
    pub nak: bool,
    /// RCCC, receiver credit control (UEC 1.0, after EQDS): the server
    /// returns request credits through one pacer at 0.99 of `link_bps`,
    /// round robin over the sessions waiting, instead of at once; the
    /// handshake's credits are each sender's unsolicited window
    /// (`proto/rccc.rs`).
    pub rccc: bool,
    /// Selective: when a hole counts as lost.
    pub sack_rule: SackRule,
    /// Check the IPv4 header checksum of every received frame (a bad one is
    /// a `malformed` drop). Turn it off only where the link cannot corrupt
    /// a frame (memif and net_ring copy through shared memory) or the NIC
    /// has verified it; every other header check stays.
    pub verify_ipv4_checksum: bool,
    /// Seed of the endpoint's RNG (session tokens). [`Default`] draws it
    /// from the operating system ([`os_seed`]) so that tokens differ between
    /// processes and restarts; set it explicitly for a reproducible run.
    pub seed: u64,
    /// The server's 128-bit secret, from which it draws its session tokens
    /// and connect cookies (`secrets.rs`). `None`: derived from `seed`
    /// (reproducible, but only as secret as the seed's 64 bits); a real
    /// server sets [`SecretKey::from_os`].
    pub secret: Option<SecretKey>,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            local: EndpointAddr {
                mac: MacAddr([0x02, 0, 0, 0, 0, 1]),
                ip: DEFAULT_IP,
                port: DEFAULT_UDP_PORT,
            },
            mtu: 1500,
            session_credits: 32,
            req_window: defaults::REQ_WINDOW,
            rx_ring_entries: 4096,
            max_sessions: 1024,
            max_msg_size: DEFAULT_MAX_MSG_SIZE,
            rto: defaults::RTO,
            scan_interval: defaults::SCAN_INTERVAL,
            session_timeout: defaults::SESSION_TIMEOUT,
            connect_retry: defaults::CONNECT_RETRY,
            connect_timeout: defaults::CONNECT_TIMEOUT,
            idle_timeout: defaults::IDLE_TIMEOUT,
            half_open_timeout: defaults::HALF_OPEN_TIMEOUT,
            keepalive_interval: defaults::KEEPALIVE,
            max_sessions_per_peer: defaults::MAX_SESSIONS_PER_PEER,
            admission: Admission::default(),
            mem: MemBudget::default(),
            police: Policing::default(),
            max_backlog: 4096,
            mode: FlowMode::Lossless,
            on_loss: LossPolicy::Retransmit,
            pause: PauseConfig::default(),
            retransmit: Retransmit::GoBackN,
            rto_low: defaults::RTO_LOW,
            cc: CcKind::None,
            link_bps: defaults::LINK_BPS,
            rate_cap_bps: None,
            base_rtt: defaults::BASE_RTT,
            host_stalls: false,
            dcqcn: DcqcnParams::paper40g(),
            nak: false,
            rccc: false,
            sack_rule: SackRule::FirstNack,
            verify_ipv4_checksum: true,
            seed: os_seed(),
            secret: None,
        }
    }
}

/// A seed from the operating system's random source: what
/// [`EndpointConfig::default`] uses, so session tokens are unpredictable to
/// other hosts and a restarted client is not taken for its dead
/// predecessor. Falls back to the clock and process id, mixed, if the OS
/// source fails (it does not on Linux).
pub fn os_seed() -> u64 {
    let mut b = [0u8; 8];
    match getrandom::fill(&mut b) {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            crate::rng::Rng::new(t ^ ((std::process::id() as u64) << 32)).next_u64()
        }
    }
}

impl EndpointConfig {
    /// Payload bytes per packet: `mtu` minus IPv4, UDP and RPC headers.
    pub fn max_data_per_pkt(&self) -> usize {
        self.mtu.saturating_sub(PKT_OVERHEAD)
    }

    /// Receive-ring entries one session of this endpoint reserves.
    pub(crate) fn ring_reservation(&self, credits: u16) -> usize {
        match self.mode {
            FlowMode::Lossless => lossless_ring_entries(credits),
            FlowMode::Lossy | FlowMode::Pause => 0,
        }
    }

    /// Checks every field against the engine's limits.
    pub fn validate(&self) -> Result<(), EndpointConfigError> {
        let mac = self.local.mac.0;
        if mac[0] & 1 != 0 {
            return Err(EndpointConfigError::new(
                "local.mac",
                self.local.mac,
                "must be a unicast MAC",
            ));
        }
        if !(MIN_MTU..=MAX_MTU).contains(&self.mtu) {
            return Err(EndpointConfigError::new(
                "mtu",
                self.mtu,
                format!("must be in {MIN_MTU}..={MAX_MTU}"),
            ));
        }
        if self.session_credits == 0 {
            return Err(EndpointConfigError::new(
                "session_credits",
                0,
                "must be at least 1",
            ));
        }
        if !(1..=MAX_REQ_WINDOW).contains(&self.req_window) {
            let limit = format!("must be in 1..={MAX_REQ_WINDOW}");
            return Err(EndpointConfigError::new(
                "req_window",
                self.req_window,
                limit,
            ));
        }
        if !(1..=MAX_SESSIONS).contains(&self.max_sessions) {
            let limit = format!("must be in 1..={MAX_SESSIONS}");
            return Err(EndpointConfigError::new(
                "max_sessions",
                self.max_sessions,
                limit,
            ));
        }
        let max_msg = (MAX_PKTS_PER_MSG * self.max_data_per_pkt()).min(u32::MAX as usize);
        if self.max_msg_size > max_msg {
            let limit = format!(
                "at most {max_msg} bytes ({MAX_PKTS_PER_MSG} packets of {} bytes at mtu {})",
                self.max_data_per_pkt(),
                self.mtu
            );
            return Err(EndpointConfigError::new(
                "max_msg_size",
                self.max_msg_size,
                limit,
            ));
        }
        self.mem.validate(self.max_msg_size)?;
        if self.ring_reservation(self.session_credits) > self.rx_ring_entries {
            let limit = "lossless mode: must hold at least one session's credits";
            return Err(EndpointConfigError::new(
                "rx_ring_entries",
                self.rx_ring_entries,
                limit,
            ));
        }
        if self.mode == FlowMode::Pause {
            self.pause.validate(self.rx_ring_entries)?;
        }
        let ns = |d: Duration| d.as_nanos();
        if self.rto_low.as_nanos() == 0 || self.rto_low > self.rto {
            let limit = format!("must be in 1..={} ns (rto)", ns(self.rto));
            return Err(EndpointConfigError::new("rto_low", ns(self.rto_low), limit));
        }
        if self.cc != CcKind::None && self.link_bps == 0 {
            return Err(EndpointConfigError::new(
                "link_bps",
                0,
                "must be > 0 with cc",
            ));
        }
        if self.nak && self.retransmit == Retransmit::Selective {
            let limit = "NAKs are go-back-N's; selective recovery has its Sacks";
            return Err(EndpointConfigError::new("nak", true, limit));
        }
        if self.nak && self.mode == FlowMode::Lossless {
            let limit = "lossless mode judges a loss by its timeout; NAKs need lossy or pause mode";
            return Err(EndpointConfigError::new("nak", true, limit));
        }
        if let Some(cap) = self.rate_cap_bps {
            if cap == 0 || cap > self.link_bps {
                let limit = format!("must be in 1..={} (link_bps)", self.link_bps);
                return Err(EndpointConfigError::new("rate_cap_bps", cap, limit));
            }
        }
        if ns(self.scan_interval) == 0 {
            return Err(EndpointConfigError::new("scan_interval", 0, "must be > 0"));
        }
        if self.rto < self.scan_interval {
            let limit = format!("must be >= scan_interval ({} ns)", ns(self.scan_interval));
            return Err(EndpointConfigError::new("rto", ns(self.rto), limit));
        }
        if self.session_timeout < self.rto {
            let limit = format!("must be >= rto ({} ns)", ns(self.rto));
            return Err(EndpointConfigError::new(
                "session_timeout",
                ns(self.session_timeout),
                limit,
            ));
        }
        if ns(self.connect_retry) == 0 {
            return Err(EndpointConfigError::new("connect_retry", 0, "must be > 0"));
        }
        if ns(self.keepalive_interval) == 0 {
            return Err(EndpointConfigError::new(
                "keepalive_interval",
                0,
                "must be > 0",
            ));
        }
        if self.half_open_timeout.as_nanos() < 2 * self.keepalive_interval.as_nanos() {
            let limit = format!(
                "must be >= 2 * keepalive_interval ({} ns): a live client that lost one keepalive must keep its session",
                ns(self.keepalive_interval)
            );
            return Err(EndpointConfigError::new(
                "half_open_timeout",
                ns(self.half_open_timeout),
                limit,
            ));
        }
        if self.idle_timeout < self.half_open_timeout {
            let limit = format!(
                "must be >= half_open_timeout ({} ns)",
                ns(self.half_open_timeout)
            );
            return Err(EndpointConfigError::new(
                "idle_timeout",
                ns(self.idle_timeout),
                limit,
            ));
        }
        if self.max_backlog == 0 {
            return Err(EndpointConfigError::new(
                "max_backlog",
                0,
                "must be at least 1",
            ));
        }
        self.admission.validate()?;
        self.police.validate()?;
        if self.max_sessions_per_peer == 0 {
            return Err(EndpointConfigError::new(
                "max_sessions_per_peer",
                0,
                "must be at least 1",
            ));
        }
        if self.connect_timeout < self.connect_retry {
            let limit = format!("must be >= connect_retry ({} ns)", ns(self.connect_retry));
            return Err(EndpointConfigError::new(
                "connect_timeout",
                ns(self.connect_timeout),
                limit,
            ));
        }
        Ok(())
    }
}

impl Default for PauseConfig {
    fn default() -> Self {
        PauseConfig::for_ring(4096, 64, defaults::PAUSE_TIME)
    }
}

impl PauseConfig {
    /// The headroom rule: `xon < xoff` and `ring - xoff >= headroom`.
    pub fn validate(&self, ring: usize) -> Result<(), EndpointConfigError> {
        if self.xon >= self.xoff {
            let limit = format!("must be below pause xoff ({})", self.xoff);
            return Err(EndpointConfigError::new("pause.xon", self.xon, limit));
        }
        if self.xoff > ring || ring - self.xoff < self.headroom {
            let limit = format!(
                "must leave {} ring entries of headroom above it (ring {ring}): at most {}",
                self.headroom,
                ring.saturating_sub(self.headroom)
            );
            return Err(EndpointConfigError::new("pause.xoff", self.xoff, limit));
        }
        if self.pause_time.as_nanos() == 0 {
            return Err(EndpointConfigError::new(
                "pause.pause_time",
                0,
                "must be > 0",
            ));
        }
        Ok(())
    }

    /// Thresholds for a ring of `ring` entries and a headroom: XOFF right
    /// below the headroom, XON at half of XOFF.
    pub fn for_ring(ring: usize, headroom: usize, pause_time: Duration) -> Self {
        let xoff = ring.saturating_sub(headroom).max(2);
        PauseConfig {
            xoff,
            xon: xoff / 2,
            pause_time,
            headroom,
        }
    }
}

/// Receive-ring entries a lossless session with `credits` credits reserves
/// on each end: one per credit, plus one for the probe a retransmission
/// timeout sends without a credit (see `loss.rs`).
pub fn lossless_ring_entries(credits: u16) -> usize {
    credits as usize + 1
}

/// Session credits that fill a link: the bandwidth-delay product in packets,
/// `ceil(link_bps * rtt / (8 * mtu))`, at least 1, at most `u16::MAX`.
pub fn bdp_credits(link_bps: u64, rtt: Duration, mtu: usize) -> u16 {
    let bits = link_bps as u128 * rtt.as_nanos() as u128;
    let per_pkt = 8u128 * mtu.max(1) as u128 * 1_000_000_000;
    let c = bits.div_ceil(per_pkt);
    c.clamp(1, u16::MAX as u128) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        EndpointConfig::default().validate().unwrap();
        assert_eq!(EndpointConfig::default().max_data_per_pkt(), 1444);
    }

    #[test]
    fn validate_names_field() {
        let mut c = EndpointConfig {
            mtu: 64,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "mtu");
        c.mtu = 1500;
        c.max_msg_size = 200 << 20;
        assert_eq!(c.validate().unwrap_err().field, "max_msg_size");
        c.max_msg_size = 8 << 20;
        c.rx_ring_entries = 4;
        assert_eq!(c.validate().unwrap_err().field, "rx_ring_entries");
        c.mode = FlowMode::Lossy;
        c.validate().unwrap();
        c.req_window = 0;
        assert_eq!(c.validate().unwrap_err().field, "req_window");
    }

    #[test]
    fn default_seeds_differ() {
        let seeds: std::collections::HashSet<u64> =
            (0..8).map(|_| EndpointConfig::default().seed).collect();
        assert_eq!(
            seeds.len(),
            8,
            "default seeds repeat: tokens would be predictable"
        );
    }

    #[test]
    fn bdp() {
        // 10 Gb/s x 10 us / (8 x 1500 B) = 8.33 -> 9
        assert_eq!(
            bdp_credits(10_000_000_000, Duration::from_micros(10), 1500),
            9
        );
        assert_eq!(bdp_credits(1, Duration::from_nanos(1), 1500), 1);
        assert_eq!(bdp_credits(0, Duration::from_secs(1), 1500), 1);
        // 100 Gb/s x 6 us / 8 kB = 9.15 -> 10
        assert_eq!(
            bdp_credits(100_000_000_000, Duration::from_micros(6), 8192),
            10
        );
        assert_eq!(
            bdp_credits(u64::MAX, Duration::from_secs(100), 128),
            u16::MAX
        );
    }
}
