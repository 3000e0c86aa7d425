//! hello: one process, two workers on the in-process ring wire. Worker 1
//! serves; worker 0 calls it once and stops both. The README shows this
//! file below its header (engine/tests/suite/readme_snippet.rs checks they match)
//! and the crate docs compile it.
//!
//! Run: `cargo run --release -p engine --example hello` (needs 2 CPU cores).

use engine::proto::ReqHandle;
use engine::runtime::{Device, Handler, HandlerTable, Nexus, Rpc, RuntimeError, StopHandle};
use std::time::Duration;

const HELLO: u8 = 1; // the request type; a server registers one handler per type

/// Runs on the server worker's loop: answers at once, never blocks.
fn hello(rpc: &mut Rpc, _app: &mut (), h: ReqHandle, req: &[u8]) {
    let _ = rpc.respond_bytes(h, &[b"hello, ".as_slice(), req].concat());
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut handlers = HandlerTable::new();
    handlers.register(HELLO, Handler::Inline(hello));
    let nexus = Nexus::builder()
        .device(Device::ring("hello"))
        .cores(&[0, 1])
        .build(handlers)?;
    let stop = StopHandle::new();
    stop.stop_on_signals()?; // Ctrl-C stops the server's loop
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut rpc = nexus.rpc(w.index)?;
        if w.index == 1 {
            rpc.run_until_stopped(&mut (), &stop); // the server
            return Ok(());
        }
        let session = rpc.connect(nexus.worker_addr(1))?; // worker 1 of this process
        let resp = rpc.call(session, HELLO, b"world", Duration::from_secs(5));
        stop.stop(); // whatever the outcome, the server is done
        println!("response: {}", String::from_utf8_lossy(&resp?));
        Ok(())
    })?;
    Ok(())
}
