//! The handshake side's own state, apart from the sessions it creates:
//! which client sessions this server accepted (to answer a duplicate
//! ConnectReq without allocating), the server's secrets (server tokens and
//! connect cookies), the wrong-token tally per source, what the sessions
//! behind each source MAC hold (`mac_shares.rs`), and the stream that
//! draws client tokens. The handshake rules that use them are in
//! `handshake.rs` and `admission.rs`.

use super::ids::SessionId;
use super::mac_shares::MacShares;
use super::secrets::{SecretKey, Secrets};
use super::wrong_tokens::WrongTokens;
use crate::rng::Rng;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// A ConnectReq's identity: client IP, client port, client session number.
pub(crate) type ClientKey = (Ipv4Addr, u16, u16);

/// What the handshakes keep between packets.
#[derive(Debug)]
pub(crate) struct Gate {
    /// Server side: client key -> (our session, its client's token), to
    /// answer duplicate ConnectReqs without allocating.
    pub accepted: HashMap<ClientKey, (SessionId, u64)>,
    /// Server tokens and connect cookies, under the server's secret (a
    /// stream of their own, so accepting sessions does not move the client
    /// tokens `rng` draws).
    pub secrets: Secrets,
    /// Wrong tokens per source address (`admission.wrong_tokens_per_sec`).
    pub wrong_tokens: WrongTokens,
    /// Sessions and ring entries per source MAC
    /// (`admission.max_sessions_per_mac`, `mac_ring_share_pct`).
    pub macs: MacShares,
    /// Client side: draws each new client session's token.
    pub rng: Rng,
}

impl Gate {
    pub fn new(seed: u64, secret: SecretKey, wrong_tokens_per_sec: u32) -> Self {
        Gate {
            accepted: HashMap::new(),
            secrets: Secrets::new(secret),
            wrong_tokens: WrongTokens::new(wrong_tokens_per_sec),
            macs: MacShares::default(),
            rng: Rng::new(seed),
        }
    }

    /// Server session `id` is freed: its ConnectReq no longer finds it,
    /// unless the key has passed to a newer session (a restarted client's).
    pub fn forget(&mut self, key: ClientKey, id: SessionId) {
        if self.accepted.get(&key).is_some_and(|&(s, _)| s == id) {
            self.accepted.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_session_is_forgotten_unless_its_key_moved_on() {
        let mut g = Gate::new(1, SecretKey::from_seed(1), 64);
        let key = (Ipv4Addr::new(10, 0, 0, 1), 31850, 3);
        let old = SessionId { num: 1, gen: 1 };
        let new = SessionId { num: 2, gen: 1 };
        g.accepted.insert(key, (new, 7));
        g.forget(key, old);
        assert_eq!(
            g.accepted.get(&key),
            Some(&(new, 7)),
            "a newer session keeps it"
        );
        g.forget(key, new);
        assert!(g.accepted.is_empty());
    }
}
