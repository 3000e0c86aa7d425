//! The engine's frames as the checksum tests (`offload`, `virtio_offload`)
//! send them, and the UDP checksum they check on what arrives.

use engine::wire::{checksum, HeaderTemplate, MacAddr, PktType, RpcRepr};
use std::net::Ipv4Addr;

/// Offset of the IPv4 header.
pub const ETH: usize = 14;
/// Offset of the UDP header.
pub const UDP: usize = 34;

/// A Request frame of the engine's from UDP port `src_port` with
/// `payload` (UDP checksum 0, IPv4 header checksum filled, as the engine's
/// template writes them).
pub fn engine_frame(src_port: u16, payload: &[u8]) -> Vec<u8> {
    let t = HeaderTemplate::new(
        (
            MacAddr([2, 0, 0, 0, 0, 1]),
            Ipv4Addr::new(10, 9, 0, 1),
            src_port,
        ),
        (
            MacAddr([2, 0, 0, 0, 0, 2]),
            Ipv4Addr::new(10, 9, 0, 2),
            31850,
        ),
    );
    let rpc = RpcRepr {
        pkt_type: PktType::Request,
        req_type: 1,
        msg_size: payload.len() as u32,
        dest_session: 0,
        pkt_num: 0,
        grant: 0,
        req_num: 8,
        token: 7,
    };
    let mut f = vec![0u8; 128 + payload.len()];
    let n = t.write(&mut f, &rpc, payload.len());
    f[n..n + payload.len()].copy_from_slice(payload);
    f.truncate(n + payload.len());
    f
}

/// The UDP checksum over the pseudo-header, header and payload, the field
/// read as it is: 0 for a frame whose checksum is right.
pub fn udp_sum(f: &[u8]) -> u16 {
    let mut v = f[ETH + 12..ETH + 20].to_vec();
    v.extend_from_slice(&[0, 17]);
    v.extend_from_slice(&f[UDP + 4..UDP + 6]);
    v.extend_from_slice(&f[UDP..]);
    checksum(&v)
}
