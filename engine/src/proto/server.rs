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
//!
//! Memory a slot holds for its client (a reassembly buffer, a stored
//! multi-packet response) is charged to the endpoint's `budget::Ledger`
//! under the session's peer account (`acct`) and given back whenever the
//! slot lets go of it. A reassembly buffer grows in steps as bytes arrive
//! (`step_for`), so the charge follows what the client actually sent; the
//! steps it outgrows go to the pool, whose free buffers the ledger makes
//! fit beside the charge (`Ledger::charge_for`).
//! Both kinds expire after `reassembly_timeout` without progress (`expire`).

use super::budget::Ledger;
use super::frame::pkts_of;
use super::msgbuf::{capacity_for, MsgBuf, MsgPool, PayloadCopy};
use super::police::Meter;
use super::rccc::Waiting;
use super::sack::Window;
use super::session::SessionCommon;
use crate::time::{Duration, Instant};
use crate::wire::ErrorCode;

/// Requests whose buffer is at most this big get it whole at their first
/// packet (holding 64 KiB per slot is cheap, and small multi-packet
/// requests then never copy); larger ones grow in steps.
const WHOLE_UP_TO: usize = 64 << 10;
/// Growth factor of a reassembly buffer, as a shift: the steps of a
/// message are its buffer's capacity divided by 64, 4096, ... (down to
/// `MIN_STEP`): an 8 MiB request takes 2 KiB at its first packet, 128 KiB
/// at its second, 8 MiB once 128 KiB arrived. A buffer holds at most 64
/// times the bytes that arrived (after the first packet: 2 KiB), and the
/// growth copies about a 64th of the message (an 8 MiB request: 130 KiB).
/// A factor of 16 would pin less per byte sent but copy 4 times as much.
const GROW_SHIFT: u32 = 6;
/// Smallest intermediate step: one packet's buffer at a 1500-byte MTU.
const MIN_STEP: usize = 2 << 10;

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
    /// Its peer's account in the endpoint's ledger.
    pub acct: u32,
    /// Its timer is due no later than `reassembly_timeout` from any time
    /// from now on (armed for held memory, and not fired since), so memory
    /// taken now needs no arming: the firing finds it. Saves a timer call
    /// per request while requests keep coming.
    pub expiry_armed: bool,
    /// Its request packets per epoch against its credits (`police.rs`).
    pub meter: Meter,
    /// RCCC: where the session is in the endpoint's credit pacer.
    pub rccc: Waiting,
    /// Slots receiving a request of more than one packet, bit `i` for
    /// slot `i`: the only ones that can hold packets the credit pacer has
    /// not released (`rccc_grant.rs`), found without reading every slot
    /// (each is lines apart). Set as such a request starts, cleared as it
    /// stops arriving. (A window has at most 64 slots, `MAX_REQ_WINDOW`.)
    pub receiving: u64,
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
    /// Duplicates of the request's last packet whose grant was served
    /// (`GapRule::regrants` bounds them; later ones bring Response(0)
    /// alone, so a peer that never reads cannot pull 1 + credits packets
    /// per copy).
    pub regrants: u8,
    /// A cumulative credit return is queued and not yet written.
    pub cr_pending: bool,
    /// RCCC: request packets of the current request the credit pacer
    /// released; while the request arrives a CR acknowledges no more.
    pub granted: u32,
    /// Selective mode: request packets stored out of order, bit `i` for
    /// packet `num_rx + i`; boxed on the slot's first out-of-order packet
    /// and reused after (a go-back-N slot never has one).
    pub ooo: Option<Box<Window>>,
    /// Go-back-N with NAKs: the gap a Nak last went out for, as (req_num,
    /// packet expected); a gap is NAKed once (the packet's arrival moves
    /// `num_rx` past it, so a later gap differs).
    pub nak_sent: Option<(u64, u32)>,
    /// Bytes charged to the ledger for `req_buf` or a stored response.
    pub charged: usize,
    /// Last progress of what `charged` pays for: a new request byte, the
    /// response stored, or asked for again. Expiry counts from it.
    pub touched_at: Instant,
}

/// What `ServerSlot::grow` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hold {
    /// A buffer was taken (the first: arm the expiry) or grown.
    Took { first: bool },
    /// Over the budget: nothing allocated, nothing changed.
    Over,
}

/// What `ServerSession::expire` let go of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Expired {
    pub requests: u64,
    pub responses: u64,
}

impl ServerSlot {
    /// Gives back the slot's charge (its buffer and stored answer are
    /// dropped by the caller, or kept uncharged: an error answer).
    pub fn release(&mut self, ledger: &mut Ledger, acct: u32) {
        if self.charged > 0 {
            ledger.release(acct, std::mem::take(&mut self.charged));
        }
    }

    /// Makes the reassembly buffer of the current request hold bytes up to
    /// `end` (past its capacity, which is what `charged` holds while
    /// receiving): it is taken at the first packet, or grown to the next
    /// step (its bytes copied by `C`), after charging the larger capacity; over
    /// the budget nothing changes.
    #[inline]
    pub fn grow<C: PayloadCopy>(&mut self, end: usize, ledger: &mut Ledger, acct: u32) -> Hold {
        let (size, cap) = step_for(self.req_len, end);
        let add = cap - self.charged;
        // The step outgrown goes to the pool after the copy: the pool's
        // free bytes are made to fit beside the new charge with it.
        if !ledger.charge_for(acct, add, Some(size), self.charged) {
            return Hold::Over;
        }
        self.charged = cap;
        match self.req_buf.as_mut() {
            None => {
                self.req_buf = Some(ledger.pool.alloc(size));
                Hold::Took { first: true }
            }
            Some(old) => {
                regrow::<C>(old, size, &ledger.pool);
                Hold::Took { first: false }
            }
        }
    }
}

/// Replaces `buf` by a buffer of `size` bytes holding its bytes. Out of
/// line: the first buffer of a request (every small request) is the
/// common case, and this one needs a frame of its own.
#[inline(never)]
fn regrow<C: PayloadCopy>(buf: &mut MsgBuf, size: usize, pool: &MsgPool) {
    let mut new = pool.alloc(size);
    new.copy_prefix::<C>(buf, buf.capacity());
    *buf = new;
}

/// The buffer a request of `len` bytes needs to hold bytes up to `end`, as
/// (size to allocate, its capacity): `len` itself (the final buffer) once
/// `end` is past the step below it, else the smallest step at or above
/// `end`.
fn step_for(len: usize, end: usize) -> (usize, usize) {
    let full = capacity_for(len);
    let mut cap = full;
    if full > WHOLE_UP_TO {
        while (cap >> GROW_SHIFT) >= end.max(MIN_STEP) {
            cap >>= GROW_SHIFT;
        }
    }
    if cap == full {
        (len, full)
    } else {
        (cap, cap)
    }
}

impl ServerSlot {
    /// The grant of the request's last packet (or of a copy of it): at
    /// most the session's `credits`, whatever the packet asks, so a
    /// request brings back at most 1 + credits packets (a duplicate as
    /// many only while `regrants` allows, see `server_rx.rs`).
    #[inline]
    pub fn set_grant(&mut self, asked: u16, credits: u16) {
        self.grant = u32::from(asked.min(credits));
    }
}

impl ServerSession {
    pub fn new(common: SessionCommon, window: usize, credits: u16, acct: u32) -> Self {
        ServerSession {
            common,
            credits,
            probe_at: None,
            acct,
            expiry_armed: false,
            meter: Meter::new(credits, window),
            rccc: Waiting::Idle,
            receiving: 0,
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
                    regrants: 0,
                    cr_pending: false,
                    granted: 0,
                    ooo: None,
                    nak_sent: None,
                    charged: 0,
                    touched_at: Instant::ZERO,
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
    /// waiting for it; gives the answer back otherwise. A multi-packet
    /// response is charged to the ledger first; over the budget it is
    /// dropped and an `ErrorCode::OverBudget` answer stored instead.
    pub fn store_answer(
        &mut self,
        req_num: u64,
        answer: Answer,
        st: StoreCtx<'_>,
    ) -> Result<Stored, Answer> {
        let i = self.slot_of(req_num);
        let slot = &mut self.slots[i];
        if slot.req_num != Some(req_num) || slot.phase != Phase::InHandler {
            return Err(answer);
        }
        let mut answer = answer;
        let mut over_budget = false;
        if let Answer::Response(m) = &answer {
            if m.len() > st.dpp {
                let cap = m.capacity();
                if st.ledger.charge(self.acct, cap) {
                    slot.charged = cap;
                    slot.touched_at = st.now;
                } else {
                    answer = Answer::Error(ErrorCode::OverBudget);
                    over_budget = true;
                }
            }
        }
        let extra = granted_after_first(&answer, slot.grant, st.dpp);
        let error = matches!(answer, Answer::Error(_));
        slot.answer = Some(answer);
        slot.phase = Phase::Responded;
        slot.rfr_next = 1 + extra;
        Ok(Stored {
            copies: 1 + std::mem::take(&mut slot.dup_in_handler) as u32,
            extra,
            error,
            over_budget,
            charged: slot.charged > 0,
        })
    }

    /// Lets go of what slots hold past `timeout` without progress: an
    /// incomplete request is given up (its slot answers
    /// `ErrorCode::ReassemblyTimeout` from then on), a stored response is
    /// freed (`ErrorCode::ResponseExpired`). O(window), per timer firing.
    pub fn expire(&mut self, now: Instant, timeout: Duration, ledger: &mut Ledger) -> Expired {
        let mut out = Expired::default();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.charged == 0 || now.saturating_since(slot.touched_at) < timeout {
                continue;
            }
            slot.release(ledger, self.acct);
            let code = if slot.phase == Phase::Receiving {
                self.receiving &= !(1 << i);
                out.requests += 1;
                slot.req_buf = None;
                // Every packet of it is a duplicate now, answered with the error.
                slot.num_rx = slot.n_req;
                slot.cr_pending = false;
                slot.phase = Phase::Responded;
                ErrorCode::ReassemblyTimeout
            } else {
                out.responses += 1;
                ErrorCode::ResponseExpired
            };
            slot.answer = Some(Answer::Error(code));
        }
        out
    }

    /// When `expire` next has something to do, if anything is charged.
    pub fn expiry(&self, timeout: Duration) -> Option<Instant> {
        self.slots
            .iter()
            .filter(|s| s.charged > 0)
            .map(|s| s.touched_at + timeout)
            .min()
    }

    /// Gives back every slot's charge (the session is being freed).
    pub fn release_all(&mut self, ledger: &mut Ledger) {
        for slot in &mut self.slots {
            slot.release(ledger, self.acct);
        }
    }
}

/// What `store_answer` needs besides the answer.
#[derive(Debug)]
pub(crate) struct StoreCtx<'a> {
    pub dpp: usize,
    pub now: Instant,
    pub ledger: &'a mut Ledger,
}

/// What `store_answer` stored and what to send: `copies` of packet 0 (2
/// if a duplicate came in meanwhile) and `extra` response packets after
/// it that the client granted credits for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stored {
    pub copies: u32,
    pub extra: u32,
    /// An error answer (the application's, or `OverBudget`).
    pub error: bool,
    /// The response did not fit the budget.
    pub over_budget: bool,
    /// The stored response is charged: arm its expiry.
    pub charged: bool,
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
