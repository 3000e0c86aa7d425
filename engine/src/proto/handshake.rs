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
//! without creating anything. A duplicate ConnectReq (same client address,
//! client session and token) is answered with the same response, never
//! allocating twice; one with a new token replaces the old session (the
//! client restarted). The client learns the server's session number and, if
//! needed, its MAC from the ConnectResp.
//!
//! Disconnect: the client fails its outstanding requests and sends
//! DisconnectReq until a DisconnectResp arrives or `connect_timeout` passes;
//! either way the session is then freed. The server frees its session and
//! answers; a DisconnectReq for a session it no longer has is answered with
//! status UnknownSession so the client stops retrying.

use super::cc::RateControl;
use super::client::ClientSession;
use super::config::{FlowMode, PeerAddr};
use super::endpoint::Endpoint;
use super::error::RpcError;
use super::event::Event;
use super::ids::SessionId;
use super::links::NO_LINK;
use super::server::ServerSession;
use super::session::SessionCommon;
use super::state::{Effect, SessionInput, SessionState};
use super::table::Session;
use super::txq::{SmReply, TxDesc};
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
            token: self.rng.next_u32(),
            ring_reserved: need,
            link: self.attach_link(peer),
            ..SessionCommon::new(id, SessionState::Connecting, peer, template, now)
        };
        let window = self.cfg.req_window;
        let c = &self.cfg;
        let cc = RateControl::new(c.cc, c.link_bps, now, c.base_rtt, c.dcqcn);
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
            self.stats.drops.malformed += 1;
            return;
        };
        match body.sm_type {
            SmType::ConnectReq => self.server_rx_connect(now, p, &body),
            SmType::DisconnectReq => self.server_rx_disconnect(now, p, &body),
            SmType::ConnectResp | SmType::DisconnectResp => self.client_rx_sm_resp(now, p, &body),
            SmType::KeepAlive => self.server_rx_keepalive(now, p),
            SmType::Unknown(_) => self.stats.drops.malformed += 1,
        }
    }

    fn server_rx_connect(&mut self, now: Instant, p: &Parsed<'_>, req: &SmRepr) {
        let key = (p.src_ip, p.src_port, req.client_session);
        let token = p.rpc.token;
        if let Some(&(old, old_token)) = self.accepted.get(&key) {
            if old_token == token {
                self.stats.drops.duplicate += 1;
                self.stats.drops.dup_sm += 1;
                self.reply_connect(p, req, SmStatus::Ok, old.num);
                return;
            }
            // Same client session number, new token: the client restarted.
            self.step(
                now,
                old,
                SessionInput::PeerDisconnect,
                RpcError::SessionClosed,
            );
        }
        self.stats.rx_accepted += 1;
        match self.accept(now, p, req) {
            Ok(id) => {
                self.accepted.insert(key, (id, token));
                self.stats.sessions_accepted += 1;
                self.events.push_back(Event::PeerSessionAccepted(id));
                self.reply_connect(p, req, SmStatus::Ok, id.num);
            }
            Err(status) => {
                self.stats.connects_refused += 1;
                self.reply_connect(p, req, status, SESSION_NONE);
            }
        }
    }

    /// Creates the server session a valid ConnectReq asks for, born
    /// Connected, or says why not.
    fn accept(
        &mut self,
        now: Instant,
        p: &Parsed<'_>,
        req: &SmRepr,
    ) -> Result<SessionId, SmStatus> {
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
        let need = self.cfg.ring_reservation(req.credits);
        let id = self.reserve_session(need).map_err(|e| match e {
            RpcError::TooManySessions => SmStatus::TooManySessions,
            _ => SmStatus::NoRingSpace,
        })?;
        let peer = PeerAddr {
            mac: Some(p.src_mac),
            ip: p.src_ip,
            port: p.src_port,
        };
        let template = self.template_to(p.src_mac, peer);
        let common = SessionCommon {
            remote: req.client_session,
            token: p.rpc.token,
            ring_reserved: need,
            link: self.attach_link(peer),
            ..SessionCommon::new(id, SessionState::Connected, peer, template, now)
        };
        let acct = self.ledger.attach(p.src_ip);
        let window = self.cfg.req_window;
        self.table
            .insert(Session::Server(ServerSession::new(common, window, acct)));
        self.rearm(now, id);
        Ok(id)
    }

    /// A client's keepalive: its session stays (nothing is answered).
    fn server_rx_keepalive(&mut self, now: Instant, p: &Parsed<'_>) {
        let d = &mut self.stats.drops;
        match self.table.by_num_mut(p.rpc.dest_session) {
            Some(Session::Server(s)) if s.common.token == p.rpc.token => {
                s.common.heard_at(now);
                self.stats.rx_accepted += 1;
            }
            Some(Session::Server(_)) => d.bad_token += 1,
            _ => d.unknown_session += 1,
        }
    }

    fn reply_connect(&mut self, p: &Parsed<'_>, req: &SmRepr, status: SmStatus, num: u16) {
        let body = SmRepr {
            sm_type: SmType::ConnectResp,
            status,
            client_session: req.client_session,
            server_session: num,
            credits: req.credits,
            mtu: self.cfg.mtu as u16,
            req_window: self.cfg.req_window as u16,
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
                self.stats.drops.bad_token += 1;
                SmStatus::UnknownSession
            }
            Some(Session::Server(s)) => {
                self.stats.rx_accepted += 1;
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
                self.stats.drops.unknown_session += 1;
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
        };
        self.reply_sm(p, req.client_session, body);
    }

    /// ConnectResp or DisconnectResp for one of our client sessions.
    fn client_rx_sm_resp(&mut self, now: Instant, p: &Parsed<'_>, resp: &SmRepr) {
        let d = &mut self.stats.drops;
        let c = match self.table.by_num_mut(p.rpc.dest_session) {
            Some(Session::Client(c)) => c,
            _ => {
                d.unknown_session += 1;
                return;
            }
        };
        if c.common.token != p.rpc.token {
            d.bad_token += 1;
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
            self.stats.rx_accepted += 1;
            // Any status ends the handshake: the server has no session.
            self.step(
                now,
                id,
                SessionInput::DisconnectDone,
                RpcError::SessionClosed,
            );
            return;
        }
        if resp.status != SmStatus::Ok {
            self.stats.rx_accepted += 1;
            let reason = RpcError::Refused(resp.status);
            self.step(now, id, SessionInput::ConnectRefused, reason);
            return;
        }
        if resp.server_session == SESSION_NONE {
            d.malformed += 1;
            return;
        }
        self.stats.rx_accepted += 1;
        c.common.remote = resp.server_session;
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
            FlowMode::Pause(_) => self.pause.attach(peer),
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
