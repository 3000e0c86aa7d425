//! Peer links of the reactive pause (`FlowMode::Pause`, protocol in
//! `pause.rs`): one per peer address (IPv4, UDP port) that has sessions
//! here, holding whether that peer paused us, since when, and the traffic
//! parked for it; plus this endpoint's own XOFF state as a receiver.

use super::config::PeerAddr;
use super::ids::SessionId;
use super::txq::TxDesc;
use crate::time::Instant;
use crate::wire::MacAddr;
use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;

/// `SessionCommon::link` of a session that has no peer link (not pause
/// mode).
pub(crate) const NO_LINK: u32 = u32::MAX;

/// What this endpoint knows of one peer in pause mode.
#[derive(Debug)]
pub(crate) struct PeerLink {
    pub peer: PeerAddr,
    /// Sessions (either role) towards this peer; the link is freed at 0.
    pub sessions: u32,
    /// Paused until then (the past: not paused).
    pub paused_until: Instant,
    /// Start of the current pause, for `paused_ns`.
    pub paused_since: Option<Instant>,
    /// Client sessions that had packets for this peer while it was paused.
    pub parked_clients: Vec<SessionId>,
    /// Server answers held while it was paused.
    pub parked_ctrl: VecDeque<TxDesc>,
}

/// Every peer link, the receiver's XOFF state and the paused links.
#[derive(Debug, Default)]
pub(crate) struct PausePeers {
    pub links: Vec<Option<PeerLink>>,
    free: Vec<u32>,
    pub index: HashMap<(Ipv4Addr, u16), u32>,
    /// Links paused now, for their expiry.
    pub paused: Vec<u32>,
    /// Receiver: an XOFF is in force at the peers.
    pub xoff_active: bool,
    /// Receiver: when the last XOFF went out.
    pub last_xoff: Instant,
}

impl PausePeers {
    /// The link of `peer`, created if needed; one more session on it.
    pub fn attach(&mut self, peer: PeerAddr) -> u32 {
        if let Some(&i) = self.index.get(&(peer.ip, peer.port)) {
            if let Some(l) = self.links[i as usize].as_mut() {
                l.sessions += 1;
                return i;
            }
        }
        let link = PeerLink {
            peer,
            sessions: 1,
            paused_until: Instant::ZERO,
            paused_since: None,
            parked_clients: Vec::new(),
            parked_ctrl: VecDeque::new(),
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.links[i as usize] = Some(link);
                i
            }
            None => {
                self.links.push(Some(link));
                (self.links.len() - 1) as u32
            }
        };
        self.index.insert((peer.ip, peer.port), i);
        i
    }

    /// One session fewer on link `i`; frees it at none.
    pub fn detach(&mut self, i: u32) {
        let Some(l) = self.links.get_mut(i as usize).and_then(Option::as_mut) else {
            return;
        };
        l.sessions -= 1;
        if l.sessions == 0 {
            self.index.remove(&(l.peer.ip, l.peer.port));
            self.links[i as usize] = None;
            self.paused.retain(|&p| p != i);
            self.free.push(i);
        }
    }

    /// The peer's MAC became known (client side, from its ConnectResp).
    pub fn learn_mac(&mut self, i: u32, mac: MacAddr) {
        if let Some(l) = self.links.get_mut(i as usize).and_then(Option::as_mut) {
            l.peer.mac = Some(mac);
        }
    }

    /// Whether link `i` is paused at `now`.
    #[inline]
    pub fn is_paused(&self, i: u32, now: Instant) -> bool {
        i != NO_LINK
            && self
                .links
                .get(i as usize)
                .and_then(Option::as_ref)
                .is_some_and(|l| now < l.paused_until)
    }

    pub fn link_mut(&mut self, i: u32) -> Option<&mut PeerLink> {
        self.links.get_mut(i as usize).and_then(Option::as_mut)
    }

    /// A paused link whose pause has run out by `now` (or that is gone).
    pub fn first_expired(&self, now: Instant) -> Option<u32> {
        self.paused.iter().copied().find(|&i| {
            self.links[i as usize]
                .as_ref()
                .is_none_or(|l| l.paused_until <= now)
        })
    }

    /// The earliest pause expiry, if any link is paused.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.paused
            .iter()
            .filter_map(|&i| self.links[i as usize].as_ref())
            .map(|l| l.paused_until)
            .min()
    }
}
