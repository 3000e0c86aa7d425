//! The endpoint's side of credit policing (the rule is `police.rs`): a
//! request packet over its session's allowance is dropped and counted, a
//! session that keeps violating is closed and its source barred, and a
//! barred source's session-management packets are dropped.

use super::endpoint::Endpoint;
use super::error::RpcError;
use super::event::{Event, ViolatorReport};
use super::ids::SessionId;
use super::state::SessionInput;
use crate::time::Instant;
use crate::wire::{MacAddr, Parsed};

impl Endpoint {
    /// A session-management packet from a barred source: dropped,
    /// counted. One compare while nobody is barred.
    #[inline]
    pub(crate) fn source_barred(&mut self, now: Instant, p: &Parsed<'_>) -> bool {
        let barred = self.police.bars(now, p.src_ip, p.src_mac);
        if barred {
            self.out.stats.drops.policed_source += 1;
        }
        barred
    }

    /// A request packet of server session `id` over its allowance:
    /// dropped (`drops.over_credit`) and, on its `strikes`th violating
    /// epoch within the window, the session is closed and its source
    /// barred. Out of line: a compliant client never gets here.
    #[cold]
    #[inline(never)]
    pub(crate) fn over_credit(&mut self, now: Instant, id: SessionId) {
        self.out.stats.drops.over_credit += 1;
        let rule = self.cfg.police;
        let Some(s) = self.table.server_mut(id) else {
            return;
        };
        if !s.meter.over(now, &rule) {
            return;
        }
        let peer = s.common.peer;
        let mac = peer.mac.unwrap_or(MacAddr::BROADCAST);
        let report = ViolatorReport {
            session: id,
            ip: peer.ip,
            mac,
            port: peer.port,
            excess: s.meter.excess,
        };
        self.police.bar(peer.ip, mac, now + rule.cooloff);
        self.out.stats.sessions_policed += 1;
        self.out.events.push_back(Event::CreditViolator(report));
        let reason = RpcError::SessionClosed;
        self.step(now, id, SessionInput::PeerDisconnect, reason);
    }
}
