//! kv: a key-value server and its client in two processes over memif.
//! The example re-executes itself (`current_exe() server SOCKET`) as the
//! server child; the parent is the client: it PUTs then GETs 1,000 keys,
//! one blocking call each, checks every value, prints the GET median
//! latency, then stops the server with SIGINT, as Ctrl-C would: the server
//! ties Ctrl-C to its `StopHandle`, returns from its loop and says how many
//! requests it served.
//!
//! Addresses: each process names its own IPv4 address on the link
//! (`NexusBuilder::ip`); the client reaches the server from its address
//! alone, `10.0.0.1:31850` (the default UDP port of worker 0), and learns
//! its MAC from the connect handshake. Nothing waits on a timer: the memif
//! client waits for its server's socket and redials a server not started
//! yet by itself.
//!
//! Run: `cargo run --release -p engine --example kv` (needs 2 CPU cores).

use engine::proto::{PeerAddr, ReqHandle};
use engine::runtime::{Device, Handler, HandlerTable, Nexus, Rpc, RuntimeError, StopHandle};
use engine::time::Duration;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::process::Command;

const PUT: u8 = 1; // [key len: u16 LE][key][value] -> empty
const GET: u8 = 2; // [key] -> value (empty if absent)
const KEYS: usize = 1000;
const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// What the client knows of the server: its IP and worker 0's UDP port.
const SERVER_ADDR: &str = "10.0.0.1:31850";
/// Each call's limit; a healthy one takes microseconds.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

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

/// The child: a one-worker server on core 1 until Ctrl-C / SIGINT (or 60
/// s, should its parent die without stopping it).
fn server(socket: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut handlers = HandlerTable::new();
    handlers.register(PUT, Handler::Inline(put));
    handlers.register(GET, Handler::Inline(get));
    let stop = StopHandle::new();
    stop.stop_on_signals()?;
    let nexus = Nexus::builder()
        .device(Device::memif_server(socket))
        .ip(SERVER_IP)
        .cores(&[1])
        .file_prefix(format!("kv-server-{}", std::process::id()))
        .build(handlers)?;
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut rpc = nexus.rpc(w.index)?;
        println!("kv server: serving at {}", nexus.worker_addr(w.index));
        let deadline = rpc.now() + Duration::from_secs(60);
        rpc.run_until(&mut Store::new(), deadline, |_, _| stop.is_stopped());
        let served = rpc.endpoint().stats().handler_invocations;
        let why = if stop.is_stopped() {
            "stopped"
        } else {
            "timed out"
        };
        println!("kv server: {why} after {served} requests");
        Ok(())
    })?;
    Ok(())
}

fn value_of(i: usize) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(i % 64)).into_bytes()
}

/// The parent: a one-worker client on core 0.
fn client(socket: &str, server: PeerAddr) -> Result<(), Box<dyn std::error::Error>> {
    // The client waits for the server's socket (one "waiting for memif
    // server" line) for up to the link timeout.
    let nexus = Nexus::builder()
        .device(Device::memif_client(socket))
        .ip(CLIENT_IP)
        .cores(&[0])
        .file_prefix(format!("kv-client-{}", std::process::id()))
        .build_client()?;
    nexus.run(&|w| -> Result<(), RuntimeError> {
        let mut rpc = nexus.rpc(w.index)?;
        let s = rpc.connect(server)?;
        for i in 0..KEYS {
            let key = format!("key-{i}");
            let mut req = (key.len() as u16).to_le_bytes().to_vec();
            req.extend_from_slice(key.as_bytes());
            req.extend_from_slice(&value_of(i));
            rpc.call(s, PUT, &req, CALL_TIMEOUT)?;
        }
        let mut lat = Vec::with_capacity(KEYS);
        for i in 0..KEYS {
            let t = rpc.clock().now();
            let v = rpc.call(s, GET, format!("key-{i}").as_bytes(), CALL_TIMEOUT)?;
            lat.push(rpc.clock().now() - t);
            if v[..] != value_of(i)[..] {
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
    let result = client(&socket, SERVER_ADDR.parse()?);
    // Stop the server as Ctrl-C would (by its PID), whether or not the
    // client succeeded, and wait for it to say what it served.
    let stopped = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = child.wait()?;
    let _ = std::fs::remove_file(&socket);
    result?;
    if !stopped.is_ok_and(|s| s.success()) || !status.success() {
        return Err(format!("kv server: {status} after SIGINT").into());
    }
    Ok(())
}
