//! Client transmission: the next request or request-for-response packet of
//! one client session, chosen round-robin among its slots, as credits allow.
//!
//! The last packet of a request grants the server credits for response
//! packets after Response(0): the client counts them as sent (virtual RFRs:
//! `num_tx` moves past them and each holds a credit), so the server may send
//! them unasked and the credit invariant and lossless ring accounting hold
//! unchanged. It grants the credits left after keeping one for each other
//! slot with packets to send, so small requests still pipeline; Response(0)
//! tells the response's length and the credits granted beyond it return.

use super::client::{pop_slot, ClientReq, ClientSession};
use super::frame::{chunk, write_frame};
use super::msgbuf::PayloadCopy;
use super::session::SessionCommon;
use super::stats::Stats;
use crate::time::Instant;
use crate::wire::{PktType, RpcRepr};

/// What one transmit turn of a client session did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ClientTurn {
    /// Frame length written into the buffer, if any.
    pub written: Option<usize>,
    /// The session has more to send and credits for it: queue it again.
    pub again: bool,
}

impl ClientSession {
    /// Writes this session's next packet into `buf`: a pending probe
    /// first (it needs no credit), else the next request or RFR packet
    /// round-robin over the slots, as credits allow. `C` moves the
    /// payload bytes.
    pub fn write_next<C: PayloadCopy>(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        dpp: usize,
        stats: &mut Stats,
    ) -> ClientTurn {
        self.tx_queued = false;
        // Probes are rare: the counter keeps this off the per-packet path.
        let probe = if self.probes > 0 {
            self.write_probe::<C>(buf, dpp, stats)
        } else {
            None
        };
        if let Some(len) = probe {
            self.common.active_at = now;
            let again = self.wants_tx();
            return ClientTurn {
                written: Some(len),
                again,
            };
        }
        let idle = ClientTurn {
            written: None,
            again: false,
        };
        // RCCC: a resend may use a credit the server keeps back, since the
        // server counted the lost packet as out already (`resend_due`).
        let resend_only = self.usable() == 0;
        if resend_only && !self.resend_due() {
            if !self.stalled && self.has_work() {
                self.stalled = true;
                stats.credit_stalls += 1;
            }
            return idle;
        }
        let w = self.slots.len();
        // Round-robin from the cursor over the slots with work: those at or
        // after it, then those before it.
        let before = (1u64 << self.cursor) - 1;
        let (mut set, mut rest) = (self.work & !before, self.work & before);
        loop {
            if set == 0 {
                if rest == 0 {
                    break;
                }
                set = std::mem::take(&mut rest);
            }
            let i = pop_slot(&mut set);
            if !self.slots[i].req.as_ref().is_some_and(ClientReq::has_work) {
                continue;
            }
            let grant = self.grant_for(i);
            let Some(req) = self.slots[i].req.as_mut() else {
                continue;
            };
            if resend_only && !req.has_lost() {
                continue;
            }
            let (len, used, idx, first) = if let Some(idx) = req.take_lost() {
                // Selective: a packet taken as lost goes first, alone (its
                // grant, if it is the last request packet, is the one sent).
                if req.in_flight() == 1 {
                    req.armed_at = now;
                }
                let grant = if idx + 1 == req.n_req {
                    req.grant_sent
                } else {
                    0
                };
                stats.retransmissions += 1;
                (
                    write_packet::<C>(req, idx, grant, buf, dpp, &self.common),
                    1,
                    idx,
                    false,
                )
            } else {
                let idx = req.num_tx;
                let first = idx >= req.high_tx;
                let len = write_packet::<C>(req, idx, grant, buf, dpp, &self.common);
                if idx + 1 == req.n_req {
                    req.grant_sent = grant;
                }
                advance(req, now, stats);
                // The granted response packets count as sent (virtual RFRs).
                req.num_tx += u32::from(grant);
                req.high_tx = req.high_tx.max(req.num_tx);
                (len, 1 + grant, idx, first)
            };
            self.refresh_work(i);
            self.stamp(i, idx..idx + u32::from(used), now, first);
            self.common.active_at = now;
            self.cursor = if i + 1 == w { 0 } else { i + 1 };
            self.credits -= used;
            self.stalled = false;
            let more = self.has_work();
            let again = more && (self.usable() > 0 || self.resend_due());
            if more && !again {
                self.stalled = true;
                stats.credit_stalls += 1;
            }
            return ClientTurn {
                written: Some(len),
                again,
            };
        }
        idle
    }

    /// The grant slot `i`'s next packet carries: 0 unless it is the last
    /// request packet; then the credits left after this packet and one for
    /// each other slot with work.
    fn grant_for(&self, i: usize) -> u16 {
        let Some(req) = self.slots[i].req.as_ref() else {
            return 0;
        };
        if req.num_tx + 1 != req.n_req {
            return 0;
        }
        let others = (self.work & !(1u64 << i)).count_ones();
        self.usable().saturating_sub(1 + others as u16)
    }

    /// Resends one probed packet, if a slot has one pending (with no grant:
    /// a probe holds no credit, so it may cause one answer only).
    fn write_probe<C: PayloadCopy>(
        &mut self,
        buf: &mut [u8],
        dpp: usize,
        stats: &mut Stats,
    ) -> Option<usize> {
        let i = self
            .slots
            .iter()
            .position(|s| s.req.as_ref().is_some_and(|r| r.probe.is_some()))?;
        let k = self.take_probe(i)?;
        stats.retransmissions += 1;
        stats.probes_sent += 1;
        let req = self.slots[i].req.as_ref()?;
        Some(write_packet::<C>(req, k, 0, buf, dpp, &self.common))
    }
}

/// Writes packet `k` of `req`: a request packet (the last one carrying
/// `grant`, its payload moved by `C`), or an RFR once the request is sent.
fn write_packet<C: PayloadCopy>(
    req: &ClientReq,
    k: u32,
    grant: u16,
    buf: &mut [u8],
    dpp: usize,
    common: &SessionCommon,
) -> usize {
    let rpc = RpcRepr {
        pkt_type: PktType::Request,
        req_type: req.req_type,
        msg_size: req.msg.len() as u32,
        dest_session: common.remote,
        pkt_num: k as u16,
        grant,
        req_num: req.req_num,
        token: common.token,
    };
    if k < req.n_req {
        let data = &req.msg[chunk(req.msg.len(), k, dpp)];
        write_frame::<C>(buf, &common.template, &rpc, data)
    } else {
        let rfr = RpcRepr {
            pkt_type: PktType::ReqForResp,
            msg_size: 0,
            pkt_num: (k - req.n_req + 1) as u16,
            grant: 0,
            ..rpc
        };
        write_frame::<C>(buf, &common.template, &rfr, &[])
    }
}

/// Bookkeeping after packet `num_tx` of `req` went out.
#[inline]
fn advance(req: &mut ClientReq, now: Instant, stats: &mut Stats) {
    if req.num_tx == req.num_rx {
        req.armed_at = now;
        if !req.rolled_back {
            req.progress_at = now;
        }
    }
    if req.num_tx < req.high_tx {
        stats.retransmissions += 1;
    }
    req.num_tx += 1;
    req.high_tx = req.high_tx.max(req.num_tx);
}
