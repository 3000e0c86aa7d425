//! RCCC: what one grant of the credit pacer (`rccc.rs`) releases of a
//! server session's received request packets, and how many it keeps back.

use super::client::pop_slot;
use super::rccc::{Grant, PULL_PKTS, WINDOW_QUARTERS};
use super::server::{Phase, ServerSession, ServerSlot};

impl ServerSession {
    /// One grant to this session, one of `sharing` sessions that want
    /// credit: up to [`PULL_PKTS`] received, unreleased packets of one
    /// request still arriving (the first slot with any; a session's slots
    /// are its request window, a handful: O(window), never over sessions),
    /// and never so many that the credits the sender holds or has in the
    /// network exceed its share of 1.5 windows (`1.5 x credits /
    /// sharing`, at least 1): the session's credits stand for the BDP (a
    /// BDP under the fabric's BDP regimes), so all senders together keep
    /// about 1.5 BDP in the network and the rest waits here. `credits ==
    /// 0` with `more`: the session has its share out already.
    pub fn grant_credits(&mut self, sharing: u32) -> Grant {
        let owed = u32::from(self.unreleased());
        let out = u32::from(self.credits).saturating_sub(owed);
        let share = (u32::from(self.credits) * WINDOW_QUARTERS / 4 / sharing.max(1)).max(1);
        let room = share.saturating_sub(out).min(PULL_PKTS);
        let mut g = Grant {
            req_num: 0,
            credits: 0,
            queue_cr: false,
            more: owed > 0,
        };
        if room == 0 {
            return g;
        }
        let first = receiving(self.receiving).find(|&i| self.slots[i].unreleased() > 0);
        if let Some(slot) = first.map(|i| &mut self.slots[i]) {
            let n = slot.unreleased().min(room);
            slot.granted += n;
            g = Grant {
                req_num: slot.req_num.unwrap_or(0),
                credits: n,
                queue_cr: !std::mem::replace(&mut slot.cr_pending, true),
                more: owed > n,
            };
        }
        g
    }
}

impl ServerSession {
    /// Request packets received and not yet released, over the session's
    /// slots receiving a request (of its request window, a handful), at
    /// most `u16::MAX`.
    pub fn unreleased(&self) -> u16 {
        let n: u32 = receiving(self.receiving)
            .map(|i| self.slots[i].unreleased())
            .sum();
        debug_assert_eq!(
            n,
            self.slots.iter().map(ServerSlot::unreleased).sum::<u32>(),
            "a slot with unreleased packets is missing from `receiving`"
        );
        n.min(u32::from(u16::MAX)) as u16
    }
}

/// The slots a `receiving` mask names, lowest first (the order the slots
/// are in, so the first with packets to release is the one a scan of all
/// would find).
fn receiving(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || (mask != 0).then(|| pop_slot(&mut mask)))
}

impl ServerSlot {
    /// Packets of the request still arriving received in order and not yet
    /// released (the last is answered by Response(0), never by a CR).
    pub fn unreleased(&self) -> u32 {
        if self.phase != Phase::Receiving || self.n_req == 0 {
            return 0;
        }
        self.num_rx.min(self.n_req - 1).saturating_sub(self.granted)
    }
}
