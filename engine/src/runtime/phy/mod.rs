//! The layers between the run loop and its device, applied in one place:
//! what happens to a frame after `rx_burst` returns it and before the
//! endpoint sees it, and after the endpoint wrote it and before `tx_burst`
//! takes it. As smoltcp's `phy` middleware (`FaultInjector<D>`,
//! `PcapWriter<D>` around a `Device`), each concern is a stage of its own:
//!
//! - receive: capture (every frame as the driver returned it) -> fault
//!   drop -> ECN CE marker -> the endpoint;
//! - transmit: the endpoint -> fault drop -> capture (what goes on the wire).
//!
//! [`Phy`] holds the stages, each optional, in a fixed struct: no dynamic
//! dispatch and no allocation per frame. With no stage set, a burst costs
//! one test of the three options and every frame goes through untouched.
//! The stages work on any [`Frames`] (an mbuf burst in the run loop, plain
//! byte vectors in the tests), so all of this is tested without DPDK.
//!
//! The counters keep the run loop's names (`injected_drops_rx`,
//! `injected_drops_tx`, `injected_ecn_marks` in [`RunCounters`]); the
//! capture counts its own frames (`CaptureStats`).

mod capture;
mod ecn;
mod fault;

pub use capture::{Capture, CaptureError, CaptureStats, DEFAULT_CAPTURE_LIMIT};
pub use fault::FaultSide;

use super::run_counters::RunCounters;
use crate::dpdk::{MbufBatch, BURST};
use crate::fault::{DropModel, DropStats};
use crate::time::Instant;
use ecn::EcnMarker;
use fault::FaultDrop;
use std::fs::File;
use std::io::{BufWriter, Write};

/// A burst of frames the stages can read and rewrite in place.
pub(crate) trait Frames {
    /// Frames in the burst (at most 64: [`Keep`] has a bit per frame).
    fn count(&self) -> usize;
    /// The bytes of frame `i`.
    fn frame(&self, i: usize) -> &[u8];
    /// The bytes of frame `i`, writable.
    fn frame_mut(&mut self, i: usize) -> &mut [u8];
}

impl Frames for MbufBatch {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn frame(&self, i: usize) -> &[u8] {
        self.data(i)
    }
    #[inline]
    fn frame_mut(&mut self, i: usize) -> &mut [u8] {
        self.data_mut(i)
    }
}

const _: () = assert!(BURST <= 64, "Keep has one bit per frame of a burst");

/// Which frames of a received burst go on to the endpoint: bit `i` set
/// for frame `i`. Iterating yields their indices in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Keep(u64);

impl Keep {
    /// The first `n` frames, all of them.
    #[inline]
    fn first(n: usize) -> Keep {
        debug_assert!(n <= 64);
        Keep(if n >= 64 { u64::MAX } else { (1u64 << n) - 1 })
    }
}

impl Iterator for Keep {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// The stages around one run loop's device (see the module docs); `W` is
/// where the capture writes (a file; a `Vec<u8>` in tests).
#[derive(Debug)]
pub(crate) struct Phy<W: Write = BufWriter<File>> {
    rx_drop: Option<FaultDrop>,
    tx_drop: Option<FaultDrop>,
    ecn: Option<EcnMarker>,
    capture: Option<Capture<W>>,
}

impl<W: Write> Default for Phy<W> {
    fn default() -> Self {
        Phy {
            rx_drop: None,
            tx_drop: None,
            ecn: None,
            capture: None,
        }
    }
}

impl<W: Write> Phy<W> {
    /// Drops frames on purpose on `side`, following `model` from `seed`;
    /// replaces the fault injector of either side.
    pub fn set_fault(&mut self, side: FaultSide, model: DropModel, seed: u64) {
        let stage = Some(FaultDrop::new(model, seed));
        (self.rx_drop, self.tx_drop) = match side {
            FaultSide::Rx => (stage, None),
            FaultSide::Tx => (None, stage),
        };
    }

    /// Counters of the fault injector, if one is set.
    pub fn fault_stats(&self) -> Option<DropStats> {
        self.rx_drop
            .as_ref()
            .or(self.tx_drop.as_ref())
            .map(FaultDrop::stats)
    }

    /// Marks received ECN-capable frames CE with probability `p` (seeded);
    /// `p <= 0` removes the marker.
    pub fn set_ecn_marker(&mut self, p: f64, seed: u64) {
        self.ecn = EcnMarker::new(p, seed);
    }

    /// Captures every frame from now on.
    pub fn set_capture(&mut self, capture: Capture<W>) {
        self.capture = Some(capture);
    }

    /// Stops capturing; the capture.
    pub fn take_capture(&mut self) -> Option<Capture<W>> {
        self.capture.take()
    }

    /// The receive stages over a burst just returned by the driver, at
    /// `now`: every frame captured, then each one dropped by the fault
    /// injector or passed on (ECN-marked when the marker draws it). The
    /// frames the endpoint should see.
    #[inline]
    pub fn receive<F: Frames>(
        &mut self,
        now: Instant,
        frames: &mut F,
        c: &mut RunCounters,
    ) -> Keep {
        let n = frames.count();
        if self.rx_drop.is_none() && self.ecn.is_none() && self.capture.is_none() {
            return Keep::first(n);
        }
        self.receive_staged(now, frames, n, c)
    }

    /// `receive` with at least one stage set.
    fn receive_staged<F: Frames>(
        &mut self,
        now: Instant,
        frames: &mut F,
        n: usize,
        c: &mut RunCounters,
    ) -> Keep {
        if let Some(cap) = self.capture.as_mut() {
            for i in 0..n {
                cap.record(now, frames.frame(i));
            }
        }
        if self.rx_drop.is_none() && self.ecn.is_none() {
            return Keep::first(n);
        }
        let mut keep = 0u64;
        for i in 0..n {
            if let Some(d) = self.rx_drop.as_mut() {
                if d.drops() {
                    c.injected_drops_rx += 1;
                    continue;
                }
            }
            if let Some(m) = self.ecn.as_mut() {
                if m.mark(frames.frame_mut(i)) {
                    c.injected_ecn_marks += 1;
                }
            }
            keep |= 1 << i;
        }
        Keep(keep)
    }

    /// The transmit stages over one frame the endpoint wrote, at `now`:
    /// whether it goes to the wire (`false`: the fault injector took it),
    /// captured if it does.
    #[inline]
    pub fn transmit(&mut self, now: Instant, frame: &[u8], c: &mut RunCounters) -> bool {
        if let Some(d) = self.tx_drop.as_mut() {
            if d.drops() {
                c.injected_drops_tx += 1;
                return false;
            }
        }
        if let Some(cap) = self.capture.as_mut() {
            cap.record(now, frame);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::ecn::tests::frame;
    use super::*;
    use crate::fault::Dropper;
    use crate::wire::{parse_frame, ECN_CE, ECN_ECT0};
    use pcap_file::pcap::PcapReader;
    use std::path::Path;

    impl Frames for Vec<Vec<u8>> {
        fn count(&self) -> usize {
            self.len()
        }
        fn frame(&self, i: usize) -> &[u8] {
            &self[i]
        }
        fn frame_mut(&mut self, i: usize) -> &mut [u8] {
            &mut self[i]
        }
    }

    fn burst(n: usize, ect: bool) -> Vec<Vec<u8>> {
        (0..n).map(|_| frame(ect)).collect()
    }

    fn capture() -> Capture<Vec<u8>> {
        Capture::with_writer(Vec::new(), Path::new("t.pcap"), 1 << 20, Instant(0), 0).unwrap()
    }

    /// The frames of a capture, in order.
    fn captured(c: Capture<Vec<u8>>) -> Vec<Vec<u8>> {
        let bytes = c.take_writer_for_test();
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        let mut out = Vec::new();
        while let Some(p) = r.next_packet() {
            out.push(p.unwrap().data.to_vec());
        }
        out
    }

    #[test]
    fn keep_iterates_its_bits() {
        assert_eq!(Keep::first(0).collect::<Vec<_>>(), Vec::<usize>::new());
        assert_eq!(Keep::first(3).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(Keep::first(64).count(), 64);
        assert_eq!(Keep(0b1010_0001).collect::<Vec<_>>(), [0, 5, 7]);
    }

    #[test]
    fn no_stage_passes_every_frame_untouched() {
        let mut phy = Phy::<Vec<u8>>::default();
        let mut c = RunCounters::default();
        let mut b = burst(BURST, true);
        let before = b.clone();
        assert_eq!(phy.receive(Instant(1), &mut b, &mut c), Keep::first(BURST));
        assert!((0..10).all(|_| phy.transmit(Instant(1), &b[0], &mut c)));
        assert_eq!((b, c), (before, RunCounters::default()));
        assert_eq!(phy.fault_stats(), None);
    }

    #[test]
    fn rx_fault_drops_the_seeded_frames_and_counts_them() {
        let (model, seed) = (DropModel::Uniform { p: 0.25 }, 9);
        let mut phy = Phy::<Vec<u8>>::default();
        phy.set_fault(FaultSide::Rx, model, seed);
        let mut c = RunCounters::default();
        let mut want = Dropper::new(model, seed);
        let mut kept = 0;
        for _ in 0..50 {
            let mut b = burst(BURST, false);
            let keep: Vec<usize> = phy.receive(Instant(0), &mut b, &mut c).collect();
            let expect: Vec<usize> = (0..BURST).filter(|_| !want.should_drop()).collect();
            assert_eq!(keep, expect);
            kept += keep.len() as u64;
        }
        assert_eq!(c.injected_drops_rx, 50 * BURST as u64 - kept);
        assert_eq!(c.injected_drops_tx, 0);
        let s = phy.fault_stats().unwrap();
        assert_eq!(
            (s.seen, s.dropped),
            (50 * BURST as u64, c.injected_drops_rx)
        );
        // The TX side is untouched by an RX injector.
        assert!((0..100).all(|_| phy.transmit(Instant(0), &frame(false), &mut c)));
        assert_eq!(c.injected_drops_tx, 0);
    }

    #[test]
    fn tx_fault_drops_before_capture() {
        let mut phy = Phy::default();
        phy.set_fault(FaultSide::Rx, DropModel::Uniform { p: 1.0 }, 1);
        phy.set_fault(FaultSide::Tx, DropModel::Uniform { p: 0.5 }, 2);
        phy.set_capture(capture());
        let mut c = RunCounters::default();
        // Setting the TX side replaced the RX injector.
        let mut b = burst(4, false);
        assert_eq!(phy.receive(Instant(0), &mut b, &mut c).count(), 4);
        let sent = (0..200)
            .filter(|_| phy.transmit(Instant(0), &frame(false), &mut c))
            .count() as u64;
        assert_eq!(c.injected_drops_tx, 200 - sent);
        assert!(sent > 50 && sent < 150, "{sent}");
        assert_eq!(c.injected_drops_rx, 0);
        // Captured: the 4 received frames and only the frames sent.
        let cap = phy.take_capture().unwrap();
        assert_eq!(cap.stats().frames_written, 4 + sent);
    }

    #[test]
    fn capture_sees_received_frames_before_the_fault_and_the_marker() {
        let mut phy = Phy::default();
        phy.set_fault(FaultSide::Rx, DropModel::Uniform { p: 0.5 }, 5);
        phy.set_ecn_marker(1.0, 6);
        phy.set_capture(capture());
        let mut c = RunCounters::default();
        let mut b = burst(BURST, true);
        let wire = b.clone();
        let keep: Vec<usize> = phy.receive(Instant(0), &mut b, &mut c).collect();
        assert!(!keep.is_empty() && keep.len() < BURST, "{keep:?}");
        assert_eq!(c.injected_drops_rx, (BURST - keep.len()) as u64);
        // Every frame the endpoint gets was marked, and only those.
        assert_eq!(c.injected_ecn_marks, keep.len() as u64);
        for (i, f) in b.iter().enumerate() {
            let ecn = parse_frame(f).unwrap().ecn;
            assert_eq!(ecn, if keep.contains(&i) { ECN_CE } else { ECN_ECT0 });
        }
        // The capture holds the whole burst as the driver returned it.
        assert_eq!(captured(phy.take_capture().unwrap()), wire);
    }

    #[test]
    fn ecn_marker_alone_passes_every_frame() {
        let mut phy = Phy::<Vec<u8>>::default();
        phy.set_ecn_marker(0.5, 4);
        let mut c = RunCounters::default();
        let mut b = burst(BURST, true);
        assert_eq!(phy.receive(Instant(0), &mut b, &mut c), Keep::first(BURST));
        let marked = b
            .iter()
            .filter(|f| parse_frame(f).unwrap().ecn == ECN_CE)
            .count();
        assert_eq!(c.injected_ecn_marks, marked as u64);
        assert!(marked > 0 && marked < BURST, "{marked}");
        phy.set_ecn_marker(0.0, 4);
        let mut b = burst(BURST, true);
        phy.receive(Instant(0), &mut b, &mut c);
        assert_eq!(
            c.injected_ecn_marks, marked as u64,
            "p = 0 removed the marker"
        );
    }
}
