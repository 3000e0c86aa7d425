//! nested: a handler that calls a second server before answering.
//!
//! Three roles (client, front server, back server) on two lcores, over the
//! in-process ring wire, where worker 0's frames reach worker 1 and back:
//! - worker 0 is the client *and* the back server (BACK requests);
//! - worker 1 is the front server: its FRONT handler forwards the request
//!   to the back server (on worker 0) and answers when the back's response
//!   arrives, from the continuation; it never blocks its loop.
//!
//! Run: `cargo run --release -p engine --example nested` (needs 2 CPU cores).

use engine::proto::{ReqHandle, SessionId};
use engine::runtime::{
    Completion, Device, Handler, HandlerTable, Nexus, OnDone, Rpc, RuntimeError, StopHandle,
};
use engine::time::Duration;

const FRONT: u8 = 1;
const BACK: u8 = 2;

/// Per-worker state. The front server keeps the requests it is still
/// answering, by the tag given to the nested request.
#[derive(Default)]
struct App {
    back: Option<SessionId>,
    waiting: Vec<Option<ReqHandle>>,
}

/// Back server (worker 0): answers at once.
fn back(rpc: &mut Rpc<App>, _app: &mut App, h: ReqHandle, req: &[u8]) {
    let resp = [b"back(".as_slice(), req, b")"].concat();
    let _ = rpc.respond_bytes(h, &resp);
}

/// Front server (worker 1): parks the handle, calls the back server.
fn front(rpc: &mut Rpc<App>, app: &mut App, h: ReqHandle, req: &[u8]) {
    let Some(back) = app.back else {
        return; // not connected: the client's request times out
    };
    let tag = app.waiting.len() as u64;
    app.waiting.push(Some(h));
    let on_done = OnDone::Continue {
        cont: back_done,
        tag,
    };
    if rpc.enqueue_request_bytes(back, BACK, req, on_done).is_err() {
        app.waiting.pop(); // dropping the handle leaves the client to time out
    }
}

/// Continuation on the front server: the back answered; answer the client.
fn back_done(rpc: &mut Rpc<App>, app: &mut App, done: Completion<'_>) {
    let Some(h) = app
        .waiting
        .get_mut(done.tag as usize)
        .and_then(Option::take)
    else {
        return;
    };
    let resp = match done.result {
        Ok(b) => [b"front(".as_slice(), b, b")"].concat(),
        Err(e) => format!("front: back failed: {e}").into_bytes(),
    };
    let _ = rpc.respond_bytes(h, &resp);
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One handler table for the process; each worker serves what reaches it.
    let mut handlers = HandlerTable::new();
    handlers.register(FRONT, Handler::Inline(front));
    handlers.register(BACK, Handler::Inline(back));
    let nexus = Nexus::builder()
        .device(Device::ring("nested"))
        .cores(&[0, 1])
        .file_prefix(format!("nested-{}", std::process::id()))
        .build(handlers)?;
    let stop = StopHandle::new();
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut rpc = nexus.rpc(w.index)?;
        let mut app = App::default();
        if w.index == 1 {
            // Front server: a session to the back server, then serve.
            app.back = Some(rpc.connect(nexus.worker_addr(0))?);
            rpc.run_until_stopped(&mut app, &stop);
            return Ok(());
        }
        // Worker 0: the client (its loop also serves BACK requests).
        let result = (|| {
            let s = rpc.connect(nexus.worker_addr(1))?;
            // call_with: while it waits, this loop serves BACK with `app`.
            let r = rpc.call_with(&mut app, s, FRONT, b"hi", Duration::from_secs(5))?;
            println!("nested response: {}", String::from_utf8_lossy(&r));
            Ok::<(), RuntimeError>(())
        })();
        stop.stop();
        result
    })?;
    Ok(())
}
