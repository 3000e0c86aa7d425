//! The receive fast path: a frame in the form this engine (and any peer
//! speaking its wire format) sends, IPv4 without options, parsed in one
//! pass over its first 70 bytes at fixed offsets, with one length check up
//! front instead of one per layer. It only ever accepts: a frame it does
//! not take (options, anything malformed) goes to the layered parse, which
//! gives the answer and, when there is one, the precise error. The two
//! agree on every frame the fast path takes (a property test below feeds
//! both arbitrary and mutated frames), so which one parsed a frame is not
//! observable.

use super::{
    MacAddr, Parsed, PktType, RpcRepr, DSCP_TRIMMED, ECN_MASK, HEADERS_LEN, IPV4_HEADER_LEN,
};
use super::{RPC_MAGIC, RPC_VERSION};
use std::net::Ipv4Addr;

/// Frame offsets (Ethernet 0..14, IPv4 14..34, UDP 34..42, RPC 42..70).
mod at {
    pub const ETHERTYPE: usize = 12;
    pub const IP: usize = 14;
    pub const IP_TOS: usize = 15;
    pub const IP_LEN: usize = 16;
    pub const IP_FLG_OFF: usize = 20;
    pub const IP_PROTO: usize = 23;
    pub const IP_SRC: usize = 26;
    pub const IP_DST: usize = 30;
    pub const UDP: usize = 34;
    pub const UDP_LEN: usize = 38;
    pub const RPC: usize = 42;
}

/// IPv4, version 4 with a 20-byte header, UDP.
const ETHERTYPE_IPV4: u16 = 0x0800;
const VER_IHL_PLAIN: u8 = 0x45;
const PROTO_UDP: u8 = 17;
/// The More Fragments flag and the fragment offset of the flags word.
const FRAGMENT_BITS: u16 = 0x3fff;

#[inline]
fn be16(h: &[u8; HEADERS_LEN], i: usize) -> u16 {
    u16::from_be_bytes([h[i], h[i + 1]])
}

#[inline]
fn be32(h: &[u8; HEADERS_LEN], i: usize) -> u32 {
    u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]])
}

#[inline]
fn be64(h: &[u8; HEADERS_LEN], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[i..i + 8]);
    u64::from_be_bytes(b)
}

/// `frame` parsed if it is a valid frame whose IPv4 header has no options
/// (the same checks as the layered parse, `verify_ipv4_checksum` alike);
/// `None` for every other frame, valid or not.
#[inline]
pub(super) fn parse_plain(frame: &[u8], verify_ipv4_checksum: bool) -> Option<Parsed<'_>> {
    let h: &[u8; HEADERS_LEN] = frame.get(..HEADERS_LEN)?.try_into().ok()?;
    if be16(h, at::ETHERTYPE) != ETHERTYPE_IPV4 || h[at::IP] != VER_IHL_PLAIN {
        return None;
    }
    // The IPv4 total length covers the UDP header and RPC header at least
    // and lies within the frame (Ethernet padding may follow).
    let ip_len = usize::from(be16(h, at::IP_LEN));
    if ip_len < HEADERS_LEN - at::IP || frame.len() - at::IP < ip_len {
        return None;
    }
    if verify_ipv4_checksum && super::checksum(&h[at::IP..at::UDP]) != 0 {
        return None;
    }
    if be16(h, at::IP_FLG_OFF) & FRAGMENT_BITS != 0 || h[at::IP_PROTO] != PROTO_UDP {
        return None;
    }
    // The UDP length covers the RPC header and lies within the IP payload.
    let udp_len = usize::from(be16(h, at::UDP_LEN));
    if udp_len < HEADERS_LEN - at::UDP || udp_len > ip_len - IPV4_HEADER_LEN {
        return None;
    }
    if h[at::RPC] != RPC_MAGIC || h[at::RPC + 1] != RPC_VERSION {
        return None;
    }
    let mac = |i: usize| MacAddr([h[i], h[i + 1], h[i + 2], h[i + 3], h[i + 4], h[i + 5]]);
    let ip = |i: usize| Ipv4Addr::from(be32(h, i));
    let r = at::RPC;
    let grant_req = u64::from_be_bytes([
        h[r + 12],
        h[r + 13],
        h[r + 14],
        h[r + 15],
        h[r + 16],
        h[r + 17],
        h[r + 18],
        h[r + 19],
    ]);
    Some(Parsed {
        src_mac: mac(6),
        dst_mac: mac(0),
        src_ip: ip(at::IP_SRC),
        dst_ip: ip(at::IP_DST),
        src_port: be16(h, at::UDP),
        dst_port: be16(h, at::UDP + 2),
        ecn: h[at::IP_TOS] & ECN_MASK,
        trimmed: h[at::IP_TOS] >> 2 == DSCP_TRIMMED,
        rpc: RpcRepr {
            pkt_type: PktType::from(h[r + 2]),
            req_type: h[r + 3],
            msg_size: be32(h, r + 4),
            dest_session: be16(h, r + 8),
            pkt_num: be16(h, r + 10),
            grant: (grant_req >> 48) as u16,
            req_num: grant_req & super::rpc::REQ_NUM_MAX,
            token: be64(h, r + 20),
        },
        payload: &frame[HEADERS_LEN..at::UDP + udp_len],
    })
}

// The offsets above are those of a 20-byte IPv4 header.
const _: () = assert!(at::UDP - at::IP == IPV4_HEADER_LEN && at::RPC + 28 == HEADERS_LEN);

#[cfg(test)]
mod tests {
    use super::super::{parse_frame_with, template::tests::FRAME_BYTES};
    use super::*;
    use proptest::prelude::*;

    /// The layered parse alone (the fast path is tried inside `parse_frame_with`).
    fn layered(frame: &[u8], verify: bool) -> Result<Parsed<'_>, super::super::Error> {
        super::super::parse_layered(frame, verify)
    }

    #[test]
    fn takes_the_golden_frame() {
        for verify in [false, true] {
            let p = parse_plain(&FRAME_BYTES, verify).expect("a plain frame");
            assert_eq!(Ok(p), layered(&FRAME_BYTES, verify));
            assert_eq!(Ok(p), parse_frame_with(&FRAME_BYTES, verify));
        }
    }

    proptest! {
        /// Whatever the bytes (the golden frame with some bytes changed,
        /// cut or padded, or noise), the fast path accepts only what the
        /// layered parse accepts, with the same result, and takes every
        /// valid frame without options.
        #[test]
        fn agrees_with_the_layered_parse(
            edits in prop::collection::vec((0..80usize, any::<u8>()), 0..4),
            resize in prop::option::of(0..90usize),
            noise in prop::option::of(prop::collection::vec(any::<u8>(), 0..90)),
            verify in any::<bool>(),
        ) {
            let mut f: Vec<u8> = noise.unwrap_or_else(|| FRAME_BYTES.to_vec());
            for (i, b) in edits {
                if i < f.len() {
                    f[i] = b;
                }
            }
            if let Some(len) = resize {
                f.resize(len, 0);
            }
            let want = layered(&f, verify);
            match parse_plain(&f, verify) {
                Some(p) => prop_assert_eq!(Ok(p), want),
                None => prop_assert!(want.is_err() || f[14] & 0x0f != 5, "{want:?}"),
            }
            prop_assert_eq!(parse_frame_with(&f, verify), want);
        }
    }
}
