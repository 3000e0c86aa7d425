//! Path selection at the sending NIC: the entropy value every packet
//! carries (the switches hash it onto an uplink, `routing.rs`), chosen per
//! flow (ECMP), at random per packet (oblivious spraying) or by REPS,
//! which recycles entropies whose packets came back unmarked; and the
//! receiving NIC's echo of (entropy, ECN) that REPS learns from.
//!
//! UEC puts path selection in the NIC's packet delivery layer, below the
//! transport, so it lives here, not in the engine's endpoints: the echo is
//! kept beside the lab's packet records (by packet number, and only under
//! REPS), as a NIC's hardware echo would be one of the acknowledgement's
//! headers.

use engine::rng::Rng;

/// How the sending NIC picks each packet's entropy (`--path-selection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathSelection {
    /// One entropy per flow, the hash of its 5-tuple: every packet of a
    /// session takes one path (ECMP).
    Ecmp,
    /// A random entropy per packet (seeded): spraying without feedback.
    Oblivious,
    /// REPS (Bonato et al., 2024; uet-htsim `UecMpReps`, `uec_mp.cpp`):
    /// entropies echoed without ECN are recycled, others explored anew.
    Reps,
}

impl PathSelection {
    /// Every selection, in the order they are listed to users.
    pub const ALL: [PathSelection; 3] = [
        PathSelection::Ecmp,
        PathSelection::Oblivious,
        PathSelection::Reps,
    ];

    /// The name on the command line and in the `-c` file.
    pub fn name(self) -> &'static str {
        match self {
            PathSelection::Ecmp => "ecmp",
            PathSelection::Oblivious => "oblivious",
            PathSelection::Reps => "reps",
        }
    }

    /// The selection called `s`; the error lists the valid names.
    pub fn from_name(s: &str) -> Result<PathSelection, String> {
        PathSelection::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = PathSelection::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown path selection {s:?} (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Entropy values oblivious spraying and REPS draw from: uet-htsim's
/// validation runs use `-paths 128` (`validate_load_balancing_failed_snd.txt`),
/// twice the 64 core paths between two pods of a 1,024-host fat tree.
pub(super) const ENTROPIES: u64 = 128;

/// REPS's buffer of recyclable entropies (uet-htsim `CircularBufferREPS`,
/// `buffer_reps.h`: `repsBufferSize` 8).
const REPS_SLOTS: usize = 8;

/// An echo field: set, the entropy in the low 16 bits, CE at bit 16.
const ECHO_SET: u32 = 1 << 31;
const ECHO_CE: u32 = 1 << 16;

/// One sender's REPS state towards one destination: a ring of the last
/// entropies that came back unmarked, of which the `fresh` newest are not
/// yet reused (uet-htsim's `add` / `remove_earliest_fresh`, without the
/// optional freezing mode on timeouts).
#[derive(Clone, Copy, Debug, Default)]
struct Reps {
    ring: [u16; REPS_SLOTS],
    /// Bit `i`: `ring[i]` holds an entropy (a byte, not eight `bool`s, so
    /// that a [`PeerSlot`] fits in half a cache line).
    valid: u8,
    /// Where the next good entropy goes.
    head: u8,
    /// Entries from `head - fresh` on not yet reused.
    fresh: u8,
}

impl Reps {
    /// A packet with entropy `ev` was echoed unmarked: it may be reused.
    fn good(&mut self, ev: u16) {
        let head = self.head as usize;
        if self.valid & (1 << head) == 0 {
            self.fresh += 1;
        }
        self.ring[head] = ev;
        self.valid |= 1 << head;
        self.head = ((head + 1) % REPS_SLOTS) as u8;
        self.fresh = self.fresh.min(REPS_SLOTS as u8);
    }

    /// The next packet's entropy: the earliest fresh good one, else a new
    /// one at random (exploration).
    fn next(&mut self, rng: &mut Rng) -> u32 {
        if self.fresh == 0 {
            return rng.below(ENTROPIES) as u32;
        }
        let at = (self.head as usize + REPS_SLOTS - self.fresh as usize) % REPS_SLOTS;
        self.valid &= !(1 << at);
        self.fresh -= 1;
        self.ring[at] as u32
    }
}

/// What one host's NIC keeps per peer.
#[derive(Clone, Copy, Debug, Default)]
struct PeerPath {
    /// REPS towards the peer.
    reps: Reps,
    /// The (entropy, CE) of the last frame from the peer, to echo in the
    /// next frame to it (0: nothing to echo). A newer arrival overwrites an
    /// unechoed one, as a coalesced acknowledgement echoes its trigger.
    echo: u32,
}

/// One entry of a host's peer table: the peer (`NO_PEER`: a free entry)
/// and its state, so that a lookup is one probe into one cache line where
/// a binary search over the host's peers took five dependent loads (the
/// costliest loads of a 1,024-host websearch under `uec`). 32 bytes and
/// aligned to them: at 36 bytes half the entries straddled two lines, and
/// the prefetch of an entry's first line left the `peer` field, at its
/// end, to miss.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct PeerSlot {
    peer: u32,
    path: PeerPath,
}

const _: () = assert!(core::mem::size_of::<PeerSlot>() == 32);

/// A free [`PeerSlot`].
const NO_PEER: u32 = u32::MAX;

/// Where one host's peer table sits in [`Paths::slots`]: its first entry
/// and its size less one (a power of two, at least twice its peers, so
/// that a probe seldom goes past its first entry).
#[derive(Clone, Copy, Debug, Default)]
struct Table {
    first: u32,
    mask: u32,
}

impl Table {
    /// The entry where the probe for `peer` starts (a multiplicative hash:
    /// hosts' numbers are dense, so their low bits alone would cluster).
    fn home(self, peer: u32) -> usize {
        let h = (u64::from(peer).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
        (h & self.mask) as usize
    }
}

/// Every NIC's path selection.
#[derive(Debug)]
pub(super) struct Paths {
    /// `None`: the regime's own (ECMP, or the switches' round robin).
    sel: Option<PathSelection>,
    rng: Rng,
    /// Per host, where its table of peers (either direction) sits in
    /// `slots`: open addressing, linear probing, built once (REPS only).
    tables: Vec<Table>,
    slots: Vec<PeerSlot>,
    /// The echo each packet in flight carries, by packet number (REPS
    /// only: the switches' 16-byte records stay as they were).
    echoes: Vec<u32>,
}

impl Paths {
    /// Selection `sel` for `hosts` hosts whose sessions join `pairs`
    /// (source, destination); per-peer state only under REPS.
    pub(super) fn new(
        sel: Option<PathSelection>,
        hosts: usize,
        pairs: impl Iterator<Item = (usize, usize)>,
        seed: u64,
    ) -> Paths {
        let mut peers = vec![
            Vec::new();
            if sel == Some(PathSelection::Reps) {
                hosts
            } else {
                0
            }
        ];
        if !peers.is_empty() {
            for (s, d) in pairs {
                peers[s].push(d as u32);
                peers[d].push(s as u32);
            }
            for p in &mut peers {
                p.sort_unstable();
                p.dedup();
            }
        }
        let free = PeerSlot {
            peer: NO_PEER,
            path: PeerPath::default(),
        };
        let (mut tables, mut slots) = (Vec::with_capacity(peers.len()), Vec::new());
        for p in &peers {
            let t = Table {
                first: slots.len() as u32,
                mask: ((2 * p.len()).next_power_of_two().max(2) - 1) as u32,
            };
            slots.resize(slots.len() + t.mask as usize + 1, free);
            for &peer in p {
                let mut i = t.home(peer);
                while slots[t.first as usize + i].peer != NO_PEER {
                    i = (i + 1) & t.mask as usize;
                }
                slots[t.first as usize + i].peer = peer;
            }
            tables.push(t);
        }
        Paths {
            sel,
            rng: Rng::new(seed ^ 0x9A7_45E1),
            tables,
            slots,
            echoes: Vec::new(),
        }
    }

    /// Whether the entropy of a frame is its 5-tuple's hash (ECMP, given or
    /// the regime's default): the caller hashes only then.
    pub(super) fn hashes(&self) -> bool {
        matches!(self.sel, None | Some(PathSelection::Ecmp))
    }

    /// Whether the NICs learn from echoes (REPS): only then does a
    /// receiving NIC read the frame for them.
    pub(super) fn learns(&self) -> bool {
        self.sel == Some(PathSelection::Reps)
    }

    /// The entropy of packet `pkt`, the frame host `h` sends to `dst`,
    /// whose 5-tuple hashes to `hash` (0 if not hashed); under REPS the
    /// packet also takes the echo owed to `dst`.
    #[inline]
    pub(super) fn on_send(&mut self, h: usize, dst: u32, hash: u64, pkt: u32) -> u32 {
        match self.sel {
            // Truncated: `entropy % n` is `hash % n` for the 1, 2 and 4
            // spines of the leaf-spine scenarios, so ECMP's choices (and
            // every result of the earlier tables) stay as they were.
            None | Some(PathSelection::Ecmp) => hash as u32,
            Some(PathSelection::Oblivious) => self.rng.below(ENTROPIES) as u32,
            Some(PathSelection::Reps) => {
                let (entropy, echo) = match self.peer(h, dst) {
                    Some(i) => {
                        let st = &mut self.slots[i].path;
                        let echo = core::mem::take(&mut st.echo);
                        (st.reps.next(&mut self.rng), echo)
                    }
                    None => (self.rng.below(ENTROPIES) as u32, 0),
                };
                let at = pkt as usize;
                if at >= self.echoes.len() {
                    // Grows with the packet pool, never per packet after.
                    self.echoes.resize((at + 1).next_power_of_two(), 0);
                }
                self.echoes[at] = echo;
                entropy
            }
        }
    }

    /// Packet `pkt`, a frame from `src` with `entropy`, CE-marked or not,
    /// reached host `h`'s NIC: REPS learns from its echo, and its own
    /// entropy waits to be echoed back.
    pub(super) fn on_arrival(&mut self, h: usize, src: u32, entropy: u32, ce: bool, pkt: u32) {
        if self.sel != Some(PathSelection::Reps) {
            return;
        }
        let echo = self.echoes.get(pkt as usize).copied().unwrap_or(0);
        let Some(i) = self.peer(h, src) else {
            return;
        };
        let st = &mut self.slots[i].path;
        if echo & (ECHO_SET | ECHO_CE) == ECHO_SET {
            st.reps.good(echo as u16);
        }
        st.echo = ECHO_SET | (entropy & 0xffff) | if ce { ECHO_CE } else { 0 };
    }

    /// Starts loading where the probe for `peer` in host `h`'s table
    /// starts (REPS only; a hint for the run loop, which knows an arrival
    /// an event ahead).
    pub(super) fn prefetch_peer(&self, h: usize, peer: u32) {
        if let Some(&t) = self.tables.get(h) {
            let at = t.first as usize + t.home(peer);
            engine::proto::hint::prefetch(self.slots.as_ptr().wrapping_add(at));
        }
    }

    /// Starts loading the echo packet `pkt` carries (REPS only), which
    /// its arrival reads.
    pub(super) fn prefetch_echo(&self, pkt: u32) {
        engine::proto::hint::prefetch(self.echoes.as_ptr().wrapping_add(pkt as usize));
    }

    /// Where `peer`'s entry in host `h`'s table sits in `slots`: a probe
    /// from its hash to it or to a free entry (none: not a peer), never a
    /// scan of all sessions.
    fn peer(&self, h: usize, peer: u32) -> Option<usize> {
        let t = *self.tables.get(h)?;
        if peer == NO_PEER {
            return None; // an unroutable frame's destination
        }
        let mut i = t.home(peer);
        loop {
            let at = t.first as usize + i;
            match self.slots[at].peer {
                p if p == peer => return Some(at),
                NO_PEER => return None,
                _ => i = (i + 1) & t.mask as usize,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_lists_the_names() {
        for p in PathSelection::ALL {
            assert_eq!(PathSelection::from_name(p.name()), Ok(p));
        }
        let e = PathSelection::from_name("adaptive").unwrap_err();
        assert!(e.contains("ecmp, oblivious, reps"), "{e}");
    }

    #[test]
    fn reps_reuses_good_entropies_in_order_and_explores_otherwise() {
        let mut rng = Rng::new(1);
        let mut r = Reps::default();
        r.good(5);
        r.good(9);
        assert_eq!(r.next(&mut rng), 5);
        assert_eq!(r.next(&mut rng), 9);
        // Nothing fresh: explore within the entropy space.
        let e = r.next(&mut rng);
        assert!((e as u64) < ENTROPIES);
        // More good ones than slots: the newest eight are kept.
        for ev in 0..12 {
            r.good(ev);
        }
        let got: Vec<u32> = (0..8).map(|_| r.next(&mut rng)).collect();
        assert_eq!(got, (4..12).collect::<Vec<_>>());
    }

    #[test]
    fn the_peer_table_finds_every_peer_and_nothing_else() {
        // Random pairs among 50 hosts against a sorted list per host.
        let mut rng = Rng::new(5);
        let pairs: Vec<(usize, usize)> = (0..400)
            .map(|_| (rng.below(50) as usize, rng.below(50) as usize))
            .collect();
        let p = Paths::new(Some(PathSelection::Reps), 50, pairs.iter().copied(), 1);
        let mut seen = std::collections::HashSet::new();
        for h in 0..50 {
            for peer in 0..52u32 {
                let model = pairs.iter().any(|&(s, d)| {
                    (s == h && d == peer as usize) || (d == h && s == peer as usize)
                });
                let got = p.peer(h, peer);
                assert_eq!(got.is_some(), model, "host {h}, peer {peer}");
                if let Some(i) = got {
                    assert_eq!(p.slots[i].peer, peer);
                    assert!(seen.insert(i), "one entry per (host, peer)");
                }
            }
            assert_eq!(p.peer(h, NO_PEER), None);
        }
    }

    #[test]
    fn the_echo_feeds_reps_only_when_unmarked() {
        let pairs = [(0usize, 1usize)].into_iter();
        let mut p = Paths::new(Some(PathSelection::Reps), 2, pairs, 3);
        // Packet 4 (no echo) brings host 1 entropy 77 unmarked from 0;
        // host 1's next packet to 0 (number 5) echoes it.
        p.on_send(0, 1, 0, 4);
        p.on_arrival(1, 0, 77, false, 4);
        p.on_send(1, 0, 0, 5);
        assert_eq!(p.echoes[5], ECHO_SET | 77);
        p.on_send(1, 0, 0, 6);
        assert_eq!(p.echoes[6], 0, "an echo goes once");
        // Host 0 gets the echo: its next packet to 1 reuses 77.
        p.on_arrival(0, 1, 3, false, 5);
        assert_eq!(p.on_send(0, 1, 0, 7), 77);
        // A marked echo is not reused.
        p.on_send(1, 0, 0, 8);
        p.echoes[8] = ECHO_SET | ECHO_CE | 55;
        p.on_arrival(0, 1, 3, false, 8);
        assert_ne!(p.on_send(0, 1, 0, 9), 55);
    }
}
