//! What every session has, whichever side it is: its generation, state,
//! peer, the peer's session number and the token, its receive-ring
//! reservation, the prebuilt headers towards the peer and the handshake
//! timer. The role-specific halves (`client::ClientSession`,
//! `server::ServerSession`) each embed one.

use super::config::PeerAddr;
use super::ids::SessionId;
use super::pause_peers::NO_LINK;
use super::state::SessionState;
use crate::time::Instant;
use crate::wire::{HeaderTemplate, SESSION_NONE};

/// Handshake retransmission timer of a Connecting or Disconnecting session,
/// and the cookie a connecting client was handed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SmTimer {
    pub next_retry: Instant,
    pub deadline: Instant,
    /// The server's cookie from a ConnectResp(Retry), carried by every
    /// later ConnectReq of the handshake; 0: none.
    pub cookie: u64,
}

impl SmTimer {
    /// A timer that is not armed.
    pub const IDLE: SmTimer = SmTimer {
        next_retry: Instant::ZERO,
        deadline: Instant::ZERO,
        cookie: 0,
    };
}

/// The role-independent part of a session-table entry.
#[derive(Debug)]
pub(crate) struct SessionCommon {
    /// This session's local number.
    pub num: u16,
    pub gen: u32,
    /// Changed only by `Endpoint::change_state` (see `state.rs`).
    pub state: SessionState,
    pub peer: PeerAddr,
    /// The peer's session number (`SESSION_NONE` until the ConnectResp).
    pub remote: u16,
    pub token: u64,
    /// Receive-ring entries reserved for this session (lossless mode).
    pub ring_reserved: usize,
    /// Prebuilt Ethernet/IPv4/UDP headers towards the peer (broadcast MAC
    /// until the peer's MAC is known).
    pub template: HeaderTemplate,
    pub sm: SmTimer,
    /// Server: when the client was last heard (any admitted packet).
    /// Client: when this session last sent a packet (for keepalives).
    pub active_at: Instant,
    /// Server: heard anything since the ConnectReq (else half-open).
    pub heard: bool,
    /// DCQCN: when this session last sent (server) or acted on (client) a
    /// congestion notification.
    pub cnp_at: Instant,
    /// Pause mode: this session's peer link (`links::NO_LINK` otherwise).
    pub link: u32,
}

impl SessionCommon {
    /// A new session `id` in `state` towards `peer`, created at `now`: no
    /// remote session number, token or ring reservation yet (the caller
    /// sets those it has), no handshake timer, not armed.
    pub fn new(
        id: SessionId,
        state: SessionState,
        peer: PeerAddr,
        template: HeaderTemplate,
        now: Instant,
    ) -> Self {
        SessionCommon {
            num: id.num,
            gen: id.gen,
            state,
            peer,
            remote: SESSION_NONE,
            token: 0,
            ring_reserved: 0,
            template,
            sm: SmTimer::IDLE,
            active_at: now,
            heard: false,
            cnp_at: Instant::ZERO,
            link: NO_LINK,
        }
    }

    /// Server: the client was heard at `now`.
    pub fn heard_at(&mut self, now: Instant) {
        self.active_at = now;
        self.heard = true;
    }

    pub fn id(&self) -> SessionId {
        SessionId {
            num: self.num,
            gen: self.gen,
        }
    }
}
