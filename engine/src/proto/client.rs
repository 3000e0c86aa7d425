//! Client half of a session: request slots, the backlog and session
//! credits. Transmission is in `client_tx.rs`, acceptance of answers in
//! `client_rx.rs`, the loss scan in `loss.rs`.
//!
//! Per request, the client's i-th transmitted packet (i in 0..N+M-1, N
//! request packets, M response packets) is answered by exactly one server
//! packet: i < N-1 by CreditReturn(i), i == N-1 by Response(0) (or an
//! ErrorResponse), i >= N by Response(i-N+1) (packet i >= N is
//! ReqForResp(i-N+1)). So `num_tx` and `num_rx` count packets sent and
//! answers accepted, an answer's index is its position in that sequence,
//! and the answer accepted is always the one with index `num_rx`. Each
//! packet in flight holds one session credit, returned by its answer; a
//! rollback reclaims the credits of everything in flight and rewinds
//! `num_tx` to `num_rx`.
//!
//! Two refinements keep that accounting while cutting packets: the last
//! request packet grants credits for response packets after Response(0)
//! (they count as sent RFRs, `client_tx.rs`), and a CreditReturn is
//! cumulative, answering every packet up to its number (`client_rx.rs`).
//!
//! Invariant: `credits == credits_total - sum over slots (num_tx - num_rx)`
//! (selective: minus what is answered early or taken as lost, and the
//! credits trims hold, `ClientReq::trim_held`); of them, `withheld` are
//! kept back by an RCCC server (`rccc.rs`).

use super::cc::{RateControl, RateLimit};
use super::config::SackRule;
use super::frame::pkts_of;
use super::msgbuf::MsgBuf;
use super::sack::{SackState, SACK_WINDOW};
use super::session::SessionCommon;
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

/// Backlog entries pre-sized per client session: one window's worth.
pub(crate) const BACKLOG_PRESIZE: usize = 8;

/// Client half of a session.
#[derive(Debug)]
pub(crate) struct ClientSession {
    pub common: SessionCommon,
    pub slots: Vec<ClientSlot>,
    /// Requests waiting for a free slot, FIFO.
    pub backlog: VecDeque<Pending>,
    /// Credits not held by packets in flight.
    pub credits: u16,
    pub credits_total: u16,
    /// RCCC: credits the server keeps back (the `grant` field of its
    /// latest CR: packets it received and its credit pacer has not yet
    /// released, `rccc.rs`); only `credits - withheld` may be used. 0
    /// under a server without RCCC; back to 0 when a request completes or
    /// times out, so a lost CR cannot strand the session.
    pub withheld: u16,
    /// When the latest CR set `withheld`: a session kept back with nothing
    /// in flight takes its credits back an RTO later (`loss.rs`).
    pub withheld_at: Instant,
    /// Present in the client transmit queue.
    pub tx_queued: bool,
    /// Parked for lack of credits (one `credit_stalls` per episode).
    pub stalled: bool,
    /// Selective: when a hole counts as lost (`EndpointConfig::sack_rule`).
    pub sack_rule: SackRule,
    /// Go-back-N: roll back at once on a Nak or a response gap
    /// (`EndpointConfig::nak`, `nak.rs`).
    pub nak: bool,
    /// Go-back-N: the gap this session last rolled back for on a NAK or a
    /// response gap, as (req_num, first missing index), so a burst of
    /// out-of-order packets behind one hole rolls back once, not per packet.
    pub nak_gap: Option<(u64, u32)>,
    /// Round-robin position among slots for the next packet.
    pub cursor: usize,
    /// Slots holding a request, as a bit set (bit `i`: slot `i`; a window is at most
    /// `MAX_REQ_WINDOW` = 64 slots): which slot is free, which requests the
    /// loss deadline looks at, without visiting the whole window.
    pub occupied: u64,
    /// The slots whose request has packets to send (`ClientReq::has_work`),
    /// refreshed by every method that changes a request (`start`, `take`,
    /// `roll_back`, `rx_answer`, `write_next`): the per-packet questions
    /// (does the session have work, which slot sends next, how many other
    /// slots want credits) are bit operations, not scans of the window.
    pub work: u64,
    /// Slots holding a suspect (a timeout under judgement).
    pub suspects: usize,
    /// Requests with a probe waiting to be sent: kept so the transmit path
    /// looks for one only when there is one (no slot scan per packet).
    pub probes: usize,
    /// Round-trip estimate: a decaying maximum of samples (the handshake,
    /// then answers to packets sent once). A timeout is judged only after
    /// twice this has passed, so a late answer is seen before a verdict.
    pub rtt: Duration,
    /// Congestion control: the session's rate (`cc/`), its pacing, and
    /// (Timely, NSCC) when each packet in flight was sent, per slot, by index
    /// modulo [`TX_TS_RING`] (`Instant::ZERO`: a copy, no sample).
    /// Boxed and absent without congestion control, so a session that
    /// runs none carries one pointer of it.
    pub cc: Option<Box<CcState>>,
    /// Selective: the state boxes of finished requests, reused by the next
    /// (no allocation per request once every slot has had one). Boxed on
    /// purpose: each moves into a request and back, a pointer move.
    #[allow(clippy::vec_box)]
    pub sack_spares: Vec<Box<SackState>>,
}

/// A client session's congestion-control state.
#[derive(Debug)]
pub(crate) struct CcState {
    pub rate: RateControl,
    /// The configured cap on the session's rate (`EndpointConfig::
    /// rate_cap_bps`), `u64::MAX` without one.
    pub cap_bps: u64,
    pub pace: RateLimit,
    pub tx_ts: Option<Box<[[Instant; TX_TS_RING]]>>,
}

impl CcState {
    /// The rate the session may send at: its controller's, under the
    /// configured cap; `None` when neither limits it. Inline, as the
    /// small per-packet steps of `RateControl` are: the transmit path that
    /// calls them is generic, so it is compiled in the caller's crate (the
    /// lab's), where a plain function here is a call (no LTO).
    #[inline]
    pub fn rate_bps(&self) -> Option<u64> {
        match self.rate.rate_bps() {
            Some(r) => Some(r.min(self.cap_bps)),
            None => (self.cap_bps != u64::MAX).then_some(self.cap_bps),
        }
    }

    /// Feeds one event to the controller and adds 1 to `cuts`
    /// (`Stats::cc_rate_cuts`) if it lowered the rate.
    pub fn feed(&mut self, cuts: &mut u64, event: impl FnOnce(&mut RateControl)) {
        let before = self.rate.rate_bps();
        event(&mut self.rate);
        *cuts += u64::from(self.rate.rate_bps() < before);
    }

    /// The round trip of slot `slot`'s packet `idx`, answered at `now`, if
    /// it was sent once and its send time is still kept (`num_tx` packets
    /// sent so far: one more than [`TX_TS_RING`] ago has been overwritten).
    pub fn rtt_of(&self, now: Instant, slot: usize, idx: u32, num_tx: u32) -> Option<Duration> {
        let ts = self.tx_ts.as_ref()?;
        let sent = ts[slot][idx as usize % TX_TS_RING];
        let kept = num_tx.saturating_sub(idx) as usize <= TX_TS_RING;
        (sent != Instant::ZERO && kept).then(|| now.saturating_since(sent))
    }
}

/// Send times kept per slot for Timely's RTT samples: an answer to a packet
/// sent more than this many packets ago gives no sample.
pub(crate) const TX_TS_RING: usize = 64;

#[derive(Debug)]
pub(crate) struct ClientSlot {
    /// req_num the next request in this slot gets (slot index + k * window).
    pub next_req_num: u64,
    pub req: Option<ClientReq>,
    /// A timeout not yet judged lost or late (it outlives the request: the
    /// evidence, a duplicate answer, may come after the request completed).
    pub suspect: Option<Suspect>,
}

/// A retransmission timeout under judgement. If the answer to the resent
/// packet arrives twice (once for the original, once for the copy), the
/// original was only late: a spurious timeout. If no duplicate arrives by
/// `judge_at`, the original is taken as lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Suspect {
    pub req_num: u64,
    /// The answer the resent packet gets: a CreditReturn (`true`) or a
    /// Response/ErrorResponse (`false`) with this packet number.
    pub answer_is_cr: bool,
    pub answer_pkt: u16,
    /// Answer index of the resent packet (0-based position, see above).
    pub idx: u32,
    pub judge_at: Instant,
}

/// A request waiting in the backlog.
#[derive(Debug)]
pub(crate) struct Pending {
    pub req_type: u8,
    pub msg: MsgBuf,
    pub tag: u64,
}

/// A request in a slot.
#[derive(Debug)]
pub(crate) struct ClientReq {
    pub req_num: u64,
    pub req_type: u8,
    pub tag: u64,
    pub msg: MsgBuf,
    /// Request packets (N).
    pub n_req: u32,
    /// Response packets (M); 0 until Response(0) is accepted.
    pub n_resp: u32,
    /// Response being assembled (M > 1).
    pub resp: Option<MsgBuf>,
    pub num_tx: u32,
    pub num_rx: u32,
    /// Highest `num_tx` ever reached: packets below it are retransmissions.
    pub high_tx: u32,
    /// RTO reference: last progress, first transmission, or last rollback.
    pub armed_at: Instant,
    /// Session-timeout reference: last progress (or start of transmission).
    pub progress_at: Instant,
    /// Rolled back since the last progress.
    pub rolled_back: bool,
    /// Lossless mode: packet index to resend once as a probe (sent without
    /// a credit, into the one ring entry each session reserves for it).
    pub probe: Option<u32>,
    /// Selective retransmission (`client_sack.rs`): `None` under
    /// go-back-N.
    pub sel: Option<Box<SackState>>,
    /// The grant the last request packet carried (a resent copy carries it
    /// again, since its virtual RFRs already count as sent).
    pub grant_sent: u16,
    /// Credits trims took off the window (`trim.rs`), given back with the
    /// answers that follow (`release_held`) or when the request ends.
    pub trim_held: u32,
}

impl ClientReq {
    /// The suspect a timeout of this request creates: the first packet not
    /// answered is the one resent.
    pub fn suspect(&self, judge_at: Instant) -> Suspect {
        let (answer_is_cr, answer_pkt) = self.answer_of(self.num_rx);
        Suspect {
            req_num: self.req_num,
            answer_is_cr,
            answer_pkt,
            idx: self.num_rx,
            judge_at,
        }
    }

    /// Packets the client may send given what it has received so far: the
    /// request packets, plus the RFRs once Response(0) gave M.
    fn sendable_total(&self) -> u32 {
        if self.num_rx >= self.n_req {
            self.n_req + self.n_resp - 1
        } else {
            self.n_req
        }
    }

    pub fn has_work(&self) -> bool {
        match self.sel.as_deref() {
            None => self.num_tx < self.sendable_total(),
            // New packets first: they are read from this request's own
            // fields, while `lost` sits behind a pointer, on a line a
            // simulated host with hundreds of sessions rarely has cached.
            Some(s) => {
                (self.num_tx < self.sendable_total() && self.num_tx - self.num_rx < SACK_WINDOW)
                    || !s.lost.is_empty()
            }
        }
    }

    /// The answer the client's packet `idx` gets: (is a CreditReturn,
    /// its packet number).
    pub fn answer_of(&self, idx: u32) -> (bool, u16) {
        if idx + 1 < self.n_req {
            (true, idx as u16)
        } else {
            (false, (idx + 1 - self.n_req) as u16)
        }
    }

    /// Packets sent and holding a credit: not answered (in order or out of
    /// order) and not taken as lost.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        let sent = self.num_tx - self.num_rx;
        match self.sel.as_deref() {
            None => sent,
            Some(s) => sent - s.sacked.count() - s.lost.count(),
        }
    }
}

// A slot set is one u64.
const _: () = assert!(super::config::MAX_REQ_WINDOW <= 64);

/// The bits of a `window`-slot set (window in 1..=64).
pub(crate) fn window_mask(window: usize) -> u64 {
    u64::MAX >> (64 - window)
}

/// The first set bit of `set` at or after `cursor` (below 64), else the
/// first set bit; 64 when `set` is empty: the round-robin order of
/// `write_next`.
fn first_from(set: u64, cursor: usize) -> usize {
    let from = set & !((1u64 << cursor) - 1);
    let set = if from != 0 { from } else { set };
    set.trailing_zeros() as usize
}

/// Takes the lowest slot out of a non-empty slot set.
#[inline]
pub(crate) fn pop_slot(set: &mut u64) -> usize {
    let i = set.trailing_zeros() as usize;
    *set &= *set - 1;
    i
}

/// See `ClientSession::sample_rtt` (a free function so the receive path
/// can update the estimate while it borrows a slot).
#[inline]
pub(crate) fn sample_rtt(rtt: &mut Duration, sample: Duration) {
    let decayed = rtt.as_nanos() - rtt.as_nanos() / 16;
    *rtt = Duration::from_nanos(decayed.max(sample.as_nanos()));
}

impl ClientSession {
    pub fn new(
        common: SessionCommon,
        window: usize,
        credits: u16,
        cc: RateControl,
        cap_bps: Option<u64>,
    ) -> Self {
        let tx_ts = matches!(cc, RateControl::Timely(_) | RateControl::Nscc(_))
            .then(|| vec![[Instant::ZERO; TX_TS_RING]; window].into_boxed_slice());
        let paced = !matches!(cc, RateControl::None) || cap_bps.is_some();
        let cc = paced.then(|| {
            Box::new(CcState {
                rate: cc,
                cap_bps: cap_bps.unwrap_or(u64::MAX),
                pace: RateLimit::new(common.active_at),
                tx_ts,
            })
        });
        ClientSession {
            cc,
            sack_spares: Vec::new(),
            common,
            slots: (0..window)
                .map(|i| ClientSlot {
                    next_req_num: i as u64,
                    req: None,
                    suspect: None,
                })
                .collect(),
            backlog: VecDeque::with_capacity(BACKLOG_PRESIZE),
            credits,
            credits_total: credits,
            tx_queued: false,
            stalled: false,
            withheld: 0,
            withheld_at: Instant::ZERO,
            sack_rule: SackRule::default(),
            nak: false,
            nak_gap: None,
            cursor: 0,
            occupied: 0,
            work: 0,
            suspects: 0,
            probes: 0,
            rtt: Duration::ZERO,
        }
    }

    /// Slots holding a request.
    #[inline]
    pub fn active(&self) -> usize {
        self.occupied.count_ones() as usize
    }

    pub fn has_work(&self) -> bool {
        debug_assert_eq!(self.work, self.work_scan(), "work bits out of date");
        self.probes > 0 || self.work != 0
    }

    /// Slot `i`'s request changed: its bit in `work` follows.
    #[inline]
    pub fn refresh_work(&mut self, i: usize) {
        let bit = 1u64 << i;
        if self.slots[i].req.as_ref().is_some_and(ClientReq::has_work) {
            self.work |= bit;
        } else {
            self.work &= !bit;
        }
    }

    /// `work` recomputed from the slots (for the debug check).
    fn work_scan(&self) -> u64 {
        let mut set = 0;
        for (i, s) in self.slots.iter().enumerate() {
            if s.req.as_ref().is_some_and(ClientReq::has_work) {
                set |= 1 << i;
            }
        }
        set
    }

    /// Lossless mode: resend packet `num_rx` of slot `i`'s request once,
    /// without a credit (into the ring entry each session reserves for it).
    pub fn set_probe(&mut self, i: usize) {
        if let Some(req) = self.slots[i].req.as_mut() {
            if req.probe.replace(req.num_rx).is_none() {
                self.probes += 1;
            }
        }
    }

    /// Takes slot `i`'s pending probe, if any.
    pub fn take_probe(&mut self, i: usize) -> Option<u32> {
        let k = self.slots[i].req.as_mut()?.probe.take()?;
        self.probes -= 1;
        Some(k)
    }

    /// Go-back-N on slot `i`: every packet in flight is taken as lost, their
    /// credits come home and sending resumes at the first unanswered packet
    /// (a pending probe is moot).
    /// Selective mode: only the packets in flight are taken as lost and
    /// resent, not those answered out of order.
    pub fn roll_back(&mut self, i: usize, now: Instant) {
        self.take_probe(i);
        let Some(req) = self.slots[i].req.as_mut() else {
            return;
        };
        self.credits += req.in_flight() as u16;
        // A timeout or a gap: whatever an RCCC server kept back comes home
        // too (its next CR says again what it keeps).
        self.withheld = 0;
        let (num_rx, num_tx, n_req, n_resp) = (req.num_rx, req.num_tx, req.n_req, req.n_resp);
        if let Some(s) = req.sel.as_deref_mut() {
            // Virtual RFRs wait for Response(0) (the resent last request
            // packet carries their grant again): they stay in flight.
            let mut end = num_tx - num_rx;
            if n_resp == 0 && num_rx < n_req {
                end = end.min(n_req - num_rx);
            }
            for j in 0..end {
                if !s.sacked.get(j) {
                    s.lost.set(j);
                }
            }
            let kept = num_tx - num_rx - end - s.sacked.count_from(end) - s.lost.count_from(end);
            self.credits -= kept as u16;
            s.recovered_upto = num_tx;
            s.reo_since = None;
        } else {
            req.num_tx = req.num_rx;
        }
        req.armed_at = now;
        req.rolled_back = true;
        self.refresh_work(i);
    }

    /// Takes an RTT sample: the estimate jumps up to it at once and decays
    /// by 1/16 per sample otherwise, so one VM stall widens the judgement
    /// window for a while.
    #[inline]
    pub fn sample_rtt(&mut self, sample: Duration) {
        sample_rtt(&mut self.rtt, sample);
    }

    /// Timely: packets `sent` of slot `i` went out at `now`: the first a
    /// real packet (`first`: not a copy, so its answer is a clean sample),
    /// the rest virtual RFRs, whose answers wait for the handler (no sample).
    #[inline]
    pub fn stamp(&mut self, i: usize, sent: std::ops::Range<u32>, now: Instant, first: bool) {
        let Some(ts) = self.cc.as_mut().and_then(|c| c.tx_ts.as_mut()) else {
            return;
        };
        for idx in sent.clone() {
            let clean = first && idx == sent.start;
            ts[i][idx as usize % TX_TS_RING] = if clean { now } else { Instant::ZERO };
        }
    }

    /// Puts slot `i` under judgement (replacing any older suspect there).
    pub fn set_suspect(&mut self, i: usize, s: Suspect) {
        if self.slots[i].suspect.replace(s).is_none() {
            self.suspects += 1;
        }
    }

    /// Ends the judgement of slot `i`, returning it.
    pub fn take_suspect(&mut self, i: usize) -> Option<Suspect> {
        let s = self.slots[i].suspect.take()?;
        self.suspects -= 1;
        Some(s)
    }

    /// The slot `write_next` looks at first: the first with work at or
    /// after the cursor, else the first with work (64: none has work).
    pub fn next_work_slot(&self) -> usize {
        first_from(self.work, self.cursor)
    }

    /// Credits this session may use now: those not in flight, less what
    /// an RCCC server keeps back.
    pub fn usable(&self) -> u16 {
        self.credits.saturating_sub(self.withheld)
    }

    /// Whether the session should enter the transmit queue now (a probe
    /// needs no credit).
    pub fn wants_tx(&self) -> bool {
        !self.tx_queued
            && (self.probes > 0 || (self.usable() > 0 && self.has_work()) || self.resend_due())
    }

    /// RCCC: a packet taken as lost (a trim, a Sack's hole) waits to be
    /// resent while every credit left is kept back by the server. The
    /// server counts that packet as out in the network already (its credit
    /// was released), so its resend may use a kept-back credit; otherwise
    /// the session would wait for a release that only an arrival brings.
    /// Looks at the slots (the request window, a handful) only while the
    /// server keeps credits back.
    pub fn resend_due(&self) -> bool {
        self.withheld > 0
            && self.credits > 0
            && self
                .slots
                .iter()
                .any(|s| s.req.as_ref().is_some_and(ClientReq::has_lost))
    }

    /// The first free slot if the backlog is empty (FIFO: the backlog
    /// goes first).
    pub fn free_slot(&self) -> Option<usize> {
        if !self.backlog.is_empty() {
            return None;
        }
        let free = !self.occupied & window_mask(self.slots.len());
        (free != 0).then(|| free.trailing_zeros() as usize)
    }

    /// Puts `p` into slot `i` (which must be free) as a new request.
    pub fn start(&mut self, i: usize, p: Pending, now: Instant, dpp: usize, selective: bool) {
        let window = self.slots.len() as u64;
        let sel = selective.then(|| {
            let mut b = self.sack_spares.pop().unwrap_or_default();
            *b = SackState::default();
            b
        });
        let slot = &mut self.slots[i];
        let req_num = slot.next_req_num;
        slot.next_req_num += window;
        slot.req = Some(ClientReq {
            req_num,
            req_type: p.req_type,
            tag: p.tag,
            n_req: pkts_of(p.msg.len(), dpp),
            msg: p.msg,
            n_resp: 0,
            resp: None,
            num_tx: 0,
            num_rx: 0,
            high_tx: 0,
            armed_at: now,
            progress_at: now,
            rolled_back: false,
            probe: None,
            sel,
            grant_sent: 0,
            trim_held: 0,
        });
        self.occupied |= 1 << i;
        self.refresh_work(i);
    }

    /// Removes the request in `slot`, returning its in-flight credits, and
    /// gives back its tag. Its buffers go home in place (only the tag moves:
    /// moving the whole request out cost a 150-byte copy per RPC).
    #[inline]
    pub fn take(&mut self, slot: usize) -> Option<u64> {
        self.take_probe(slot);
        let req = self.slots[slot].req.as_mut()?;
        let tag = req.tag;
        self.credits += (req.in_flight() + req.trim_held) as u16;
        // The request is done: an RCCC server keeps nothing back for it.
        self.withheld = 0;
        if let Some(b) = req.sel.take() {
            self.sack_spares.push(b);
        }
        self.slots[slot].req = None;
        self.occupied &= !(1 << slot);
        self.work &= !(1 << slot);
        Some(tag)
    }
}

#[cfg(test)]
mod tests {
    use super::first_from;

    #[test]
    fn the_next_work_slot_is_round_robin_from_the_cursor() {
        let work = 0b1010_0010;
        assert_eq!(first_from(work, 0), 1);
        assert_eq!(first_from(work, 1), 1, "the cursor's own slot first");
        assert_eq!(first_from(work, 2), 5);
        assert_eq!(first_from(work, 6), 7);
        assert_eq!(first_from(work, 8), 1, "past the last: wraps around");
        assert_eq!(first_from(1 << 63, 63), 63);
        assert_eq!(first_from(0, 5), 64, "no work");
    }
}
