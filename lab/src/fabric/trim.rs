//! Packet trimming at a switch (UEC 1.0; uet-htsim's `CompositeQueue`,
//! `htsim/sim/compositequeue.cpp`): a data packet that would find its
//! egress queue above the trimming threshold, or would be dropped, is cut
//! to its headers (`engine::wire::mark_trimmed`: 70 bytes, IPv4 DSCP
//! `DSCP_TRIMMED`) and queued on the port's priority queue, which the port
//! serves before its FIFO; a trimmed header is never trimmed again and
//! takes the priority queue at every later hop too. Only `Request` and
//! `Response` frames with payload are trimmed; a control frame that finds
//! no room is dropped, as without trimming. A header that finds the
//! priority queue full (twice the threshold, uet-htsim's `2 * _maxsize`)
//! or the shared buffer full is dropped and counted (`drops_trimmed`, of
//! `drops_switch`).
//!
//! What uet-htsim does and what is kept: its low-priority queue's size is
//! the threshold (`main_uec.cpp`: one BDP with trimming, five without),
//! its header is 64 bytes (`-trimsize`; ours are our 70 header bytes), its
//! service ratio of headers to data is 100,000 : 1 (`_ratio_high`,
//! `_ratio_low`: in effect strict priority, as here), and it marks ECN on
//! data at dequeue, never on headers (here RED marks at enqueue, and a
//! header is not marked where it was trimmed). Simplified: when the queue
//! is full uet-htsim trims either the arrival or, with probability 1/2,
//! the packet last queued (so that the queue's newest bytes are not always
//! the arrival's); here the arrival is always the one trimmed. Its option
//! to bounce a header back to the sender is not modelled.

use super::queues::QueueClass;
use super::Fabric;

impl Fabric {
    /// Trimming is on: packet `pkt` (`len` bytes, from `ingress`, bound for
    /// `egress` of switch `s`) is a header trimmed earlier, or is trimmed
    /// now; either way it is queued on the priority queue or dropped here
    /// ([`Trim::Done`]). Otherwise it takes the normal path: it fits under
    /// the threshold and the buffer admits it ([`Trim::Admitted`], so the
    /// caller need not ask [`admit`](Self::admit) again), or it cannot be
    /// trimmed, a control frame ([`Trim::Normal`]).
    pub(super) fn trims_or_queues_header(
        &mut self,
        s: usize,
        ingress: u32,
        egress: u32,
        pkt: u32,
        len: u64,
    ) -> Trim {
        // A degraded link's threshold is scaled with its rate.
        let trim_at = match self.ports[egress as usize].class {
            QueueClass::Degraded => self.degraded.trim_at,
            QueueClass::Normal | QueueClass::NoEcn => self.trim_at,
        };
        if !self.pkts[pkt as usize].trimmed {
            let q = self.ports[egress as usize].queue_bytes;
            if q + len <= trim_at && self.admit(s, ingress, egress, len) {
                return Trim::Admitted;
            }
            let Some(n) = engine::wire::mark_trimmed(self.frame_mut(pkt, len as usize)) else {
                return Trim::Normal; // not a data packet: admitted or dropped as usual
            };
            let p = &mut self.pkts[pkt as usize];
            p.len = n as u16; // the headers' length
            p.trimmed = true;
            self.stats.trims += 1;
        }
        let n = u64::from(self.pkts[pkt as usize].len);
        let sw = &self.switches[s];
        let full = sw.used + n > sw.capacity;
        if full || self.ports[egress as usize].hi_bytes + n > 2 * trim_at {
            self.stats.drops_switch += 1;
            self.stats.drops_trimmed += 1;
            self.drop_at(ingress, pkt);
            return Trim::Done;
        }
        self.hold(s, ingress, pkt, n);
        let e = &mut self.ports[egress as usize];
        e.hi.push_back(pkt);
        e.hi_bytes += n;
        self.switch_try_tx(egress);
        Trim::Done
    }
}

/// What [`Fabric::trims_or_queues_header`] did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trim {
    /// Trimmed or a header already: queued first, or dropped.
    Done,
    /// Under the threshold, and the buffer admits it: the normal path,
    /// admission decided ([`Fabric::admit`] reads only, on a fabric that
    /// trims: no PFC counts a refusal).
    Admitted,
    /// A frame that cannot be trimmed: the normal path, admission to ask.
    Normal,
}
