//! hello: one process, two workers on the in-process ring wire. Worker 1 is
//! a server with one handler; worker 0 connects to it, sends one request,
//! prints the response and stops both workers.
//!
//! Run: `cargo run --release -p engine --example hello` (needs 2 CPU cores).

use engine::proto::ReqHandle;
use engine::runtime::{Device, Handler, HandlerTable, Nexus, Rpc, RuntimeError, StopHandle};
use engine::time::Duration;

/// The request type the server handles.
const HELLO: u8 = 1;

/// Inline handler: runs on the server worker's loop, answers at once.
fn hello(rpc: &mut Rpc, _app: &mut (), h: ReqHandle, req: &[u8]) {
    let resp = [b"hello, ".as_slice(), req].concat();
    let _ = rpc.respond_bytes(h, &resp);
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut handlers = HandlerTable::new();
    handlers.register(HELLO, Handler::Inline(hello));
    // One device named once: the EAL arguments and the port name follow.
    let nexus = Nexus::builder()
        .device(Device::ring("hello"))
        .cores(&[0, 1])
        .file_prefix(format!("hello-{}", std::process::id()))
        .build(handlers)?;
    let stop = StopHandle::new();
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut rpc = nexus.rpc(w.index)?;
        if w.index == 1 {
            // The server: serve until the client says stop.
            rpc.run_until_stopped(&mut (), &stop);
            return Ok(());
        }
        // The client: whatever happens, stop the server when done.
        let result = (|| {
            let session = rpc.connect(nexus.worker_addr(1))?;
            // Requests may be queued while the session is connecting.
            rpc.enqueue_request_bytes(session, HELLO, b"world", None, 0)?;
            let deadline = rpc.now() + Duration::from_secs(5);
            loop {
                rpc.run_once(&mut ());
                if let Some((_, _, resp)) = rpc.poll_completion() {
                    let resp = resp?; // the MsgBuf returns to its pool when dropped
                    println!("response: {}", String::from_utf8_lossy(resp.as_slice()));
                    return Ok(());
                }
                if rpc.now() >= deadline {
                    return Err(RuntimeError::Setup("no response within 5 s".into()));
                }
            }
        })();
        stop.stop();
        result
    })?;
    Ok(())
}
