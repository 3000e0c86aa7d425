//! Endpoint addresses: an endpoint's own ([`EndpointAddr`]: MAC, IPv4,
//! UDP port) and a peer's to connect to ([`PeerAddr`], whose MAC may be
//! unknown), with the defaults a process gets when it names none. A peer
//! in another process is reached from its IPv4 address and UDP port alone:
//! `"10.0.0.1:31850".parse::<PeerAddr>()`, or a [`SocketAddrV4`]; the
//! ConnectReq then goes to the Ethernet broadcast address and the session
//! learns the peer's MAC from the ConnectResp.

use crate::wire::MacAddr;
use std::fmt;
use std::net::{AddrParseError, Ipv4Addr, SocketAddrV4};
use std::str::FromStr;

/// The IPv4 address of an endpoint that [`EndpointConfig::default`] gives
/// (and a `Nexus` whose builder names no other). Two processes on one link
/// need different addresses: give the second one its own
/// (`NexusBuilder::ip`).
///
/// [`EndpointConfig::default`]: super::EndpointConfig
pub const DEFAULT_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// The UDP port of an endpoint that [`EndpointConfig::default`] gives: a
/// `Nexus`'s worker `i` listens on this port + `i` unless its builder names
/// another base (`NexusBuilder::base_udp_port`).
///
/// [`EndpointConfig::default`]: super::EndpointConfig
pub const DEFAULT_UDP_PORT: u16 = 31850;

/// This endpoint's own address: what it puts in the source fields of every
/// frame and what it accepts as destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointAddr {
    /// Ethernet address (the port's, in the DPDK runtime).
    pub mac: MacAddr,
    /// IPv4 address.
    pub ip: Ipv4Addr,
    /// UDP port.
    pub port: u16,
}

/// A remote endpoint to connect to. With `mac: None` the ConnectReq goes to
/// the Ethernet broadcast address and the MAC is learned from the ConnectResp.
///
/// Parsed from `"IP:PORT"` (`"10.0.0.1:31850".parse()`) or converted from a
/// [`SocketAddrV4`], it has no MAC; it prints as `IP:PORT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr {
    /// The peer's Ethernet address, if known.
    pub mac: Option<MacAddr>,
    /// The peer's IPv4 address.
    pub ip: Ipv4Addr,
    /// The peer endpoint's UDP port.
    pub port: u16,
}

impl From<EndpointAddr> for PeerAddr {
    fn from(a: EndpointAddr) -> Self {
        PeerAddr {
            mac: Some(a.mac),
            ip: a.ip,
            port: a.port,
        }
    }
}

impl From<SocketAddrV4> for PeerAddr {
    fn from(a: SocketAddrV4) -> Self {
        PeerAddr {
            mac: None,
            ip: *a.ip(),
            port: a.port(),
        }
    }
}

impl FromStr for PeerAddr {
    type Err = AddrParseError;
    /// `"IP:PORT"`, e.g. `"10.0.0.1:31850"`; the MAC is learned when connecting.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<SocketAddrV4>().map(PeerAddr::from)
    }
}

impl fmt::Display for PeerAddr {
    /// `IP:PORT`, the form [`FromStr`] reads (the MAC, if known, is left out).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.ip, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_alone_parses_with_no_mac_and_prints_back() {
        let a: PeerAddr = "10.0.0.1:31850".parse().unwrap();
        assert_eq!(
            a,
            PeerAddr {
                mac: None,
                ip: Ipv4Addr::new(10, 0, 0, 1),
                port: 31850
            }
        );
        assert_eq!(a.to_string(), "10.0.0.1:31850");
        assert_eq!(
            PeerAddr::from(SocketAddrV4::new(DEFAULT_IP, DEFAULT_UDP_PORT)),
            a
        );
    }

    #[test]
    fn what_is_not_ipv4_colon_port_is_refused() {
        for bad in [
            "10.0.0.1",
            "10.0.0.1:",
            "10.0.0.1:65536",
            "[::1]:1",
            "host:80",
            "",
        ] {
            assert!(bad.parse::<PeerAddr>().is_err(), "{bad:?} parsed");
        }
    }
}
