//! The transmit fast path: `HeaderTemplate` holds the 42 Ethernet+IPv4+UDP
//! header bytes for one (source, destination) pair, built once per session
//! with the `Repr` emitters. Per packet, `write` copies them, patches the three
//! fields that depend on the payload length (IPv4 total length, IPv4 header
//! checksum, UDP length) and emits the RPC header. The checksum is updated
//! incrementally from a precomputed sum of the fixed header words, so a write
//! is a 42-byte copy, a few stores and an add-and-fold: no allocation, no
//! branches beyond the buffer-size check.

use std::net::Ipv4Addr;

use super::ipv4::fold;
use super::{
    set_u16, EtherType, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Packet, Ipv4Repr, MacAddr,
    PktType, RpcHeader, RpcRepr, SmBody, SmRepr, UdpPacket, UdpRepr, SM_BODY_LEN,
};
use super::{
    ETHERNET_HEADER_LEN, HEADERS_LEN, IPV4_HEADER_LEN, MAX_PAYLOAD_LEN, RPC_HEADER_LEN,
    UDP_HEADER_LEN,
};

/// Bytes of prebuilt Ethernet+IPv4+UDP header.
const TEMPLATE_LEN: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;

/// Frame offsets of the fields `write` patches.
mod field {
    use super::{ETHERNET_HEADER_LEN as ETH, TEMPLATE_LEN};
    use core::ops::Range;

    /// Start of the UDP header.
    const U: usize = ETH + super::IPV4_HEADER_LEN;

    pub const IP: Range<usize> = ETH..U;
    pub const IP_TOTAL_LEN: Range<usize> = ETH + 2..ETH + 4;
    pub const IP_CHECKSUM: Range<usize> = ETH + 10..ETH + 12;
    pub const UDP: Range<usize> = U..TEMPLATE_LEN;
    pub const UDP_LEN: Range<usize> = U + 4..U + 6;
}

/// Prebuilt Ethernet+IPv4+UDP headers for one source/destination pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderTemplate {
    /// The headers with IPv4 total length, IPv4 checksum and UDP length zero.
    bytes: [u8; TEMPLATE_LEN],
    /// Ones' complement sum (folded) of the IPv4 header words in `bytes`.
    ip_sum: u16,
}

impl HeaderTemplate {
    /// Builds the headers for frames from `src` to `dst`, each given as
    /// (MAC, IPv4 address, UDP port). IPv4 fields as `Ipv4Repr::emit` writes
    /// them (DF, TTL 64, id 0); UDP checksum 0.
    pub fn new(src: (MacAddr, Ipv4Addr, u16), dst: (MacAddr, Ipv4Addr, u16)) -> Self {
        let mut bytes = [0u8; TEMPLATE_LEN];
        EthernetRepr {
            src_addr: src.0,
            dst_addr: dst.0,
            ethertype: EtherType::Ipv4,
        }
        .emit(&mut EthernetFrame::new_unchecked(&mut bytes[..]));
        Ipv4Repr {
            src_addr: src.1,
            dst_addr: dst.1,
            protocol: IpProtocol::Udp,
            payload_len: 0,
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut bytes[field::IP]));
        UdpRepr {
            src_port: src.2,
            dst_port: dst.2,
            payload_len: 0,
        }
        .emit(&mut UdpPacket::new_unchecked(&mut bytes[field::UDP]));
        for r in [field::IP_TOTAL_LEN, field::IP_CHECKSUM, field::UDP_LEN] {
            bytes[r].fill(0);
        }
        // `checksum` is the complement of the folded sum.
        let ip_sum = !super::checksum(&bytes[field::IP]);
        HeaderTemplate { bytes, ip_sum }
    }

    /// The same headers with the IPv4 ECN field set to ECT(0), so ECN
    /// switches mark instead of dropping (DCQCN senders).
    pub fn with_ect(mut self) -> Self {
        let tos_at = ETHERNET_HEADER_LEN + 1;
        self.bytes[tos_at] = (self.bytes[tos_at] & !super::ECN_MASK) | super::ECN_ECT0;
        self.ip_sum = !super::checksum(&self.bytes[field::IP]);
        self
    }

    /// Source (MAC, IPv4 address, UDP port).
    pub fn src(&self) -> (MacAddr, Ipv4Addr, u16) {
        let eth = EthernetFrame::new_unchecked(&self.bytes[..]);
        let ip = Ipv4Packet::new_unchecked(&self.bytes[field::IP]);
        let udp = UdpPacket::new_unchecked(&self.bytes[field::UDP]);
        (eth.src_addr(), ip.src_addr(), udp.src_port())
    }

    /// Destination (MAC, IPv4 address, UDP port).
    pub fn dst(&self) -> (MacAddr, Ipv4Addr, u16) {
        let eth = EthernetFrame::new_unchecked(&self.bytes[..]);
        let ip = Ipv4Packet::new_unchecked(&self.bytes[field::IP]);
        let udp = UdpPacket::new_unchecked(&self.bytes[field::UDP]);
        (eth.dst_addr(), ip.dst_addr(), udp.dst_port())
    }

    /// Writes all [`HEADERS_LEN`] (70) header bytes of a frame carrying
    /// `payload_len` payload bytes into `buf[..70]` and returns 70; the caller
    /// writes the payload at `buf[70..70 + payload_len]`.
    ///
    /// # Panics
    /// If `buf.len() < 70 + payload_len` or `payload_len > MAX_PAYLOAD_LEN`
    /// (callers size buffers from the MTU, so neither happens).
    #[inline]
    pub fn write(&self, buf: &mut [u8], rpc: &RpcRepr, payload_len: usize) -> usize {
        assert!(
            payload_len <= MAX_PAYLOAD_LEN && buf.len() >= HEADERS_LEN + payload_len,
            "HeaderTemplate::write: buffer too small for headers and payload"
        );
        let hdr = &mut buf[..HEADERS_LEN];
        hdr[..TEMPLATE_LEN].copy_from_slice(&self.bytes);
        // Both fit in 16 bits: payload_len <= MAX_PAYLOAD_LEN (asserted above).
        let udp_len = (UDP_HEADER_LEN + RPC_HEADER_LEN + payload_len) as u16;
        let ip_len = udp_len + IPV4_HEADER_LEN as u16;
        let ip_checksum = !fold(u64::from(self.ip_sum) + u64::from(ip_len));
        set_u16(hdr, field::IP_TOTAL_LEN, ip_len);
        set_u16(hdr, field::IP_CHECKSUM, ip_checksum);
        set_u16(hdr, field::UDP_LEN, udp_len);
        rpc.emit(&mut RpcHeader::new_unchecked(&mut hdr[TEMPLATE_LEN..]));
        HEADERS_LEN
    }

    /// Writes a whole session-management frame (headers, then the 20-byte
    /// `body`) for session `dest_session` with `token`; returns its length.
    ///
    /// # Panics
    /// If `buf` is shorter than 82 bytes.
    pub fn write_sm(&self, buf: &mut [u8], dest_session: u16, token: u64, body: &SmRepr) -> usize {
        let rpc = RpcRepr {
            pkt_type: PktType::SessionMgmt,
            req_type: 0,
            msg_size: SM_BODY_LEN as u32,
            dest_session,
            pkt_num: 0,
            grant: 0,
            req_num: 0,
            token,
        };
        let n = self.write(buf, &rpc, SM_BODY_LEN);
        body.emit(&mut SmBody::new_unchecked(&mut buf[n..n + SM_BODY_LEN]));
        n + SM_BODY_LEN
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::rpc::tests::arb_rpc_repr;
    use super::super::{parse_frame, PktType};
    use super::*;
    use proptest::prelude::*;

    pub(in crate::wire) fn src() -> (MacAddr, Ipv4Addr, u16) {
        (
            MacAddr([0x02, 0, 0, 0, 0, 0x01]),
            Ipv4Addr::new(10, 0, 0, 1),
            1000,
        )
    }

    pub(in crate::wire) fn dst() -> (MacAddr, Ipv4Addr, u16) {
        (
            MacAddr([0x02, 0, 0, 0, 0, 0x02]),
            Ipv4Addr::new(10, 0, 0, 2),
            2000,
        )
    }

    pub(in crate::wire) fn rpc() -> RpcRepr {
        RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: 4,
            dest_session: 0,
            pkt_num: 0,
            grant: 0,
            req_num: 8,
            token: 0x0102_0304_0506_0708,
        }
    }

    // 10.0.0.1:1000 -> 10.0.0.2:2000, Request carrying "ping" (4 bytes).
    // IPv4 total length 20 + 8 + 28 + 4 = 60 (0x3c); UDP length 40 (0x28).
    // IPv4 checksum by hand: 4500 + 003c + 0000 + 4000 + 4011 + 0a00 + 0001
    // + 0a00 + 0002 = 0xd950 (no carry), complemented 0x26af.
    pub(in crate::wire) static FRAME_BYTES: [u8; 74] = [
        // Ethernet: dst, src, EtherType IPv4
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
        // IPv4: ver/IHL, DSCP, total len, id, DF, TTL 64, UDP, checksum, src, dst
        0x45, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0xaf, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, // UDP: 1000 -> 2000, length 40, checksum 0
        0x03, 0xe8, 0x07, 0xd0, 0x00, 0x28, 0x00, 0x00,
        // RPC: magic, version 2, Request, req_type 1, msg_size 4, dest_session 0,
        // pkt_num 0, req_num 8, token 0x0102030405060708
        0xe7, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x08, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
        0x08, // payload
        b'p', b'i', b'n', b'g',
    ];

    #[test]
    fn test_emit_frame() {
        let template = HeaderTemplate::new(src(), dst());
        let mut buf = [0xa5u8; 74];
        assert_eq!(template.write(&mut buf, &rpc(), 4), HEADERS_LEN);
        buf[HEADERS_LEN..].copy_from_slice(b"ping");
        assert_eq!(buf, FRAME_BYTES);
    }

    #[test]
    fn test_parse_frame_golden() {
        let parsed = parse_frame(&FRAME_BYTES).unwrap();
        assert_eq!(parsed.src_mac, src().0);
        assert_eq!(parsed.dst_mac, dst().0);
        assert_eq!(parsed.src_ip, src().1);
        assert_eq!(parsed.dst_ip, dst().1);
        assert_eq!(parsed.src_port, src().2);
        assert_eq!(parsed.dst_port, dst().2);
        assert_eq!(parsed.rpc, rpc());
        assert_eq!(parsed.payload, b"ping");
    }

    #[test]
    fn test_template_accessors() {
        let template = HeaderTemplate::new(src(), dst());
        assert_eq!(template.src(), src());
        assert_eq!(template.dst(), dst());
    }

    #[test]
    fn test_write_larger_buffer_and_extremes() {
        let template = HeaderTemplate::new(src(), dst());
        // A buffer larger than needed: only the first 70 bytes are touched.
        let mut buf = vec![0xa5u8; 200];
        template.write(&mut buf, &rpc(), 0);
        assert!(buf[HEADERS_LEN..].iter().all(|&b| b == 0xa5));
        let parsed = parse_frame(&buf[..HEADERS_LEN]).unwrap();
        assert!(parsed.payload.is_empty());
        // The largest payload the IPv4 length allows.
        let mut buf = vec![0u8; HEADERS_LEN + MAX_PAYLOAD_LEN];
        template.write(&mut buf, &rpc(), MAX_PAYLOAD_LEN);
        let parsed = parse_frame(&buf).unwrap();
        assert_eq!(parsed.payload.len(), MAX_PAYLOAD_LEN);
    }

    #[test]
    #[should_panic(expected = "buffer too small")]
    fn test_write_short_buffer_panics() {
        let template = HeaderTemplate::new(src(), dst());
        let mut buf = [0u8; 69];
        template.write(&mut buf, &rpc(), 4);
    }

    #[test]
    #[should_panic(expected = "buffer too small")]
    fn test_write_oversized_payload_panics() {
        let template = HeaderTemplate::new(src(), dst());
        let mut buf = vec![0u8; HEADERS_LEN + MAX_PAYLOAD_LEN + 1];
        template.write(&mut buf, &rpc(), MAX_PAYLOAD_LEN + 1);
    }

    pub(in crate::wire) fn arb_endpoint() -> impl Strategy<Value = (MacAddr, Ipv4Addr, u16)> {
        (any::<[u8; 6]>(), any::<u32>(), any::<u16>())
            .prop_map(|(mac, ip, port)| (MacAddr(mac), Ipv4Addr::from(ip), port))
    }

    /// A valid frame built by the template, with its inputs.
    pub(in crate::wire) fn arb_frame(
    ) -> impl Strategy<Value = (HeaderTemplate, RpcRepr, Vec<u8>, Vec<u8>)> {
        (
            arb_endpoint(),
            arb_endpoint(),
            arb_rpc_repr(),
            proptest::collection::vec(any::<u8>(), 0..64),
        )
            .prop_map(|(src, dst, rpc, payload)| {
                let template = HeaderTemplate::new(src, dst);
                let mut frame = vec![0u8; HEADERS_LEN + payload.len()];
                template.write(&mut frame, &rpc, payload.len());
                frame[HEADERS_LEN..].copy_from_slice(&payload);
                (template, rpc, payload, frame)
            })
    }

    proptest! {
        #[test]
        fn prop_frame_roundtrip((template, rpc, payload, frame) in arb_frame()) {
            let parsed = parse_frame(&frame).unwrap();
            let (src, dst) = (template.src(), template.dst());
            prop_assert_eq!((parsed.src_mac, parsed.src_ip, parsed.src_port), src);
            prop_assert_eq!((parsed.dst_mac, parsed.dst_ip, parsed.dst_port), dst);
            prop_assert_eq!(parsed.rpc, rpc);
            prop_assert_eq!(parsed.payload, &payload[..]);
        }

        /// The incremental checksum matches a full emit through the Reprs.
        #[test]
        fn prop_template_matches_reprs(
            src in arb_endpoint(), dst in arb_endpoint(), rpc in arb_rpc_repr(),
            payload_len in 0usize..=MAX_PAYLOAD_LEN,
        ) {
            let mut fast = [0u8; HEADERS_LEN];
            let template = HeaderTemplate::new(src, dst);
            // Only the headers are compared, so lie about the payload being present.
            let mut big = vec![0u8; HEADERS_LEN + payload_len];
            template.write(&mut big, &rpc, payload_len);
            fast.copy_from_slice(&big[..HEADERS_LEN]);

            let mut slow = [0u8; HEADERS_LEN];
            EthernetRepr { src_addr: src.0, dst_addr: dst.0, ethertype: EtherType::Ipv4 }
                .emit(&mut EthernetFrame::new_unchecked(&mut slow[..]));
            let udp_payload = RPC_HEADER_LEN + payload_len;
            Ipv4Repr {
                src_addr: src.1,
                dst_addr: dst.1,
                protocol: IpProtocol::Udp,
                payload_len: UDP_HEADER_LEN + udp_payload,
            }
            .emit(&mut Ipv4Packet::new_unchecked(&mut slow[field::IP]));
            UdpRepr { src_port: src.2, dst_port: dst.2, payload_len: udp_payload }
                .emit(&mut UdpPacket::new_unchecked(&mut slow[field::UDP]));
            rpc.emit(&mut RpcHeader::new_unchecked(&mut slow[TEMPLATE_LEN..]));
            prop_assert_eq!(&fast[..], &slow[..]);
        }
    }
}
