//! The kernel link: one protocol endpoint over a plain UDP socket, no DPDK
//! and no EAL, so a host without DPDK can call a DPDK server with the same
//! wire format. Only the I/O differs from the DPDK run loop: the endpoint
//! (`proto`) still takes every frame and the time from its caller, and
//! [`KernelEndpoint::run_once`] is the same recipe (one clock read, a
//! burst of received datagrams handed to the endpoint, timers, everything
//! it has to send), with the socket in place of the queue pair and
//! `datagram` translating between frames and datagrams.
//!
//! What the kernel does instead of the engine: it writes and checks the
//! Ethernet/IPv4/UDP headers, picks the route and resolves the server's
//! MAC (this engine answers no ARP, so the client host needs a neighbour
//! entry for the server's IP: `scripts/kernel-link.sh`). The socket binds
//! the endpoint's own address, so the server answers the frame's source
//! as it does for any client. IPv4 ECN bits the endpoint sets are not
//! carried (the kernel writes its own TOS), so DCQCN has no marks here.

mod datagram;

pub use datagram::{datagram_of, frame_of, HEADROOM, KERNEL_PEER_MAC};

use crate::proto::{Delivery, Endpoint, EndpointConfig, EndpointConfigError};
use crate::time::Instant;
use std::io::ErrorKind;
use std::net::{SocketAddrV4, UdpSocket};

/// Datagrams one `run_once` takes from the socket at most, as an RX burst
/// bounds the DPDK loop's: timers and transmits get their turn under load.
pub const RX_BURST: usize = 32;

/// The largest UDP payload a datagram can carry: the receive buffer holds
/// it whole, so the kernel never truncates one silently.
const MAX_DATAGRAM: usize = u16::MAX as usize;

/// Why a kernel endpoint could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The socket could not bind the endpoint's address (not an address of
    /// this host, or the port is taken).
    #[error("cannot bind UDP {addr}: {source} (the kernel link binds link.client_ip, which must be an address of this host or its network namespace: scripts/kernel-link.sh up)")]
    Bind {
        /// The endpoint's address.
        addr: SocketAddrV4,
        /// The kernel's answer.
        source: std::io::Error,
    },
    /// A socket option the loop needs was refused.
    #[error("UDP socket: {0}")]
    Socket(#[from] std::io::Error),
    /// The endpoint configuration did not validate.
    #[error("endpoint configuration: {0}")]
    Config(#[from] EndpointConfigError),
}

/// What the socket side of a kernel endpoint counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SocketCounters {
    /// Iterations of `run_once`.
    pub loops: u64,
    /// Datagrams received and handed to the endpoint.
    pub rx_datagrams: u64,
    /// Datagrams sent.
    pub tx_datagrams: u64,
    /// Frames not sent because the socket's buffer was full (the protocol
    /// retransmits them, as it does a frame a full TX ring refused).
    pub tx_would_block: u64,
    /// Frames not sent because the kernel refused them (no route, ...);
    /// the first such error is kept ([`KernelEndpoint::send_error`]).
    pub tx_errors: u64,
    /// Frames the endpoint emitted that were not IPv4/UDP (never expected).
    pub tx_not_udp: u64,
}

/// One endpoint whose frames travel over a kernel UDP socket; see the
/// module's documentation. Not `Sync`: one per thread, as `Rpc`.
#[derive(Debug)]
pub struct KernelEndpoint {
    ep: Endpoint,
    sock: UdpSocket,
    /// What the endpoint's clock counts from (monotonic).
    epoch: std::time::Instant,
    now: Instant,
    /// A received datagram at `HEADROOM`, its rebuilt headers in front.
    rx: Vec<u8>,
    /// Where `poll_transmit` writes each frame.
    tx: Vec<u8>,
    counters: SocketCounters,
    send_error: Option<std::io::Error>,
}

impl KernelEndpoint {
    /// The endpoint of `cfg` on a non-blocking UDP socket bound to
    /// `cfg.local` (its IP and port; its MAC only addresses the frames the
    /// endpoint is handed).
    pub fn bind(cfg: EndpointConfig) -> Result<Self, KernelError> {
        let addr = SocketAddrV4::new(cfg.local.ip, cfg.local.port);
        let sock = UdpSocket::bind(addr).map_err(|source| KernelError::Bind { addr, source })?;
        sock.set_nonblocking(true)?;
        let ep = Endpoint::new(cfg)?;
        let tx = vec![0u8; ep.min_tx_buf_len()];
        let epoch = std::time::Instant::now();
        Ok(KernelEndpoint {
            ep,
            sock,
            epoch,
            now: Instant::ZERO,
            rx: vec![0u8; HEADROOM + MAX_DATAGRAM],
            tx,
            counters: SocketCounters::default(),
            send_error: None,
        })
    }

    /// The protocol endpoint (stats, session states, ...).
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }
    /// The protocol endpoint, for commands (`connect`, `enqueue_request`,
    /// ...), which take [`now`](Self::now).
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.ep
    }
    /// The time read at the start of the current iteration.
    pub fn now(&self) -> Instant {
        self.now
    }
    /// The clock, read now (monotonic, nanoseconds since `bind`).
    pub fn clock(&self) -> Instant {
        Instant::from_nanos(self.epoch.elapsed().as_nanos() as u64)
    }
    /// The socket side's counters.
    pub fn counters(&self) -> &SocketCounters {
        &self.counters
    }
    /// The first error the kernel gave on a send, if any (e.g. "Network is
    /// unreachable" when no route leads to the server).
    pub fn send_error(&self) -> Option<&std::io::Error> {
        self.send_error.as_ref()
    }

    /// One iteration: read the clock, hand up to [`RX_BURST`] received
    /// datagrams to the endpoint (each delivery to `on`, with the endpoint
    /// to answer on), run due timers, send everything the endpoint has.
    pub fn run_once<F>(&mut self, mut on: F)
    where
        F: FnMut(&mut Endpoint, Instant, Delivery<'_>),
    {
        self.now = self.clock();
        self.counters.loops += 1;
        for _ in 0..RX_BURST {
            let (len, from) = match self.sock.recv_from(&mut self.rx[HEADROOM..]) {
                Ok((n, std::net::SocketAddr::V4(a))) => (n, a),
                // An IPv6 peer cannot be a session of this (IPv4) engine.
                Ok(_) => continue,
                Err(_) => break, // WouldBlock, or an ICMP error for a past send
            };
            let local = self.ep.local_addr();
            let Some(n) = frame_of(&mut self.rx, len, from, &local) else {
                continue;
            };
            self.counters.rx_datagrams += 1;
            if let Some(d) = self.ep.handle_frame(self.now, &self.rx[..n]) {
                on(&mut self.ep, self.now, d);
            }
        }
        if self.ep.poll_timeout().is_some_and(|t| self.now >= t) {
            self.ep.handle_timeout(self.now);
        }
        self.transmit();
    }

    /// Sends every frame the endpoint has, as datagrams.
    fn transmit(&mut self) {
        while let Some(n) = self.ep.poll_transmit(self.now, &mut self.tx) {
            let Some((to, payload)) = datagram_of(&self.tx[..n]) else {
                self.counters.tx_not_udp += 1;
                continue;
            };
            match self.sock.send_to(payload, to) {
                Ok(_) => self.counters.tx_datagrams += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.counters.tx_would_block += 1,
                Err(e) => {
                    self.counters.tx_errors += 1;
                    self.send_error.get_or_insert(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{EndpointAddr, Event, PeerAddr, SessionState};
    use crate::wire::MacAddr;
    use std::net::Ipv4Addr;

    fn cfg(port: u16) -> EndpointConfig {
        let local = EndpointAddr {
            mac: MacAddr([0x02, 0, 0, 0, 0, port as u8]),
            ip: Ipv4Addr::LOCALHOST,
            port,
        };
        EndpointConfig {
            local,
            ..EndpointConfig::default()
        }
    }

    /// A free UDP port on the loopback interface (the kernel's choice).
    fn free_port() -> u16 {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    }

    /// Two kernel endpoints over the loopback interface: the client
    /// connects, sends requests, and gets each answered by the server,
    /// whose deliveries come through the same loop.
    #[test]
    fn a_client_and_a_server_talk_over_kernel_sockets() {
        let mut srv = KernelEndpoint::bind(cfg(free_port())).unwrap();
        let mut cli = KernelEndpoint::bind(cfg(free_port())).unwrap();
        let at = srv.endpoint().local_addr();
        let peer = PeerAddr {
            mac: None,
            ip: at.ip,
            port: at.port,
        };
        let now = cli.clock();
        let s = cli.endpoint_mut().connect(now, peer).unwrap();
        let mut answers = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut sent = 0u64;
        while answers.len() < 3 && std::time::Instant::now() < deadline {
            srv.run_once(|ep, now, d| {
                if let Delivery::Request {
                    handle, payload, ..
                } = d
                {
                    let mut m = ep.alloc_msg(payload.as_slice().len() + 1);
                    m.as_mut_slice()[1..].copy_from_slice(payload.as_slice());
                    m.as_mut_slice()[0] = b'>';
                    ep.respond(now, handle, m).unwrap();
                }
            });
            cli.run_once(|_, _, d| {
                if let Delivery::Response { tag, payload, .. } = d {
                    answers.push((tag, payload.as_slice().to_vec()));
                }
            });
            let connected = cli.endpoint().session_state(s) == Some(SessionState::Connected);
            if connected && sent == answers.len() as u64 && sent < 3 {
                let mut m = cli.endpoint_mut().alloc_msg(4);
                m.as_mut_slice().copy_from_slice(b"ping");
                let now = cli.now();
                cli.endpoint_mut()
                    .enqueue_request(now, s, 1, m, sent)
                    .unwrap();
                sent += 1;
            }
        }
        assert_eq!(
            answers,
            (0..3).map(|t| (t, b">ping".to_vec())).collect::<Vec<_>>()
        );
        assert!(matches!(cli.endpoint_mut().poll_event(), Some(Event::Connected(x)) if x == s));
        assert!(cli.counters().tx_datagrams >= 4 && cli.counters().rx_datagrams >= 4);
        assert_eq!(cli.counters().tx_errors, 0);
    }

    #[test]
    fn an_address_not_of_this_host_is_a_bind_error_naming_it() {
        let mut c = cfg(31851);
        c.local.ip = Ipv4Addr::new(192, 0, 2, 77); // TEST-NET-1: nobody's
        let e = KernelEndpoint::bind(c).unwrap_err();
        assert!(matches!(e, KernelError::Bind { .. }), "{e}");
        assert!(e.to_string().contains("192.0.2.77:31851"), "{e}");
    }
}
