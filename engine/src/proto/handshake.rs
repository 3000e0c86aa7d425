//! Session management: the connect and disconnect handshakes, in-band over
//! the same port as data (virtual devices have no kernel path).
//!
//! Connect: the client allocates a session number and a random token,
//! reserves receive-ring entries (lossless), and sends ConnectReq
//! (dest_session = SESSION_NONE) to the peer, or to the Ethernet broadcast
//! address when the peer's MAC is unknown, every `connect_retry` until
//! `connect_timeout`. The server validates it (MTU equal to its own, credits
//! non-zero, ring space, a free session number), creates a Connected session
//! and answers ConnectResp(Ok, server_session), or answers an error status
//! without creating anything. The credits are the server's to grant: the
//! client's ask, at most the server's own `session_credits` and (lossless)
//! its ring shares per session, address and source MAC and the newcomers'
//! reserve (`admission.rs`); the ConnectResp says what was granted
//! and the client lowers its credits to it. A duplicate ConnectReq (same
//! client address, client session and token) is answered with the same
//! response, never allocating twice; one with a new token replaces the old
//! session only when the old one is dead (the client restarted): silent
//! past its timeout, or unanswered to a liveness probe sent with its old
//! token. A peer that cannot see the traffic cannot answer that probe, and
//! cannot kill a live session. The client learns the server's session number and, if
//! needed, its MAC from the ConnectResp. From the admission policy's
//! cookie threshold (a fill of the session table) on, a ConnectReq must first bring the server's
//! cookie for its source address (ConnectResp(Retry), `cookie_passes`),
//! so spoofed floods create nothing; wrong tokens are tallied per source
//! and past a limit draw no more replies (`wrong_tokens.rs`).
//!
//! Disconnect: the client fails its outstanding requests and sends
//! DisconnectReq until a DisconnectResp arrives or `connect_timeout` passes;
//! either way the session is then freed. The server frees its session and
//! answers; a DisconnectReq for a session it no longer has is answered with
//! status UnknownSession so the client stops retrying.

use super::admission::{restart, Restart};
use super::cc::RateControl;
use super::client::ClientSession;
use super::config::{FlowMode, PeerAddr};
use super::endpoint::Endpoint;
use super::error::RpcError;
use super::event::Event;
use super::ids::SessionId;
use super::pause_peers::NO_LINK;
use super::secrets::CookieFor;
use super::server::ServerSession;
use super::session::SessionCommon;
use super::state::{Effect, SessionInput, SessionState};
use super::table::Session;
use super::txq::{SmReply, TxDesc};
use super::wrong_tokens::Tally;
use crate::time::Instant;
use crate::wire::{
    HeaderTemplate, MacAddr, Parsed, SmBody, SmRepr, SmStatus, SmType, SESSION_NONE,
};

impl Endpoint {
    /// Opens a client session to `peer`. The session is usable at once
    /// (requests queue until it is Connected); `Event::Connected` or
    /// `Event::ConnectFailed` follows. Fails locally if the session table is
    /// full or (lossless) the receive ring cannot reserve the session's credits.
    pub fn connect(&mut self, now: Instant, peer: PeerAddr) -> Result<SessionId, RpcError> {
        let credits = self.cfg.session_credits;
        let need = self.cfg.ring_reservation(credits);
        let id = self.reserve_session(need)?;
        let template = self.template_to(peer.mac.unwrap_or(MacAddr::BROADCAST), peer);
        let common = SessionCommon {
            token: self.gate.rng.next_u64(),
            ring_reserved: need,
            link: self.attach_link(peer),
            ..SessionCommon::new(id, SessionState::Connecting, peer, template, now)
        };
        let window = self.cfg.req_window;
        let c = &self.cfg;
        let frame = (c.mtu, c.max_data_per_pkt());
        let cc = RateControl::new(c.cc, c.link_bps, now, c.base_rtt, c.dcqcn, frame)
            .with_host_stalls(c.host_stalls);
        let mut session = ClientSession::new(common, window, credits, cc, c.rate_cap_bps);
        session.sack_rule = c.sack_rule;
        session.nak = c.nak;
        self.table.insert(Session::Client(session));
        self.run_effect(now, id, Effect::StartHandshake, RpcError::UnknownSession);
        self.txq.ctrl.push_back(TxDesc::ConnectReq(id));
        Ok(id)
    }

    /// Closes client session `s`. Connected: outstanding requests fail with
    /// `SessionClosed`, the DisconnectReq handshake runs and
    /// `Event::Disconnected` follows. Reset: freed at once (with the event).
    pub fn disconnect(&mut self, now: Instant, s: SessionId) -> Result<(), RpcError> {
        if self.table.client(s).is_none() {
            return Err(match self.table.get(s) {
                Some(_) => RpcError::WrongRole,
                None => RpcError::UnknownSession,
            });
        }
        let reason = RpcError::SessionClosed;
        self.change_state(now, s, SessionInput::Disconnect, reason)
            .map(|_| ())
    }

    /// A SessionMgmt packet.
    pub(crate) fn handle_sm(&mut self, now: Instant, p: &Parsed<'_>) {
        let Ok(body) = SmBody::new_checked(p.payload).and_then(|b| SmRepr::parse(&b)) else {
            self.out.stats.drops.malformed += 1;
            return;
        };
        match body.sm_type {
            SmType::ConnectReq => self.server_rx_connect(now, p, &body),
            SmType::DisconnectReq => self.server_rx_disconnect(now, p, &body),
            SmType::ConnectResp | SmType::DisconnectResp => self.client_rx_sm_resp(now, p, &body),
            SmType::KeepAlive => self.rx_keepalive(now, p),
            SmType::Unknown(_) => self.out.stats.drops.malformed += 1,
        }
    }

    fn server_rx_connect(&mut self, now: Instant, p: &Parsed<'_>, req: &SmRepr) {
        let key = (p.src_ip, p.src_port, req.client_session);
        let token = p.rpc.token;
        let live = self.gate.accepted.get(&key).copied();
        if let Some((old, old_token)) = live {
            if old_token == token {
                self.out.stats.drops.duplicate += 1;
                self.out.stats.drops.dup_sm += 1;
                let grant = self
                    .table
                    .server_mut(old)
                    .map_or((0, 0), |s| (s.credits, s.common.token));
                self.reply_connect(p, req, (SmStatus::Ok, old.num), grant);
                return;
            }
        }
        if !self.cookie_passes(now, p, req) {
            return;
        }
        if let Some((old, _)) = live {
            // Same client session number, new token: a restarted client,
            // or a peer that wants this session gone. Only a dead old
            // session is replaced (`admission::restart`); a source over its
            // wrong-token limit (its forged restarts were refused by the
            // live client's answers) draws no more probes this second.
            if self.gate.wrong_tokens.over(now, p.src_ip, p.src_port) {
                self.out.stats.replies_withheld += 1;
                self.out.stats.drops.restart_refused += 1;
                return;
            }
            if !self.old_session_is_dead(now, p, old) {
                return;
            }
            self.out.stats.sessions_replaced += 1;
            self.step(
                now,
                old,
                SessionInput::PeerDisconnect,
                RpcError::SessionClosed,
            );
        }
        self.out.stats.rx_accepted += 1;
        match self.accept(now, p, req) {
            Ok((id, credits)) => {
                self.gate.accepted.insert(key, (id, token));
                self.out.stats.sessions_accepted += 1;
                self.out.events.push_back(Event::PeerSessionAccepted(id));
                let token = self.table.server_mut(id).map_or(0, |s| s.common.token);
                self.reply_connect(p, req, (SmStatus::Ok, id.num), (credits, token));
            }
            Err(status) => {
                self.out.stats.connects_refused += 1;
                self.reply_connect(p, req, (status, SESSION_NONE), (0, 0));
            }
        }
    }

    /// Whether a ConnectReq may go on to create (or replace) a session.
    /// While the session table is filling up (`Admission::cookie_needed`)
    /// only one that brings this server's cookie for its source address may:
    /// the others are answered with ConnectResp(Retry) and the cookie, and
    /// nothing is created or probed, so a flood of ConnectReqs from spoofed
    /// addresses (which never see their cookies) costs one same-sized reply
    /// each and no table slot. A real client pays one round trip.
    fn cookie_passes(&mut self, now: Instant, p: &Parsed<'_>, req: &SmRepr) -> bool {
        let who = CookieFor {
            ip: p.src_ip,
            port: p.src_port,
            client_session: req.client_session,
            client_token: p.rpc.token,
        };
        if req.server_token != 0 {
            if self.gate.secrets.cookie_ok(now, &who, req.server_token) {
                return true;
            }
            self.out.stats.cookies_bad += 1;
        }
        let adm = self.cfg.admission;
        if !adm.cookie_needed(self.table.live(), self.cfg.max_sessions) {
            return true;
        }
        let cookie = self.gate.secrets.cookie(now, &who);
        // Handled and answered: accounted as accepted, not dropped.
        self.out.stats.rx_accepted += 1;
        self.out.stats.cookies_sent += 1;
        self.reply_connect(p, req, (SmStatus::Retry, SESSION_NONE), (0, cookie));
        false
    }

    /// Whether the live server session `old` may be replaced by a
    /// ConnectReq with a new token: silent past its timeout, or its
    /// liveness probe (a KeepAlive with its own token, to its own client's
    /// address, which only that client can answer) went unanswered for
    /// `admission.restart_probe_wait`. Probes it when the rule says so.
    fn old_session_is_dead(&mut self, now: Instant, p: &Parsed<'_>, old: SessionId) -> bool {
        let adm = self.cfg.admission;
        let timeout = self.cfg.session_timeout;
        let Some(s) = self.table.server_mut(old) else {
            return true;
        };
        match restart(now, s.common.active_at, s.probe_at, &adm, timeout) {
            Restart::Replace => return true,
            Restart::Probe => {
                s.probe_at = Some(now);
                let c = &s.common;
                let body = SmRepr {
                    sm_type: SmType::KeepAlive,
                    status: SmStatus::Ok,
                    client_session: c.remote,
                    server_session: c.num,
                    credits: s.credits,
                    mtu: self.cfg.mtu as u16,
                    req_window: self.cfg.req_window as u16,
                    server_token: 0,
                };
                let mac = c.peer.mac.unwrap_or(MacAddr::BROADCAST);
                self.txq.ctrl.push_back(TxDesc::SmReply(SmReply {
                    dst: (mac, c.peer.ip, c.peer.port),
                    dest_session: c.remote,
                    token: c.token,
                    body,
                }));
                self.out.stats.restart_probes += 1;
                self.out.stats.drops.restart_pending += 1;
            }
            Restart::Wait => self.out.stats.drops.restart_pending += 1,
            Restart::Refuse => {
                // Proven forged (or stale): a wrong token from its source.
                self.out.stats.drops.restart_refused += 1;
                self.gate.wrong_tokens.note(now, p.src_ip, p.src_port);
            }
        }
        false
    }

    /// Creates the server session a valid ConnectReq asks for, born
    /// Connected, with the credits this server grants, or says why not.
    fn accept(
        &mut self,
        now: Instant,
        p: &Parsed<'_>,
        req: &SmRepr,
    ) -> Result<(SessionId, u16), SmStatus> {
        if req.mtu as usize != self.cfg.mtu {
            return Err(SmStatus::BadMtu);
        }
        if req.req_window as usize != self.cfg.req_window {
            return Err(SmStatus::BadWindow);
        }
        if req.credits == 0 {
            return Err(SmStatus::BadCredits);
        }
        if self.ledger.sessions_of(p.src_ip) >= self.cfg.max_sessions_per_peer {
            return Err(SmStatus::PeerLimit);
        }
        let adm = self.cfg.admission;
        if self.gate.macs.of(p.src_mac).sessions >= adm.max_sessions_per_mac {
            self.out.stats.refused_mac_limit += 1;
            return Err(SmStatus::PeerLimit);
        }
        let lossless = (self.cfg.mode == FlowMode::Lossless).then(|| self.ring_view(p));
        let credits = adm
            .grant(req.credits, self.cfg.session_credits, lossless)
            .map_err(|bound| {
                self.count_ring_refusal(bound);
                SmStatus::NoRingSpace
            })?;
        // Half-open sessions reserve nothing: the ring entries are taken at
        // the client's first packet (`first_contact`), which only a client
        // that received the ConnectResp (and its server token) can send.
        // Refused now if they could not be taken then.
        let need = self.cfg.ring_reservation(credits);
        if need > self.ledger.ring_free() {
            return Err(SmStatus::NoRingSpace);
        }
        let id = self
            .reserve_session(0)
            .map_err(|_| SmStatus::TooManySessions)?;
        let peer = PeerAddr {
            mac: Some(p.src_mac),
            ip: p.src_ip,
            port: p.src_port,
        };
        let template = self.template_to(p.src_mac, peer);
        let common = SessionCommon {
            remote: req.client_session,
            token: self.gate.secrets.next_token(p.rpc.token),
            link: self.attach_link(peer),
            ..SessionCommon::new(id, SessionState::Connected, peer, template, now)
        };
        let acct = self.ledger.attach(p.src_ip);
        self.gate.macs.attach(p.src_mac);
        let window = self.cfg.req_window;
        let session = ServerSession::new(common, window, credits, acct);
        self.table.insert(Session::Server(session));
        self.rearm(now, id);
        Ok((id, credits))
    }

    /// A KeepAlive. To a server session: the client's keepalive (or its
    /// answer to a liveness probe); the session stays, nothing is
    /// answered. To a connected client session: the server's liveness
    /// probe, answered with a keepalive so the server keeps the session.
    fn rx_keepalive(&mut self, now: Instant, p: &Parsed<'_>) {
        let d = &mut self.out.stats.drops;
        match self.table.by_num_mut(p.rpc.dest_session) {
            Some(Session::Server(s)) if s.common.token == p.rpc.token => {
                if s.common.heard {
                    s.common.heard_at(now);
                } else {
                    let id = s.common.id();
                    if !self.first_contact(now, id) {
                        return;
                    }
                }
                self.out.stats.rx_accepted += 1;
            }
            Some(Session::Client(c))
                if c.common.token == p.rpc.token && c.common.state == SessionState::Connected =>
            {
                self.out.stats.rx_accepted += 1;
                self.out.stats.probes_answered += 1;
                let id = c.common.id();
                self.txq.ctrl.push_back(TxDesc::KeepAlive(id));
            }
            Some(_) => {
                d.bad_token += 1;
                self.gate.wrong_tokens.note(now, p.src_ip, p.src_port);
            }
            None => d.unknown_session += 1,
        }
    }

    /// Tallies a wrong token (or a session that is not ours) from `p`'s
    /// source; whether the server may still answer that source this
    /// second (`wrong_tokens.rs`). Withheld answers are counted.
    fn may_answer_stranger(&mut self, now: Instant, p: &Parsed<'_>) -> bool {
        match self.gate.wrong_tokens.note(now, p.src_ip, p.src_port) {
            Tally::Within => true,
            Tally::Crossed(_) | Tally::Over => {
                self.out.stats.replies_withheld += 1;
                false
            }
        }
    }

    /// ConnectResp(Retry) to connecting session `id`: keep the server's
    /// cookie and send the ConnectReq again with it, at once if the cookie
    /// is new (a repeated one waits for the retry timer, so a server that
    /// keeps refusing cannot make the two ping-pong at line rate).
    fn rx_retry(&mut self, now: Instant, id: SessionId, cookie: u64) {
        let retry = self.cfg.connect_retry;
        let Some(c) = self.table.client_mut(id) else {
            return;
        };
        if cookie == 0 {
            self.out.stats.drops.malformed += 1;
            return;
        }
        self.out.stats.rx_accepted += 1;
        self.out.stats.cookie_retries += 1;
        if c.common.sm.cookie == cookie {
            return;
        }
        c.common.sm.cookie = cookie;
        // Restart the retry period, so the handshake's RTT sample is taken
        // from this ConnectReq.
        c.common.sm.next_retry = now + retry;
        self.txq.ctrl.push_back(TxDesc::ConnectReq(id));
        self.rearm(now, id);
    }

    /// Answers a ConnectReq with `status` and the server session number,
    /// and the credits granted and the server token (0s with a refusal).
    fn reply_connect(
        &mut self,
        p: &Parsed<'_>,
        req: &SmRepr,
        answer: (SmStatus, u16),
        grant: (u16, u64),
    ) {
        let (status, num) = answer;
        let (credits, server_token) = grant;
        let body = SmRepr {
            sm_type: SmType::ConnectResp,
            status,
            client_session: req.client_session,
            server_session: num,
            credits,
            mtu: self.cfg.mtu as u16,
            req_window: self.cfg.req_window as u16,
            server_token,
        };
        self.reply_sm(p, req.client_session, body);
    }

    fn reply_sm(&mut self, p: &Parsed<'_>, dest_session: u16, body: SmRepr) {
        self.txq.ctrl.push_back(TxDesc::SmReply(SmReply {
            dst: (p.src_mac, p.src_ip, p.src_port),
            dest_session,
            token: p.rpc.token,
            body,
        }));
    }

    fn server_rx_disconnect(&mut self, now: Instant, p: &Parsed<'_>, req: &SmRepr) {
        let num = p.rpc.dest_session;
        let status = match self.table.by_num(num) {
            Some(Session::Server(s)) if s.common.token != p.rpc.token => {
                self.out.stats.drops.bad_token += 1;
                if !self.may_answer_stranger(now, p) {
                    return;
                }
                SmStatus::UnknownSession
            }
            Some(Session::Server(s)) => {
                self.out.stats.rx_accepted += 1;
                let id = s.common.id();
                self.step(
                    now,
                    id,
                    SessionInput::PeerDisconnect,
                    RpcError::SessionClosed,
                );
                SmStatus::Ok
            }
            _ => {
                // Already freed (our DisconnectResp was lost) or never ours.
                self.out.stats.drops.unknown_session += 1;
                if !self.may_answer_stranger(now, p) {
                    return;
                }
                SmStatus::UnknownSession
            }
        };
        let body = SmRepr {
            sm_type: SmType::DisconnectResp,
            status,
            client_session: req.client_session,
            server_session: num,
            credits: 0,
            mtu: self.cfg.mtu as u16,
            req_window: self.cfg.req_window as u16,
            server_token: 0,
        };
        self.reply_sm(p, req.client_session, body);
    }

    /// ConnectResp or DisconnectResp for one of our client sessions.
    fn client_rx_sm_resp(&mut self, now: Instant, p: &Parsed<'_>, resp: &SmRepr) {
        let d = &mut self.out.stats.drops;
        let c = match self.table.by_num_mut(p.rpc.dest_session) {
            Some(Session::Client(c)) => c,
            _ => {
                d.unknown_session += 1;
                return;
            }
        };
        if c.common.token != p.rpc.token {
            d.bad_token += 1;
            self.gate.wrong_tokens.note(now, p.src_ip, p.src_port);
            return;
        }
        let id = c.common.id();
        let connect = resp.sm_type == SmType::ConnectResp;
        let wanted = if connect {
            SessionState::Connecting
        } else {
            SessionState::Disconnecting
        };
        if c.common.state != wanted {
            d.duplicate += 1;
            d.dup_sm += 1;
            return;
        }
        if !connect {
            self.out.stats.rx_accepted += 1;
            // Any status ends the handshake: the server has no session.
            self.step(
                now,
                id,
                SessionInput::DisconnectDone,
                RpcError::SessionClosed,
            );
            return;
        }
        if connect && resp.status == SmStatus::Retry {
            self.rx_retry(now, id, resp.server_token);
            return;
        }
        if resp.status != SmStatus::Ok {
            self.out.stats.rx_accepted += 1;
            let reason = RpcError::Refused(resp.status);
            self.step(now, id, SessionInput::ConnectRefused, reason);
            return;
        }
        if resp.server_session == SESSION_NONE {
            d.malformed += 1;
            return;
        }
        if resp.credits == 0 || resp.server_token == 0 {
            d.malformed += 1;
            return;
        }
        self.out.stats.rx_accepted += 1;
        c.common.remote = resp.server_session;
        // From here on the session's packets carry the server's token.
        c.common.token = resp.server_token;
        // The server's grant: fewer credits than asked lowers the session's
        // (and, lossless, gives back the ring entries they reserved).
        let surplus = c.credits_total.saturating_sub(resp.credits);
        if surplus > 0 {
            c.credits_total -= surplus;
            c.credits = c.credits.saturating_sub(surplus);
            let back = c
                .common
                .ring_reserved
                .saturating_sub(self.cfg.ring_reservation(resp.credits));
            c.common.ring_reserved -= back;
            self.ledger.unreserve_ring(back);
            self.out.stats.credits_lowered += 1;
        }
        if c.common.peer.mac.is_none() && p.src_mac.is_unicast() {
            c.common.peer.mac = Some(p.src_mac);
        }
        // The handshake's round trip seeds the RTT estimate (the last
        // ConnectReq went out one retry period before the next retry).
        let sent = c
            .common
            .sm
            .next_retry
            .0
            .saturating_sub(self.cfg.connect_retry.0);
        c.sample_rtt(now.saturating_since(Instant(sent)));
        let peer = c.common.peer;
        let template = self.template_to(peer.mac.unwrap_or(MacAddr::BROADCAST), peer);
        if let Some(c) = self.table.client_mut(id) {
            c.common.template = template;
            if let Some(mac) = peer.mac {
                self.pause.learn_mac(c.common.link, mac);
            }
        }
        self.step(now, id, SessionInput::ConnectOk, RpcError::SessionClosed);
    }

    /// Pause mode: the session's peer link; none in other modes.
    fn attach_link(&mut self, peer: PeerAddr) -> u32 {
        match self.cfg.mode {
            FlowMode::Pause => self.pause.attach(peer),
            _ => NO_LINK,
        }
    }

    /// Headers towards `peer`, ECN-capable in every mode: a marking switch
    /// (or the injected marker) then marks instead of dropping, and the
    /// marks count congestion even where no sender reacts to them (only
    /// DCQCN does).
    fn template_to(&self, dst_mac: MacAddr, peer: PeerAddr) -> HeaderTemplate {
        let l = self.cfg.local;
        HeaderTemplate::new((l.mac, l.ip, l.port), (dst_mac, peer.ip, peer.port)).with_ect()
    }
}
