//! UDP: the 8-byte header view and its `Repr`. The engine emits a zero
//! checksum, which IPv4 allows ("no checksum"), and does not verify the
//! checksum on parse: the Ethernet FCS already covers the frame on the wire,
//! and the RPC header carries a session token against stray packets.
//!
//! The view expects its buffer to be exactly the IPv4 payload, so a UDP
//! length that disagrees with it is a `BadLength`, not a truncation. A UDP
//! length shorter than the buffer is accepted, and the payload ends where the
//! UDP length says (as Linux does).

use super::{get_u16, set_u16, Error, UDP_HEADER_LEN};

mod field {
    use core::ops::Range;

    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// A view of a UDP datagram.
///
/// After `new_checked` succeeds, no getter can panic (as long as the length
/// field is not changed through a setter afterwards).
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps a buffer without checks; getters panic on a short buffer.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps a buffer, checking the length field against it (see [`Self::check_len`]).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// `Truncated` if the buffer is shorter than 8 bytes; `BadLength` if the
    /// length field is below 8 or above the buffer length.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < UDP_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let udp_len = usize::from(self.len());
        if udp_len < UDP_HEADER_LEN || udp_len > len {
            return Err(Error::BadLength);
        }
        Ok(())
    }

    /// Gives back the buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port, bytes 0..2.
    #[inline]
    pub fn src_port(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port, bytes 2..4.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Header plus payload length in bytes.
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Checksum, bytes 6..8 (0: none; never verified).
    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> UdpPacket<&'a T> {
    /// The bytes after the header, up to the UDP length.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[UDP_HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port, bytes 0..2.
    #[inline]
    pub fn set_src_port(&mut self, port: u16) {
        set_u16(self.buffer.as_mut(), field::SRC_PORT, port);
    }

    /// Sets the destination port, bytes 2..4.
    #[inline]
    pub fn set_dst_port(&mut self, port: u16) {
        set_u16(self.buffer.as_mut(), field::DST_PORT, port);
    }

    /// Sets the length (header plus payload, in bytes), bytes 4..6.
    #[inline]
    pub fn set_len(&mut self, len: u16) {
        set_u16(self.buffer.as_mut(), field::LENGTH, len);
    }

    /// Sets the checksum, bytes 6..8.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        set_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// The bytes after the header, up to the UDP length.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[UDP_HEADER_LEN..end]
    }
}

/// The decoded UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Bytes after the header, up to the UDP length.
    pub payload_len: usize,
}

impl UdpRepr {
    /// Largest `payload_len` that `emit` accepts (the length field is 16 bits).
    pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize - UDP_HEADER_LEN;

    /// Decodes; checks the length field (the checksum is not verified).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &UdpPacket<&T>) -> Result<Self, Error> {
        packet.check_len()?;
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - UDP_HEADER_LEN,
        })
    }

    /// Bytes `emit` writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        UDP_HEADER_LEN
    }

    /// Writes the header with length `8 + payload_len` and checksum 0.
    ///
    /// # Panics
    /// If `payload_len > UdpRepr::MAX_PAYLOAD_LEN`, or the buffer is shorter
    /// than 8 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>) {
        assert!(
            self.payload_len <= Self::MAX_PAYLOAD_LEN,
            "UDP payload does not fit the 16-bit length"
        );
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((UDP_HEADER_LEN + self.payload_len) as u16);
        packet.set_checksum(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // 8080 -> 8081, length 12 (8 + 4), checksum 0, payload "ping".
    static PACKET_BYTES: [u8; 12] = [
        0x1f, 0x90, 0x1f, 0x91, 0x00, 0x0c, 0x00, 0x00, b'p', b'i', b'n', b'g',
    ];

    fn repr() -> UdpRepr {
        UdpRepr {
            src_port: 8080,
            dst_port: 8081,
            payload_len: 4,
        }
    }

    #[test]
    fn test_parse_udp() {
        let packet = UdpPacket::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.src_port(), 8080);
        assert_eq!(packet.dst_port(), 8081);
        assert_eq!(packet.len(), 12);
        assert_eq!(packet.checksum(), 0);
        assert_eq!(packet.payload(), b"ping");
        assert_eq!(UdpRepr::parse(&packet).unwrap(), repr());
    }

    #[test]
    fn test_emit_udp() {
        let mut bytes = [0xa5u8; 12];
        let mut packet = UdpPacket::new_unchecked(&mut bytes[..]);
        repr().emit(&mut packet);
        packet.payload_mut().copy_from_slice(b"ping");
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_nonzero_checksum_not_verified() {
        let mut bytes = PACKET_BYTES;
        bytes[6] = 0x12;
        bytes[7] = 0x34;
        let packet = UdpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(UdpRepr::parse(&packet).unwrap(), repr());
    }

    #[test]
    fn test_errors_udp() {
        for len in 0..UDP_HEADER_LEN {
            assert_eq!(
                UdpPacket::new_checked(&PACKET_BYTES[..len]).err(),
                Some(Error::Truncated)
            );
        }
        // Length field larger than the buffer.
        assert_eq!(
            UdpPacket::new_checked(&PACKET_BYTES[..11]).err(),
            Some(Error::BadLength)
        );
        let mut bytes = PACKET_BYTES;
        bytes[5] = 7;
        assert_eq!(
            UdpPacket::new_checked(&bytes[..]).err(),
            Some(Error::BadLength)
        );
        // Shorter length field than the buffer: payload ends at the length.
        bytes[5] = 10;
        let packet = UdpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.payload(), b"pi");
    }

    proptest! {
        #[test]
        fn prop_udp_roundtrip(src_port: u16, dst_port: u16, payload_len in 0usize..1600) {
            let repr = UdpRepr { src_port, dst_port, payload_len };
            let mut bytes = vec![0u8; repr.buffer_len() + payload_len];
            repr.emit(&mut UdpPacket::new_unchecked(&mut bytes[..]));
            let packet = UdpPacket::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(UdpRepr::parse(&packet), Ok(repr));
            prop_assert_eq!(packet.payload().len(), payload_len);
        }

        #[test]
        fn prop_udp_getters_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(p) = UdpPacket::new_checked(&bytes[..]) {
                let _ = (p.src_port(), p.dst_port(), p.checksum());
                // The payload is the buffer after the header, cut at the
                // length field (which the check kept inside the buffer).
                let len = usize::from(u16::from_be_bytes([bytes[4], bytes[5]]));
                prop_assert!((UDP_HEADER_LEN..=bytes.len()).contains(&len));
                prop_assert_eq!(p.payload(), &bytes[UDP_HEADER_LEN..len]);
                if let Ok(repr) = UdpRepr::parse(&p) {
                    prop_assert_eq!(repr.payload_len, len - UDP_HEADER_LEN);
                }
            }
        }
    }
}
