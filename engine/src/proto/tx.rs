//! Transmit side: the small descriptors queued by the receive path, the
//! handshake and the application commands, and `poll_transmit`, which turns
//! one descriptor into one whole Ethernet frame in the caller's buffer.
//! Nothing is copied when work is queued; payload bytes move once, from the
//! stored `MsgBuf` into the frame, when the frame is written. Descriptors name
//! what to send by (session, generation, req_num, pkt_num) and are re-checked
//! when popped: one whose session or request has moved on is skipped.
//!
//! Order: server answers and handshake packets (`tx_ctrl`) first, since they
//! return credits to peers; then client packets, one per client session per
//! turn (`tx_client`, round-robin), as credits allow.

use super::{chunk, session::Role, Endpoint, SessionState};
use crate::time::Instant;
use crate::wire::{
    HeaderTemplate, MacAddr, PktType, RpcRepr, SmBody, SmRepr, HEADERS_LEN, SM_BODY_LEN,
};
use std::net::Ipv4Addr;

/// What the server sends in answer to a client packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AnswerKind {
    CreditReturn,
    Response,
}

/// One queued packet.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TxDesc {
    /// Server: a credit return or response packet for a request of a slot.
    Answer {
        num: u16,
        gen: u32,
        req_num: u64,
        kind: AnswerKind,
        pkt: u16,
    },
    /// Client: the ConnectReq of a Connecting session.
    ConnectReq { num: u16, gen: u32 },
    /// Client: the DisconnectReq of a Disconnecting session.
    DisconnectReq { num: u16, gen: u32 },
    /// An SM reply needing no session state (server side: ConnectResp,
    /// DisconnectResp, refusals).
    SmReply(SmReply),
}

/// A self-contained session-management reply.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SmReply {
    pub dst: (MacAddr, Ipv4Addr, u16),
    pub dest_session: u16,
    pub token: u32,
    pub body: SmRepr,
}

impl Endpoint {
    /// Writes the next frame into `buf` and returns its length, or `None` if
    /// there is nothing to send now (including: packets waiting for credits).
    ///
    /// # Panics
    /// If `buf` is shorter than [`min_tx_buf_len`](Self::min_tx_buf_len)
    /// (`66 + max_data_per_pkt`): a caller bug, not a network condition.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        assert!(
            buf.len() >= self.min_tx_buf_len(),
            "poll_transmit: buffer of {} bytes, need {}",
            buf.len(),
            self.min_tx_buf_len()
        );
        let len = self
            .next_ctrl_frame(buf)
            .or_else(|| self.client_next_frame(now, buf))?;
        self.stats.tx_pkts += 1;
        self.stats.tx_bytes += len as u64;
        Some(len)
    }

    fn next_ctrl_frame(&mut self, buf: &mut [u8]) -> Option<usize> {
        while let Some(d) = self.tx_ctrl.pop_front() {
            let written = match d {
                TxDesc::Answer {
                    num,
                    gen,
                    req_num,
                    kind,
                    pkt,
                } => self.write_answer(buf, num, gen, req_num, kind, pkt),
                TxDesc::ConnectReq { num, gen } => self.write_client_sm(buf, num, gen, true),
                TxDesc::DisconnectReq { num, gen } => self.write_client_sm(buf, num, gen, false),
                TxDesc::SmReply(r) => Some(self.write_sm_reply(buf, &r)),
            };
            if written.is_some() {
                return written;
            }
        }
        None
    }

    /// Server answer: re-checked against the slot (it may have moved on).
    fn write_answer(
        &mut self,
        buf: &mut [u8],
        num: u16,
        gen: u32,
        req_num: u64,
        kind: AnswerKind,
        pkt: u16,
    ) -> Option<usize> {
        let slot_idx = self.slot_of(req_num);
        let dpp = self.dpp;
        let s = self.sessions.get(num as usize)?.as_ref()?;
        if s.gen != gen || s.state != SessionState::Connected {
            return None;
        }
        let Role::Server(srv) = &s.role else {
            return None;
        };
        let slot = &srv.slots[slot_idx];
        if slot.req_num != Some(req_num) {
            return None;
        }
        let mut rpc = RpcRepr {
            pkt_type: PktType::CreditReturn,
            req_type: slot.req_type,
            msg_size: slot.req_len as u32,
            dest_session: s.remote,
            pkt_num: pkt,
            req_num,
            token: s.token,
        };
        let payload: &[u8] = match kind {
            AnswerKind::CreditReturn => &[],
            AnswerKind::Response => {
                let resp = slot.resp.as_ref()?;
                rpc.pkt_type = PktType::Response;
                rpc.msg_size = resp.len() as u32;
                &resp[chunk(resp.len(), pkt as u32, dpp)]
            }
        };
        Some(write_frame(buf, &s.template, &rpc, payload))
    }

    /// Client handshake request (ConnectReq or DisconnectReq).
    fn write_client_sm(
        &mut self,
        buf: &mut [u8],
        num: u16,
        gen: u32,
        connect: bool,
    ) -> Option<usize> {
        let s = self.sessions.get(num as usize)?.as_ref()?;
        let want = if connect {
            SessionState::Connecting
        } else {
            SessionState::Disconnecting
        };
        if s.gen != gen || s.state != want {
            return None;
        }
        let credits = s.client().map_or(0, |c| c.credits_total);
        let body = SmRepr {
            sm_type: if connect {
                crate::wire::SmType::ConnectReq
            } else {
                crate::wire::SmType::DisconnectReq
            },
            status: crate::wire::SmStatus::Ok,
            client_session: num,
            server_session: s.remote,
            credits,
            mtu: self.cfg.mtu as u16,
        };
        Some(write_sm(buf, &s.template, s.remote, s.token, &body))
    }

    fn write_sm_reply(&self, buf: &mut [u8], r: &SmReply) -> usize {
        let l = self.cfg.local;
        let template = HeaderTemplate::new((l.mac, l.ip, l.port), r.dst);
        write_sm(buf, &template, r.dest_session, r.token, &r.body)
    }
}

/// Headers from the template, then the payload; returns the frame length.
pub(crate) fn write_frame(
    buf: &mut [u8],
    template: &HeaderTemplate,
    rpc: &RpcRepr,
    payload: &[u8],
) -> usize {
    let n = template.write(buf, rpc, payload.len());
    buf[n..n + payload.len()].copy_from_slice(payload);
    n + payload.len()
}

/// A session-management frame.
fn write_sm(
    buf: &mut [u8],
    template: &HeaderTemplate,
    dest_session: u16,
    token: u32,
    body: &SmRepr,
) -> usize {
    let rpc = RpcRepr {
        pkt_type: PktType::SessionMgmt,
        req_type: 0,
        msg_size: SM_BODY_LEN as u32,
        dest_session,
        pkt_num: 0,
        req_num: 0,
        token,
    };
    let n = template.write(buf, &rpc, SM_BODY_LEN);
    body.emit(&mut SmBody::new_unchecked(&mut buf[n..n + SM_BODY_LEN]));
    debug_assert_eq!(n, HEADERS_LEN);
    n + SM_BODY_LEN
}
