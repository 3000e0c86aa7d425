//! The reactive pause (`FlowMode::Pause`): PFC's XOFF/XON, end to end.
//!
//! Receiver side: the driver reports its receive-ring occupancy through
//! [`Endpoint::observe_rx_ring`]; at or above `xoff` the endpoint sends a
//! Pause frame (XOFF, with a pause time) to every peer it has a session
//! with, refreshes it every half pause time while still above `xon`, and
//! sends XON (pause time 0) once at or below `xon`.
//!
//! Sender side: a Pause frame from a peer stops *all* data to that peer,
//! client packets and server answers alike, as PFC stops a whole priority
//! on a link: sessions and answers towards it are parked on its link
//! (`pause_peers.rs`) and released by XON or when the pause time runs out, in
//! their order. Session management packets are not paused (PFC deployments
//! carry control on another priority). A Pause frame from an address with
//! no session is dropped as `unknown_session` (a pause from a stranger must
//! not stop anything).

use super::config::FlowMode;
use super::endpoint::Endpoint;
use super::txq::TxDesc;
use crate::time::{Duration, Instant};
use crate::wire::{HeaderTemplate, MacAddr, Parsed, PktType, RpcRepr, SESSION_NONE};

impl Endpoint {
    /// Pause mode: the driver's receive-ring occupancy (entries waiting) at
    /// `now`. Sends XOFF to every peer at or above the threshold (again
    /// every half pause time while it stays above XON), XON once at or
    /// below the lower one. No effect in other modes. Call it once per
    /// receive burst; O(1) unless a pause frame goes out (then O(peers)).
    pub fn observe_rx_ring(&mut self, now: Instant, occupancy: usize) {
        if self.cfg.mode != FlowMode::Pause {
            return;
        }
        let p = self.cfg.pause;
        let pl = &mut self.pause;
        let refresh = Duration::from_nanos(p.pause_time.as_nanos() / 2);
        let send = if occupancy >= p.xoff {
            let due = !pl.xoff_active || now.saturating_since(pl.last_xoff) >= refresh;
            due.then_some(p.pause_time)
        } else if pl.xoff_active && occupancy <= p.xon {
            Some(Duration::ZERO)
        } else {
            None
        };
        let Some(time) = send else {
            return;
        };
        pl.xoff_active = time > Duration::ZERO;
        if pl.xoff_active {
            pl.last_xoff = now;
        }
        let us = time.as_nanos().div_ceil(1000).min(u64::from(u32::MAX)) as u32;
        for i in 0..pl.links.len() as u32 {
            if pl.links[i as usize].is_some() {
                self.txq.ctrl.push_back(TxDesc::Pause { link: i, us });
            }
        }
    }

    /// Writes a Pause frame of `us` microseconds to link `link`'s peer.
    pub(crate) fn write_pause(&mut self, buf: &mut [u8], link: u32, us: u32) -> Option<usize> {
        let l = self.pause.link_mut(link)?;
        let peer = l.peer;
        let local = self.cfg.local;
        let dst = (peer.mac.unwrap_or(MacAddr::BROADCAST), peer.ip, peer.port);
        let template = HeaderTemplate::new((local.mac, local.ip, local.port), dst);
        let rpc = RpcRepr {
            pkt_type: PktType::Pause,
            req_type: 0,
            msg_size: us,
            dest_session: SESSION_NONE,
            pkt_num: 0,
            grant: 0,
            req_num: 0,
            token: 0,
        };
        self.out.stats.pause_frames_sent += 1;
        Some(template.write(buf, &rpc, 0))
    }

    /// A Pause frame from a peer: pause or release its link.
    pub(crate) fn rx_pause(&mut self, now: Instant, p: &Parsed<'_>) {
        let Some(&i) = self.pause.index.get(&(p.src_ip, p.src_port)) else {
            self.out.stats.drops.unknown_session += 1;
            return;
        };
        self.out.stats.rx_accepted += 1;
        self.out.stats.pause_frames_received += 1;
        let us = u64::from(p.rpc.msg_size);
        if us == 0 {
            self.release_link(now, i);
            return;
        }
        let Some(l) = self.pause.link_mut(i) else {
            return;
        };
        l.paused_until = now + Duration::from_micros(us);
        if l.paused_since.is_none() {
            l.paused_since = Some(now);
            self.pause.paused.push(i);
        }
    }

    /// Ends link `i`'s pause: its parked traffic goes back to the queues
    /// in the order it was parked (parked sessions are still marked queued).
    fn release_link(&mut self, now: Instant, i: u32) {
        self.pause.paused.retain(|&p| p != i);
        let Some(l) = self.pause.link_mut(i) else {
            return;
        };
        l.paused_until = Instant::ZERO;
        if let Some(since) = l.paused_since.take() {
            self.out.stats.paused_ns += now.saturating_since(since).as_nanos();
        }
        self.txq.ctrl.extend(l.parked_ctrl.drain(..));
        self.txq.clients.extend(l.parked_clients.drain(..));
    }

    /// Releases every link whose pause time has run out by `now`.
    pub(crate) fn expire_pauses(&mut self, now: Instant) {
        if self.pause.paused.is_empty() {
            return; // no link paused (always, outside pause mode)
        }
        while let Some(i) = self.pause.first_expired(now) {
            self.release_link(now, i);
        }
    }
}
