//! Ethernet II: the 14-byte header (destination MAC, source MAC, EtherType; no
//! VLAN tags), the `MacAddr` type used across the engine (with its text form
//! `aa:bb:cc:dd:ee:ff` for configuration files), and the `EtherType` values
//! the engine distinguishes. The payload of a frame is everything after the
//! header, including any padding; inner headers decide their own length.

use core::fmt;
use core::str::FromStr;

use super::{get_u16, set_u16, Error, ETHERNET_HEADER_LEN};

/// A 48-bit Ethernet MAC address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// The six address bytes, in wire order.
    #[inline]
    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// True for ff:ff:ff:ff:ff:ff.
    #[inline]
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Group bit (least significant bit of the first octet) set; includes broadcast.
    #[inline]
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Group bit clear: an address of one station.
    #[inline]
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MacAddr({self})")
    }
}

/// The text given to `MacAddr::from_str` is not six colon-separated pairs of
/// hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address (expected six colon-separated hex pairs, e.g. 02:00:00:00:00:01)")]
pub struct ParseMacAddrError;

impl FromStr for MacAddr {
    type Err = ParseMacAddrError;

    /// Parses `aa:bb:cc:dd:ee:ff` (either case; exactly two hex digits per octet).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut out {
            let part = parts.next().ok_or(ParseMacAddrError)?;
            if part.len() != 2 || !part.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(ParseMacAddrError);
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| ParseMacAddrError)?;
        }
        if parts.next().is_some() {
            return Err(ParseMacAddrError);
        }
        Ok(MacAddr(out))
    }
}

wire_enum! {
    /// The EtherType field.
    pub enum EtherType(u16) {
        /// IPv4 (0x0800), the only one the engine accepts.
        Ipv4 = 0x0800,
        /// ARP (0x0806).
        Arp = 0x0806,
        /// IPv6 (0x86dd).
        Ipv6 = 0x86dd,
    }
}

mod field {
    use core::ops::Range;

    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: usize = 14;
}

/// A view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps a buffer without checking its length; getters panic if it is
    /// shorter than [`ETHERNET_HEADER_LEN`].
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps a buffer, checking it holds a whole header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// `Err(Truncated)` if the buffer is shorter than the header.
    #[inline]
    pub fn check_len(&self) -> Result<(), Error> {
        if self.buffer.as_ref().len() < ETHERNET_HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives back the buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination MAC, bytes 0..6.
    #[inline]
    pub fn dst_addr(&self) -> MacAddr {
        let mut b = [0; 6];
        b.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        MacAddr(b)
    }

    /// Source MAC, bytes 6..12.
    #[inline]
    pub fn src_addr(&self) -> MacAddr {
        let mut b = [0; 6];
        b.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        MacAddr(b)
    }

    /// EtherType, bytes 12..14.
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType::from(get_u16(self.buffer.as_ref(), field::ETHERTYPE))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> EthernetFrame<&'a T> {
    /// Everything after the header (including any Ethernet padding).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC, bytes 0..6.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.0);
    }

    /// Sets the source MAC, bytes 6..12.
    #[inline]
    pub fn set_src_addr(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.0);
    }

    /// Sets the EtherType, bytes 12..14.
    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        set_u16(self.buffer.as_mut(), field::ETHERTYPE, ethertype.into());
    }

    /// Everything after the header (including any Ethernet padding).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The decoded Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Source MAC.
    pub src_addr: MacAddr,
    /// Destination MAC.
    pub dst_addr: MacAddr,
    /// EtherType of the payload.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Decodes a checked frame; any EtherType is accepted.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &EthernetFrame<&T>) -> Result<Self, Error> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Bytes `emit` writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        ETHERNET_HEADER_LEN
    }

    /// Writes the header into the first `buffer_len()` bytes of `frame`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // dst 02:00:00:00:00:02, src 02:00:00:00:00:01, EtherType IPv4, 4 payload bytes.
    static FRAME_BYTES: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x00, // EtherType
        0xaa, 0xbb, 0xcc, 0xdd, // payload
    ];

    fn repr() -> EthernetRepr {
        EthernetRepr {
            src_addr: MacAddr([0x02, 0, 0, 0, 0, 0x01]),
            dst_addr: MacAddr([0x02, 0, 0, 0, 0, 0x02]),
            ethertype: EtherType::Ipv4,
        }
    }

    #[test]
    fn test_parse_ethernet() {
        let frame = EthernetFrame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(frame.dst_addr(), MacAddr([0x02, 0, 0, 0, 0, 0x02]));
        assert_eq!(frame.src_addr(), MacAddr([0x02, 0, 0, 0, 0, 0x01]));
        assert_eq!(frame.ethertype(), EtherType::Ipv4);
        assert_eq!(frame.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(EthernetRepr::parse(&frame).unwrap(), repr());
    }

    #[test]
    fn test_emit_ethernet() {
        let mut bytes = [0u8; 18];
        let mut frame = EthernetFrame::new_unchecked(&mut bytes[..]);
        repr().emit(&mut frame);
        frame
            .payload_mut()
            .copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(bytes, FRAME_BYTES);
    }

    #[test]
    fn test_truncated_ethernet() {
        for len in 0..ETHERNET_HEADER_LEN {
            assert_eq!(
                EthernetFrame::new_checked(&FRAME_BYTES[..len]).err(),
                Some(Error::Truncated)
            );
        }
        let frame = EthernetFrame::new_checked(&FRAME_BYTES[..14]).unwrap();
        assert!(frame.payload().is_empty());
    }

    #[test]
    fn test_ethertype_values() {
        assert_eq!(EtherType::from(0x0806), EtherType::Arp);
        assert_eq!(EtherType::from(0x86dd), EtherType::Ipv6);
        assert_eq!(EtherType::from(0x1234), EtherType::Unknown(0x1234));
        assert_eq!(u16::from(EtherType::Ipv4), 0x0800);
    }

    #[test]
    fn test_mac_display_and_parse() {
        let mac = MacAddr([0xaa, 0xbb, 0x0c, 0xdd, 0xee, 0x0f]);
        assert_eq!(mac.to_string(), "aa:bb:0c:dd:ee:0f");
        assert_eq!(format!("{mac:?}"), "MacAddr(aa:bb:0c:dd:ee:0f)");
        assert_eq!("aa:bb:0c:dd:ee:0f".parse::<MacAddr>(), Ok(mac));
        assert_eq!("AA:BB:0C:DD:EE:0F".parse::<MacAddr>(), Ok(mac));
        assert_eq!(
            "ff:ff:ff:ff:ff:ff".parse::<MacAddr>(),
            Ok(MacAddr::BROADCAST)
        );
        for bad in [
            "",
            "aa:bb:cc:dd:ee",
            "aa:bb:cc:dd:ee:ff:00",
            "aa:bb:cc:dd:ee:f",
            "aa:bb:cc:dd:ee:fff",
            "aa-bb-cc-dd-ee-ff",
            "aa:bb:cc:dd:ee:+f",
            "gg:bb:cc:dd:ee:ff",
            "aa:bb:cc:dd:ee:ff:",
        ] {
            assert_eq!(bad.parse::<MacAddr>(), Err(ParseMacAddrError), "{bad:?}");
        }
    }

    #[test]
    fn test_mac_classes() {
        assert!(MacAddr::BROADCAST.is_broadcast());
        assert!(MacAddr::BROADCAST.is_multicast());
        assert!(MacAddr([0x01, 0x00, 0x5e, 0, 0, 1]).is_multicast());
        assert!(MacAddr([0x02, 0, 0, 0, 0, 1]).is_unicast());
    }

    proptest! {
        #[test]
        fn prop_ethernet_roundtrip(src: [u8; 6], dst: [u8; 6], ethertype: u16) {
            let repr = EthernetRepr {
                src_addr: MacAddr(src),
                dst_addr: MacAddr(dst),
                ethertype: EtherType::from(ethertype),
            };
            let mut bytes = [0u8; ETHERNET_HEADER_LEN];
            repr.emit(&mut EthernetFrame::new_unchecked(&mut bytes[..]));
            let frame = EthernetFrame::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(EthernetRepr::parse(&frame).unwrap(), repr);
        }

        #[test]
        fn prop_mac_text_roundtrip(mac: [u8; 6]) {
            let mac = MacAddr(mac);
            prop_assert_eq!(mac.to_string().parse::<MacAddr>(), Ok(mac));
        }
    }
}
