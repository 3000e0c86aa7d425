//! How several workers share one port: worker `i` listens on its UDP port
//! (`base + i`, or a client's port chosen for RSS, [`super::ports`]) and
//! owns RX queue `i`, so each frame must reach the queue of the worker it
//! is addressed to. [`decide`] picks, in this order:
//! 1. rte_flow rules "UDP destination (worker `i`'s port) -> queue `i`",
//!    where the driver accepts them (NICs with flow tables);
//! 2. RSS over the IPv4/UDP 4-tuple with the engine's key and table
//!    ([`RssLayout`]): the device spreads by hash, and clients choose their
//!    source port so the hash lands on the queue they address
//!    ([`super::RssPorts`], as eRPC does);
//! 3. the device's own pairing, where its peer's TX queue `i` arrives on
//!    RX queue `i` (memif, virtio/vhost, net_ring): nothing to program.
//!
//! Otherwise the port is unsteered: an error where steering was asked for
//! (a NIC), else the device spreads frames by its own rule.

use super::RssLayout;
use std::fmt;

/// What [`decide`] asks of a port's driver.
pub trait SteerDriver {
    /// Installs an rte_flow rule sending UDP destination `udp_port` to RX
    /// queue `queue`; the driver's reason when it refuses.
    fn flow(&mut self, udp_port: u16, queue: u16) -> Result<(), String>;
    /// Removes the rules installed so far (one was refused).
    fn flush_flows(&mut self);
    /// The RSS layout the port was configured with, if it hashes IPv4/UDP
    /// 4-tuples over its queues.
    fn rss(&self) -> Option<RssLayout>;
    /// Whether the peer's TX queue `i` arrives on RX queue `i`.
    fn pairs_queues(&self) -> bool;
}

/// How a port's frames reach their worker's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steering {
    /// One worker: nothing to steer.
    Single,
    /// rte_flow: worker `i`'s UDP destination port to queue `i`.
    Flow,
    /// RSS with the engine's key and table; clients choose source ports.
    Rss(RssLayout),
    /// The device pairs queue `i` with its peer's queue `i`.
    Positional,
    /// Nothing steers: the device spreads frames by its own rule.
    Unsteered,
}

impl fmt::Display for Steering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Steering::Single => f.write_str("steering none (one worker)"),
            Steering::Flow => f.write_str("steering rte_flow (worker i's udp port -> queue i)"),
            Steering::Rss(l) => write!(
                f,
                "steering rss (toeplitz, {} RETA entries over {} queues; clients choose source ports)",
                l.reta_size, l.queues
            ),
            Steering::Positional => f.write_str("steering positional (peer queue i -> queue i)"),
            Steering::Unsteered => f.write_str("steering none (the device's own spreading)"),
        }
    }
}

/// No way to steer several workers on a port that needs it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{workers} workers on {device} cannot be steered: rte_flow refused ({flow}), no RSS over IPv4/UDP, queues not paired; run one worker per process (one core in cores.*), one process per port or VF"
)]
pub struct SteerError {
    /// The port's device name.
    pub device: String,
    /// Workers (queues) on it.
    pub workers: u16,
    /// The driver's reason for refusing the flow rule.
    pub flow: String,
}

/// Picks how the workers, worker `i` listening on UDP port `ports[i]`,
/// share the port (see the module's order). `required`: the
/// port cannot deliver to the right worker by itself (a NIC), so no
/// method is an error; else it is [`Steering::Unsteered`].
pub fn decide(
    d: &mut impl SteerDriver,
    device: &str,
    ports: &[u16],
    required: bool,
) -> Result<Steering, SteerError> {
    let workers = ports.len() as u16;
    if workers <= 1 {
        return Ok(Steering::Single);
    }
    let mut refused = None;
    for (q, &port) in (0..workers).zip(ports) {
        if let Err(why) = d.flow(port, q) {
            if q > 0 {
                d.flush_flows();
            }
            refused = Some(why);
            break;
        }
    }
    let Some(flow) = refused else {
        return Ok(Steering::Flow);
    };
    if let Some(l) = d.rss().filter(|l| l.queues == workers) {
        return Ok(Steering::Rss(l));
    }
    if d.pairs_queues() {
        return Ok(Steering::Positional);
    }
    if required {
        return Err(SteerError {
            device: device.into(),
            workers,
            flow,
        });
    }
    Ok(Steering::Unsteered)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver with chosen abilities that records what was asked of it.
    #[derive(Default)]
    struct Fake {
        /// rte_flow accepts this many rules, then refuses (None: all).
        flow_limit: Option<u16>,
        rss: Option<RssLayout>,
        pairs: bool,
        rules: Vec<(u16, u16)>,
        flushed: bool,
    }

    impl SteerDriver for Fake {
        fn flow(&mut self, udp_port: u16, queue: u16) -> Result<(), String> {
            if self
                .flow_limit
                .is_some_and(|n| self.rules.len() as u16 >= n)
            {
                return Err("Function not implemented".into());
            }
            self.rules.push((udp_port, queue));
            Ok(())
        }
        fn flush_flows(&mut self) {
            self.rules.clear();
            self.flushed = true;
        }
        fn rss(&self) -> Option<RssLayout> {
            self.rss
        }
        fn pairs_queues(&self) -> bool {
            self.pairs
        }
    }

    const RSS2: RssLayout = RssLayout {
        reta_size: 128,
        queues: 2,
    };

    #[test]
    fn test_one_worker_asks_nothing() {
        let mut d = Fake {
            flow_limit: Some(0),
            ..Fake::default()
        };
        assert_eq!(decide(&mut d, "nic", &[31850], true), Ok(Steering::Single));
        assert!(d.rules.is_empty());
    }

    #[test]
    fn test_flow_first_where_accepted() {
        let mut d = Fake {
            rss: Some(RSS2),
            pairs: true,
            ..Fake::default()
        };
        let s = decide(&mut d, "nic", &[31850, 31851], true).unwrap();
        assert_eq!(s, Steering::Flow);
        assert_eq!(d.rules, vec![(31850, 0), (31851, 1)]);
        // A client's ports chosen for RSS are not consecutive: each
        // worker's own port gets its rule.
        let mut d = Fake::default();
        assert_eq!(
            decide(&mut d, "nic", &[40001, 40010], true),
            Ok(Steering::Flow)
        );
        assert_eq!(d.rules, vec![(40001, 0), (40010, 1)]);
    }

    #[test]
    fn test_refused_flow_falls_back_to_rss_and_removes_partial_rules() {
        let mut d = Fake {
            flow_limit: Some(1),
            rss: Some(RSS2),
            ..Fake::default()
        };
        assert_eq!(
            decide(&mut d, "nic", &[31850, 31851], true),
            Ok(Steering::Rss(RSS2))
        );
        assert!(d.flushed && d.rules.is_empty());
    }

    #[test]
    fn test_no_flow_no_rss_pairs_positionally() {
        let mut d = Fake {
            flow_limit: Some(0),
            pairs: true,
            ..Fake::default()
        };
        assert_eq!(
            decide(&mut d, "net_memif0", &[31850, 31851], true),
            Ok(Steering::Positional)
        );
        assert!(!d.flushed, "nothing installed, nothing to flush");
    }

    #[test]
    fn test_rss_over_other_queue_count_is_not_used() {
        let mut d = Fake {
            flow_limit: Some(0),
            rss: Some(RssLayout {
                reta_size: 128,
                queues: 4,
            }),
            pairs: true,
            ..Fake::default()
        };
        assert_eq!(decide(&mut d, "x", &[1, 2], true), Ok(Steering::Positional));
    }

    #[test]
    fn test_nothing_works_is_an_error_only_when_required() {
        let mut d = Fake {
            flow_limit: Some(0),
            ..Fake::default()
        };
        let e = decide(&mut d, "0000:01:00.0", &[31850, 31851], true).unwrap_err();
        assert_eq!(e.workers, 2);
        assert!(e.to_string().contains("0000:01:00.0"), "{e}");
        assert!(e.to_string().contains("Function not implemented"), "{e}");
        assert_eq!(
            decide(&mut d, "net_null0", &[31850, 31851], false),
            Ok(Steering::Unsteered)
        );
    }

    #[test]
    fn test_display_names_the_method() {
        assert!(Steering::Rss(RSS2).to_string().starts_with("steering rss"));
        assert!(Steering::Positional.to_string().contains("positional"));
        assert!(Steering::Flow.to_string().contains("rte_flow"));
    }
}
