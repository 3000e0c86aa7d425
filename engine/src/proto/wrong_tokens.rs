//! Wrong tokens, tallied per source address: a packet that names one of our
//! sessions with a token not its own, or a ConnectReq that claims a live
//! session's key with a new token. Each source gets `limit` of them a
//! second; past it, the replies and probes a stranger could otherwise draw
//! from this server (a DisconnectResp(UnknownSession), a restart probe
//! towards a live client) stop for that source until the second is over,
//! and the source is reported once (`Event::WrongTokens`). Fixed memory:
//! one direct-mapped table of `SLOTS` sources, allocated once; a source
//! that lands on a taken slot evicts the older one (the tally is a report
//! and a brake, not an exact count: with 64-bit server tokens, guessing
//! is hopeless whatever the rate).

use crate::time::Instant;
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// Sources tallied at once.
const SLOTS: usize = 256;
/// One tally window.
const WINDOW_NS: u64 = 1_000_000_000;
/// Crossings waiting to be reported; more are counted, not queued.
const REPORTS: usize = 16;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    ip: u32,
    port: u16,
    /// The window (`now / WINDOW_NS`) `count` is for.
    window: u64,
    count: u32,
}

/// What one more wrong token from a source means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tally {
    /// Within the source's limit: answer as usual.
    Within,
    /// This one crossed the limit: withhold replies, and report the source
    /// (with its count this window).
    Crossed(u32),
    /// Already over the limit this window: withhold replies.
    Over,
}

/// The per-source tally of wrong tokens.
#[derive(Debug)]
pub(crate) struct WrongTokens {
    slots: Box<[Slot]>,
    limit: u32,
    /// Sources that crossed their limit, not yet reported.
    reports: VecDeque<WrongTokenReport>,
    /// Crossings not reported because `reports` was full.
    pub unreported: u64,
}

/// A source that sent more wrong tokens in one second than its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongTokenReport {
    /// The source address of the packets.
    pub ip: Ipv4Addr,
    /// Their source port.
    pub port: u16,
    /// Wrong tokens from it so far this second (the limit plus one: the
    /// report is made when it is crossed).
    pub count: u32,
}

impl WrongTokens {
    /// A tally allowing `limit` wrong tokens per source per second.
    pub fn new(limit: u32) -> Self {
        WrongTokens {
            slots: vec![Slot::default(); SLOTS].into_boxed_slice(),
            limit,
            reports: VecDeque::with_capacity(REPORTS),
            unreported: 0,
        }
    }

    /// Counts one wrong token from `ip:port` at `now`; a crossing of the
    /// limit is queued for [`next_report`](Self::next_report).
    pub fn note(&mut self, now: Instant, ip: Ipv4Addr, port: u16) -> Tally {
        let tally = self.count(now, ip, port);
        if let Tally::Crossed(count) = tally {
            if self.reports.len() < REPORTS {
                self.reports.push_back(WrongTokenReport { ip, port, count });
            } else {
                self.unreported += 1;
            }
        }
        tally
    }

    /// Whether `ip:port` is over its limit this second (nothing counted).
    pub fn over(&self, now: Instant, ip: Ipv4Addr, port: u16) -> bool {
        let ip = u32::from(ip);
        let s = &self.slots[index(ip, port)];
        s.ip == ip && s.port == port && s.window == now.0 / WINDOW_NS && s.count > self.limit
    }

    /// The oldest crossing not yet reported.
    #[inline]
    pub fn next_report(&mut self) -> Option<WrongTokenReport> {
        self.reports.pop_front()
    }

    fn count(&mut self, now: Instant, ip: Ipv4Addr, port: u16) -> Tally {
        let ip = u32::from(ip);
        let window = now.0 / WINDOW_NS;
        let slot = &mut self.slots[index(ip, port)];
        if slot.ip != ip || slot.port != port || slot.window != window {
            *slot = Slot {
                ip,
                port,
                window,
                count: 0,
            };
        }
        slot.count = slot.count.saturating_add(1);
        match slot.count.cmp(&self.limit) {
            std::cmp::Ordering::Greater if slot.count == self.limit + 1 => {
                Tally::Crossed(slot.count)
            }
            std::cmp::Ordering::Greater => Tally::Over,
            _ => Tally::Within,
        }
    }
}

/// A source's slot: a multiplicative hash of address and port.
fn index(ip: u32, port: u16) -> usize {
    let k = (u64::from(ip) << 16 | u64::from(port)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (k >> 56) as usize % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_source_crosses_its_limit_once_per_second() {
        let mut w = WrongTokens::new(3);
        let a = Ipv4Addr::new(10, 0, 0, 9);
        let t = Instant(5 * WINDOW_NS);
        let got: Vec<Tally> = (0..6).map(|_| w.note(t, a, 7)).collect();
        use Tally::*;
        assert_eq!(got, [Within, Within, Within, Crossed(4), Over, Over]);
        let report = WrongTokenReport {
            ip: a,
            port: 7,
            count: 4,
        };
        assert_eq!(w.next_report(), Some(report));
        assert_eq!(w.next_report(), None);
        assert!(w.over(t, a, 7));
        assert!(!w.over(t, a, 8));
        // Another source has a limit of its own.
        assert_eq!(w.note(t, Ipv4Addr::new(10, 0, 0, 8), 7), Within);
        assert_eq!(w.note(t, a, 8), Within);
        // The next second starts afresh.
        let later = Instant(t.0 + WINDOW_NS + MS);
        assert_eq!(w.note(later, a, 7), Within);
    }

    #[test]
    fn the_table_is_fixed_and_sources_spread_over_it() {
        let mut w = WrongTokens::new(1);
        let t = Instant::ZERO;
        let mut used = std::collections::HashSet::new();
        for i in 0..1000u32 {
            let ip = Ipv4Addr::from(0x0a00_0000 + i);
            used.insert(index(u32::from(ip), 4000));
            w.note(t, ip, 4000);
        }
        assert!(used.len() > SLOTS * 9 / 10, "{} slots used", used.len());
        // 1000 sources cross a limit of 1 (two wrong tokens each in a
        // row): the queue keeps 16 reports, the rest are counted.
        let mut w = WrongTokens::new(1);
        for i in 0..1000u32 {
            let ip = Ipv4Addr::from(0x0b00_0000 + i);
            assert_eq!(w.note(t, ip, 4000), Tally::Within);
            assert_eq!(w.note(t, ip, 4000), Tally::Crossed(2));
        }
        assert_eq!(w.reports.len(), REPORTS);
        assert_eq!(w.unreported, 1000 - REPORTS as u64);
    }
}
