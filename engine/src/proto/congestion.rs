//! Congestion control at the endpoint: pacing client sessions at their
//! rate through the pacer (`pacing.rs`, which decides whether a session is
//! paced), and the ECN notification path of DCQCN and NSCC.
//!
//! A client session whose controller (`cc/`) runs below the link rate may
//! send its next packet only at its pacing time; until then it waits on
//! the wheel, not in the transmit queue, so the transmit path never looks
//! at a session that may not send (eRPC's Carousel). At link rate it is
//! not paced at all (eRPC's wheel bypass).
//!
//! DCQCN: every frame leaves ECN-capable; a received frame marked
//! Congestion Experienced is counted, and a server answers it with a CNP
//! to the client session (at most one per `DcqcnParams::cnp_interval`), which cuts that
//! session's rate. A marked answer at the client is congestion on the way
//! back, which the client's own requests-for-response and credits drive:
//! it cuts the session's rate at once, under the same interval. NSCC
//! takes the same CNPs as its ECN echo (`cc::Nscc::on_ecn`).

use super::cc::CcKind;
use super::client::CcState;
use super::endpoint::Endpoint;
use super::ids::SessionId;
use super::pacing::{Pacer, PACING_SLACK};
use super::state::SessionState;
use super::table::Session;
use super::txq::TxDesc;
use crate::time::Instant;
use crate::wire::{Parsed, PktType, RpcRepr};

/// Whether client session `s`, whose congestion state is `c`, must wait
/// for its pacing time before sending; if so it goes on the wheel (it
/// stays marked queued) and `waits` (`Stats::pacing_waits`) counts it.
///
/// Of the session's own state, not an `Endpoint` method looking the
/// session up: the transmit path has it in hand already, and two lookups
/// more per packet sent were a good part of the pacing's cost under NSCC
/// in the lab (rpc-lab, websearch 256 hosts, uec). Not `#[inline]`: the
/// generic transmit path that calls it is compiled in its caller's crate,
/// and inlined there it made the path without pacing (`cc = none`) 15
/// instructions per RPC dearer (scripts/cost.sh, rpc_32b_w1), from the
/// caller's inlining choices, not from code it ran.
pub(crate) fn pace_or_wait(
    pacer: &mut Pacer,
    waits: &mut u64,
    now: Instant,
    s: SessionId,
    c: &mut CcState,
) -> bool {
    c.rate.advance(now);
    let limited = pacer.paced_rate(c.rate_bps()).is_some();
    if !limited || c.pace.ready(now) {
        return false;
    }
    pacer.wait(c.pace.next_send_at, s);
    *waits += 1;
    true
}

/// A client session whose congestion state is `c` sent a `len`-byte frame
/// at `now`: its next one may leave one gap later at its rate (not
/// `#[inline]`, as `pace_or_wait`).
pub(crate) fn on_client_sent(pacer: &Pacer, now: Instant, len: usize, c: &mut CcState) {
    c.rate.on_sent(now, len);
    if let Some(rate) = pacer.paced_rate(c.rate_bps()) {
        c.pace.on_send(now, len, rate, PACING_SLACK);
    }
}

impl Endpoint {
    /// A received frame marked CE (DCQCN and NSCC; rare, so off the common
    /// path): to a server session, the server notifies the client; to a
    /// client session, the client cuts its own rate. The session must exist
    /// in the role the packet kind names and the token must match, or the
    /// mark is ignored (the frame is dropped and counted where it goes).
    pub(crate) fn on_ce(&mut self, now: Instant, rpc: &RpcRepr) {
        if !matches!(self.cfg.cc, CcKind::Dcqcn | CcKind::Nscc) {
            return;
        }
        let server = match rpc.pkt_type {
            PktType::Request | PktType::ReqForResp => true,
            PktType::Response
            | PktType::CreditReturn
            | PktType::ErrorResponse
            | PktType::Sack
            | PktType::Nak
            | PktType::TrimNak => false,
            _ => return,
        };
        let Some(sess) = self.table.by_num_mut(rpc.dest_session) else {
            return;
        };
        let role_ok = matches!(
            (server, &*sess),
            (true, Session::Server(_)) | (false, Session::Client(_))
        );
        let c = sess.common_mut();
        if !role_ok || c.token != rpc.token || c.state != SessionState::Connected {
            return;
        }
        let s = c.id();
        if c.cnp_at != Instant::ZERO && now.saturating_since(c.cnp_at) < self.cfg.dcqcn.cnp_interval
        {
            return;
        }
        c.cnp_at = now;
        if server {
            self.out.stats.cnps_sent += 1;
            self.txq.ctrl.push_back(TxDesc::Cnp(s));
        } else if let Some(c) = self.table.client_mut(s).and_then(|c| c.cc.as_mut()) {
            c.feed(&mut self.out.stats.cc_rate_cuts, |r| r.on_cnp(now));
        }
    }

    /// A CNP for one of our client sessions: cut its rate.
    pub(crate) fn rx_cnp(&mut self, now: Instant, p: &Parsed<'_>) {
        let (d, wrong) = (&mut self.out.stats.drops, &mut self.gate.wrong_tokens);
        let Some(c) = self.table.client_for_packet(now, p, d, wrong) else {
            return;
        };
        if let Some(cc) = c.cc.as_mut() {
            cc.feed(&mut self.out.stats.cc_rate_cuts, |r| r.on_cnp(now));
        }
        self.out.stats.cnps_received += 1;
        self.out.stats.rx_accepted += 1;
    }

    /// Writes the CNP queued for server session `s`.
    pub(crate) fn write_cnp(&self, buf: &mut [u8], s: SessionId) -> Option<usize> {
        let Some(super::table::Session::Server(srv)) = self.table.get(s) else {
            return None;
        };
        Some(srv.write_bare(buf, PktType::Cnp, 0, 0))
    }
}
