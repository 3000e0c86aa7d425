//! The defaults of the settings that both `EndpointConfig::default` and
//! the `[transport]` section (`crate::config::TransportConfig`, in the
//! section's units) take: each written once, here.

use crate::time::Duration;

/// Outstanding requests per session (eRPC's 8).
pub const REQ_WINDOW: usize = 8;
/// Retransmission timeout (eRPC's 5 ms).
pub const RTO: Duration = Duration::from_millis(5);
/// Timer grain (eRPC scans every 0.5 ms).
pub const SCAN_INTERVAL: Duration = Duration::from_micros(500);
/// No progress for this long resets a session.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(1);
/// Handshake retransmission period.
pub const CONNECT_RETRY: Duration = Duration::from_millis(20);
/// A connect gives up after this long: 3 s, so a peer process that is
/// still loading (EAL start-up takes a second on a cold 2-core VM) is
/// not given up on.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Server: a silent client's session is reclaimed after this long.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Server: a half-open handshake is reclaimed after this long.
pub const HALF_OPEN_TIMEOUT: Duration = Duration::from_secs(3);
/// Client: a keepalive after this long without sending.
pub const KEEPALIVE: Duration = Duration::from_secs(1);
/// Server: sessions one client address may hold.
pub const MAX_SESSIONS_PER_PEER: usize = 256;
/// Selective retransmission's short timeout (IRN's RTO_low).
pub const RTO_LOW: Duration = Duration::from_micros(500);
/// Pause mode: how long one XOFF stops a sender (PFC's quanta are of
/// this order).
pub const PAUSE_TIME: Duration = Duration::from_micros(200);
/// The link rate when nothing measured it: 10 Gb/s.
pub const LINK_BPS: u64 = 10_000_000_000;
/// The round trip when nothing measured it: 10 us.
pub const BASE_RTT: Duration = Duration::from_micros(10);
