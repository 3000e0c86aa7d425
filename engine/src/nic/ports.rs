//! The UDP port a client worker sends from when its server's port steers
//! by RSS (`link.client_port = "rss"`, as eRPC does): chosen so that a
//! request to each server worker it targets hashes to that worker's queue
//! under the server's [`RssLayout`], and, with several client workers, so
//! that the answer hashes back to the worker's own queue under the
//! client's. Pure arithmetic on the config: a client knows both ends'
//! addresses and worker counts before any port opens.

use super::RssLayout;
use std::net::Ipv4Addr;

/// Both ends of a run, as the client's port choice sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RssPorts {
    /// The client's IPv4 address (every client worker's).
    pub client_ip: Ipv4Addr,
    /// The server's IPv4 address.
    pub server_ip: Ipv4Addr,
    /// Worker 0's UDP port on both sides (`link.udp_port`): server worker
    /// `j` listens on `base + j`, and client worker `i` searches from
    /// `base + i`.
    pub base: u16,
    /// The server's workers (RX queues its RSS spreads over).
    pub server_workers: u16,
    /// The client's workers (its own port's RX queues).
    pub client_workers: u16,
}

/// No UDP port carries one client worker's sessions to all its targets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no UDP source port of client worker {worker} reaches server workers {targets:?} together under RSS (the Toeplitz hash is linear: the queues the server ports {ports:?} give one source port are tied{both})"
)]
pub struct NoRssPort {
    /// The client worker.
    pub worker: u16,
    /// The server workers its sessions target.
    pub targets: Vec<u16>,
    /// Their UDP ports.
    pub ports: Vec<u16>,
    /// Text naming the client's own queue constraint, when it applies.
    both: &'static str,
}

/// Worker `index`'s UDP port: `ports[index]` where the list names it (a
/// client's ports chosen by [`RssPorts::port`]), else `base + index`.
pub fn worker_port(ports: &[u16], base: u16, index: u16) -> u16 {
    ports
        .get(usize::from(index))
        .copied()
        .unwrap_or(base.wrapping_add(index))
}

impl RssPorts {
    /// The server's RSS as the client computes it (any table size the
    /// server's queue count divides gives the same queue, `RssLayout`).
    pub fn server_rss(&self) -> RssLayout {
        RssLayout::seen_by_client(self.server_workers)
    }

    /// The client port's own RSS (its answers' queues).
    pub fn client_rss(&self) -> RssLayout {
        RssLayout::seen_by_client(self.client_workers)
    }

    /// Server worker `j`'s address.
    pub fn server(&self, j: u16) -> (Ipv4Addr, u16) {
        (self.server_ip, self.base.wrapping_add(j))
    }

    /// Whether client worker `worker` sending from `port` reaches server
    /// worker `j` (the request lands on server queue `j`) and gets its
    /// answer back (it lands on client queue `worker`).
    pub fn reaches(&self, worker: u16, port: u16, j: u16) -> bool {
        let (me, srv) = ((self.client_ip, port), self.server(j));
        self.server_rss().queue_of(me, srv) == j && self.client_rss().queue_of(srv, me) == worker
    }

    /// Client worker `worker`'s port: the first `base + worker + k x
    /// client_workers` (the stride keeps the workers' ports apart) from
    /// which every server worker of `targets` is reached
    /// ([`Self::reaches`]). One target always has one (about one port in
    /// `server_workers x client_workers` does); several may not, since the
    /// hash ties the queues the server's ports give one source port.
    pub fn port(&self, worker: u16, targets: &[u16]) -> Result<u16, NoRssPort> {
        let from = u32::from(self.base) + u32::from(worker);
        let step = usize::from(self.client_workers.max(1));
        (from..=u32::from(u16::MAX))
            .step_by(step)
            .map(|p| p as u16)
            .find(|&p| targets.iter().all(|&j| self.reaches(worker, p, j)))
            .ok_or_else(|| NoRssPort {
                worker,
                targets: targets.to_vec(),
                ports: targets.iter().map(|&j| self.server(j).1).collect(),
                both: if self.client_workers > 1 {
                    ", and so are their answers' queues on the client's port"
                } else {
                    ""
                },
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(server_workers: u16, client_workers: u16) -> RssPorts {
        RssPorts {
            client_ip: Ipv4Addr::new(10, 0, 0, 2),
            server_ip: Ipv4Addr::new(10, 0, 0, 1),
            base: 31851,
            server_workers,
            client_workers,
        }
    }

    /// The queue a frame reaches on a port whose table the engine
    /// programmed (`RssLayout::entry`, what `program_reta` writes) with
    /// `reta_size` entries.
    fn table_queue(l: RssLayout, src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16)) -> u16 {
        let h = crate::nic::hash_ipv4_udp(&crate::nic::RSS_KEY, src, dst);
        l.entry(h % u32::from(l.reta_size))
    }

    #[test]
    fn test_each_worker_reaches_its_target_under_any_table_size() {
        // One session per client worker, to server worker (c mod servers):
        // the port found lands the request on that server queue and the
        // answer on the client worker's queue, for each device table size
        // the queue counts divide.
        for (servers, clients) in [(2, 1), (2, 2), (4, 2), (3, 3), (4, 4), (8, 3)] {
            let p = plan(servers, clients);
            let mut seen = Vec::new();
            for c in 0..clients {
                let j = c % servers;
                let port = p.port(c, &[j]).expect("one target always has a port");
                assert_eq!((port - 31851 - c) % clients, 0, "worker {c}'s stride");
                assert!(!seen.contains(&port), "two workers on port {port}");
                seen.push(port);
                for reta in [64u16, 128, 512] {
                    let (me, srv) = ((p.client_ip, port), p.server(j));
                    if reta % servers == 0 {
                        let s = RssLayout {
                            reta_size: reta,
                            queues: servers,
                        };
                        assert_eq!(
                            table_queue(s, me, srv),
                            j,
                            "{servers}x{clients} reta {reta}"
                        );
                    }
                    if reta % clients == 0 {
                        let cl = RssLayout {
                            reta_size: reta,
                            queues: clients,
                        };
                        assert_eq!(
                            table_queue(cl, srv, me),
                            c,
                            "{servers}x{clients} reta {reta}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn test_several_targets_share_a_port_only_where_the_hash_ties_allow() {
        // One client worker, its sessions over both server workers: a port
        // exists exactly when the tie of the two server ports allows it.
        let p = plan(2, 1);
        let l = p.server_rss();
        let tie = l.queue_of((p.client_ip, 40000), p.server(0))
            ^ l.queue_of((p.client_ip, 40000), p.server(1));
        match p.port(0, &[0, 1]) {
            Ok(port) => {
                assert_eq!(tie, 1);
                assert!(p.reaches(0, port, 0) && p.reaches(0, port, 1));
            }
            Err(e) => {
                assert_eq!(tie, 0);
                assert_eq!((e.worker, e.targets.clone()), (0, vec![0, 1]));
                assert_eq!(e.ports, vec![31851, 31852]);
                assert!(e.to_string().contains("tied"), "{e}");
            }
        }
        // Some base gives each outcome: the refusal is the hash's, not a
        // search bound's.
        let outcome = |base| RssPorts { base, ..p }.port(0, &[0, 1]).is_ok();
        let bases: Vec<bool> = (31000..31064).map(outcome).collect();
        assert!(bases.contains(&true) && bases.contains(&false), "{bases:?}");
    }

    #[test]
    fn test_one_queue_each_side_takes_the_fixed_port() {
        // Nothing to steer: base + worker is the first candidate and fits.
        assert_eq!(plan(1, 1).port(0, &[0]), Ok(31851));
    }
}
