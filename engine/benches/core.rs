//! Criterion benchmarks of the sans-IO protocol core: no NIC, no DPDK, no
//! clock reads inside the engine. Frames are really written, parsed and
//! answered; a client and a server [`Endpoint`] exchange them through one
//! buffer on this thread (the approach of `rpc-bench engine`), with the
//! virtual time standing still so no timer fires.
//!
//! - `wire/parse_request_32B`: `parse_frame` of a 32 B request frame;
//!   `wire/parse_request_32B_trusted`: the same without the IPv4 checksum.
//! - `wire/write_request_32B`: `HeaderTemplate::write` (header copy,
//!   incremental IPv4 checksum, RPC header) plus the 32 B payload copy.
//! - `endpoint/handle_frame_request_32B`: a connected server's
//!   `handle_frame` of a fresh 32 B request, up to its `Delivery`.
//! - `endpoint/poll_transmit_request_32B`: a connected client's
//!   `poll_transmit` of a queued 32 B request.
//! - `rpc/round_trip_32B`: enqueue, transmit, server delivery, respond,
//!   transmit, client delivery: both sides of one 32 B / 32 B RPC.
//! - `rpc/request_8MiB`: an 8 MiB request (memcpy into 1444 B packets,
//!   credit returns, reassembly) and a 32 B response; throughput in bytes.
//!
//! The two per-call benchmarks prepare a window of requests untimed, time the
//! window's calls together, then complete the RPCs untimed: one clock read
//! pair per window, so its cost (tens of ns) is spread over `req_window`
//! calls.
//!
//! Run: `cargo bench -p engine --bench core` (add `--no-default-features`
//! on a machine without DPDK).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use engine::proto::{Delivery, Endpoint, EndpointAddr, EndpointConfig, Event, PeerAddr, SessionId};
use engine::time::Instant;
use engine::wire::{parse_frame, parse_frame_with, HeaderTemplate, MacAddr, PktType, RpcRepr};
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Duration;

/// The small message size of the benchmarks (request and response).
const SMALL: usize = 32;
/// The large request of `rpc/request_8MiB`.
const LARGE: usize = 8 << 20;
/// The request type the benchmarks send (the core does not interpret it).
const REQ_TYPE: u8 = 1;

fn config(last: u8) -> EndpointConfig {
    EndpointConfig {
        local: EndpointAddr {
            mac: MacAddr([0x02, 0, 0, 0, 0, last]),
            ip: Ipv4Addr::new(10, 0, 0, last),
            port: 31850,
        },
        seed: u64::from(last),
        ..Default::default()
    }
}

/// A client and a server endpoint with one connected session, and the
/// buffer frames travel through. Time stays at `now`.
struct Pair {
    client: Endpoint,
    server: Endpoint,
    session: SessionId,
    now: Instant,
    buf: Vec<u8>,
    /// Requests the client may have outstanding on the session.
    window: usize,
}

impl Pair {
    /// Connects a client (10.0.0.1) to a server (10.0.0.2): ConnectReq one
    /// way, ConnectResp the other.
    fn connected() -> Self {
        let now = Instant::ZERO;
        let mut client = Endpoint::new(config(1)).expect("valid config");
        let server = Endpoint::new(config(2)).expect("valid config");
        let session = client
            .connect(now, PeerAddr::from(server.local_addr()))
            .expect("connect");
        let window = client.config().req_window;
        let buf = vec![0; client.min_tx_buf_len()];
        let mut p = Pair {
            client,
            server,
            session,
            now,
            buf,
            window,
        };
        p.client_to_server();
        p.server_to_client();
        assert!(matches!(p.client.poll_event(), Some(Event::Connected(s)) if s == p.session));
        while p.server.poll_event().is_some() {}
        p
    }

    /// Queues a `len`-byte request on the session.
    fn enqueue(&mut self, len: usize) {
        let msg = self.client.alloc_msg(len);
        self.client
            .enqueue_request(self.now, self.session, REQ_TYPE, msg, 0)
            .map_err(|(e, _)| e)
            .expect("enqueue_request");
    }

    /// Client to server: every frame the client has to send; the server
    /// answers each complete request with `SMALL` bytes.
    fn client_to_server(&mut self) {
        let now = self.now;
        while let Some(n) = self.client.poll_transmit(now, &mut self.buf) {
            if let Some(Delivery::Request { handle, .. }) =
                self.server.handle_frame(now, &self.buf[..n])
            {
                let resp = self.server.alloc_msg(SMALL);
                self.server.respond(now, handle, resp).expect("respond");
            }
        }
    }

    /// Server to client: every frame the server has to send; returns how
    /// many responses completed.
    fn server_to_client(&mut self) -> usize {
        let now = self.now;
        let mut done = 0;
        while let Some(n) = self.server.poll_transmit(now, &mut self.buf) {
            if let Some(Delivery::Response { .. }) = self.client.handle_frame(now, &self.buf[..n]) {
                done += 1;
            }
        }
        done
    }

    /// One RPC with a `len`-byte request and a `SMALL` response, from
    /// enqueue to the client's delivery.
    fn round_trip(&mut self, len: usize) {
        self.enqueue(len);
        loop {
            self.client_to_server();
            if self.server_to_client() > 0 {
                return;
            }
        }
    }

    /// One 32 B request frame as the client writes it, for `parse_frame`.
    fn request_frame(&mut self) -> Vec<u8> {
        self.enqueue(SMALL);
        let n = self
            .client
            .poll_transmit(self.now, &mut self.buf)
            .expect("a request frame");
        let frame = self.buf[..n].to_vec();
        if let Some(Delivery::Request { handle, .. }) = self.server.handle_frame(self.now, &frame) {
            let resp = self.server.alloc_msg(SMALL);
            self.server
                .respond(self.now, handle, resp)
                .expect("respond");
        }
        assert_eq!(self.server_to_client(), 1);
        frame
    }
}

fn wire(c: &mut Criterion) {
    let mut g = c.benchmark_group("wire");
    let frame = Pair::connected().request_frame();
    g.bench_function("parse_request_32B", |b| {
        b.iter(|| parse_frame(black_box(&frame)).map(|p| p.payload.len()))
    });
    // What a trusted link (memif, net_ring) saves: the IPv4 checksum.
    g.bench_function("parse_request_32B_trusted", |b| {
        b.iter(|| parse_frame_with(black_box(&frame), false).map(|p| p.payload.len()))
    });

    let (src, dst) = (config(1).local, config(2).local);
    let template = HeaderTemplate::new((src.mac, src.ip, src.port), (dst.mac, dst.ip, dst.port));
    let rpc = RpcRepr {
        pkt_type: PktType::Request,
        req_type: REQ_TYPE,
        msg_size: SMALL as u32,
        dest_session: 0,
        pkt_num: 0,
        grant: 0,
        req_num: 8,
        token: 0x0102_0304,
    };
    let payload = [0xab_u8; SMALL];
    let mut buf = vec![0u8; 1514];
    g.bench_function("write_request_32B", |b| {
        b.iter(|| {
            let n = template.write(&mut buf, black_box(&rpc), SMALL);
            buf[n..n + SMALL].copy_from_slice(black_box(&payload));
            black_box(&buf);
            n + SMALL
        })
    });
    g.finish();
}

fn endpoint(c: &mut Criterion) {
    let mut g = c.benchmark_group("endpoint");
    g.bench_function("handle_frame_request_32B", |b| {
        let mut p = Pair::connected();
        let mut frames: Vec<(Vec<u8>, usize)> = vec![(p.buf.clone(), 0); p.window];
        let mut handles = Vec::with_capacity(p.window);
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let k = left.min(p.window as u64) as usize;
                for (f, len) in &mut frames[..k] {
                    p.enqueue(SMALL);
                    *len = p.client.poll_transmit(p.now, f).expect("a request frame");
                }
                let t = std::time::Instant::now();
                for (f, len) in &frames[..k] {
                    if let Some(Delivery::Request { handle, .. }) =
                        p.server.handle_frame(p.now, black_box(&f[..*len]))
                    {
                        handles.push(handle);
                    }
                }
                total += t.elapsed();
                assert_eq!(handles.len(), k, "every frame delivers a request");
                for h in handles.drain(..) {
                    let resp = p.server.alloc_msg(SMALL);
                    p.server.respond(p.now, h, resp).expect("respond");
                }
                assert_eq!(p.server_to_client(), k);
                left -= k as u64;
            }
            total
        })
    });

    g.bench_function("poll_transmit_request_32B", |b| {
        let mut p = Pair::connected();
        let mut frames: Vec<(Vec<u8>, usize)> = vec![(p.buf.clone(), 0); p.window];
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let k = left.min(p.window as u64) as usize;
                for _ in 0..k {
                    p.enqueue(SMALL);
                }
                let t = std::time::Instant::now();
                for (f, len) in &mut frames[..k] {
                    *len = p.client.poll_transmit(p.now, black_box(f)).unwrap_or(0);
                }
                total += t.elapsed();
                for (f, len) in &frames[..k] {
                    if let Some(Delivery::Request { handle, .. }) =
                        p.server.handle_frame(p.now, &f[..*len])
                    {
                        let resp = p.server.alloc_msg(SMALL);
                        p.server.respond(p.now, handle, resp).expect("respond");
                    }
                }
                assert_eq!(p.server_to_client(), k, "every frame was a request");
                left -= k as u64;
            }
            total
        })
    });
    g.finish();
}

fn rpc(c: &mut Criterion) {
    let mut g = c.benchmark_group("rpc");
    let mut p = Pair::connected();
    g.bench_function("round_trip_32B", |b| b.iter(|| p.round_trip(SMALL)));

    g.throughput(Throughput::Bytes(LARGE as u64));
    g.sample_size(10);
    g.bench_function("request_8MiB", |b| b.iter(|| p.round_trip(LARGE)));
    g.finish();
}

criterion_group!(benches, wire, endpoint, rpc);
criterion_main!(benches);
