//! Memory bounds of an endpoint's server side: their configuration
//! ([`MemBudget`]: limits, defaults, validation) and the accounting of the
//! bytes held against them ([`Ledger`]).
//!
//! What is charged: the capacity of every buffer a server slot holds for a
//! peer, i.e. the buffer of a multi-packet request being reassembled and
//! the stored response of a multi-packet answer (kept for duplicates and
//! RFRs). One-packet requests are never buffered and one-packet responses
//! are not charged (at most `req_window` of `max_data_per_pkt` bytes per
//! session, bounded by the session limits). A charge that would take the
//! worker (endpoint) or the peer (source IPv4 address) past its limit is
//! refused *before* anything is allocated; the caller drops the packet
//! (counted) or answers with an error instead of storing the response.
//!
//! What the pool keeps counts too. A peer's buffers go back to the
//! endpoint's message pool when it lets go of them (a step a reassembly
//! buffer outgrew, a request given up, a response replaced), and the pool
//! keeps free buffers (up to `pool_keep`) for whoever allocates next, so
//! they are no longer the peer's charge but still the server's memory. They
//! are counted beside every charge instead: a charge goes through only if
//! the charged bytes fit the limits as before, and then the pool gives back
//! free buffers until the peer's charge plus the pool's free bytes fit the
//! peer's limit, and the worker's charge plus them the worker's
//! (`Ledger::charge_for`). So what one address makes the server hold,
//! charged or left in the pool, never passes `per_peer`; the pool only
//! shrinks for a peer that holds more than `per_peer - pool_keep` at once,
//! and no charge is ever refused because of it.
//!
//! The per-peer accounts live in a slab indexed by a number each server
//! session keeps (`ServerSession::acct`), so a charge on the data path is
//! two array-and-field updates, no hash lookup and no allocation; the
//! address index is touched only when sessions come and go. The same
//! account counts the peer's sessions for `max_sessions_per_peer`.

use super::error::{EndpointConfigError, RpcError};
pub use super::msgbuf::DEFAULT_POOL_KEEP;
use super::msgbuf::{capacity_for, MsgPool};
use crate::time::Duration;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// Limits on the memory one endpoint holds for its peers (see the module
/// docs). [`Default`] gives values no well-behaved client meets with the
/// default `max_msg_size` (8 MiB) and `req_window` (8):
///
/// - `per_peer` 128 MiB: two sessions each with a full window of 8 MiB
///   messages (`2 x 8 x 8 MiB`), all being reassembled or stored at once.
///   One address held 3 GiB before (48 sessions x 8 slots x 8 MiB).
/// - `per_worker` 512 MiB: four such peers at their limit; what the
///   worst-case hostile crowd can pin per worker (it was 64 GiB).
/// - `reassembly_timeout` 1 s: the default `session_timeout`. A client
///   whose request made no progress that long has reset its session
///   (`loss.rs`), and a live one retries every `rto` (5 ms), so 200 of its
///   retries fit before the server gives a request up.
/// - `pool_keep` 64 MiB: eight free 8 MiB buffers, enough for a window of
///   the largest messages to reuse them, instead of up to 64 MiB per size
///   class (about 1 GiB over 17 classes). Counted within both limits
///   beside the charges (see the module docs), so it adds nothing to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemBudget {
    /// Bytes of reassembly buffers and stored responses the endpoint holds
    /// for all peers together.
    pub per_worker: usize,
    /// The same, for one source IPv4 address. At least the buffer of one
    /// `max_msg_size` message (its power-of-two capacity), else that
    /// message could never be reassembled.
    pub per_peer: usize,
    /// An incomplete request that receives no new bytes for this long is
    /// dropped (its client's request fails with
    /// `ErrorCode::ReassemblyTimeout`); a stored multi-packet response
    /// nobody asked for again this long is freed (later requests for it
    /// get `ErrorCode::ResponseExpired`). Keepalives do not postpone it.
    pub reassembly_timeout: Duration,
    /// Bytes of free buffers the message pool keeps over all size classes;
    /// buffers returned beyond it go back to the allocator, and so do free
    /// buffers that would not fit beside a charge within `per_peer` or
    /// `per_worker`.
    pub pool_keep: usize,
}

impl Default for MemBudget {
    fn default() -> Self {
        MemBudget {
            per_worker: 512 << 20,
            per_peer: 128 << 20,
            reassembly_timeout: Duration::from_secs(1),
            pool_keep: DEFAULT_POOL_KEEP,
        }
    }
}

impl MemBudget {
    /// No limit on bytes (a simulation that measures the transport, not
    /// its memory); the timeout stays.
    pub const UNLIMITED: MemBudget = MemBudget {
        per_worker: usize::MAX,
        per_peer: usize::MAX,
        reassembly_timeout: Duration::from_secs(1),
        pool_keep: usize::MAX,
    };

    /// The least `per_peer` may be: the buffer one message of
    /// `max_msg_size` bytes takes.
    pub fn min_per_peer(max_msg_size: usize) -> usize {
        capacity_for(max_msg_size)
    }

    /// Checks the limits against the largest message, `max_msg_size`.
    pub fn validate(&self, max_msg_size: usize) -> Result<(), EndpointConfigError> {
        let one = Self::min_per_peer(max_msg_size);
        if self.per_peer < one {
            let limit = format!(
                "must be >= {one} bytes (the buffer of one max_msg_size message of {max_msg_size})"
            );
            return Err(EndpointConfigError::new(
                "mem.per_peer",
                self.per_peer,
                limit,
            ));
        }
        if self.per_worker < self.per_peer {
            let limit = format!("must be >= mem.per_peer ({})", self.per_peer);
            return Err(EndpointConfigError::new(
                "mem.per_worker",
                self.per_worker,
                limit,
            ));
        }
        if self.reassembly_timeout.as_nanos() == 0 {
            return Err(EndpointConfigError::new(
                "mem.reassembly_timeout",
                0,
                "must be > 0",
            ));
        }
        Ok(())
    }
}

/// One source address's account.
#[derive(Debug)]
struct PeerUse {
    ip: Ipv4Addr,
    /// Server sessions from this address (for `max_sessions_per_peer`).
    sessions: usize,
    /// Bytes charged to it.
    bytes: usize,
    /// Receive-ring entries its sessions reserve (lossless mode; for
    /// `admission.peer_ring_share_pct`).
    ring: usize,
}

/// Bytes charged per worker and per peer, and the peers' session counts
/// and ring reservations (one account per source address);
/// with the pool the charged buffers come from (one argument for both on
/// the receive path).
#[derive(Debug)]
pub(crate) struct Ledger {
    pub pool: MsgPool,
    per_worker: usize,
    per_peer: usize,
    /// Bytes charged over all peers.
    worker: usize,
    /// By account number; a free number's entry has no sessions.
    peers: Vec<PeerUse>,
    free: Vec<u32>,
    index: HashMap<Ipv4Addr, u32>,
    /// Receive-ring entries in all (`rx_ring_entries`).
    ring_entries: usize,
    /// Receive-ring entries reserved by live sessions of either role
    /// (lossless mode; the per-peer shares are the accounts' `ring`).
    ring_reserved: usize,
    /// Bytes of free buffers the pool gave back so that they fit beside a
    /// charge (`Stats::pool_trimmed`).
    trimmed: u64,
}

impl Ledger {
    pub fn new(b: &MemBudget, pool: MsgPool, ring_entries: usize) -> Self {
        Ledger {
            pool,
            per_worker: b.per_worker,
            per_peer: b.per_peer,
            worker: 0,
            peers: Vec::new(),
            free: Vec::new(),
            index: HashMap::new(),
            ring_entries,
            ring_reserved: 0,
            trimmed: 0,
        }
    }

    /// Reserves `need` receive-ring entries or says how many are free.
    pub fn reserve_ring(&mut self, need: usize) -> Result<(), RpcError> {
        let available = self.ring_free();
        if need > available {
            return Err(RpcError::NoRingSpace {
                needed: need,
                available,
            });
        }
        self.ring_reserved += need;
        Ok(())
    }

    /// `n` reserved ring entries come back.
    pub fn unreserve_ring(&mut self, n: usize) {
        self.ring_reserved -= n;
    }

    /// Ring entries not reserved.
    pub fn ring_free(&self) -> usize {
        self.ring_entries - self.ring_reserved
    }

    /// Ring entries reserved and the total.
    pub fn ring_usage(&self) -> (usize, usize) {
        (self.ring_reserved, self.ring_entries)
    }

    /// Server sessions `ip` holds.
    pub fn sessions_of(&self, ip: Ipv4Addr) -> usize {
        self.index
            .get(&ip)
            .map_or(0, |&i| self.peers[i as usize].sessions)
    }

    /// One more session from `ip`: its account number (created at the first).
    pub fn attach(&mut self, ip: Ipv4Addr) -> u32 {
        if let Some(&i) = self.index.get(&ip) {
            self.peers[i as usize].sessions += 1;
            return i;
        }
        let acct = PeerUse {
            ip,
            sessions: 1,
            bytes: 0,
            ring: 0,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.peers[i as usize] = acct;
                i
            }
            None => {
                self.peers.push(acct);
                (self.peers.len() - 1) as u32
            }
        };
        self.index.insert(ip, i);
        i
    }

    /// One session fewer on account `i` (its charges released already);
    /// the account goes at the last.
    pub fn detach(&mut self, i: u32) {
        let Some(p) = self.peers.get_mut(i as usize).filter(|p| p.sessions > 0) else {
            return;
        };
        p.sessions -= 1;
        if p.sessions == 0 {
            debug_assert_eq!(p.bytes, 0, "an account freed with bytes charged");
            debug_assert_eq!(p.ring, 0, "an account freed with ring entries held");
            self.worker -= std::mem::take(&mut p.bytes);
            self.index.remove(&p.ip);
            self.free.push(i);
        }
    }

    /// Charges `bytes` to account `i` and the worker if both stay within
    /// their limits; whether it did (nothing changes otherwise). The pool's
    /// free buffers are made to fit beside the new charges (`charge_for`).
    #[inline]
    pub fn charge(&mut self, i: u32, bytes: usize) -> bool {
        self.charge_for(i, bytes, None, 0)
    }

    /// `charge`, for a buffer the caller takes from the pool next
    /// (`take_len` bytes: one free buffer of its class is not given back)
    /// and after which it returns `outgrown` bytes to the pool (the step a
    /// reassembly buffer grows out of; charged until now, and in the
    /// charge again until the copy is done). If the charge goes through,
    /// free buffers are given back until the account's charge plus the
    /// pool's free bytes plus `outgrown` fit `per_peer`, and the worker's
    /// the same `per_worker`: what the peer holds, live or left in the
    /// pool, stays within its limit at every step. (Charged bytes are
    /// buffers that exist, far below `usize::MAX`: the sums cannot
    /// overflow.)
    #[inline]
    pub fn charge_for(
        &mut self,
        i: u32,
        bytes: usize,
        take_len: Option<usize>,
        outgrown: usize,
    ) -> bool {
        let Some(p) = self.peers.get_mut(i as usize) else {
            return false;
        };
        let (worker, peer) = (self.worker + bytes, p.bytes + bytes);
        if worker > self.per_worker || peer > self.per_peer {
            return false;
        }
        self.worker = worker;
        p.bytes = peer;
        let room = (self.per_peer - peer)
            .min(self.per_worker - worker)
            .saturating_sub(outgrown);
        if self.pool.free_bytes() > room {
            self.trimmed += self.pool.trim(room, take_len) as u64;
        }
        true
    }

    /// Bytes of free buffers the pool gave back to fit beside a charge.
    pub fn trimmed_bytes(&self) -> u64 {
        self.trimmed
    }

    /// Gives back `bytes` charged to account `i`.
    #[inline]
    pub fn release(&mut self, i: u32, bytes: usize) {
        if let Some(p) = self.peers.get_mut(i as usize) {
            p.bytes -= bytes;
            self.worker -= bytes;
        }
    }

    /// Ring entries the sessions of `ip` reserve.
    pub fn ring_of(&self, ip: Ipv4Addr) -> usize {
        self.index
            .get(&ip)
            .map_or(0, |&i| self.peers[i as usize].ring)
    }

    /// Account `i`'s sessions reserve `n` more ring entries (`n` fewer
    /// with `back`).
    pub fn hold_ring(&mut self, i: u32, n: usize, back: bool) {
        if let Some(p) = self.peers.get_mut(i as usize) {
            p.ring = if back { p.ring - n } else { p.ring + n };
        }
    }

    /// Bytes charged over all peers.
    pub fn worker_bytes(&self) -> usize {
        self.worker
    }

    /// Bytes charged to `ip`.
    pub fn peer_bytes(&self, ip: Ipv4Addr) -> usize {
        self.index
            .get(&ip)
            .map_or(0, |&i| self.peers[i as usize].bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::msgbuf::MsgBuf;
    use super::*;

    #[test]
    fn default_is_valid_and_names_fields() {
        let b = MemBudget::default();
        b.validate(8 << 20).unwrap();
        let small = MemBudget {
            per_peer: 4 << 20,
            ..b
        };
        assert_eq!(small.validate(8 << 20).unwrap_err().field, "mem.per_peer");
        // 5 MB messages take 8 MiB buffers.
        let tight = MemBudget {
            per_peer: 5_000_000,
            per_worker: 5_000_000,
            ..b
        };
        assert_eq!(tight.validate(5_000_000).unwrap_err().field, "mem.per_peer");
        let inverted = MemBudget {
            per_worker: 64 << 20,
            ..b
        };
        assert_eq!(
            inverted.validate(1 << 20).unwrap_err().field,
            "mem.per_worker"
        );
        let zero = MemBudget {
            reassembly_timeout: Duration::ZERO,
            ..b
        };
        assert_eq!(
            zero.validate(1 << 20).unwrap_err().field,
            "mem.reassembly_timeout"
        );
    }

    #[test]
    fn charges_stay_within_both_limits() {
        let budget = MemBudget {
            per_worker: 300,
            per_peer: 200,
            ..MemBudget::default()
        };
        let mut l = Ledger::new(&budget, MsgPool::new(1 << 20), 0);
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let ia = l.attach(a);
        assert_eq!(l.attach(a), ia);
        let ib = l.attach(b);
        assert_eq!(l.sessions_of(a), 2);
        assert!(l.charge(ia, 200));
        assert!(!l.charge(ia, 1), "peer limit");
        assert!(l.charge(ib, 100));
        assert!(!l.charge(ib, 1), "worker limit");
        assert_eq!((l.worker_bytes(), l.peer_bytes(a)), (300, 200));
        l.release(ia, 200);
        assert!(l.charge(ib, 100));
        l.release(ib, 200);
        l.detach(ib);
        assert_eq!(l.sessions_of(b), 0);
        assert_eq!(l.attach(b), ib, "the number is reused");
        l.detach(ia);
        l.detach(ia);
        assert_eq!((l.sessions_of(a), l.worker_bytes()), (0, 0));
    }

    #[test]
    fn the_pool_s_free_buffers_fit_beside_every_charge() {
        let budget = MemBudget {
            per_worker: 26 << 10,
            per_peer: 20 << 10,
            ..MemBudget::default()
        };
        let mut l = Ledger::new(&budget, MsgPool::keeping(1 << 20, usize::MAX), 0);
        let (ia, ib) = (
            l.attach(Ipv4Addr::new(10, 0, 0, 1)),
            l.attach(Ipv4Addr::new(10, 0, 0, 2)),
        );
        // 16 KiB of free buffers: 8 + 4 + 2 + 2.
        let bufs: Vec<MsgBuf> = [8 << 10, 4 << 10, 2 << 10, 2 << 10]
            .iter()
            .map(|&n| l.pool.alloc(n))
            .collect();
        drop(bufs);
        assert_eq!(l.pool.free_bytes(), 16 << 10);
        // 4 KiB charged: 16 free fit beside it within 20.
        assert!(l.charge(ia, 4 << 10));
        assert_eq!((l.pool.free_bytes(), l.trimmed_bytes()), (16 << 10, 0));
        // 2 more: 6 charged leave room for 14 free: a 2 KiB buffer goes.
        assert!(l.charge(ia, 2 << 10));
        assert_eq!(l.pool.free_bytes(), 14 << 10);
        // An 8 KiB buffer taken next is spared; the 8 KiB outgrown after it
        // counts: 10 charged + 8 outgrown leave 2 besides it: the 2 KiB
        // and the 4 KiB buffers go.
        assert!(l.charge_for(ia, 4 << 10, Some(8 << 10), 8 << 10));
        assert_eq!(l.pool.free_bytes(), 8 << 10);
        assert_eq!(l.trimmed_bytes(), 8 << 10);
        // Over the peer's limit: refused, and nothing is trimmed.
        assert!(!l.charge(ia, 12 << 10));
        assert_eq!(l.pool.free_bytes(), 8 << 10);
        // The worker's limit (26) counts the pool too: 10 + 8 charged
        // leave 8, then 10 + 10 leave 6 (b's own limit would leave 10).
        assert!(l.charge(ib, 8 << 10));
        assert_eq!(l.pool.free_bytes(), 8 << 10);
        assert!(l.charge(ib, 2 << 10));
        assert_eq!(l.pool.free_bytes(), 0);
        assert_eq!(l.trimmed_bytes(), 16 << 10);
        // The pool never makes a charge fail: with it empty, the worker's
        // limit is reached by charges alone.
        assert!(l.charge(ib, 6 << 10));
        assert!(!l.charge(ib, 1));
    }

    #[test]
    fn ring_reservations_stay_within_the_ring() {
        let mut l = Ledger::new(&MemBudget::default(), MsgPool::new(1 << 20), 10);
        assert_eq!(l.reserve_ring(6), Ok(()));
        assert_eq!(
            l.reserve_ring(5),
            Err(RpcError::NoRingSpace {
                needed: 5,
                available: 4
            })
        );
        l.unreserve_ring(2);
        assert_eq!(l.ring_usage(), (4, 10));
        assert_eq!(l.ring_free(), 6);
    }
}
