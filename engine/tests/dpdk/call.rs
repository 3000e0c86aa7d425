//! The blocking call (`Rpc::call_with`) on a real run loop: one worker on
//! the net_ring loopback port, connected to itself (its frames come back
//! to it), is both client and server. Each outcome a caller can meet is
//! produced on purpose: a response, a timeout whose late response must not
//! leak into the next call, a server's error answer, a call from inside a
//! handler, a session reset by a server that never answers, a connect to
//! an address nobody holds, and a request on a freed session. EAL starts
//! once per process: the test runs in a process of its own (`main.rs`).

use engine::proto::{ErrorCode, PeerAddr, ReqHandle, RpcError, SessionId};
use engine::runtime::{CallError, Device, Handler, HandlerTable, Nexus, Rpc};
use engine::time::Duration;

const ECHO: u8 = 1; // answers what was sent, after any parked request
const SLOW: u8 = 2; // parks its handle: answered by the next ECHO
const REENTER: u8 = 3; // tries a blocking call from inside the loop
const SILENT: u8 = 4; // never answers
const UNHANDLED: u8 = 9;

#[derive(Default)]
struct App {
    session: Option<SessionId>,
    parked: Option<ReqHandle>,
    inner: Option<Result<Vec<u8>, CallError>>,
}

fn echo(rpc: &mut Rpc<App>, app: &mut App, h: ReqHandle, req: &[u8]) {
    if let Some(p) = app.parked.take() {
        rpc.respond_bytes(p, b"late").unwrap();
    }
    rpc.respond_bytes(h, req).unwrap();
}

fn slow(_rpc: &mut Rpc<App>, app: &mut App, h: ReqHandle, _req: &[u8]) {
    app.parked = Some(h);
}

fn reenter(rpc: &mut Rpc<App>, app: &mut App, h: ReqHandle, _req: &[u8]) {
    let s = app.session.unwrap();
    let r = rpc.call_with(app, s, ECHO, b"inner", Duration::from_millis(10));
    app.inner = Some(r.map(|m| m.to_vec()));
    rpc.respond_bytes(h, b"outer").unwrap();
}

fn silent(_rpc: &mut Rpc<App>, _app: &mut App, _h: ReqHandle, _req: &[u8]) {}

#[test]
fn every_outcome_of_a_blocking_call() {
    if !crate::own_process(module_path!(), "every_outcome_of_a_blocking_call") {
        return;
    }
    let mut handlers = HandlerTable::new();
    handlers.register(ECHO, Handler::Inline(echo));
    handlers.register(SLOW, Handler::Inline(slow));
    handlers.register(REENTER, Handler::Inline(reenter));
    handlers.register(SILENT, Handler::Inline(silent));
    let nexus = Nexus::builder()
        .device(Device::ring_loopback())
        .cores(&[0])
        .log_level(1)
        .build(handlers)
        .expect("EAL, pool and the loopback port");
    // Settings of our own (Rpc::new's purpose): a connect to nobody gives
    // up in 300 ms instead of 3 s.
    let mut cfg = nexus.endpoint_config(0);
    cfg.connect_timeout = Duration::from_millis(300);
    let mut rpc = Rpc::new(&nexus, 0, cfg).expect("worker 0");
    let mut app = App::default();
    let long = Duration::from_secs(5);

    let s = rpc.connect(nexus.worker_addr(0)).unwrap();
    app.session = Some(s);
    let r = rpc.call_with(&mut app, s, ECHO, b"a", long).unwrap();
    assert_eq!(&r[..], b"a");

    // A timeout; the late answer to it arrives during the next call and
    // is dropped, not taken for that call's response.
    let t = Duration::from_millis(20);
    let r = rpc.call_with(&mut app, s, SLOW, b"x", t);
    assert_eq!(r.unwrap_err(), CallError::Timeout(t.into()));
    assert!(app.parked.is_some(), "the server holds the slow request");
    let r = rpc.call_with(&mut app, s, ECHO, b"b", long).unwrap();
    assert_eq!(&r[..], b"b");
    assert!(
        rpc.poll_completion().is_none(),
        "nothing leaks to the poll queue"
    );

    // The server's error answer.
    let r = rpc.call_with(&mut app, s, UNHANDLED, b"", long);
    assert_eq!(
        r.unwrap_err(),
        CallError::Failed(RpcError::Remote(ErrorCode::NoHandler))
    );

    // From inside the loop: refused at once, and the outer call completes.
    let r = rpc.call_with(&mut app, s, REENTER, b"", long).unwrap();
    assert_eq!(&r[..], b"outer");
    assert_eq!(app.inner, Some(Err(CallError::InsideLoop)));

    // A server that never answers: the session resets after
    // session_timeout (1 s), and the call says why.
    let r = rpc.call_with(&mut app, s, SILENT, b"", long);
    assert_eq!(
        r.unwrap_err(),
        CallError::SessionReset(RpcError::PeerTimeout)
    );

    // Nobody at this address: the connect fails, and the call with it.
    let nobody: PeerAddr = "10.9.9.9:1".parse().unwrap();
    let s2 = rpc.connect(nobody).unwrap();
    let r = rpc.call_with(&mut app, s2, ECHO, b"", long);
    assert_eq!(
        r.unwrap_err(),
        CallError::ConnectFailed(RpcError::ConnectTimeout)
    );
    // Its session is gone: the next request is not even sent.
    let r = rpc.call_with(&mut app, s2, ECHO, b"", long);
    assert_eq!(r.unwrap_err(), CallError::NotSent(RpcError::UnknownSession));
}
