//! Wire format: byte views over Ethernet, IPv4, UDP, the 28-byte RPC header and
//! the 20-byte session-management body, plus the two per-packet fast paths used
//! by `proto`: [`parse_frame`] (one frame in, validated headers and a borrowed
//! payload out) and [`HeaderTemplate::write`] (all 70 header bytes out from a
//! prebuilt template). This module holds no state and never allocates; every
//! view validates its length once in `new_checked`, so getters cannot panic
//! afterwards, and nothing here panics on bytes that came from the network.
//! The byte layout is documented in `docs/wire.md`.
//!
//! Each header has two faces, as in smoltcp:
//! - a view (`EthernetFrame<T>`, `Ipv4Packet<T>`, `UdpPacket<T>`,
//!   `RpcHeader<T>`, `SmBody<T>`) over any `T: AsRef<[u8]>`, with setters when
//!   `T: AsMut<[u8]>`;
//! - a `Repr` struct holding the decoded values, with `parse`, `emit` and
//!   `buffer_len`.

use core::ops::Range;

/// Defines a wire enum over an integer type with an `Unknown(..)` arm, and the
/// conversions both ways. Converting a known value through `Unknown` and back
/// yields the known variant, so `From<int>` is the canonical constructor.
macro_rules! wire_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident($ty:ty) {
            $( $(#[$vattr:meta])* $variant:ident = $value:expr ),+ $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vattr])* $variant, )+
            /// A value this implementation does not know.
            Unknown($ty),
        }

        impl From<$ty> for $name {
            #[inline]
            fn from(value: $ty) -> Self {
                match value {
                    $( $value => $name::$variant, )+
                    other => $name::Unknown(other),
                }
            }
        }

        impl From<$name> for $ty {
            #[inline]
            fn from(value: $name) -> Self {
                match value {
                    $( $name::$variant => $value, )+
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}

mod ethernet;
mod handshake;
mod ipv4;
mod offload;
mod plain;
mod rpc;
mod template;
mod udp;

pub use ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr, ParseMacAddrError};
pub use ipv4::{checksum, IpProtocol, Ipv4Packet, Ipv4Repr};
pub use offload::prepare_checksum_offload;
pub use rpc::{
    ErrorCode, PktType, RpcHeader, RpcRepr, SmBody, SmRepr, SmStatus, SmType, RPC_MAGIC,
    RPC_VERSION, SESSION_NONE,
};
pub use template::HeaderTemplate;
pub use udp::{UdpPacket, UdpRepr};

use std::net::Ipv4Addr;

/// Length of an Ethernet II header (no VLAN tag).
pub const ETHERNET_HEADER_LEN: usize = 14;
/// Length of an IPv4 header without options (the only kind we emit).
pub const IPV4_HEADER_LEN: usize = 20;
/// Length of a UDP header.
pub const UDP_HEADER_LEN: usize = 8;
/// Length of the RPC header that starts every UDP payload.
pub const RPC_HEADER_LEN: usize = 28;
/// Length of the session-management body that follows an `SessionMgmt` RPC header.
pub const SM_BODY_LEN: usize = 20;
/// All header bytes in front of the RPC payload of an emitted frame.
pub const HEADERS_LEN: usize =
    ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN + RPC_HEADER_LEN;
/// Largest RPC payload one frame can carry: bounded by the 16-bit IPv4 total
/// length. The real bound is the path MTU, which `proto` enforces.
pub const MAX_PAYLOAD_LEN: usize =
    u16::MAX as usize - (IPV4_HEADER_LEN + UDP_HEADER_LEN + RPC_HEADER_LEN);

/// Why a frame or header was rejected.
///
/// `Truncated` means the bytes ran out before a header (or, at the IPv4 level,
/// before the total length) said they would; `BadLength` means a length field
/// is impossible or disagrees with the length of its enclosing header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    /// The buffer ends before a header, or before the length it declares.
    #[error("buffer too short for the header or length it carries")]
    Truncated,
    /// A length field is impossible or disagrees with its container.
    #[error("length field inconsistent with the header or its container")]
    BadLength,
    /// The EtherType is not IPv4, or the IP version is not 4.
    #[error("not an IPv4 packet (EtherType or IP version)")]
    NotIpv4,
    /// The IPv4 header checksum is wrong.
    #[error("IPv4 header checksum mismatch")]
    BadChecksum,
    /// The IPv4 packet is a fragment (MF set or nonzero offset).
    #[error("IPv4 fragment (MF set or nonzero offset)")]
    Fragmented,
    /// The IPv4 protocol is not UDP.
    #[error("IP protocol is not UDP")]
    NotUdp,
    /// The RPC header does not start with [`RPC_MAGIC`].
    #[error("RPC header magic is not 0xE7")]
    BadMagic,
    /// The RPC header version is not [`RPC_VERSION`].
    #[error("unsupported RPC header version")]
    BadVersion,
}

/// The result of [`parse_frame`]: every header field `proto` needs, and the RPC
/// payload borrowed from the frame (exactly as long as the UDP length says;
/// Ethernet padding is excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed<'a> {
    /// Ethernet source MAC.
    pub src_mac: MacAddr,
    /// Ethernet destination MAC.
    pub dst_mac: MacAddr,
    /// IPv4 source address.
    pub src_ip: Ipv4Addr,
    /// IPv4 destination address.
    pub dst_ip: Ipv4Addr,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// The IPv4 ECN field (low two bits of the TOS byte): [`ECN_CE`] when a
    /// switch (or an injected marker) saw congestion.
    pub ecn: u8,
    /// A switch cut this frame to its headers (its IPv4 DSCP is
    /// [`DSCP_TRIMMED`]): the payload is gone, the headers still name the
    /// session, request and packet.
    pub trimmed: bool,
    /// The decoded RPC header.
    pub rpc: RpcRepr,
    /// Bytes after the RPC header (for `SessionMgmt`, the SM body).
    pub payload: &'a [u8],
}

impl Parsed<'_> {
    /// Whether a switch (or a marker) set ECN Congestion Experienced.
    #[inline]
    pub fn congestion_experienced(&self) -> bool {
        self.ecn == ECN_CE
    }
}

/// Parses and validates one received frame: EtherType IPv4; IPv4 version,
/// IHL, total length, header checksum, no fragments, protocol UDP; UDP length;
/// RPC magic and version. IPv4 options are accepted and skipped. The UDP
/// checksum is not verified. Never panics; no allocation.
pub fn parse_frame(frame: &[u8]) -> Result<Parsed<'_>, Error> {
    parse_frame_with(frame, true)
}

/// [`parse_frame`], with the IPv4 header checksum checked only when
/// `verify_ipv4_checksum` (see [`Ipv4Repr::parse_with`]); every other check
/// stays.
#[inline]
pub fn parse_frame_with(frame: &[u8], verify_ipv4_checksum: bool) -> Result<Parsed<'_>, Error> {
    // The usual frame in one pass (`plain.rs`); the layers for the rest.
    // (Written as a Result chain: a `match` on the Option copied the
    // parsed headers once more, 16 instructions per frame.)
    plain::parse_plain(frame, verify_ipv4_checksum)
        .ok_or(Error::Truncated)
        .or_else(|_| parse_layered(frame, verify_ipv4_checksum))
}

/// `parse_frame_with` layer by layer: every frame, the precise error (out
/// of line, so the fast path inlines into its caller).
#[inline(never)]
fn parse_layered(frame: &[u8], verify_ipv4_checksum: bool) -> Result<Parsed<'_>, Error> {
    let eth = EthernetFrame::new_checked(frame)?;
    if eth.ethertype() != EtherType::Ipv4 {
        return Err(Error::NotIpv4);
    }
    let ip = Ipv4Packet::new_checked(eth.payload())?;
    let ip_repr = Ipv4Repr::parse_with(&ip, verify_ipv4_checksum)?;
    if ip_repr.protocol != IpProtocol::Udp {
        return Err(Error::NotUdp);
    }
    let udp = UdpPacket::new_checked(ip.payload())?;
    let rpc_header = RpcHeader::new_checked(udp.payload())?;
    let rpc = RpcRepr::parse(&rpc_header)?;
    Ok(Parsed {
        src_mac: eth.src_addr(),
        dst_mac: eth.dst_addr(),
        src_ip: ip_repr.src_addr,
        dst_ip: ip_repr.dst_addr,
        src_port: udp.src_port(),
        dst_port: udp.dst_port(),
        ecn: ip.dscp_ecn() & ECN_MASK,
        trimmed: ip.dscp_ecn() >> 2 == DSCP_TRIMMED,
        rpc,
        payload: rpc_header.payload(),
    })
}

/// The ECN field's bits in the IPv4 TOS byte.
pub const ECN_MASK: u8 = 0b11;
/// ECN-Capable Transport (0): what a DCQCN sender sets on every frame.
pub const ECN_ECT0: u8 = 0b10;
/// Congestion Experienced: what a marking switch writes.
pub const ECN_CE: u8 = 0b11;

/// Marks a frame Congestion Experienced as an ECN switch would, fixing the
/// IPv4 header checksum incrementally (RFC 1624). Only an ECN-capable
/// frame (ECT(0) or ECT(1)) is marked; returns whether it was. A frame
/// that is not IPv4 or is too short is left alone.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    let Ok(eth) = EthernetFrame::new_checked(&*frame) else {
        return false;
    };
    if eth.ethertype() != EtherType::Ipv4 || frame.len() < ETHERNET_HEADER_LEN + IPV4_HEADER_LEN {
        return false;
    }
    let tos_at = ETHERNET_HEADER_LEN + 1;
    let tos = frame[tos_at];
    if tos & ECN_MASK == 0 || tos & ECN_MASK == ECN_CE {
        return false;
    }
    let new_tos = tos | ECN_CE;
    frame[tos_at] = new_tos;
    // The TOS byte is the low byte of the header's first 16-bit word.
    let word_at = ETHERNET_HEADER_LEN;
    let old_word = u16::from_be_bytes([frame[word_at], tos]);
    let new_word = u16::from_be_bytes([frame[word_at], new_tos]);
    let sum_at = ETHERNET_HEADER_LEN + 10;
    let old_sum = u16::from_be_bytes([frame[sum_at], frame[sum_at + 1]]);
    // HC' = ~(~HC + ~m + m')
    let s = u64::from(!old_sum) + u64::from(!old_word) + u64::from(new_word);
    let new_sum = !ipv4::fold(s);
    frame[sum_at..sum_at + 2].copy_from_slice(&new_sum.to_be_bytes());
    true
}

/// The IPv4 DSCP a trimming switch writes on a packet it cut to its
/// headers. UEC 1.0 leaves the codepoint to the operator ("trimmed DSCP");
/// 3 is in RFC 2474's pool 2 (`xxxx11`, experimental or local use), and
/// this engine sends DSCP 0, so no untrimmed frame of ours carries it.
pub const DSCP_TRIMMED: u8 = 3;

/// Trims a data frame as a UEC switch does when its queue is too full to
/// keep it: cuts it to [`HEADERS_LEN`] bytes (Ethernet, IPv4, UDP and RPC
/// headers intact, so the receiver knows the session, request and packet),
/// sets the IPv4 DSCP to [`DSCP_TRIMMED`] (ECN bits kept), rewrites the
/// IPv4 total length and UDP length to match, zeroes the UDP checksum
/// (optional in IPv4) and refills the IPv4 header checksum. Returns the
/// new frame length, or `None` (frame untouched) for a frame that must not
/// be trimmed: not a plain IPv4/UDP frame of ours, not a `Request` or
/// `Response` (control frames are never trimmed), no payload, or trimmed
/// already.
pub fn mark_trimmed(frame: &mut [u8]) -> Option<usize> {
    let p = plain::parse_plain(frame, false)?;
    if p.trimmed
        || p.payload.is_empty()
        || !matches!(p.rpc.pkt_type, PktType::Request | PktType::Response)
    {
        return None;
    }
    let ip_at = ETHERNET_HEADER_LEN;
    let udp_at = ip_at + IPV4_HEADER_LEN;
    let tos = frame[ip_at + 1];
    frame[ip_at + 1] = DSCP_TRIMMED << 2 | tos & ECN_MASK;
    let ip_len = (HEADERS_LEN - ETHERNET_HEADER_LEN) as u16;
    frame[ip_at + 2..ip_at + 4].copy_from_slice(&ip_len.to_be_bytes());
    let udp_len = (HEADERS_LEN - udp_at) as u16;
    frame[udp_at + 4..udp_at + 6].copy_from_slice(&udp_len.to_be_bytes());
    frame[udp_at + 6..udp_at + 8].fill(0);
    Ipv4Packet::new_unchecked(&mut frame[ip_at..udp_at]).fill_checksum();
    Some(HEADERS_LEN)
}

/// Whether `frame` is one a switch trimmed ([`mark_trimmed`]); false for
/// anything that does not parse.
pub fn is_trimmed(frame: &[u8]) -> bool {
    parse_frame(frame).is_ok_and(|p| p.trimmed)
}

// Big-endian field accessors shared by the views. The ranges are compile-time
// constants and the views check buffer lengths in `new_checked`, so the
// optimiser folds the slice checks away.

#[inline]
fn get_u16(data: &[u8], r: Range<usize>) -> u16 {
    let mut b = [0; 2];
    b.copy_from_slice(&data[r]);
    u16::from_be_bytes(b)
}

#[inline]
fn get_u32(data: &[u8], r: Range<usize>) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&data[r]);
    u32::from_be_bytes(b)
}

#[inline]
fn get_u64(data: &[u8], r: Range<usize>) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&data[r]);
    u64::from_be_bytes(b)
}

#[inline]
fn set_u16(data: &mut [u8], r: Range<usize>, value: u16) {
    data[r].copy_from_slice(&value.to_be_bytes());
}

#[inline]
fn set_u32(data: &mut [u8], r: Range<usize>, value: u32) {
    data[r].copy_from_slice(&value.to_be_bytes());
}

#[inline]
fn set_u64(data: &mut [u8], r: Range<usize>, value: u64) {
    data[r].copy_from_slice(&value.to_be_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn mark_ce_sets_the_bits_and_keeps_the_checksum_valid() {
        use std::net::Ipv4Addr;
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let ip = Ipv4Addr::new(10, 0, 0, 1);
        let plain = HeaderTemplate::new((mac, ip, 1), (mac, ip, 2));
        let rpc = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: 0,
            dest_session: 0,
            pkt_num: 0,
            grant: 0,
            req_num: 0,
            token: 0,
        };
        let mut frame = [0u8; HEADERS_LEN];
        plain.write(&mut frame, &rpc, 0);
        assert!(!mark_ce(&mut frame), "a frame not ECN-capable was marked");
        assert_eq!(parse_frame(&frame).unwrap().ecn, 0);
        plain.clone().with_ect().write(&mut frame, &rpc, 0);
        assert_eq!(parse_frame(&frame).unwrap().ecn, ECN_ECT0);
        assert!(mark_ce(&mut frame));
        // parse_frame verifies the IPv4 checksum.
        assert_eq!(parse_frame(&frame).unwrap().ecn, ECN_CE);
        assert!(!mark_ce(&mut frame), "marked twice");
        assert!(!mark_ce(&mut [0u8; 10]));
    }

    #[test]
    fn mark_trimmed_cuts_to_the_headers_and_marks_the_dscp() {
        use std::net::Ipv4Addr;
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let ip = Ipv4Addr::new(10, 0, 0, 1);
        let t = HeaderTemplate::new((mac, ip, 1), (mac, ip, 2)).with_ect();
        let rpc = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: 4000,
            dest_session: 3,
            pkt_num: 2,
            grant: 0,
            req_num: 9,
            token: 7,
        };
        let mut frame = [0xabu8; HEADERS_LEN + 1000];
        t.write(&mut frame, &rpc, 1000);
        assert!(!parse_frame(&frame).unwrap().trimmed);
        assert!(!is_trimmed(&frame));
        assert_eq!(mark_trimmed(&mut frame), Some(HEADERS_LEN));
        let cut = &frame[..HEADERS_LEN];
        // The IPv4 header, byte for byte: DSCP 3 with ECT(0) (0x0e), total
        // length 56, its checksum refilled; UDP length 36, checksum 0.
        let golden_ip_udp: [u8; 28] = [
            0x45, 0x0e, 0x00, 0x38, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0xa6, 10, 0, 0, 1,
            10, 0, 0, 1, 0x00, 0x01, 0x00, 0x02, 0x00, 0x24, 0x00, 0x00,
        ];
        assert_eq!(
            &cut[ETHERNET_HEADER_LEN..HEADERS_LEN - RPC_HEADER_LEN],
            &golden_ip_udp
        );
        // parse_frame verifies the IPv4 checksum; the RPC header is intact.
        let p = parse_frame(cut).unwrap();
        assert!(p.trimmed && p.payload.is_empty() && p.ecn == ECN_ECT0);
        assert_eq!(p.rpc, rpc);
        assert!(is_trimmed(cut));
        // A CE mark survives trimming, and a trimmed frame can be marked.
        assert!(mark_ce(&mut frame[..HEADERS_LEN]));
        assert!(parse_frame(&frame[..HEADERS_LEN]).unwrap().trimmed);
        // Never twice; never a control frame or one without payload.
        assert_eq!(mark_trimmed(&mut frame[..HEADERS_LEN]), None);
        let cr = RpcRepr {
            pkt_type: PktType::CreditReturn,
            ..rpc
        };
        let mut ctrl = [0u8; HEADERS_LEN + 8];
        t.write(&mut ctrl, &cr, 8);
        assert_eq!(mark_trimmed(&mut ctrl), None);
        let mut empty = [0u8; HEADERS_LEN];
        t.write(&mut empty, &rpc, 0);
        assert_eq!(mark_trimmed(&mut empty), None);
        assert_eq!(mark_trimmed(&mut [0u8; 10]), None);
    }

    use super::template::tests::{arb_frame, FRAME_BYTES};
    use super::*;
    use proptest::prelude::*;

    const IP: usize = ETHERNET_HEADER_LEN;
    const UDP: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN;
    const RPC: usize = UDP + UDP_HEADER_LEN;

    /// The golden frame with `mutate` applied and the IPv4 checksum
    /// recomputed (so the mutation, not the checksum, is what gets rejected).
    fn mutated(mutate: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut frame = FRAME_BYTES.to_vec();
        mutate(&mut frame);
        refill_checksum(&mut frame);
        frame
    }

    fn refill_checksum(frame: &mut [u8]) {
        Ipv4Packet::new_unchecked(&mut frame[IP..]).fill_checksum();
    }

    #[test]
    fn test_error_bad_magic() {
        let frame = mutated(|f| f[RPC] = 0xe6);
        assert_eq!(parse_frame(&frame), Err(Error::BadMagic));
    }

    #[test]
    fn test_error_bad_version() {
        let frame = mutated(|f| f[RPC + 1] = 1);
        assert_eq!(parse_frame(&frame), Err(Error::BadVersion));
        let frame = mutated(|f| f[RPC + 1] = 3);
        assert_eq!(parse_frame(&frame), Err(Error::BadVersion));
        let frame = mutated(|f| f[RPC + 1] = 0);
        assert_eq!(parse_frame(&frame), Err(Error::BadVersion));
    }

    #[test]
    fn test_error_bad_checksum() {
        for byte in [IP + 10, IP + 11, IP + 12, IP + 19, IP + 8] {
            let mut frame = FRAME_BYTES.to_vec();
            frame[byte] ^= 0x40;
            assert_eq!(parse_frame(&frame), Err(Error::BadChecksum), "byte {byte}");
        }
    }

    #[test]
    fn trusting_the_checksum_skips_only_the_checksum() {
        // A wrong checksum field alone: accepted when trusted, and the
        // fields decode as in the golden frame.
        let mut frame = FRAME_BYTES.to_vec();
        frame[IP + 10] ^= 0x40;
        assert_eq!(parse_frame_with(&frame, true), Err(Error::BadChecksum));
        let trusted = parse_frame_with(&frame, false).expect("checksum not checked");
        assert_eq!(trusted, parse_frame(&FRAME_BYTES).unwrap());
        // Every other IPv4 check stays: version, fragments.
        let mut v6 = frame.clone();
        v6[IP] = 0x65;
        assert_eq!(parse_frame_with(&v6, false), Err(Error::NotIpv4));
        let mut frag = frame;
        frag[IP + 6] |= 0x20;
        assert_eq!(parse_frame_with(&frag, false), Err(Error::Fragmented));
    }

    #[test]
    fn test_error_fragmented() {
        let more_frags = mutated(|f| f[IP + 6] |= 0x20);
        assert_eq!(parse_frame(&more_frags), Err(Error::Fragmented));
        let offset = mutated(|f| f[IP + 7] = 0x01);
        assert_eq!(parse_frame(&offset), Err(Error::Fragmented));
        let high_offset = mutated(|f| f[IP + 6] = 0x1f);
        assert_eq!(parse_frame(&high_offset), Err(Error::Fragmented));
        // DF alone is not a fragment, and neither is no flag at all.
        let no_df = mutated(|f| f[IP + 6] = 0x00);
        assert!(parse_frame(&no_df).is_ok());
    }

    #[test]
    fn test_error_not_udp() {
        for proto in [1, 6, 0, 255] {
            let frame = mutated(|f| f[IP + 9] = proto);
            assert_eq!(parse_frame(&frame), Err(Error::NotUdp), "protocol {proto}");
        }
    }

    #[test]
    fn test_error_not_ipv4() {
        for ethertype in [[0x86, 0xdd], [0x08, 0x06], [0x00, 0x00], [0x81, 0x00]] {
            let mut frame = FRAME_BYTES.to_vec();
            frame[12..14].copy_from_slice(&ethertype);
            assert_eq!(parse_frame(&frame), Err(Error::NotIpv4), "{ethertype:x?}");
        }
        // IPv4 EtherType but another IP version.
        let frame = mutated(|f| f[IP] = 0x65);
        assert_eq!(parse_frame(&frame), Err(Error::NotIpv4));
    }

    #[test]
    fn test_error_udp_length() {
        // UDP length larger than the IPv4 payload (and than the frame).
        for len in [41u16, 74, 0xffff] {
            let frame = mutated(|f| f[UDP + 4..UDP + 6].copy_from_slice(&len.to_be_bytes()));
            assert_eq!(parse_frame(&frame), Err(Error::BadLength), "udp len {len}");
        }
        // UDP length below its own header.
        let frame = mutated(|f| f[UDP + 5] = 7);
        assert_eq!(parse_frame(&frame), Err(Error::BadLength));
        // UDP length too short for the RPC header.
        let frame = mutated(|f| f[UDP + 5] = 8 + 27);
        assert_eq!(parse_frame(&frame), Err(Error::Truncated));
        // UDP length shorter than the IPv4 payload: the payload ends there.
        let frame = mutated(|f| f[UDP + 5] = 8 + 28 + 2);
        assert_eq!(parse_frame(&frame).unwrap().payload, b"pi");
    }

    #[test]
    fn test_error_ip_lengths() {
        for ihl in [0u8, 1, 4] {
            let frame = mutated(|f| f[IP] = 0x40 | ihl);
            assert_eq!(parse_frame(&frame), Err(Error::BadLength), "ihl {ihl}");
        }
        // Total length below the header length.
        let frame = mutated(|f| f[IP + 3] = 19);
        assert_eq!(parse_frame(&frame), Err(Error::BadLength));
        // Total length past the end of the frame.
        let frame = mutated(|f| f[IP + 3] = 61);
        assert_eq!(parse_frame(&frame), Err(Error::Truncated));
        // Total length that cuts into the UDP datagram.
        let frame = mutated(|f| f[IP + 3] = 59);
        assert_eq!(parse_frame(&frame), Err(Error::BadLength));
        let frame = mutated(|f| f[IP + 3] = 20 + 4);
        assert_eq!(parse_frame(&frame), Err(Error::Truncated));
    }

    #[test]
    fn test_truncated_at_every_length() {
        for len in 0..FRAME_BYTES.len() {
            assert_eq!(
                parse_frame(&FRAME_BYTES[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
    }

    #[test]
    fn test_padding_ignored() {
        let mut frame = FRAME_BYTES.to_vec();
        frame.extend_from_slice(&[0u8; 20]);
        assert_eq!(parse_frame(&frame), parse_frame(&FRAME_BYTES));
        assert_eq!(parse_frame(&frame).unwrap().payload, b"ping");
    }

    #[test]
    fn test_ipv4_options_accepted() {
        // Insert one 4-byte option (four NOPs): IHL 6, total length + 4.
        let mut frame = FRAME_BYTES.to_vec();
        frame.splice(UDP..UDP, [0x01; 4]);
        frame[IP] = 0x46;
        frame[IP + 3] += 4;
        refill_checksum(&mut frame);
        assert_eq!(
            parse_frame(&frame).map(|p| (p.rpc, p.payload)),
            parse_frame(&FRAME_BYTES).map(|p| (p.rpc, p.payload))
        );
    }

    #[test]
    fn test_sm_body_in_payload() {
        let template = HeaderTemplate::new(
            (MacAddr([2, 0, 0, 0, 0, 1]), Ipv4Addr::new(10, 0, 0, 1), 1),
            (MacAddr::BROADCAST, Ipv4Addr::new(10, 0, 0, 2), 2),
        );
        let rpc = RpcRepr {
            pkt_type: PktType::SessionMgmt,
            req_type: 0,
            msg_size: SM_BODY_LEN as u32,
            dest_session: SESSION_NONE,
            pkt_num: 0,
            grant: 0,
            req_num: 0,
            token: 7,
        };
        let sm = SmRepr {
            sm_type: SmType::ConnectReq,
            status: SmStatus::Ok,
            client_session: 1,
            server_session: SESSION_NONE,
            credits: 8,
            mtu: 1500,
            req_window: 8,
            server_token: 0,
        };
        let mut buf = [0u8; HEADERS_LEN + SM_BODY_LEN];
        let n = template.write(&mut buf, &rpc, SM_BODY_LEN);
        sm.emit(&mut SmBody::new_unchecked(&mut buf[n..]));
        let parsed = parse_frame(&buf).unwrap();
        assert_eq!(parsed.rpc, rpc);
        let body = SmBody::new_checked(parsed.payload).unwrap();
        assert_eq!(SmRepr::parse(&body), Ok(sm));
    }

    #[test]
    fn test_error_display() {
        assert_eq!(
            Error::BadChecksum.to_string(),
            "IPv4 header checksum mismatch"
        );
    }

    /// Bytes whose single-byte corruption must be rejected: the EtherType, the
    /// IPv4 header except version/IHL (all covered by the header checksum),
    /// and the RPC magic and version.
    fn must_reject(index: usize) -> bool {
        (12..14).contains(&index)
            || (IP + 1..UDP).contains(&index)
            || (RPC..RPC + 2).contains(&index)
    }

    /// What an accepted frame must satisfy, whatever its bytes: the payload
    /// is a slice of the frame, starting right after the RPC header (behind
    /// the IPv4 header's own length, options included) and exactly as long
    /// as the UDP length says minus the UDP and RPC headers, inside the
    /// IPv4 total length (padding excluded); the headers it reports are the
    /// frame's bytes; trusting the checksum accepts it too, with the same
    /// result. A rejected frame is rejected for a reason the layered parse
    /// gives as well.
    fn check_invariants(frame: &[u8]) -> Result<(), TestCaseError> {
        let parsed = match parse_frame(frame) {
            Ok(p) => p,
            Err(e) => {
                prop_assert_eq!(parse_layered(frame, true), Err(e));
                return Ok(());
            }
        };
        let ihl = usize::from(frame[IP] & 0x0f) * 4;
        prop_assert!(frame[IP] >> 4 == 4 && ihl >= IPV4_HEADER_LEN);
        let total = usize::from(u16::from_be_bytes([frame[IP + 2], frame[IP + 3]]));
        let udp_at = IP + ihl;
        let udp_len = usize::from(u16::from_be_bytes([frame[udp_at + 4], frame[udp_at + 5]]));
        let payload_at = udp_at + UDP_HEADER_LEN + RPC_HEADER_LEN;
        prop_assert!(IP + total <= frame.len(), "total length past the frame");
        prop_assert!(ihl + udp_len <= total, "UDP length past the IPv4 packet");
        prop_assert_eq!(
            parsed.payload.len() + UDP_HEADER_LEN + RPC_HEADER_LEN,
            udp_len
        );
        // The payload's pointer range lies inside the frame's, where the
        // headers say it starts.
        let frame_range = frame.as_ptr_range();
        let payload_range = parsed.payload.as_ptr_range();
        prop_assert!(frame_range.start <= payload_range.start);
        prop_assert!(payload_range.end <= frame_range.end);
        prop_assert_eq!(
            parsed.payload,
            &frame[payload_at..payload_at + parsed.payload.len()]
        );
        prop_assert!(payload_at + parsed.payload.len() <= IP + total);
        prop_assert_eq!(&parsed.dst_mac.0[..], &frame[0..6]);
        prop_assert_eq!(&parsed.src_mac.0[..], &frame[6..12]);
        prop_assert_eq!(&parsed.src_ip.octets()[..], &frame[IP + 12..IP + 16]);
        prop_assert_eq!(&parsed.dst_ip.octets()[..], &frame[IP + 16..IP + 20]);
        prop_assert_eq!(
            parsed.src_port.to_be_bytes(),
            [frame[udp_at], frame[udp_at + 1]]
        );
        prop_assert_eq!(
            parsed.dst_port.to_be_bytes(),
            [frame[udp_at + 2], frame[udp_at + 3]]
        );
        prop_assert_eq!(parsed.ecn, frame[IP + 1] & ECN_MASK);
        prop_assert_eq!(parsed.trimmed, frame[IP + 1] >> 2 == DSCP_TRIMMED);
        prop_assert_eq!(frame[udp_at + UDP_HEADER_LEN], RPC_MAGIC);
        prop_assert_eq!(parse_frame_with(frame, false), Ok(parsed));
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn fuzz_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            check_invariants(&bytes)?;
        }

        #[test]
        fn fuzz_arbitrary_bytes_after_valid_eth_ip(
            tail in proptest::collection::vec(any::<u8>(), 0..200),
            total_len in 20u16..300,
        ) {
            // A valid Ethernet + IPv4 header with random contents after it,
            // so the fuzzer gets past the checksum into UDP and RPC parsing.
            let mut frame = FRAME_BYTES[..UDP].to_vec();
            frame[IP + 2..IP + 4].copy_from_slice(&total_len.to_be_bytes());
            frame.extend_from_slice(&tail);
            refill_checksum(&mut frame);
            check_invariants(&frame)?;
        }

        #[test]
        fn fuzz_flipped_bytes(
            (_, _, _, frame) in arb_frame(),
            flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8),
        ) {
            let mut frame = frame;
            for (index, mask) in &flips {
                let i = index.index(frame.len());
                frame[i] ^= mask;
            }
            check_invariants(&frame)?;
        }

        #[test]
        fn fuzz_single_flip_in_checked_bytes(
            (_, _, _, frame) in arb_frame(),
            index in any::<prop::sample::Index>(),
            mask in 1u8..=255,
        ) {
            let mut frame = frame;
            let i = index.index(frame.len());
            frame[i] ^= mask;
            let result = parse_frame(&frame);
            if must_reject(i) {
                prop_assert!(result.is_err(), "flip at {} accepted", i);
            }
            check_invariants(&frame)?;
        }

        #[test]
        fn fuzz_truncated((_, _, _, frame) in arb_frame(), cut in any::<prop::sample::Index>()) {
            let len = cut.index(frame.len());
            prop_assert_eq!(parse_frame(&frame[..len]), Err(Error::Truncated));
        }

        #[test]
        fn fuzz_junk_appended(
            (_, _, _, frame) in arb_frame(),
            junk in proptest::collection::vec(any::<u8>(), 1..64),
        ) {
            let mut padded = frame.clone();
            padded.extend_from_slice(&junk);
            prop_assert_eq!(parse_frame(&padded), parse_frame(&frame));
            prop_assert!(parse_frame(&frame).is_ok());
            check_invariants(&frame)?;
            check_invariants(&padded)?;
        }

        #[test]
        fn fuzz_mixed_mutations(
            (_, _, _, frame) in arb_frame(),
            ops in proptest::collection::vec(
                (0u8..3, any::<prop::sample::Index>(), any::<u8>()), 1..6),
        ) {
            let mut frame = frame;
            for (op, index, byte) in ops {
                match op {
                    0 if !frame.is_empty() => {
                        let i = index.index(frame.len());
                        frame[i] ^= byte;
                    }
                    1 => frame.truncate(index.index(frame.len() + 1)),
                    _ => frame.push(byte),
                }
            }
            check_invariants(&frame)?;
        }
    }
}
