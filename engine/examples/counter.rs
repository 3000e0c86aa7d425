//! counter: a service with state, in one process over the ring wire.
//! Worker 1 keeps a running total and answers ADD n with the new total;
//! worker 0 adds 1..=10, one blocking call each, and prints the sum.
//! Ctrl-C stops the server through its `StopHandle` (a call in flight
//! then times out).
//!
//! Run: `cargo run --release -p engine --example counter` (needs 2 CPU cores).

use engine::proto::ReqHandle;
use engine::runtime::{Device, Handler, HandlerTable, Nexus, Rpc, RuntimeError, StopHandle};
use std::time::Duration;

/// Request: a u64 (little-endian) to add. Response: the new total, likewise.
const ADD: u8 = 1;

/// The handlers' state (`app`) is a worker's total.
fn add(rpc: &mut Rpc<u64>, total: &mut u64, h: ReqHandle, req: &[u8]) {
    *total += le_u64(req).unwrap_or(0);
    let _ = rpc.respond_bytes(h, &total.to_le_bytes());
}

fn le_u64(b: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut handlers = HandlerTable::new();
    handlers.register(ADD, Handler::Inline(add));
    let nexus = Nexus::builder()
        .device(Device::ring("counter"))
        .cores(&[0, 1])
        .build(handlers)?;
    let stop = StopHandle::new();
    stop.stop_on_signals()?;
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut rpc = nexus.rpc(w.index)?;
        let mut total = 0; // this worker's state: the server's counter
        if w.index == 1 {
            rpc.run_until_stopped(&mut total, &stop);
            return Ok(());
        }
        let s = rpc.connect(nexus.worker_addr(1))?;
        let sum = (1..=10u64).try_fold(0, |_, n| {
            // call_with: while it waits, this worker's loop serves with its state.
            let resp =
                rpc.call_with(&mut total, s, ADD, &n.to_le_bytes(), Duration::from_secs(5))?;
            le_u64(&resp).ok_or_else(|| RuntimeError::Setup("response not 8 bytes".into()))
        });
        stop.stop(); // the server is done, whatever happened
        println!("counter: {} after 10 calls", sum?);
        Ok(())
    })?;
    Ok(())
}
