//! The header fields a device's checksum offload expects before it sends a
//! frame (DPDK's contract, `rte_mbuf_core.h`): with IPv4 header checksum
//! offload the checksum field is 0; with UDP checksum offload the UDP
//! checksum field holds the folded (not complemented) sum of the IPv4
//! pseudo-header, which the device completes over the UDP header and
//! payload. The engine's frames have a 20-byte IPv4 header (no options).

use super::ipv4::fold;
use super::{ETHERNET_HEADER_LEN as ETH, IPV4_HEADER_LEN};

const IP_CHECKSUM: usize = ETH + 10;
const IP_SRC: usize = ETH + 12;
const UDP: usize = ETH + IPV4_HEADER_LEN;
const UDP_LEN: usize = UDP + 4;
const UDP_CHECKSUM: usize = UDP + 6;
/// IP protocol number of UDP, part of the pseudo-header.
const PROTO_UDP: u64 = 17;

/// Readies `frame` (Ethernet + 20-byte IPv4 + UDP, as the engine writes
/// them) for the offloads: zeroes the IPv4 checksum when `ip`, writes the
/// pseudo-header sum into the UDP checksum when `udp`. A frame too short to
/// hold the headers is left as it is.
#[inline]
pub fn prepare_checksum_offload(frame: &mut [u8], ip: bool, udp: bool) {
    if frame.len() < UDP + 8 {
        return;
    }
    if ip {
        frame[IP_CHECKSUM..IP_CHECKSUM + 2].fill(0);
    }
    if udp {
        let w = |at: usize| u64::from(u16::from_be_bytes([frame[at], frame[at + 1]]));
        // Source and destination addresses, protocol, UDP length.
        let sum =
            w(IP_SRC) + w(IP_SRC + 2) + w(IP_SRC + 4) + w(IP_SRC + 6) + PROTO_UDP + w(UDP_LEN);
        frame[UDP_CHECKSUM..UDP_CHECKSUM + 2].copy_from_slice(&fold(sum).to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{checksum, parse_frame, Ipv4Packet, UdpPacket};

    /// The template's golden frame: a Request carrying "ping".
    fn frame() -> Vec<u8> {
        crate::wire::template::tests::FRAME_BYTES.to_vec()
    }

    /// What a device completes: the ones' complement sum over the UDP
    /// header (its checksum field holding the pseudo-header sum) and the
    /// payload, complemented.
    fn device_udp_checksum(f: &[u8]) -> u16 {
        checksum(&f[UDP..])
    }

    /// The full UDP checksum computed the textbook way.
    fn software_udp_checksum(f: &[u8]) -> u16 {
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&f[IP_SRC..IP_SRC + 8]);
        pseudo.extend_from_slice(&[0, 17]);
        pseudo.extend_from_slice(&f[UDP_LEN..UDP_LEN + 2]);
        let mut seg = f[UDP..].to_vec();
        seg[6] = 0;
        seg[7] = 0;
        pseudo.extend_from_slice(&seg);
        checksum(&pseudo)
    }

    #[test]
    fn test_pseudo_header_completes_to_the_udp_checksum() {
        let mut f = frame();
        let want = software_udp_checksum(&f);
        prepare_checksum_offload(&mut f, false, true);
        assert_ne!(UdpPacket::new_unchecked(&f[UDP..]).checksum(), 0);
        assert_eq!(device_udp_checksum(&f), want);
        // The IPv4 header is untouched and still valid.
        assert_eq!(checksum(&f[ETH..UDP]), 0);
    }

    #[test]
    fn test_ip_offload_zeroes_the_header_checksum() {
        let mut f = frame();
        prepare_checksum_offload(&mut f, true, false);
        assert_eq!(Ipv4Packet::new_unchecked(&f[ETH..UDP]).checksum(), 0);
        assert_eq!(UdpPacket::new_unchecked(&f[UDP..]).checksum(), 0);
    }

    #[test]
    fn test_short_frame_is_left_alone() {
        let mut f = vec![0xaa; UDP + 7];
        prepare_checksum_offload(&mut f, true, true);
        assert!(f.iter().all(|&b| b == 0xaa));
    }

    #[test]
    fn test_prepared_frame_still_parses() {
        let mut f = frame();
        prepare_checksum_offload(&mut f, false, true);
        assert!(parse_frame(&f).is_ok());
    }
}
