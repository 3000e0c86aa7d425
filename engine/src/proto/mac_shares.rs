//! What the server sessions behind one source MAC hold together: their
//! number (for `admission.max_sessions_per_mac`) and their receive-ring
//! entries (for `admission.mac_ring_share_pct` and the newcomers' reserve).
//! The server answers a frame's source MAC, so a host that answers for
//! several addresses on the segment receives the replies of all of them:
//! per address alone (`budget::Ledger`) it would hold a share per address.
//!
//! Touched only when sessions come and go (accept, first contact, ring
//! release, free): one hash lookup each, never per data packet.

use crate::wire::MacAddr;
use std::collections::HashMap;

/// One source MAC's sessions and ring entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MacUse {
    /// Server sessions from it (half-open ones too).
    pub sessions: usize,
    /// Receive-ring entries they reserve (lossless mode).
    pub ring: usize,
}

/// The accounts of the MACs that hold server sessions.
#[derive(Debug, Default)]
pub(crate) struct MacShares {
    by_mac: HashMap<MacAddr, MacUse>,
}

impl MacShares {
    /// What `mac` holds (nothing if it has no session).
    pub fn of(&self, mac: MacAddr) -> MacUse {
        self.by_mac.get(&mac).copied().unwrap_or_default()
    }

    /// One more session from `mac`.
    pub fn attach(&mut self, mac: MacAddr) {
        self.by_mac.entry(mac).or_default().sessions += 1;
    }

    /// One session fewer from `mac` (its ring entries given back already);
    /// the account goes at the last.
    pub fn detach(&mut self, mac: MacAddr) {
        if let Some(u) = self.by_mac.get_mut(&mac) {
            u.sessions = u.sessions.saturating_sub(1);
            if u.sessions == 0 {
                debug_assert_eq!(u.ring, 0, "a MAC freed with ring entries held");
                self.by_mac.remove(&mac);
            }
        }
    }

    /// `mac`'s sessions reserve `n` more ring entries (`n` fewer with
    /// `back`).
    pub fn hold_ring(&mut self, mac: MacAddr, n: usize, back: bool) {
        if let Some(u) = self.by_mac.get_mut(&mac) {
            u.ring = if back {
                u.ring.saturating_sub(n)
            } else {
                u.ring + n
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mac_account_counts_sessions_and_ring_and_goes_at_the_last() {
        let mut m = MacShares::default();
        let (a, b) = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
        m.attach(a);
        m.attach(a);
        m.attach(b);
        m.hold_ring(a, 100, false);
        m.hold_ring(a, 50, false);
        assert_eq!(
            m.of(a),
            MacUse {
                sessions: 2,
                ring: 150
            }
        );
        m.hold_ring(a, 100, true);
        m.detach(a);
        assert_eq!(m.of(a).sessions, 1);
        m.hold_ring(a, 50, true);
        m.detach(a);
        assert_eq!(m.of(a), MacUse::default());
        assert!(!m.by_mac.contains_key(&a));
        // Unknown MACs hold nothing and change nothing.
        m.hold_ring(a, 5, false);
        m.detach(a);
        assert_eq!((m.of(a), m.by_mac.len()), (MacUse::default(), 1));
    }
}
