//! How the endpoint's frames map to a UDP socket's datagrams. The endpoint
//! emits and parses whole Ethernet/IPv4/UDP frames; a kernel socket sends
//! and receives only the UDP payload (the RPC header and what follows),
//! the kernel writing and checking the headers. So on send the frame is
//! read for its destination and cut to its UDP payload
//! ([`datagram_of`]); on receive the socket writes the payload at
//! [`HEADROOM`] and the headers the endpoint checks are rebuilt in front of
//! it ([`frame_of`]) from the datagram's source and the endpoint's own
//! address. No state, no allocation.

use crate::proto::EndpointAddr;
use crate::wire::{
    EtherType, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Packet, Ipv4Repr, MacAddr, UdpPacket,
    UdpRepr, ETHERNET_HEADER_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN,
};
use std::net::SocketAddrV4;

/// Bytes of rebuilt headers in front of a received datagram: Ethernet,
/// IPv4 without options, UDP.
pub const HEADROOM: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;

/// The source MAC of every rebuilt frame. The kernel does not say which
/// MAC a datagram came from, and the endpoint needs only a unicast one (a
/// client session learns its server's MAC from the ConnectResp and never
/// uses it here: the kernel addresses what the socket sends). Locally
/// administered, so it names no real device.
pub const KERNEL_PEER_MAC: MacAddr = MacAddr([0x02, 0x6b, 0x65, 0x72, 0x6e, 0x01]);

/// The destination and the UDP payload of a frame the endpoint emitted, or
/// `None` for a frame that is not IPv4/UDP (the endpoint emits no other).
pub fn datagram_of(frame: &[u8]) -> Option<(SocketAddrV4, &[u8])> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.protocol() != IpProtocol::Udp {
        return None;
    }
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    Some((
        SocketAddrV4::new(ip.dst_addr(), udp.dst_port()),
        udp.payload(),
    ))
}

/// Writes Ethernet, IPv4 (with its checksum) and UDP headers into
/// `buf[..HEADROOM]`, in front of the `len` payload bytes a socket received
/// at `buf[HEADROOM..]`, as the frame `from` sent to the endpoint at `to`
/// would carry them; returns the frame's length. `None` when `buf` cannot
/// hold the frame or the payload exceeds what IPv4 can carry.
pub fn frame_of(
    buf: &mut [u8],
    len: usize,
    from: SocketAddrV4,
    to: &EndpointAddr,
) -> Option<usize> {
    let total = HEADROOM.checked_add(len)?;
    if total > buf.len() || UDP_HEADER_LEN + len > Ipv4Repr::MAX_PAYLOAD_LEN {
        return None;
    }
    let frame = &mut buf[..total];
    let eth = EthernetRepr {
        src_addr: KERNEL_PEER_MAC,
        dst_addr: to.mac,
        ethertype: EtherType::Ipv4,
    };
    let mut e = EthernetFrame::new_unchecked(&mut *frame);
    eth.emit(&mut e);
    let ip = Ipv4Repr {
        src_addr: *from.ip(),
        dst_addr: to.ip,
        protocol: IpProtocol::Udp,
        payload_len: UDP_HEADER_LEN + len,
    };
    let mut p = Ipv4Packet::new_unchecked(e.payload_mut());
    ip.emit(&mut p);
    let udp = UdpRepr {
        src_port: from.port(),
        dst_port: to.port,
        payload_len: len,
    };
    udp.emit(&mut UdpPacket::new_unchecked(p.payload_mut()));
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{self, PktType, RpcRepr, RPC_HEADER_LEN};
    use std::net::Ipv4Addr;

    fn me() -> EndpointAddr {
        EndpointAddr {
            mac: MacAddr([0x02, 0, 0, 0, 0, 0x02]),
            ip: Ipv4Addr::new(10, 77, 0, 2),
            port: 31851,
        }
    }

    /// An RPC header (a Request, session 1) and 4 payload bytes, as a socket
    /// would receive them.
    fn rpc_payload() -> Vec<u8> {
        let mut b = vec![0u8; RPC_HEADER_LEN + 4];
        let r = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: 4,
            dest_session: 1,
            pkt_num: 0,
            grant: 0,
            req_num: 8,
            token: 7,
        };
        r.emit(&mut wire::RpcHeader::new_unchecked(&mut b[..]));
        b[RPC_HEADER_LEN..].copy_from_slice(b"ping");
        b
    }

    #[test]
    fn a_received_datagram_becomes_a_frame_the_endpoint_parses() {
        let body = rpc_payload();
        let mut buf = vec![0u8; 256];
        buf[HEADROOM..HEADROOM + body.len()].copy_from_slice(&body);
        let from = SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 1), 31850);
        let n = frame_of(&mut buf, body.len(), from, &me()).unwrap();
        assert_eq!(n, HEADROOM + body.len());
        // The endpoint's own parser, IPv4 checksum checked.
        let p = wire::parse_frame(&buf[..n]).unwrap();
        assert_eq!((p.src_ip, p.src_port), (*from.ip(), 31850));
        assert_eq!(
            (p.dst_mac, p.dst_ip, p.dst_port),
            (me().mac, me().ip, me().port)
        );
        assert_eq!(p.src_mac, KERNEL_PEER_MAC);
        assert!(p.src_mac.is_unicast());
        assert_eq!(p.rpc.pkt_type, PktType::Request);
        assert_eq!(p.payload, b"ping");
    }

    #[test]
    fn an_emitted_frame_becomes_its_destination_and_udp_payload() {
        let body = rpc_payload();
        let mut buf = vec![0u8; 256];
        buf[HEADROOM..HEADROOM + body.len()].copy_from_slice(&body);
        let from = SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 1), 40000);
        let n = frame_of(&mut buf, body.len(), from, &me()).unwrap();
        // Ethernet padding after the UDP length is not sent.
        let mut padded = buf[..n].to_vec();
        padded.extend_from_slice(&[0xee; 6]);
        let (to, payload) = datagram_of(&padded).unwrap();
        assert_eq!(to, SocketAddrV4::new(me().ip, me().port));
        assert_eq!(payload, &body[..]);
    }

    #[test]
    fn what_cannot_be_a_datagram_or_a_frame_is_refused() {
        // Not IPv4 (an ARP EtherType), too short, too small a buffer.
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(datagram_of(&arp), None);
        assert_eq!(datagram_of(&[0u8; 10]), None);
        let from = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 1);
        assert_eq!(frame_of(&mut [0u8; 50], 10, from, &me()), None);
        assert_eq!(frame_of(&mut [0u8; 50], usize::MAX, from, &me()), None);
        assert_eq!(frame_of(&mut [0u8; 52], 10, from, &me()), Some(52));
    }
}
