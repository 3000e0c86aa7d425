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

use super::client::ClientSession;
use super::server::ServerSession;
use super::session::{Next, Role, Session, SessionInput, SmTimer};
use super::tx::{SmReply, TxDesc};
use super::{Endpoint, Event, PeerAddr, RpcError, SessionId, SessionState};
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
        self.reserve_ring(need)?;
        let Some(num) = self.alloc_number() else {
            self.ring_reserved -= need;
            return Err(RpcError::TooManySessions);
        };
        let token = self.rng.next_u32();
        let dst_mac = peer.mac.unwrap_or(MacAddr::BROADCAST);
        let sess = Session {
            gen: self.bump_gen(),
            state: SessionState::Connecting,
            peer,
            remote: SESSION_NONE,
            token,
            ring_reserved: need,
            template: self.template_to(dst_mac, peer),
            sm: SmTimer {
                next_retry: now + self.cfg.connect_retry,
                deadline: now + self.cfg.connect_timeout,
            },
            role: Role::Client(ClientSession::new(self.cfg.req_window, credits)),
        };
        let id = sess.id(num);
        self.sessions[num as usize] = Some(sess);
        self.sm_pending += 1;
        self.tx_ctrl
            .push_back(TxDesc::ConnectReq { num, gen: id.gen });
        Ok(id)
    }

    /// Closes client session `s`. Connected: outstanding requests fail with
    /// `SessionClosed`, the DisconnectReq handshake runs and
    /// `Event::Disconnected` follows. Reset: freed at once (with the event).
    pub fn disconnect(&mut self, now: Instant, s: SessionId) -> Result<(), RpcError> {
        let (retry, timeout) = (self.cfg.connect_retry, self.cfg.connect_timeout);
        let sess = self.session_mut(s).ok_or(RpcError::UnknownSession)?;
        if sess.client().is_none() {
            return Err(RpcError::WrongRole);
        }
        let state = sess.state;
        match sess.apply(SessionInput::Disconnect) {
            Err(_) => Err(RpcError::InvalidState { state }),
            Ok(Next::Freed) => {
                self.free_session(s.num);
                self.events.push_back(Event::Disconnected(s));
                Ok(())
            }
            Ok(Next::To(_)) => {
                sess.sm = SmTimer {
                    next_retry: now + retry,
                    deadline: now + timeout,
                };
                self.sm_pending += 1;
                self.fail_all_requests(s, RpcError::SessionClosed);
                self.tx_ctrl.push_back(TxDesc::DisconnectReq {
                    num: s.num,
                    gen: s.gen,
                });
                Ok(())
            }
        }
    }

    /// A SessionMgmt packet.
    pub(crate) fn handle_sm(&mut self, p: &Parsed<'_>) {
        let Ok(body) = SmBody::new_checked(p.payload).and_then(|b| SmRepr::parse(&b)) else {
            self.stats.drops.malformed += 1;
            return;
        };
        match body.sm_type {
            SmType::ConnectReq => self.server_rx_connect(p, &body),
            SmType::DisconnectReq => self.server_rx_disconnect(p, &body),
            SmType::ConnectResp | SmType::DisconnectResp => self.client_rx_sm_resp(p, &body),
            SmType::Unknown(_) => self.stats.drops.malformed += 1,
        }
    }

    fn server_rx_connect(&mut self, p: &Parsed<'_>, req: &SmRepr) {
        let key = (p.src_ip, p.src_port, req.client_session);
        let token = p.rpc.token;
        if let Some(&(num, old_token)) = self.accepted.get(&key) {
            if old_token == token {
                self.stats.drops.duplicate += 1;
                self.stats.drops.dup_sm += 1;
                self.reply_connect(p, req, SmStatus::Ok, num);
                return;
            }
            // Same client session number, new token: the client restarted.
            if let Some(id) = self.sessions[num as usize].as_ref().map(|x| x.id(num)) {
                self.free_session(num);
                self.events.push_back(Event::PeerSessionClosed(id));
            }
        }
        let status = if req.mtu as usize != self.cfg.mtu {
            SmStatus::BadMtu
        } else if req.credits == 0 {
            SmStatus::BadCredits
        } else if self
            .reserve_ring(self.cfg.ring_reservation(req.credits))
            .is_err()
        {
            SmStatus::NoRingSpace
        } else {
            SmStatus::Ok
        };
        let num = match status {
            SmStatus::Ok => self.alloc_number(),
            _ => None,
        };
        let Some(num) = num else {
            let status = if status == SmStatus::Ok {
                self.ring_reserved -= self.cfg.ring_reservation(req.credits);
                SmStatus::TooManySessions
            } else {
                status
            };
            self.stats.connects_refused += 1;
            self.reply_connect(p, req, status, SESSION_NONE);
            return;
        };
        let peer = PeerAddr {
            mac: Some(p.src_mac),
            ip: p.src_ip,
            port: p.src_port,
        };
        let sess = Session {
            gen: self.bump_gen(),
            state: SessionState::Connected,
            peer,
            remote: req.client_session,
            token,
            ring_reserved: self.cfg.ring_reservation(req.credits),
            template: self.template_to(p.src_mac, peer),
            sm: SmTimer {
                next_retry: Instant::ZERO,
                deadline: Instant::ZERO,
            },
            role: Role::Server(ServerSession::new(self.cfg.req_window)),
        };
        let id = sess.id(num);
        self.sessions[num as usize] = Some(sess);
        self.accepted.insert(key, (num, token));
        self.stats.sessions_accepted += 1;
        self.events.push_back(Event::PeerSessionAccepted(id));
        self.reply_connect(p, req, SmStatus::Ok, num);
    }

    fn reply_connect(&mut self, p: &Parsed<'_>, req: &SmRepr, status: SmStatus, num: u16) {
        let body = SmRepr {
            sm_type: SmType::ConnectResp,
            status,
            client_session: req.client_session,
            server_session: num,
            credits: req.credits,
            mtu: self.cfg.mtu as u16,
        };
        self.reply_sm(p, req.client_session, body);
    }

    fn reply_sm(&mut self, p: &Parsed<'_>, dest_session: u16, body: SmRepr) {
        self.tx_ctrl.push_back(TxDesc::SmReply(SmReply {
            dst: (p.src_mac, p.src_ip, p.src_port),
            dest_session,
            token: p.rpc.token,
            body,
        }));
    }

    fn server_rx_disconnect(&mut self, p: &Parsed<'_>, req: &SmRepr) {
        let num = p.rpc.dest_session;
        let d = &mut self.stats.drops;
        let status = match self.sessions.get_mut(num as usize) {
            Some(Some(s)) if matches!(s.role, Role::Server(_)) => {
                if s.token != p.rpc.token {
                    d.bad_token += 1;
                    SmStatus::UnknownSession
                } else {
                    let id = s.id(num);
                    match s.apply(SessionInput::PeerDisconnect) {
                        Ok(_) => {
                            self.free_session(num);
                            self.events.push_back(Event::PeerSessionClosed(id));
                            SmStatus::Ok
                        }
                        Err(_) => SmStatus::UnknownSession,
                    }
                }
            }
            _ => {
                // Already freed (our DisconnectResp was lost) or never ours.
                d.unknown_session += 1;
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
        };
        self.reply_sm(p, req.client_session, body);
    }

    /// ConnectResp or DisconnectResp for one of our client sessions.
    fn client_rx_sm_resp(&mut self, p: &Parsed<'_>, resp: &SmRepr) {
        let num = p.rpc.dest_session;
        let d = &mut self.stats.drops;
        let Some(Some(sess)) = self.sessions.get_mut(num as usize) else {
            d.unknown_session += 1;
            return;
        };
        if sess.client().is_none() {
            d.unknown_session += 1;
            return;
        }
        if sess.token != p.rpc.token {
            d.bad_token += 1;
            return;
        }
        let id = sess.id(num);
        let connect = resp.sm_type == SmType::ConnectResp;
        let wanted = if connect {
            SessionState::Connecting
        } else {
            SessionState::Disconnecting
        };
        if sess.state != wanted {
            d.duplicate += 1;
            d.dup_sm += 1;
            return;
        }
        if !connect {
            // Any status ends the handshake: the server has no session.
            self.sm_pending -= 1;
            let _ = sess.apply(SessionInput::DisconnectDone);
            self.free_session(num);
            self.events.push_back(Event::Disconnected(id));
            return;
        }
        if resp.status != SmStatus::Ok {
            self.connect_failed(id, RpcError::Refused(resp.status));
            return;
        }
        if resp.server_session == SESSION_NONE {
            d.malformed += 1;
            return;
        }
        self.sm_pending -= 1;
        let _ = sess.apply(SessionInput::ConnectOk);
        sess.remote = resp.server_session;
        if sess.peer.mac.is_none() && p.src_mac.is_unicast() {
            sess.peer.mac = Some(p.src_mac);
        }
        let peer = sess.peer;
        let template = self.template_to(peer.mac.unwrap_or(MacAddr::BROADCAST), peer);
        if let Some(Some(sess)) = self.sessions.get_mut(num as usize) {
            sess.template = template;
        }
        self.stats.sessions_connected += 1;
        self.events.push_back(Event::Connected(id));
        self.schedule_client(num);
    }

    /// Connecting session `id` failed: fail its requests, free it, report.
    pub(crate) fn connect_failed(&mut self, id: SessionId, reason: RpcError) {
        self.sm_pending -= 1;
        self.fail_all_requests(id, RpcError::SessionClosed);
        self.free_session(id.num);
        self.events.push_back(Event::ConnectFailed {
            session: id,
            reason,
        });
    }

    /// Removes session `num`: returns its buffers to the pool, its ring
    /// reservation to the ring and its number to the free list. Requests
    /// must already be failed or completed.
    pub(crate) fn free_session(&mut self, num: u16) {
        let Some(mut sess) = self.sessions.get_mut(num as usize).and_then(Option::take) else {
            return;
        };
        self.ring_reserved -= sess.ring_reserved;
        match &mut sess.role {
            Role::Server(srv) => {
                for m in srv.drain_buffers() {
                    self.pool.free(m);
                }
                let key = (sess.peer.ip, sess.peer.port, sess.remote);
                if self.accepted.get(&key).is_some_and(|&(n, _)| n == num) {
                    self.accepted.remove(&key);
                }
            }
            Role::Client(c) => {
                debug_assert_eq!(c.active, 0, "free_session with requests in slots");
            }
        }
        self.free_nums.push_back(num);
    }

    /// Reserves `need` receive-ring entries or says how many are free.
    fn reserve_ring(&mut self, need: usize) -> Result<(), RpcError> {
        let available = self.cfg.rx_ring_entries - self.ring_reserved;
        if need > available {
            return Err(RpcError::NoRingSpace {
                needed: need,
                available,
            });
        }
        self.ring_reserved += need;
        Ok(())
    }

    /// A free session number, growing the table up to `max_sessions`.
    fn alloc_number(&mut self) -> Option<u16> {
        if let Some(n) = self.free_nums.pop_front() {
            return Some(n);
        }
        if self.sessions.len() < self.cfg.max_sessions {
            self.sessions.push(None);
            return Some((self.sessions.len() - 1) as u16);
        }
        None
    }

    fn bump_gen(&mut self) -> u32 {
        let g = self.next_gen;
        self.next_gen = self.next_gen.wrapping_add(1);
        g
    }

    fn template_to(&self, dst_mac: MacAddr, peer: PeerAddr) -> HeaderTemplate {
        let l = self.cfg.local;
        HeaderTemplate::new((l.mac, l.ip, l.port), (dst_mac, peer.ip, peer.port))
    }
}
