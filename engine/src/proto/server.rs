//! Server half of a session: one slot per request window position holding
//! the current request, its assembly buffer and its stored answer.
//! Reception is in `server_rx.rs`, answers in `server_tx.rs`.
//!
//! The server is passive: it answers client packets and sends nothing
//! unsolicited except, when the application answers, Response(0) (or an
//! ErrorResponse) plus the response packets the client granted credits for
//! in the request's last packet (`grant`). Credit returns are cumulative:
//! at most one is queued per slot at a time and it carries, when written,
//! the highest request packet received in order, so a receive burst of
//! request packets costs one CR.

use super::frame::pkts_of;
use super::msgbuf::MsgBuf;
use super::sack::Window;
use super::session::SessionCommon;
use crate::time::Instant;
use crate::wire::ErrorCode;

/// Server half of a session.
#[derive(Debug)]
pub(crate) struct ServerSession {
    pub common: SessionCommon,
    pub slots: Vec<ServerSlot>,
    /// The credits this server granted the session (its ConnectResp said
    /// so): the most response packets one request's grant may ask for.
    pub credits: u16,
    /// When a ConnectReq with a new token for this session's key last made
    /// the server probe it (`admission::restart`).
    pub probe_at: Option<Instant>,
}

/// Where a slot's current request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Request packets arriving.
    Receiving,
    /// Delivered to the application; no answer yet.
    InHandler,
    /// Answer stored (kept until the slot's next request arrives).
    Responded,
}

/// What the application answered.
#[derive(Debug)]
pub(crate) enum Answer {
    Response(MsgBuf),
    Error(ErrorCode),
}

#[derive(Debug)]
pub(crate) struct ServerSlot {
    /// The current request; `None` before the first.
    pub req_num: Option<u64>,
    pub req_type: u8,
    pub req_len: usize,
    /// Request packets (N).
    pub n_req: u32,
    /// Request packets accepted in order.
    pub num_rx: u32,
    /// Request being assembled (N > 1).
    pub req_buf: Option<MsgBuf>,
    pub phase: Phase,
    pub answer: Option<Answer>,
    /// Next RFR number expected (for duplicate accounting only).
    pub rfr_next: u32,
    /// A duplicate of the last request packet arrived while the handler
    /// held the request: the answer goes out twice, so the client sees the
    /// duplicate that tells it its timeout was spurious.
    pub dup_in_handler: bool,
    /// Response packets after Response(0) the client granted credits for
    /// (from the newest copy of the request's last packet).
    pub grant: u32,
    /// A cumulative credit return is queued and not yet written.
    pub cr_pending: bool,
    /// Selective mode: request packets stored out of order, bit `i` for
    /// packet `num_rx + i`; boxed on the slot's first out-of-order packet
    /// and reused after (a go-back-N slot never has one).
    pub ooo: Option<Box<Window>>,
    /// Go-back-N with NAKs: the gap a Nak last went out for, as (req_num,
    /// packet expected); a gap is NAKed once (the packet's arrival moves
    /// `num_rx` past it, so a later gap differs).
    pub nak_sent: Option<(u64, u32)>,
}

impl ServerSession {
    pub fn new(common: SessionCommon, window: usize, credits: u16) -> Self {
        ServerSession {
            common,
            credits,
            probe_at: None,
            slots: (0..window)
                .map(|_| ServerSlot {
                    req_num: None,
                    req_type: 0,
                    req_len: 0,
                    n_req: 0,
                    num_rx: 0,
                    req_buf: None,
                    phase: Phase::Receiving,
                    answer: None,
                    rfr_next: 1,
                    dup_in_handler: false,
                    grant: 0,
                    cr_pending: false,
                    ooo: None,
                    nak_sent: None,
                })
                .collect(),
        }
    }

    /// Whether the application holds a request of this session.
    pub fn in_handler(&self) -> bool {
        self.slots.iter().any(|s| s.phase == Phase::InHandler)
    }

    pub fn slot_of(&self, req_num: u64) -> usize {
        (req_num % self.slots.len() as u64) as usize
    }

    /// Stores the application's answer to `req_num` if its slot is still
    /// waiting for it, saying what to send: copies of packet 0 (2 if a
    /// duplicate came in meanwhile) and how many response packets after it
    /// the client granted credits for; gives the answer back otherwise.
    pub fn store_answer(
        &mut self,
        req_num: u64,
        answer: Answer,
        dpp: usize,
    ) -> Result<(u32, u32), Answer> {
        let i = self.slot_of(req_num);
        let slot = &mut self.slots[i];
        if slot.req_num != Some(req_num) || slot.phase != Phase::InHandler {
            return Err(answer);
        }
        let extra = granted_after_first(&answer, slot.grant, dpp);
        slot.answer = Some(answer);
        slot.phase = Phase::Responded;
        slot.rfr_next = 1 + extra;
        Ok((1 + std::mem::take(&mut slot.dup_in_handler) as u32, extra))
    }
}

/// Response packets after Response(0) that go out unasked: as many as the
/// client granted, at most the rest of the response (an error answer is
/// one packet).
pub(crate) fn granted_after_first(answer: &Answer, grant: u32, dpp: usize) -> u32 {
    match answer {
        Answer::Response(m) => grant.min(pkts_of(m.len(), dpp) - 1),
        Answer::Error(_) => 0,
    }
}
