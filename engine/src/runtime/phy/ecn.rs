//! The ECN marking stage: for tests on links without a marking switch (this
//! kernel has no ECN qdisc on veth), sets Congestion Experienced on received
//! ECN-capable frames with a seeded probability, fixing the IPv4 checksum as
//! a switch would. One Bernoulli draw per frame that reaches the stage,
//! whatever the frame; only an ECN-capable frame (ECT(0) or ECT(1)) that
//! draws a mark is changed. No clock, no allocation.

use crate::fault::{DropModel, Dropper};

/// A seeded CE marker (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct EcnMarker {
    draw: Dropper,
}

impl EcnMarker {
    /// Marks with probability `p`; `None` when `p <= 0` (no stage at all).
    pub fn new(p: f64, seed: u64) -> Option<Self> {
        (p > 0.0).then(|| EcnMarker {
            draw: Dropper::new(DropModel::Uniform { p }, seed),
        })
    }

    /// Applies the marker to one received frame; whether it set CE.
    #[inline]
    pub fn mark(&mut self, frame: &mut [u8]) -> bool {
        self.draw.should_drop() && crate::wire::mark_ce(frame)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::{
        parse_frame, HeaderTemplate, MacAddr, PktType, RpcRepr, ECN_CE, ECN_ECT0, HEADERS_LEN,
    };
    use std::net::Ipv4Addr;

    /// A valid request frame of 4 payload bytes, ECN-capable or not.
    pub(crate) fn frame(ect: bool) -> Vec<u8> {
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let ip = Ipv4Addr::new(10, 0, 0, 1);
        let mut t = HeaderTemplate::new((mac, ip, 1), (mac, ip, 2));
        if ect {
            t = t.with_ect();
        }
        let rpc = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: 4,
            dest_session: 0,
            pkt_num: 0,
            grant: 0,
            req_num: 0,
            token: 0,
        };
        let mut f = vec![0u8; HEADERS_LEN + 4];
        t.write(&mut f, &rpc, 4);
        f[HEADERS_LEN..].copy_from_slice(b"ping");
        f
    }

    #[test]
    fn no_stage_below_zero() {
        assert!(EcnMarker::new(0.0, 1).is_none());
        assert!(EcnMarker::new(-1.0, 1).is_none());
        assert!(EcnMarker::new(0.01, 1).is_some());
    }

    #[test]
    fn marks_only_ecn_capable_frames_and_keeps_them_valid() {
        let mut m = EcnMarker::new(1.0, 3).unwrap();
        let mut plain = frame(false);
        let before = plain.clone();
        assert!(!m.mark(&mut plain), "a frame not ECN-capable was marked");
        assert_eq!(plain, before, "and changed");
        let mut ect = frame(true);
        assert_eq!(parse_frame(&ect).unwrap().ecn, ECN_ECT0);
        assert!(m.mark(&mut ect));
        // parse_frame verifies the IPv4 checksum: still a valid frame,
        // with the same payload, now CE.
        let p = parse_frame(&ect).unwrap();
        assert_eq!((p.ecn, p.payload), (ECN_CE, &b"ping"[..]));
        assert!(!m.mark(&mut ect), "a CE frame was counted again");
    }

    #[test]
    fn marks_at_rate_p_with_one_draw_per_frame() {
        // One draw per frame whether or not it is ECN-capable: the frames
        // a seed marks do not depend on the traffic mix before them.
        let (p, seed) = (0.2, 11);
        let mut mixed = EcnMarker::new(p, seed).unwrap();
        let mut draws = Dropper::new(DropModel::Uniform { p }, seed);
        let mut marked = 0;
        for i in 0..5000 {
            let mut f = frame(i % 3 != 0);
            let want = draws.should_drop() && i % 3 != 0;
            let got = mixed.mark(&mut f);
            assert_eq!(got, want, "frame {i}");
            assert_eq!(parse_frame(&f).unwrap().ecn == ECN_CE, got);
            marked += got as u32;
        }
        // 3333 ECN-capable frames at p = 0.2: ~667, sd ~23.
        assert!((560..780).contains(&marked), "{marked}");
    }
}
