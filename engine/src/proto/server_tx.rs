//! Server answers: a credit return, a response packet or an error answer
//! for the current request of a slot, written from the stored answer when
//! the descriptor is popped (it is re-checked then: the slot may have moved
//! on to a newer request, and then nothing is sent). A credit return is
//! cumulative and takes its packet number at this moment: the highest
//! non-last request packet received in order, so the CR queued by the
//! first packet of a receive burst acknowledges the whole burst. A Sack
//! (selective mode) names the packet it answers and carries the cumulative
//! ack as of the moment it is written. Under RCCC a CR also carries, in
//! its `grant` field, the credits the server keeps back (`rccc.rs`).

use super::frame::{chunk, write_frame};
use super::msgbuf::{CopyBytes, PayloadCopy};
use super::server::{Answer, ServerSession};
use super::txq::AnswerKind;
use crate::wire::{PktType, RpcRepr};

impl ServerSession {
    /// Writes answer packet `pkt` of kind `kind` for `req_num`, or `None` if
    /// the slot no longer holds that request or answer. `C` moves a
    /// response's payload bytes (an error's code is always copied).
    pub fn write_answer<C: PayloadCopy>(
        &mut self,
        buf: &mut [u8],
        req_num: u64,
        kind: AnswerKind,
        pkt: u16,
        (dpp, rccc): (usize, bool),
    ) -> Option<usize> {
        let i = self.slot_of(req_num);
        if kind == AnswerKind::Nak {
            // Written whether or not the slot holds that request (a gap at
            // packet 0 of a newer request left the slot on the older one);
            // the client ignores a Nak for a request it is not sending.
            return Some(self.write_bare(buf, PktType::Nak, req_num, pkt));
        }
        if kind == AnswerKind::TrimNak {
            // Likewise: it names a packet that never arrived, which may be
            // of a request newer than the slot's.
            return Some(self.write_bare(buf, PktType::TrimNak, req_num, pkt));
        }
        let slot = &mut self.slots[i];
        if slot.req_num != Some(req_num) {
            return None;
        }
        let pkt = if kind == AnswerKind::CreditReturn {
            // Every accepted or re-answered non-last packet set the flag
            // and num_rx >= 1; the last packet is answered by Response(0).
            slot.cr_pending = false;
            (slot.num_rx.min(slot.n_req - 1).saturating_sub(1)) as u16
        } else {
            pkt
        };
        // RCCC: a CR carries the packets received and not yet released by
        // the credit pacer (`rccc.rs`); the client keeps as many credits
        // back. 0 without RCCC (the field is unused in a CR otherwise).
        let withheld = match (rccc, kind) {
            (true, AnswerKind::CreditReturn) => self.unreleased(),
            _ => 0,
        };
        let c = &self.common;
        let slot = &self.slots[i];
        let mut rpc = RpcRepr {
            pkt_type: PktType::CreditReturn,
            req_type: slot.req_type,
            msg_size: slot.req_len as u32,
            dest_session: c.remote,
            pkt_num: pkt,
            grant: withheld,
            req_num,
            token: c.token,
        };
        let payload: &[u8] = match (kind, slot.answer.as_ref()) {
            (AnswerKind::CreditReturn, _) => &[],
            (AnswerKind::Sack, _) => {
                rpc.pkt_type = PktType::Sack;
                // The cumulative ack as of now, not as of the arrival.
                rpc.grant = slot.num_rx.min(u32::from(u16::MAX)) as u16;
                &[]
            }
            (AnswerKind::Response, Some(Answer::Response(resp))) => {
                rpc.pkt_type = PktType::Response;
                rpc.msg_size = resp.len() as u32;
                &resp[chunk(resp.len(), pkt as u32, dpp)]
            }
            (AnswerKind::Error, Some(Answer::Error(e))) => {
                rpc.pkt_type = PktType::ErrorResponse;
                rpc.msg_size = 1;
                // The client reads the code: copied whatever `C` does.
                let code = [u8::from(*e)];
                return Some(write_frame::<CopyBytes>(buf, &c.template, &rpc, &code));
            }
            _ => return None,
        };
        Some(write_frame::<C>(buf, &c.template, &rpc, payload))
    }

    /// A control packet with no payload to this session's client (a Nak
    /// naming `pkt` of `req_num`, a Cnp): returns the frame length.
    pub fn write_bare(&self, buf: &mut [u8], pkt_type: PktType, req_num: u64, pkt: u16) -> usize {
        let c = &self.common;
        let rpc = RpcRepr {
            pkt_type,
            req_type: 0,
            msg_size: 0,
            dest_session: c.remote,
            pkt_num: pkt,
            grant: 0,
            req_num,
            token: c.token,
        };
        write_frame::<CopyBytes>(buf, &c.template, &rpc, &[])
    }
}
