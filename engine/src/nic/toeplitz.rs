//! The Toeplitz hash of receive-side scaling, and the RSS layout a server
//! programs (key and redirection table) so that a client can choose its UDP
//! source port to land on a given server queue, as eRPC does: the NIC hashes
//! (source IP, destination IP, source port, destination port) with the key,
//! and the hash's low bits index the redirection table (RETA), whose entry
//! is the queue.

use std::net::Ipv4Addr;

/// The RSS key the engine programs: Microsoft's reference key (the default
/// of most NIC drivers, and the one its published test vectors use). Only
/// its first 16 bytes matter for an IPv4 4-tuple (96 input bits + 32);
/// a device with a longer key gets it padded with zeros.
pub const RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// The Toeplitz hash of `input` under `key`: for every set input bit
/// (most significant first), XOR in the 32 key bits starting at that bit.
/// `key` must be at least `input.len() + 4` bytes long.
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    assert!(key.len() >= input.len() + 4, "Toeplitz key too short");
    let mut out = 0u32;
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    for (i, &byte) in input.iter().enumerate() {
        let next = key[i + 4];
        for b in 0..8 {
            if byte & (0x80 >> b) != 0 {
                out ^= window;
            }
            window = (window << 1) | u32::from((next >> (7 - b)) & 1);
        }
    }
    out
}

/// The IPv4/UDP 4-tuple hash, fields in the order NICs hash them.
pub fn hash_ipv4_udp(key: &[u8], src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16)) -> u32 {
    let mut input = [0u8; 12];
    input[0..4].copy_from_slice(&src.0.octets());
    input[4..8].copy_from_slice(&dst.0.octets());
    input[8..10].copy_from_slice(&src.1.to_be_bytes());
    input[10..12].copy_from_slice(&dst.1.to_be_bytes());
    toeplitz(key, &input)
}

/// What a server's port hashes with: [`RSS_KEY`] and a redirection table
/// of `reta_size` entries, entry `j` naming queue `j % queues`. The port
/// uses RSS only when `queues` divides `reta_size`, so a frame reaches
/// queue `hash % queues` whatever the table's size: a client needs only
/// the server's worker count ([`RssLayout::seen_by_client`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RssLayout {
    /// Redirection table entries (the device's `reta_size`).
    pub reta_size: u16,
    /// RX queues the table spreads over (the server's workers).
    pub queues: u16,
}

impl RssLayout {
    /// The layout as a client computes it for a server of `queues`
    /// workers (the same queues as any table size `queues` divides).
    pub fn seen_by_client(queues: u16) -> RssLayout {
        RssLayout {
            reta_size: queues,
            queues,
        }
    }

    /// The queue the redirection table's entry `j` names, `j % queues`:
    /// what a server programs (`dpdk::offload::program_reta`) and what
    /// [`Self::queue_of`] looks up.
    pub fn entry(&self, j: u32) -> u16 {
        (j % u32::from(self.queues.max(1))) as u16
    }

    /// The queue a frame with this 4-tuple reaches.
    pub fn queue_of(&self, src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16)) -> u16 {
        let h = hash_ipv4_udp(&RSS_KEY, src, dst);
        self.entry(h % u32::from(self.reta_size.max(1)))
    }

    /// The first UDP source port at or above `from` from which a client at
    /// `src_ip` reaches queue `queue` of the server at `dst`; `None` if no
    /// port up to 65535 does (never, for a queue the table names: about
    /// one port in `queues` does).
    pub fn source_port(
        &self,
        src_ip: Ipv4Addr,
        dst: (Ipv4Addr, u16),
        queue: u16,
        from: u16,
    ) -> Option<u16> {
        self.source_port_for(src_ip, &[(dst, queue)], from, 1)
    }

    /// The first UDP source port `from + k * step` from which a client at
    /// `src_ip` reaches every `(server address, queue)` of `targets` (one
    /// client endpoint whose sessions go to several server workers); the
    /// stride keeps the ports of `step` client workers apart. Toeplitz is
    /// linear (XOR), so the queues several server ports give one source
    /// port are tied: `None` when the targets contradict that tie, and then
    /// each session needs a source port of its own.
    pub fn source_port_for(
        &self,
        src_ip: Ipv4Addr,
        targets: &[((Ipv4Addr, u16), u16)],
        from: u16,
        step: u16,
    ) -> Option<u16> {
        (from..=u16::MAX).step_by(step.max(1) as usize).find(|&p| {
            targets
                .iter()
                .all(|&(dst, q)| self.queue_of((src_ip, p), dst) == q)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(a: [u8; 4]) -> Ipv4Addr {
        Ipv4Addr::from(a)
    }

    /// Microsoft's RSS verification vectors (IPv4 with ports), as DPDK's
    /// test_thash.c repeats them: (destination, source, hash).
    #[test]
    fn test_microsoft_vectors() {
        let v = [
            (
                ([161, 142, 100, 80], 1766),
                ([66, 9, 149, 187], 2794),
                0x51cc_c178u32,
            ),
            (
                ([65, 69, 140, 83], 4739),
                ([199, 92, 111, 2], 14230),
                0xc626_b0ea,
            ),
            (
                ([12, 22, 207, 184], 38024),
                ([24, 19, 198, 95], 12898),
                0x5c2b_394a,
            ),
            (
                ([209, 142, 163, 6], 2217),
                ([38, 27, 205, 30], 48228),
                0xafc7_327f,
            ),
            (
                ([202, 188, 127, 2], 1303),
                ([153, 39, 163, 191], 44251),
                0x10e8_28a2,
            ),
        ];
        for ((d, dp), (s, sp), want) in v {
            let got = hash_ipv4_udp(&RSS_KEY, (ip(s), sp), (ip(d), dp));
            assert_eq!(got, want, "{s:?}:{sp} -> {d:?}:{dp}");
        }
    }

    #[test]
    fn test_source_port_lands_on_every_queue() {
        let client = ip([10, 0, 0, 2]);
        let server = (ip([10, 0, 0, 1]), 31851);
        for (reta_size, queues) in [(128, 2), (128, 3), (512, 4), (64, 1)] {
            let l = RssLayout { reta_size, queues };
            for q in 0..queues {
                let p = l.source_port(client, server, q, 31850).expect("a port");
                assert_eq!(l.queue_of((client, p), server), q);
                assert!(p >= 31850);
            }
        }
    }

    #[test]
    fn test_client_view_agrees_with_any_table_the_queues_divide() {
        let c = RssLayout::seen_by_client(4);
        let client = ip([192, 168, 1, 20]);
        for reta_size in [64, 128, 512] {
            let server = RssLayout {
                reta_size,
                queues: 4,
            };
            for p in 1000..1200 {
                let dst = (ip([192, 168, 1, 10]), 31850);
                assert_eq!(
                    c.queue_of((client, p), dst),
                    server.queue_of((client, p), dst)
                );
            }
        }
    }

    #[test]
    fn test_toeplitz_is_linear_so_server_ports_tie_the_queues() {
        // h(p, d1) ^ h(p, d2) does not depend on the source port p: the
        // queues two server ports give one client port are tied, so one
        // port reaches several workers only where the tie allows (else
        // each session needs a port of its own, as eRPC gives it).
        let l = RssLayout::seen_by_client(2);
        let client = ip([10, 0, 0, 2]);
        let (d1, d2) = ((ip([10, 0, 0, 1]), 31850), (ip([10, 0, 0, 1]), 31851));
        let q = |p: u16, d| l.queue_of((client, p), d);
        let tie = q(40000, d1) ^ q(40000, d2);
        for p in 40000..40200 {
            assert_eq!(q(p, d1) ^ q(p, d2), tie, "port {p}");
        }
        for (w, step) in [(0u16, 2u16), (1, 2)] {
            let ok = [(d1, 0), (d2, tie)];
            let p = l
                .source_port_for(client, &ok, 31850 + w, step)
                .expect("a port");
            assert_eq!((p - 31850 - w) % step, 0, "worker {w}'s stride");
            assert_eq!((q(p, d1), q(p, d2)), (0, tie));
            let never = [(d1, 0), (d2, 1 - tie)];
            assert_eq!(l.source_port_for(client, &never, 31850 + w, step), None);
        }
    }

    #[test]
    fn test_queue_of_spreads_ports() {
        // Not every source port lands on one queue: the hash spreads them.
        let l = RssLayout {
            reta_size: 128,
            queues: 2,
        };
        let server = (ip([10, 0, 0, 1]), 31850);
        let hits = (40000..40064)
            .filter(|&p| l.queue_of((ip([10, 0, 0, 2]), p), server) == 0)
            .count();
        assert!((16..=48).contains(&hits), "{hits} of 64 on queue 0");
    }
}
