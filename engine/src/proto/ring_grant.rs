//! The receive ring at the handshake, lossless mode: what a grant to a
//! peer sees (the ring's reservations, its address's and its source MAC's
//! entries), the reservation at a half-open session's first packet, and
//! the counters of refusals the per-MAC share or the newcomers' reserve
//! made. The rule itself is `admission::Admission::ring_room`; the
//! per-address accounts are the ledger's (`budget.rs`), the per-MAC ones
//! the gate's (`mac_shares.rs`). Runs at handshakes only, never per data
//! packet.

use super::admission::{Bound, RingView};
use super::endpoint::Endpoint;
use super::error::RpcError;
use super::ids::SessionId;
use super::state::SessionInput;
use crate::time::Instant;
use crate::wire::{MacAddr, Parsed};

impl Endpoint {
    /// The receive ring as a grant to a peer at `p`'s source address and
    /// MAC sees it.
    pub(crate) fn ring_view(&self, p: &Parsed<'_>) -> RingView {
        RingView {
            entries: self.cfg.rx_ring_entries,
            reserved: self.ledger.ring_usage().0,
            ip_held: self.ledger.ring_of(p.src_ip),
            mac_held: self.gate.macs.of(p.src_mac).ring,
        }
    }

    /// Counts a lossless refusal under the limit that made it, where that
    /// limit is one of the MAC's or the reserve's.
    pub(crate) fn count_ring_refusal(&mut self, bound: Bound) {
        match bound {
            Bound::Mac => self.out.stats.refused_mac_limit += 1,
            Bound::Reserve => self.out.stats.refused_ring_reserve += 1,
            _ => {}
        }
    }

    /// The first packet of a half-open server session with its server
    /// token: the handshake is complete (the client received the
    /// ConnectResp), so its receive-ring entries are reserved now, within
    /// what `Admission::ring_room` leaves its address and MAC then (other
    /// sessions of theirs may have taken entries since the grant).
    /// `false` when they cannot be: the packet is dropped
    /// (`drops.no_ring_space`) and the session closed; its client fails
    /// over to a new connect.
    #[cold]
    pub(crate) fn first_contact(&mut self, now: Instant, id: SessionId) -> bool {
        let Some(s) = self.table.server_mut(id) else {
            return false;
        };
        let (need, acct, peer) = (self.cfg.ring_reservation(s.credits), s.acct, s.common.peer);
        let mac = peer.mac.unwrap_or(MacAddr::BROADCAST);
        let view = RingView {
            entries: self.cfg.rx_ring_entries,
            reserved: self.ledger.ring_usage().0,
            ip_held: self.ledger.ring_of(peer.ip),
            mac_held: self.gate.macs.of(mac).ring,
        };
        let (room, bound) = self.cfg.admission.ring_room(view);
        if need > room || self.ledger.reserve_ring(need).is_err() {
            self.out.stats.drops.no_ring_space += 1;
            self.count_ring_refusal(bound);
            let reason = RpcError::SessionClosed;
            self.step(now, id, SessionInput::PeerDisconnect, reason);
            return false;
        }
        self.ledger.hold_ring(acct, need, false);
        self.gate.macs.hold_ring(mac, need, false);
        if let Some(s) = self.table.server_mut(id) {
            s.common.ring_reserved = need;
            s.common.heard_at(now);
        }
        true
    }
}
