//! Binds the declared transition table to the engine: every valid
//! (state, input) row of `engine::proto::transition` is driven through the
//! public `Endpoint` API, and what the endpoint observably did (the next
//! state, the events in order, failed requests, the ring reservation, the
//! handshake timer, the frames it queued) is compared with the row's
//! effects. A row added to the table without a scenario here fails the
//! coverage check; an engine path that skips or adds an effect fails the
//! comparison.

use crate::proto_common::{addr, cfg};
use engine::proto::{
    transition, Effect, Endpoint, EndpointConfig, Event, FailCause, Next, PeerAddr, RpcError,
    SessionId, SessionInput, SessionState,
};
use engine::time::{Duration, Instant};
use engine::wire::{parse_frame, PktType, SmBody, SmRepr, SmType};
use std::collections::BTreeSet;

/// Two endpoints wired by hand, so each input can be applied as one step.
struct Net {
    now: Instant,
    server: Endpoint,
    client: Endpoint,
    /// Frames `observe` took from the observed endpoint, for passing on.
    taken: Vec<Vec<u8>>,
}

/// What one endpoint observably did during one step.
#[derive(Debug, PartialEq, Eq)]
struct Observed {
    state: Option<SessionState>,
    events: Vec<String>,
    ring_delta: isize,
    handshake_delta: isize,
    sent_request: bool,
    sent_disconnect_req: bool,
}

const CREDITS: u16 = 8;

fn config(i: u8) -> EndpointConfig {
    EndpointConfig {
        session_credits: CREDITS,
        ..cfg(i)
    }
}

impl Net {
    fn new(server: EndpointConfig) -> Net {
        Net {
            now: Instant::ZERO,
            server: Endpoint::new(server).unwrap(),
            client: Endpoint::new(config(2)).unwrap(),
            taken: Vec::new(),
        }
    }

    fn frames(ep: &mut Endpoint, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; ep.min_tx_buf_len()];
        while let Some(n) = ep.poll_transmit(now, &mut buf) {
            out.push(buf[..n].to_vec());
        }
        out
    }

    /// Moves every queued frame client -> server (or back); requests
    /// delivered to the server are left unanswered.
    fn pass(&mut self, to_server: bool) {
        let now = self.now;
        let (from, to) = if to_server {
            (&mut self.client, &mut self.server)
        } else {
            (&mut self.server, &mut self.client)
        };
        for f in Net::frames(from, now) {
            let _ = to.handle_frame(now, &f);
        }
    }

    fn connect(&mut self) -> SessionId {
        let peer = PeerAddr::from(addr(1));
        self.client.connect(self.now, peer).unwrap()
    }

    fn enqueue(&mut self, s: SessionId) {
        let m = self.client.alloc_msg(32);
        self.client
            .enqueue_request(self.now, s, 1, m, 7)
            .map_err(|(e, _)| e)
            .unwrap();
    }

    fn drain_events(ep: &mut Endpoint) {
        while ep.poll_event().is_some() {}
    }

    /// Applies `step` to `ep` (client or server) and reports what it did to
    /// session `s`.
    fn observe(
        &mut self,
        server_side: bool,
        s: SessionId,
        step: impl FnOnce(&mut Net),
    ) -> Observed {
        fn ep(n: &mut Net, server_side: bool) -> &mut Endpoint {
            if server_side {
                &mut n.server
            } else {
                &mut n.client
            }
        }
        Net::drain_events(ep(self, server_side));
        let (ring0, hs0) = (
            ep(self, server_side).ring_usage().0,
            ep(self, server_side).handshakes_pending(),
        );
        step(self);
        let now = self.now;
        let e = ep(self, server_side);
        let mut events = Vec::new();
        while let Some(ev) = e.poll_event() {
            events.push(event_name(&ev, s));
        }
        let hs = e.handshakes_pending();
        let counts = e.sessions_by_state();
        assert_eq!(
            hs,
            counts.connecting + counts.disconnecting,
            "handshake count"
        );
        assert_eq!(e.stats().invalid_transitions, 0);
        let mut sent_request = false;
        let mut sent_disconnect_req = false;
        let taken = Net::frames(e, now);
        for f in &taken {
            let p = parse_frame(f).unwrap();
            match p.rpc.pkt_type {
                PktType::Request => sent_request = true,
                PktType::SessionMgmt => {
                    let body = SmRepr::parse(&SmBody::new_checked(p.payload).unwrap()).unwrap();
                    sent_disconnect_req |= body.sm_type == SmType::DisconnectReq;
                }
                _ => {}
            }
        }
        let state = e.session_state(s);
        let ring_delta = e.ring_usage().0 as isize - ring0 as isize;
        self.taken = taken;
        Observed {
            state,
            events,
            ring_delta,
            handshake_delta: hs as isize - hs0 as isize,
            sent_request,
            sent_disconnect_req,
        }
    }
}

fn event_name(ev: &Event, s: SessionId) -> String {
    let (sess, name) = match *ev {
        Event::Connected(x) => (x, "Emit(Connected)".to_string()),
        Event::ConnectFailed { session, .. } => (session, "Emit(ConnectFailed)".into()),
        Event::Disconnected(x) => (x, "Emit(Disconnected)".into()),
        Event::SessionReset { session, .. } => (session, "Emit(SessionReset)".into()),
        Event::PeerSessionClosed(x) => (x, "Emit(PeerSessionClosed)".into()),
        Event::PeerSessionReclaimed(x) => (x, "Emit(PeerSessionReclaimed)".into()),
        Event::PeerSessionAccepted(x) => (x, "PeerSessionAccepted".into()),
        Event::RequestFailed { session, error, .. } => {
            let cause = match error {
                RpcError::SessionClosed => "Closed",
                RpcError::SessionReset => "Reset",
                _ => "other",
            };
            (session, format!("FailRequests({cause})"))
        }
        // Not a session's event: no transition emits it.
        Event::WrongTokens(r) => return format!("WrongTokens({}:{})", r.ip, r.port),
        Event::CreditViolator(r) => return format!("CreditViolator({})", r.ip),
    };
    // Server-side ids differ from the client's; only the client's are checked.
    if sess.number() == s.number() {
        name
    } else {
        format!("{name} on another session")
    }
}

/// What the table says one endpoint does, given how many requests the
/// session holds and how much ring it has reserved before the step.
fn expected(state: SessionState, input: SessionInput, pending: usize, held: usize) -> Observed {
    let step = transition(state, input).unwrap();
    let mut events = Vec::new();
    let (mut ring_delta, mut handshake_delta) = (0isize, 0isize);
    for e in step.effects {
        match *e {
            Effect::Emit(k) => events.push(format!("Emit({k:?})")),
            Effect::FailRequests(c) => {
                let c = match c {
                    FailCause::Closed => "Closed",
                    FailCause::Reset => "Reset",
                };
                events.extend((0..pending).map(|_| format!("FailRequests({c})")));
            }
            Effect::ReleaseRing | Effect::Free => ring_delta = -(held as isize),
            Effect::StartHandshake => handshake_delta += 1,
            Effect::EndHandshake => handshake_delta -= 1,
            Effect::SendDisconnectReq | Effect::Schedule => {}
        }
    }
    Observed {
        state: match step.next {
            Next::To(s) => Some(s),
            Next::Freed => None,
        },
        events,
        ring_delta,
        handshake_delta,
        sent_request: step.effects.contains(&Effect::Schedule) && pending > 0,
        sent_disconnect_req: step.effects.contains(&Effect::SendDisconnectReq),
    }
}

/// A connected pair with one request sent and unanswered: the client's
/// session and the server's.
fn connected_with_request() -> (Net, SessionId, SessionId) {
    let mut n = Net::new(config(1));
    let s = n.connect();
    n.pass(true);
    let mut accepted = None;
    while let Some(ev) = n.server.poll_event() {
        if let Event::PeerSessionAccepted(x) = ev {
            accepted = Some(x);
        }
    }
    n.pass(false);
    assert_eq!(n.client.session_state(s), Some(SessionState::Connected));
    n.enqueue(s);
    n.pass(true);
    (n, s, accepted.expect("server accepted no session"))
}

#[test]
fn every_transition_does_what_the_table_says() {
    use SessionInput as I;
    use SessionState as S;
    let c = CREDITS as usize + 1; // ring held per session: credits + the probe's entry
    let mut covered = BTreeSet::new();
    let mut check = |state: S, input: I, pending: usize, held: usize, got: Observed| {
        assert_eq!(
            got,
            expected(state, input, pending, held),
            "{state:?} + {input:?}"
        );
        covered.insert(format!("{state:?}+{input:?}"));
    };

    // Connecting + ConnectOk: a request queued while connecting goes out.
    let mut n = Net::new(config(1));
    let s = n.connect();
    n.enqueue(s);
    n.pass(true);
    let got = n.observe(false, s, |n| n.pass(false));
    check(S::Connecting, I::ConnectOk, 1, c, got);

    // Connecting + ConnectRefused: the server's MTU differs.
    let mut n = Net::new(EndpointConfig {
        mtu: 1400,
        ..config(1)
    });
    let s = n.connect();
    n.enqueue(s);
    n.pass(true);
    let got = n.observe(false, s, |n| n.pass(false));
    check(S::Connecting, I::ConnectRefused, 1, c, got);

    // Connecting + ConnectTimeout: nobody answers.
    let mut n = Net::new(config(1));
    let s = n.connect();
    n.enqueue(s);
    let _ = Net::frames(&mut n.client, n.now);
    let got = n.observe(false, s, |n| {
        n.now += n.client.config().connect_timeout;
        n.client.handle_timeout(n.now);
    });
    check(S::Connecting, I::ConnectTimeout, 1, c, got);

    // Connected + Disconnect, then Disconnecting + DisconnectDone on the
    // client and Connected + PeerDisconnect on the server.
    let (mut n, s, ss) = connected_with_request();
    let got = n.observe(false, s, |n| n.client.disconnect(n.now, s).unwrap());
    check(S::Connected, I::Disconnect, 1, c, got);
    // `observe` took the DisconnectReq; the retry timer queues it again.
    n.now += n.client.config().connect_retry;
    n.client.handle_timeout(n.now);
    let got = n.observe(true, ss, |n| n.pass(true));
    check(S::Connected, I::PeerDisconnect, 0, c, got);
    // The server's DisconnectResp, taken while observing the server.
    let got = n.observe(false, s, |n| {
        for f in std::mem::take(&mut n.taken) {
            let _ = n.client.handle_frame(n.now, &f);
        }
    });
    check(S::Disconnecting, I::DisconnectDone, 0, c, got);

    // Connected + IdleTimeout on the server: a client that connected and
    // then never sent anything (a half-open handshake) is reclaimed.
    let mut n = Net::new(config(1));
    n.connect();
    n.pass(true);
    let mut ss = None;
    while let Some(ev) = n.server.poll_event() {
        if let Event::PeerSessionAccepted(x) = ev {
            ss = Some(x);
        }
    }
    let ss = ss.expect("not accepted");
    let half_open = n.server.config().half_open_timeout;
    let got = n.observe(true, ss, |n| {
        let t = n.now + half_open;
        while n.now < t + half_open {
            n.now += Duration::from_millis(50);
            n.server.handle_timeout(n.now);
        }
    });
    // A half-open session reserved nothing (its entries are taken at the
    // client's first packet), so it gives nothing back.
    check(S::Connected, I::IdleTimeout, 0, 0, got);
    assert_eq!(n.server.stats().sessions_reclaimed, 1);

    // Connected + Reset: the server goes silent; then Reset + Disconnect.
    let (mut n, s, _) = connected_with_request();
    let scan = n.client.config().scan_interval;
    let mut reset_at = None;
    let timeout = n.client.config().session_timeout + Duration::from_millis(10);
    let deadline = n.now + timeout;
    while n.now < deadline && reset_at.is_none() {
        let next = n.now + scan;
        let before = n.client.session_state(s);
        let got = n.observe(false, s, |n| {
            n.now = next;
            n.client.handle_timeout(n.now);
        });
        if got.state != before {
            reset_at = Some(got);
        }
    }
    check(S::Connected, I::Reset, 1, c, reset_at.expect("no reset"));
    let got = n.observe(false, s, |n| n.client.disconnect(n.now, s).unwrap());
    check(S::Reset, I::Disconnect, 0, 0, got);

    let mut valid = BTreeSet::new();
    for st in S::ALL {
        for i in I::ALL {
            if transition(st, i).is_ok() {
                valid.insert(format!("{st:?}+{i:?}"));
            }
        }
    }
    assert_eq!(covered, valid, "rows without a scenario");
}
