//! IPv4: the header view, its `Repr`, and the RFC 1071 Internet checksum. On
//! parse it accepts options (IHL > 5) and rejects what the engine never sends
//! and cannot use: other versions, bad header checksums, fragments (MF set or
//! nonzero offset), and length fields that disagree with the buffer. On emit
//! it writes the one header shape the engine sends: version 4, IHL 5, DSCP/ECN
//! 0, identification 0, DF set, TTL 64.
//!
//! A packet's payload is the bytes between the header and the total length;
//! anything after that (Ethernet padding) is not part of it.

use std::net::Ipv4Addr;

use super::{get_u16, get_u32, set_u16, set_u32, Error, IPV4_HEADER_LEN};

/// TTL of every packet the engine emits.
const EMIT_TTL: u8 = 64;
/// Don't Fragment flag in the flags/fragment-offset word.
const FLAG_DF: u16 = 0x4000;
/// More Fragments flag in the flags/fragment-offset word.
const FLAG_MF: u16 = 0x2000;
/// Fragment offset bits (in 8-byte units) of the flags/fragment-offset word.
const FRAG_OFFSET_MASK: u16 = 0x1fff;

wire_enum! {
    /// The IPv4 protocol field (the next header).
    pub enum IpProtocol(u8) {
        /// ICMP (1).
        Icmp = 1,
        /// TCP (6).
        Tcp = 6,
        /// UDP (17), the only one the engine accepts.
        Udp = 17,
    }
}

/// The RFC 1071 Internet checksum of `data`: the ones' complement of the
/// ones' complement sum of its 16-bit big-endian words (an odd trailing byte
/// is padded with zero). Over a header that includes its checksum field the
/// result is 0 exactly when the checksum is correct.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    !fold(sum)
}

/// Folds a ones' complement sum to 16 bits (end-around carry).
#[inline]
pub(super) fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

mod field {
    use core::ops::Range;

    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// A view of an IPv4 packet.
///
/// After `new_checked` succeeds, no getter can panic (as long as the length
/// fields are not changed through setters afterwards).
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps a buffer without checks; getters panic on a short buffer.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps a buffer, checking the length fields against it (see [`Self::check_len`]).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// `Truncated` if the buffer is shorter than 20 bytes, than the IHL, or
    /// than the total length; `BadLength` if the IHL is below 5 or the total
    /// length is below the IHL. A longer buffer (Ethernet padding) is fine.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < IPV4_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(self.header_len());
        if header_len < IPV4_HEADER_LEN {
            return Err(Error::BadLength);
        }
        if len < header_len {
            return Err(Error::Truncated);
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::BadLength);
        }
        if len < total_len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives back the buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// IP version, high nibble of byte 0 (4 for IPv4).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL * 4).
    #[inline]
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The DSCP/ECN byte (formerly type of service).
    #[inline]
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// Header plus payload length in bytes.
    #[inline]
    pub fn total_len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Identification, bytes 4..6.
    #[inline]
    pub fn ident(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::IDENT)
    }

    /// Don't Fragment flag, bit 0x40 of byte 6.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        get_u16(self.buffer.as_ref(), field::FLG_OFF) & FLAG_DF != 0
    }

    /// More Fragments flag, bit 0x20 of byte 6.
    #[inline]
    pub fn more_frags(&self) -> bool {
        get_u16(self.buffer.as_ref(), field::FLG_OFF) & FLAG_MF != 0
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (get_u16(self.buffer.as_ref(), field::FLG_OFF) & FRAG_OFFSET_MASK) << 3
    }

    /// Time to live, byte 8.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol (next header), byte 9.
    #[inline]
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header checksum, bytes 10..12.
    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source address, bytes 12..16.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(get_u32(self.buffer.as_ref(), field::SRC_ADDR))
    }

    /// Destination address, bytes 16..20.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(get_u32(self.buffer.as_ref(), field::DST_ADDR))
    }

    /// True if the header checksum (over `header_len()` bytes, options
    /// included) is correct.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        let header = &self.buffer.as_ref()[..usize::from(self.header_len())];
        checksum(header) == 0
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv4Packet<&'a T> {
    /// The bytes between the header and the total length.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        let data = self.buffer.as_ref();
        &data[usize::from(self.header_len())..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the IP version, high nibble of byte 0.
    #[inline]
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (version << 4);
    }

    /// Sets the IHL from a length in bytes (a multiple of 4, at most 60).
    #[inline]
    pub fn set_header_len(&mut self, len: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) & 0x0f);
    }

    /// Sets DSCP and ECN, byte 1.
    #[inline]
    pub fn set_dscp_ecn(&mut self, value: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = value;
    }

    /// Sets the total length (header plus payload, in bytes), bytes 2..4.
    #[inline]
    pub fn set_total_len(&mut self, len: u16) {
        set_u16(self.buffer.as_mut(), field::LENGTH, len);
    }

    /// Sets the identification, bytes 4..6.
    #[inline]
    pub fn set_ident(&mut self, ident: u16) {
        set_u16(self.buffer.as_mut(), field::IDENT, ident);
    }

    /// Clears DF, MF and the fragment offset.
    #[inline]
    pub fn clear_flags(&mut self) {
        set_u16(self.buffer.as_mut(), field::FLG_OFF, 0);
    }

    /// Sets or clears Don't Fragment, bit 0x40 of byte 6.
    #[inline]
    pub fn set_dont_frag(&mut self, value: bool) {
        self.set_flag(FLAG_DF, value);
    }

    /// Sets or clears More Fragments, bit 0x20 of byte 6.
    #[inline]
    pub fn set_more_frags(&mut self, value: bool) {
        self.set_flag(FLAG_MF, value);
    }

    /// Sets the fragment offset from a byte count (a multiple of 8).
    #[inline]
    pub fn set_frag_offset(&mut self, offset: u16) {
        let data = self.buffer.as_mut();
        let word = get_u16(data, field::FLG_OFF) & !FRAG_OFFSET_MASK;
        set_u16(data, field::FLG_OFF, word | (offset >> 3));
    }

    /// Sets the time to live, byte 8.
    #[inline]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }

    /// Sets the protocol, byte 9.
    #[inline]
    pub fn set_protocol(&mut self, protocol: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol.into();
    }

    /// Sets the header checksum, bytes 10..12 (see [`Self::fill_checksum`]).
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// Sets the source address, bytes 12..16.
    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        set_u32(self.buffer.as_mut(), field::SRC_ADDR, addr.into());
    }

    /// Sets the destination address, bytes 16..20.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        set_u32(self.buffer.as_mut(), field::DST_ADDR, addr.into());
    }

    /// Computes and stores the header checksum over `header_len()` bytes.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let header_len = usize::from(self.header_len());
        let sum = checksum(&self.buffer.as_ref()[..header_len]);
        self.set_checksum(sum);
    }

    /// The bytes between the header and the total length.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = usize::from(self.header_len())..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }

    #[inline]
    fn set_flag(&mut self, flag: u16, value: bool) {
        let data = self.buffer.as_mut();
        let word = get_u16(data, field::FLG_OFF);
        let word = if value { word | flag } else { word & !flag };
        set_u16(data, field::FLG_OFF, word);
    }
}

/// The decoded IPv4 header: only what the engine uses. TTL, DSCP and the
/// identification are not kept; `emit` writes fixed values for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Protocol of the payload.
    pub protocol: IpProtocol,
    /// Bytes after the header, up to the total length.
    pub payload_len: usize,
}

impl Ipv4Repr {
    /// Largest `payload_len` that `emit` accepts (total length is 16 bits).
    pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize - IPV4_HEADER_LEN;

    /// Validates and decodes: length fields (`Truncated`/`BadLength`), version
    /// 4 (`NotIpv4`), header checksum (`BadChecksum`), no fragmentation
    /// (`Fragmented`). Any protocol is accepted.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Ipv4Packet<&T>) -> Result<Self, Error> {
        Self::parse_with(packet, true)
    }

    /// `parse`, with the header checksum checked only when
    /// `verify_checksum`: skipping it is for links that cannot corrupt a
    /// frame (shared memory) or whose NIC has verified it.
    #[inline]
    pub fn parse_with<T: AsRef<[u8]> + ?Sized>(
        packet: &Ipv4Packet<&T>,
        verify_checksum: bool,
    ) -> Result<Self, Error> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::NotIpv4);
        }
        if verify_checksum && !packet.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        if packet.more_frags() || packet.frag_offset() != 0 {
            return Err(Error::Fragmented);
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - usize::from(packet.header_len()),
        })
    }

    /// Bytes `emit` writes (no options).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        IPV4_HEADER_LEN
    }

    /// Writes a 20-byte header with a valid checksum into `packet`.
    ///
    /// # Panics
    /// If `payload_len > Ipv4Repr::MAX_PAYLOAD_LEN`, or the buffer is shorter
    /// than 20 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) {
        assert!(
            self.payload_len <= Self::MAX_PAYLOAD_LEN,
            "IPv4 payload does not fit the 16-bit total length"
        );
        packet.set_version(4);
        packet.set_header_len(IPV4_HEADER_LEN as u8);
        packet.set_dscp_ecn(0);
        packet.set_total_len((IPV4_HEADER_LEN + self.payload_len) as u16);
        packet.set_ident(0);
        packet.clear_flags();
        packet.set_dont_frag(true);
        packet.set_ttl(EMIT_TTL);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // The classic example header: total length 0x73 (115), id 0, DF, TTL 64,
    // UDP, 192.168.0.1 -> 192.168.0.199. Checksum by hand: the 16-bit words
    // other than the checksum sum to
    //   4500 + 0073 + 0000 + 4000 + 4011 + c0a8 + 0001 + c0a8 + 00c7 = 0x2479c,
    // folded 0x479c + 0x2 = 0x479e, complemented 0xb861.
    static HEADER_BYTES: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];
    const PAYLOAD_LEN: usize = 0x73 - 20;

    fn packet_bytes() -> Vec<u8> {
        let mut v = HEADER_BYTES.to_vec();
        v.extend((0..PAYLOAD_LEN).map(|i| i as u8));
        v
    }

    fn repr() -> Ipv4Repr {
        Ipv4Repr {
            src_addr: Ipv4Addr::new(192, 168, 0, 1),
            dst_addr: Ipv4Addr::new(192, 168, 0, 199),
            protocol: IpProtocol::Udp,
            payload_len: PAYLOAD_LEN,
        }
    }

    /// Rewrites the checksum of a (possibly deliberately odd) header.
    fn refill(bytes: &mut [u8]) {
        Ipv4Packet::new_unchecked(bytes).fill_checksum();
    }

    #[test]
    fn test_checksum_known_example() {
        let mut h = HEADER_BYTES;
        assert_eq!(checksum(&h), 0);
        h[10] = 0;
        h[11] = 0;
        assert_eq!(checksum(&h), 0xb861);
        // Odd length: trailing byte padded with zero.
        assert_eq!(checksum(&[0x01]), !0x0100);
        assert_eq!(checksum(&[]), 0xffff);
    }

    #[test]
    fn test_parse_ipv4() {
        let bytes = packet_bytes();
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.version(), 4);
        assert_eq!(packet.header_len(), 20);
        assert_eq!(packet.dscp_ecn(), 0);
        assert_eq!(packet.total_len(), 0x73);
        assert_eq!(packet.ident(), 0);
        assert!(packet.dont_frag());
        assert!(!packet.more_frags());
        assert_eq!(packet.frag_offset(), 0);
        assert_eq!(packet.ttl(), 64);
        assert_eq!(packet.protocol(), IpProtocol::Udp);
        assert_eq!(packet.checksum(), 0xb861);
        assert!(packet.verify_checksum());
        assert_eq!(packet.payload(), &bytes[20..]);
        assert_eq!(Ipv4Repr::parse(&packet).unwrap(), repr());
    }

    #[test]
    fn test_emit_ipv4() {
        let mut bytes = vec![0xa5; 0x73];
        let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
        repr().emit(&mut packet);
        for (i, b) in packet.payload_mut().iter_mut().enumerate() {
            *b = i as u8;
        }
        assert_eq!(bytes, packet_bytes());
    }

    #[test]
    fn test_parse_ignores_padding() {
        let mut bytes = packet_bytes();
        bytes.extend_from_slice(&[0xee; 7]);
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.payload().len(), PAYLOAD_LEN);
        assert_eq!(Ipv4Repr::parse(&packet).unwrap(), repr());
    }

    #[test]
    fn test_parse_options() {
        // IHL 6: one 4-byte option (four NOPs), checksum over 24 bytes.
        let mut bytes = HEADER_BYTES[..].to_vec();
        bytes[0] = 0x46;
        bytes.splice(20..20, [0x01; 4]);
        bytes.extend_from_slice(&[0u8; PAYLOAD_LEN - 4]);
        refill(&mut bytes);
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.header_len(), 24);
        assert_eq!(packet.payload().len(), PAYLOAD_LEN - 4);
        let parsed = Ipv4Repr::parse(&packet).unwrap();
        assert_eq!(parsed.payload_len, PAYLOAD_LEN - 4);
    }

    #[test]
    fn test_errors_ipv4() {
        let good = packet_bytes();
        let check = |mutate: &dyn Fn(&mut Vec<u8>), fix_sum: bool| {
            let mut b = good.clone();
            mutate(&mut b);
            if fix_sum {
                refill(&mut b);
            }
            Ipv4Packet::new_checked(&b[..]).and_then(|p| Ipv4Repr::parse(&p))
        };
        for len in 0..good.len() {
            assert_eq!(
                Ipv4Packet::new_checked(&good[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
        assert_eq!(check(&|b| b[0] = 0x44, true), Err(Error::BadLength));
        assert_eq!(check(&|b| b[0] = 0x40, true), Err(Error::BadLength));
        let long_ihl = |b: &mut Vec<u8>| {
            b[0] = 0x4f;
            b[3] = 40;
        };
        assert_eq!(check(&long_ihl, true), Err(Error::BadLength));
        assert_eq!(check(&|b| b[3] = 19, true), Err(Error::BadLength));
        assert_eq!(check(&|b| b[3] = 0x74, true), Err(Error::Truncated));
        assert_eq!(check(&|b| b[0] = 0x65, true), Err(Error::NotIpv4));
        assert_eq!(check(&|b| b[11] ^= 1, false), Err(Error::BadChecksum));
        assert_eq!(check(&|b| b[15] ^= 1, false), Err(Error::BadChecksum));
        assert_eq!(check(&|b| b[6] = 0x20, true), Err(Error::Fragmented));
        assert_eq!(check(&|b| b[7] = 0x01, true), Err(Error::Fragmented));
        assert_eq!(check(&|b| b[6] = 0x00, true), Ok(repr()));
        // Other protocols parse; `parse_frame` is the one that insists on UDP.
        let tcp = check(&|b| b[9] = 6, true).unwrap();
        assert_eq!(tcp.protocol, IpProtocol::Tcp);
    }

    #[test]
    fn test_flag_setters() {
        let mut bytes = packet_bytes();
        let mut p = Ipv4Packet::new_unchecked(&mut bytes[..]);
        p.set_more_frags(true);
        p.set_frag_offset(8 * 100);
        assert!(p.more_frags() && p.dont_frag());
        assert_eq!(p.frag_offset(), 800);
        p.set_dont_frag(false);
        p.set_more_frags(false);
        assert!(!p.more_frags() && !p.dont_frag());
        assert_eq!(p.frag_offset(), 800);
        p.clear_flags();
        assert_eq!(p.frag_offset(), 0);
    }

    fn arb_repr() -> impl Strategy<Value = Ipv4Repr> {
        (any::<u32>(), any::<u32>(), any::<u8>(), 0usize..1600).prop_map(|(s, d, p, len)| {
            Ipv4Repr {
                src_addr: Ipv4Addr::from(s),
                dst_addr: Ipv4Addr::from(d),
                protocol: IpProtocol::from(p),
                payload_len: len,
            }
        })
    }

    proptest! {
        #[test]
        fn prop_ipv4_roundtrip(repr in arb_repr(), padding in 0usize..64) {
            let mut bytes = vec![0u8; repr.buffer_len() + repr.payload_len + padding];
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut bytes[..]));
            let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(Ipv4Repr::parse(&packet), Ok(repr));
            prop_assert_eq!(packet.payload().len(), repr.payload_len);
        }

        #[test]
        fn prop_ipv4_getters_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            if let Ok(p) = Ipv4Packet::new_checked(&bytes[..]) {
                let _ = (p.version(), p.dscp_ecn(), p.ident(), p.dont_frag(), p.more_frags());
                let _ = (p.frag_offset(), p.ttl(), p.protocol(), p.checksum());
                let _ = (p.src_addr(), p.dst_addr(), p.verify_checksum());
                // The payload lies between the header's length and the
                // total length, both inside the buffer.
                let ihl = usize::from(bytes[0] & 0x0f) * 4;
                let total = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
                prop_assert!(IPV4_HEADER_LEN <= ihl && ihl <= total && total <= bytes.len());
                prop_assert_eq!(p.payload(), &bytes[ihl..total]);
                if let Ok(repr) = Ipv4Repr::parse(&p) {
                    prop_assert_eq!(repr.payload_len, total - ihl);
                }
            }
        }
    }
}
