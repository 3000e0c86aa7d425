//! What a server keeps secret: a 128-bit key from which it draws every
//! server token and every connect cookie through a keyed PRF (SipHash-2-4).
//! A peer that sees its own token learns nothing of the next one (a plain
//! seeded generator such as `rng::Rng` gives its state away with one
//! output), and a cookie can only have come from this server, for this
//! source address, in this or the previous cookie epoch. Deterministic: the
//! key and the caller's clock fix every output.

use crate::time::{Duration, Instant};
use siphasher::sip::SipHasher24;
use std::fmt;
use std::hash::Hasher;
use std::net::Ipv4Addr;

/// A 128-bit secret key. `Debug` prints no key bits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SecretKey(pub [u8; 16]);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    /// 128 bits from the operating system's random source (what a real
    /// server uses); `None` if that source fails.
    pub fn from_os() -> Option<Self> {
        let mut b = [0u8; 16];
        getrandom::fill(&mut b).ok().map(|()| SecretKey(b))
    }

    /// A key fixed by `seed` (the simulator's and the tests' default, so a
    /// seed still fixes every byte a run sends).
    pub fn from_seed(seed: u64) -> Self {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&prf(&[0; 16], &[seed, 1]).to_le_bytes());
        b[8..].copy_from_slice(&prf(&[0; 16], &[seed, 2]).to_le_bytes());
        SecretKey(b)
    }
}

/// How long one cookie epoch lasts; a cookie is accepted in the epoch it
/// was made in and the next, so it lives 1-2 epochs: long enough for a
/// client's retry across a vCPU stall, short enough that a harvested
/// cookie soon stops working.
pub const COOKIE_EPOCH: Duration = Duration::from_secs(2);

/// Domain separation of the PRF's inputs.
const TOKEN_DOMAIN: u64 = 0x746f_6b65_6e00_0001;
const COOKIE_DOMAIN: u64 = 0x636f_6f6b_6965_0001;

/// A server's secret and the counter its tokens are drawn with.
#[derive(Debug, Clone)]
pub(crate) struct Secrets {
    key: SecretKey,
    issued: u64,
}

/// Who a cookie is for: the source address and the client's session number
/// and token of the ConnectReq it answers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CookieFor {
    pub ip: Ipv4Addr,
    pub port: u16,
    pub client_session: u16,
    pub client_token: u64,
}

impl Secrets {
    pub fn new(key: SecretKey) -> Self {
        Secrets { key, issued: 0 }
    }

    /// A fresh server token: 64 pseudo-random bits under the key, never 0
    /// (a ConnectResp's "none") nor `avoid` (the client's own token).
    pub fn next_token(&mut self, avoid: u64) -> u64 {
        loop {
            self.issued += 1;
            let t = prf(&self.key.0, &[TOKEN_DOMAIN, self.issued]);
            if t != 0 && t != avoid {
                return t;
            }
        }
    }

    /// The cookie for `who` at `now`: never 0 (a ConnectReq's "no cookie").
    pub fn cookie(&self, now: Instant, who: &CookieFor) -> u64 {
        self.cookie_in(epoch(now), who)
    }

    /// Whether `cookie` is one this server made for `who` in this cookie
    /// epoch or the previous one.
    pub fn cookie_ok(&self, now: Instant, who: &CookieFor, cookie: u64) -> bool {
        let e = epoch(now);
        cookie != 0
            && (self.cookie_in(e, who) == cookie || (e > 0 && self.cookie_in(e - 1, who) == cookie))
    }

    fn cookie_in(&self, epoch: u64, who: &CookieFor) -> u64 {
        let addr = (u64::from(u32::from(who.ip)) << 16) | u64::from(who.port);
        let session = (u64::from(who.client_session) << 48) | epoch;
        prf(
            &self.key.0,
            &[COOKIE_DOMAIN, addr, session, who.client_token],
        )
        .max(1)
    }
}

fn epoch(now: Instant) -> u64 {
    now.0 / COOKIE_EPOCH.as_nanos()
}

/// SipHash-2-4 of `words` under `key`.
fn prf(key: &[u8; 16], words: &[u64]) -> u64 {
    let mut h = SipHasher24::new_with_key(key);
    for w in words {
        h.write_u64(*w);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(port: u16) -> CookieFor {
        CookieFor {
            ip: Ipv4Addr::new(10, 0, 0, 2),
            port,
            client_session: 3,
            client_token: 0xfeed,
        }
    }

    #[test]
    fn tokens_are_distinct_nonzero_and_fixed_by_the_key() {
        let key = SecretKey::from_seed(7);
        let (mut a, mut b) = (Secrets::new(key), Secrets::new(key));
        let ta: Vec<u64> = (0..1000).map(|_| a.next_token(0)).collect();
        let tb: Vec<u64> = (0..1000).map(|_| b.next_token(0)).collect();
        assert_eq!(ta, tb, "same key, same tokens");
        let mut sorted = ta.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 1000);
        assert!(ta.iter().all(|&t| t != 0));
        // Another key, other tokens.
        let mut c = Secrets::new(SecretKey::from_seed(8));
        assert_ne!(c.next_token(0), ta[0]);
        // Consecutive tokens share no structure a peer could extrapolate:
        // the differences are not constant (a counter or an LCG would be).
        assert_ne!(ta[1].wrapping_sub(ta[0]), ta[2].wrapping_sub(ta[1]));
    }

    #[test]
    fn a_cookie_is_bound_to_its_source_and_lives_two_epochs_at_most() {
        let s = Secrets::new(SecretKey::from_seed(1));
        let t0 = Instant(5 * COOKIE_EPOCH.as_nanos());
        let c = s.cookie(t0, &who(4000));
        assert_ne!(c, 0);
        assert!(s.cookie_ok(t0, &who(4000), c));
        // Another source port, session or token: refused.
        assert!(!s.cookie_ok(t0, &who(4001), c));
        let other = CookieFor {
            client_session: 4,
            ..who(4000)
        };
        assert!(!s.cookie_ok(t0, &other, c));
        // Still good in the next epoch, gone in the one after.
        let next = t0 + COOKIE_EPOCH;
        assert!(s.cookie_ok(next, &who(4000), c));
        assert!(!s.cookie_ok(next + COOKIE_EPOCH, &who(4000), c));
        // Another server's cookie, and 0, are refused.
        let t = Secrets::new(SecretKey::from_seed(2));
        assert!(!t.cookie_ok(t0, &who(4000), c));
        assert!(!s.cookie_ok(t0, &who(4000), 0));
    }

    #[test]
    fn debug_hides_the_key() {
        assert_eq!(format!("{:?}", SecretKey([9; 16])), "SecretKey(..)");
    }
}
