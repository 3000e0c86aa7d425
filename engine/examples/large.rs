//! large: one 8 MiB request and one 8 MiB response between two workers on
//! the in-process ring wire, each carrying a checksum of its body in its
//! last 8 bytes, verified by the receiver (the engine splits and reassembles
//! the ~5,800 packets).
//!
//! Run: `cargo run --release -p engine --example large` (needs 2 CPU cores).

use engine::proto::{ReqHandle, DEFAULT_MAX_MSG_SIZE};
use engine::runtime::{Device, Handler, HandlerTable, Nexus, Rpc, RuntimeError, StopHandle};
use engine::time::Duration;

const BIG: u8 = 1;
/// 8 MiB: the largest message the default configuration allows.
const SIZE: usize = DEFAULT_MAX_MSG_SIZE;

/// FNV-1a over the body.
fn checksum(body: &[u8]) -> u64 {
    body.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// `SIZE` bytes: a pattern from `seed`, then its checksum.
fn message(seed: u8) -> Vec<u8> {
    let mut m: Vec<u8> = (0..SIZE - 8)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect();
    let c = checksum(&m);
    m.extend_from_slice(&c.to_le_bytes());
    m
}

/// Whether `m` is `SIZE` bytes whose trailer matches its body.
fn verify(m: &[u8]) -> bool {
    let Some((body, trailer)) = m.split_at_checked(SIZE - 8) else {
        return false;
    };
    m.len() == SIZE && trailer == checksum(body).to_le_bytes()
}

/// Checks the request; answers with another 8 MiB message, or 1 byte on a
/// bad checksum.
fn big(rpc: &mut Rpc, _app: &mut (), h: ReqHandle, req: &[u8]) {
    let resp = if verify(req) {
        println!("server: {}-byte request, checksum ok", req.len());
        message(0x5a)
    } else {
        vec![0]
    };
    let _ = rpc.respond_bytes(h, &resp);
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut handlers = HandlerTable::new();
    handlers.register(BIG, Handler::Inline(big));
    let nexus = Nexus::builder()
        .device(Device::ring("large"))
        .cores(&[0, 1])
        .file_prefix(format!("large-{}", std::process::id()))
        .build(handlers)?;
    let stop = StopHandle::new();
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut rpc = nexus.rpc(w.index)?;
        if w.index == 1 {
            rpc.run_until_stopped(&mut (), &stop);
            return Ok(());
        }
        let result = (|| {
            let s = rpc.connect(nexus.worker_addr(1))?;
            let start = rpc.clock().now();
            let resp = rpc.call(s, BIG, &message(0xa5), Duration::from_secs(20))?;
            if !verify(&resp) {
                return Err(RuntimeError::Setup("response checksum mismatch".into()));
            }
            let ms = (rpc.clock().now() - start).as_secs_f64() * 1e3;
            println!("large: {SIZE}-byte request and response, checksums ok ({ms:.1} ms)");
            Ok(())
        })();
        stop.stop();
        result
    })?;
    Ok(())
}
