//! Frames whose checksums their device already judged (RX checksum
//! offload, `nic::RxChecksum`): a good one skips the software check of the
//! IPv4 header, a bad one is dropped and counted as the software check's
//! failures are (`drops.malformed`), so the counters read the same
//! whichever side checked.

use super::msgbuf::CopyBytes;
use super::{Delivery, Endpoint};
use crate::time::Instant;

impl Endpoint {
    /// [`handle_frame`](Self::handle_frame) for a frame whose device
    /// verified its IPv4 header checksum: the software check is skipped.
    #[inline]
    pub fn handle_frame_checked<'f>(
        &mut self,
        now: Instant,
        frame: &'f [u8],
    ) -> Option<Delivery<'f>> {
        self.handle_frame_verified::<CopyBytes>(now, frame, false)
    }

    /// Counts a received frame its device flagged with a bad IPv4 or UDP
    /// checksum, dropped unread: `rx_pkts`, `rx_bytes`, `drops.malformed`.
    pub fn drop_bad_checksum(&mut self, frame_len: usize) {
        self.out.stats.rx_pkts += 1;
        self.out.stats.rx_bytes += frame_len as u64;
        self.out.stats.drops.malformed += 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::proto::{Endpoint, EndpointConfig};
    use crate::time::Instant;
    use crate::wire::{HeaderTemplate, MacAddr, PktType, RpcRepr};

    #[test]
    fn test_bad_checksum_counts_as_malformed() {
        let mut ep = Endpoint::new(EndpointConfig::default()).unwrap();
        ep.drop_bad_checksum(74);
        let s = ep.stats();
        assert_eq!((s.rx_pkts, s.rx_bytes, s.drops.malformed), (1, 74, 1));
    }

    #[test]
    fn test_checked_frame_skips_the_ipv4_check_only() {
        // A frame with a wrong IPv4 checksum: the software path drops it,
        // the device-checked path (trusting the device) parses it.
        let cfg = EndpointConfig {
            verify_ipv4_checksum: true,
            ..EndpointConfig::default()
        };
        let t = HeaderTemplate::new(
            (MacAddr([2, 0, 0, 0, 0, 1]), [10, 0, 0, 1].into(), 1000),
            (MacAddr([2, 0, 0, 0, 0, 2]), [10, 0, 0, 2].into(), 2000),
        );
        let rpc = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: 4,
            dest_session: 0,
            pkt_num: 0,
            grant: 0,
            req_num: 8,
            token: 1,
        };
        let mut frame = vec![0u8; 128];
        let n = t.write(&mut frame, &rpc, 4);
        frame.truncate(n + 4);
        frame[24] ^= 0xff; // IPv4 checksum byte
        let now = Instant::ZERO;
        let mut a = Endpoint::new(cfg.clone()).unwrap();
        a.handle_frame(now, &frame);
        assert_eq!(a.stats().drops.malformed, 1);
        let mut b = Endpoint::new(cfg).unwrap();
        b.handle_frame_checked(now, &frame);
        assert_eq!(b.stats().drops.malformed, 0);
        // Parsed, then not addressed to this endpoint.
        assert_eq!(b.stats().drops.not_ours, 1);
    }
}
