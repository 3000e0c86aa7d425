//! kv: a key-value server and its client in two processes over memif.
//! The example re-executes itself (`current_exe() server SOCKET`) as the
//! server child; the parent is the client: it PUTs then GETs 1,000 keys,
//! checks every value, prints the GET median latency and kills the child.
//!
//! Run: `cargo run --release -p engine --example kv` (needs 2 CPU cores).

use engine::proto::{MsgBuf, PeerAddr, ReqHandle, SessionId};
use engine::runtime::{Device, Handler, HandlerTable, Nexus, Rpc, RuntimeError};
use engine::time::Duration;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::process::Command;

const PUT: u8 = 1; // [key len: u16 LE][key][value] -> empty
const GET: u8 = 2; // [key] -> value (empty if absent)
const KEYS: usize = 1000;
const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

type Store = HashMap<Vec<u8>, Vec<u8>>;

fn put(rpc: &mut Rpc<Store>, kv: &mut Store, h: ReqHandle, req: &[u8]) {
    if req.len() >= 2 {
        let n = u16::from_le_bytes([req[0], req[1]]) as usize;
        if let (Some(k), Some(v)) = (req.get(2..2 + n), req.get(2 + n..)) {
            kv.insert(k.to_vec(), v.to_vec());
        }
    }
    let _ = rpc.respond_bytes(h, &[]);
}

fn get(rpc: &mut Rpc<Store>, kv: &mut Store, h: ReqHandle, key: &[u8]) {
    let v = kv.get(key).cloned().unwrap_or_default();
    let _ = rpc.respond_bytes(h, &v);
}

/// The child: a one-worker server on core 1, until killed (or 60 s).
fn server(socket: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut handlers = HandlerTable::new();
    handlers.register(PUT, Handler::Inline(put));
    handlers.register(GET, Handler::Inline(get));
    let nexus = Nexus::builder()
        .device(Device::memif_server(socket))
        .cores(&[1])
        .file_prefix(format!("kv-server-{}", std::process::id()))
        .build(handlers)?;
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut cfg = nexus.endpoint_config(w.index);
        cfg.local.ip = SERVER_IP;
        let mut rpc = Rpc::new(&nexus, w.index, cfg)?;
        let deadline = rpc.now() + Duration::from_secs(60);
        rpc.run_until(&mut Store::new(), deadline, |_, _| false);
        Ok(())
    })?;
    Ok(())
}

/// One request, run to completion on this worker's loop.
fn call(rpc: &mut Rpc, s: SessionId, ty: u8, data: &[u8]) -> Result<MsgBuf, RuntimeError> {
    rpc.enqueue_request_bytes(s, ty, data, None, 0)?;
    loop {
        rpc.run_once(&mut ());
        if let Some((_, _, r)) = rpc.poll_completion() {
            return Ok(r?);
        }
    }
}

fn value_of(i: usize) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(i % 64)).into_bytes()
}

/// The parent: a one-worker client on core 0.
fn client(socket: &str) -> Result<(), Box<dyn std::error::Error>> {
    // The client waits for the server's socket (one "waiting for memif
    // server" line) for up to the link timeout.
    let nexus = Nexus::builder()
        .device(Device::memif_client(socket))
        .cores(&[0])
        .file_prefix(format!("kv-client-{}", std::process::id()))
        .build_client()?;
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut cfg = nexus.endpoint_config(w.index);
        cfg.local.ip = CLIENT_IP;
        let mut rpc = Rpc::new(&nexus, w.index, cfg)?;
        let server = PeerAddr {
            mac: None,
            ip: SERVER_IP,
            port: nexus.udp_port(0),
        };
        let s = rpc.connect(server)?;
        for i in 0..KEYS {
            let key = format!("key-{i}");
            let mut req = (key.len() as u16).to_le_bytes().to_vec();
            req.extend_from_slice(key.as_bytes());
            req.extend_from_slice(&value_of(i));
            call(&mut rpc, s, PUT, &req)?;
        }
        let mut lat = Vec::with_capacity(KEYS);
        for i in 0..KEYS {
            let t = rpc.clock().now();
            let v = call(&mut rpc, s, GET, format!("key-{i}").as_bytes())?;
            lat.push(rpc.clock().now() - t);
            if v.as_slice() != value_of(i).as_slice() {
                return Err(RuntimeError::Setup(format!("key-{i}: wrong value")));
            }
        }
        lat.sort_unstable();
        println!("kv: {KEYS} keys ok");
        println!("GET p50: {:.1} us", lat[KEYS / 2].as_secs_f64() * 1e6);
        Ok(())
    })?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("server") {
        return server(&args[2]);
    }
    let socket = format!("/tmp/kv-example-{}.sock", std::process::id());
    let mut child = Command::new(std::env::current_exe()?)
        .args(["server", &socket])
        .spawn()?;
    // Give the server time to set up its port: a memif client that connects
    // while the server is still configuring may never see the link come up.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let result = client(&socket);
    // Kill the server child (by its PID) whether or not the client succeeded.
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&socket);
    result
}
