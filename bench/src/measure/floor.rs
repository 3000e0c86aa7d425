//! The raw floor: frames with no RPC layer between two processes pinned to two
//! cores, over the same link the RPC benchmarks use. A reflector (server role)
//! echoes ping frames and counts stream frames; the client measures ping-pong
//! RTT for 64 B and 1 KiB frames, one-way streaming for 64 B and MTU-sized
//! frames in bursts of 32, the echo rate of 64 B bursts (the raw ceiling of a
//! request-response rate), and the round trip of one 32-frame MTU burst (the
//! loaded RTT a measured BDP uses). Every later figure is a ratio to these.

use crate::measure::stream_rate::{
    median_window_gbps, train_gbps, Streamed, STREAM_WINDOW_NS, TRAIN_LONG, TRAIN_SHORT,
};
use anyhow::{bail, Context};
use apps::config::link::{LinkArgs, Role};
use apps::config::setup::{self, PortShape};
use apps::measure::hist::LatencyHist;
use engine::dpdk::{Mbuf, MbufBatch, Mempool, Port, RxQueue, TscClock, TxQueue, BURST};
use engine::runtime::{HandlerTable, Nexus};
use engine::wire::{checksum, MacAddr};
use std::sync::Arc;
use std::time::Duration;

/// UDP port of floor frames (both ends), so kernel frames on af_packet are ignored.
pub const FLOOR_PORT: u16 = 31850;
const HDR: usize = 42; // Ethernet + IPv4 + UDP
const KIND: usize = HDR;
const PHASE: usize = HDR + 1;
const SEQ: std::ops::Range<usize> = HDR + 2..HDR + 6;
const VAL_A: std::ops::Range<usize> = HDR + 6..HDR + 14;
const VAL_B: std::ops::Range<usize> = HDR + 14..HDR + 22;
/// Smallest floor frame: headers plus the 22-byte floor payload = 64 B.
pub const MIN_FRAME: usize = HDR + 22;
/// Ethernet frame for a 1500-byte IP MTU.
pub const MTU_FRAME: usize = 1514;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Ping = 1,
    Stream = 2,
    StatsReq = 3,
    StatsResp = 4,
    Quit = 5,
    /// Echoed like a ping; sent in bursts (echo rate, burst round trip).
    Echo = 6,
}

impl Kind {
    fn of(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Ping,
            2 => Kind::Stream,
            3 => Kind::StatsReq,
            4 => Kind::StatsResp,
            5 => Kind::Quit,
            6 => Kind::Echo,
            _ => return None,
        })
    }
}

pub const CLIENT_IP: [u8; 4] = [127, 77, 0, 1];
pub const SERVER_IP: [u8; 4] = [127, 77, 0, 2];

/// Builds a floor frame of `len` bytes (>= MIN_FRAME) into `buf`.
fn build_frame(buf: &mut [u8], len: usize, src: MacAddr, dst: MacAddr, kind: Kind, phase: u8) {
    let buf = &mut buf[..len];
    buf.fill(0);
    buf[0..6].copy_from_slice(&dst.0);
    buf[6..12].copy_from_slice(&src.0);
    buf[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (len - 14) as u16;
    let ip = &mut buf[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[6] = 0x40; // DF
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&CLIENT_IP);
    ip[16..20].copy_from_slice(&SERVER_IP);
    let c = checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp = &mut buf[34..42];
    udp[0..2].copy_from_slice(&FLOOR_PORT.to_be_bytes());
    udp[2..4].copy_from_slice(&FLOOR_PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&(ip_len - 20).to_be_bytes());
    buf[KIND] = kind as u8;
    buf[PHASE] = phase;
}

/// A floor frame's kind, if this is one (IPv4/UDP to FLOOR_PORT, long enough).
fn floor_kind(f: &[u8]) -> Option<Kind> {
    if f.len() < MIN_FRAME
        || f[12..14] != [0x08, 0x00]
        || f[23] != 17
        || f[36..38] != FLOOR_PORT.to_be_bytes()
    {
        return None;
    }
    Kind::of(f[KIND])
}

fn get_u64(f: &[u8], r: std::ops::Range<usize>) -> u64 {
    u64::from_le_bytes(f[r].try_into().unwrap_or([0; 8]))
}

/// Everything one floor process needs: port, one queue pair, pool, clock.
struct Io {
    port: Port,
    rx: RxQueue,
    tx: TxQueue,
    pool: Arc<Mempool>,
    clock: TscClock,
    mac: MacAddr,
    /// EAL and the port's owner; dropped after the queues.
    _nexus: Nexus,
}

/// One queue pair on `core`, 8191 mbufs, the driver's ring sizes.
fn open(link: &LinkArgs, role: Role, core: u32) -> anyhow::Result<Io> {
    let b = setup::builder(link, role, &[core], &PortShape::raw(8191, 256))?;
    let nexus = setup::open(link, role, b, HandlerTable::new())?;
    let (rx, tx) = nexus.port().queue_pair(0)?;
    Ok(Io {
        port: nexus.port().clone(),
        rx,
        tx,
        pool: nexus.pool().clone(),
        clock: TscClock::new(nexus.eal()),
        mac: nexus.mac(),
        _nexus: nexus,
    })
}

/// Sends every mbuf in the batch, retrying while the driver's ring is full
/// (that is backpressure from the peer, not loss), up to `deadline_ns`.
fn tx_all(io: &mut Io, batch: &mut MbufBatch, deadline_ns: u64) -> bool {
    while !batch.is_empty() {
        io.tx.tx_burst(batch);
        if !batch.is_empty() && io.clock.now().as_nanos() > deadline_ns {
            batch.clear();
            return false;
        }
    }
    true
}

/// The reflector. Echoes pings, counts stream frames per phase, answers stats
/// requests, exits on Quit or after `max_secs`. Returns its counters;
/// `quit_received` false means the client never finished (the caller
/// reports it after printing them).
pub fn run_server(link: &LinkArgs, core: u32, max_secs: f64) -> anyhow::Result<serde_json::Value> {
    let mut io = open(link, Role::Server, core)?;
    let in_use_start = io.pool.in_use();
    let deadline = io.clock.now().as_nanos() + (max_secs * 1e9) as u64;
    let mut rx = MbufBatch::new();
    let mut tx = MbufBatch::new();
    let mut stream_pkts = [0u64; 256];
    let mut stream_bytes = [0u64; 256];
    let (mut echoed, mut ignored) = (0u64, 0u64);
    let mut quit = false;
    while !quit {
        if io.rx.rx_burst(&mut rx) == 0 {
            if io.clock.now().as_nanos() > deadline {
                break;
            }
            continue;
        }
        while let Some(mut m) = rx.pop() {
            let kind = floor_kind(m.data());
            match kind {
                Some(Kind::Stream) => {
                    let phase = m.data()[PHASE] as usize;
                    stream_pkts[phase] += 1;
                    stream_bytes[phase] += m.len() as u64;
                }
                Some(Kind::Ping | Kind::Echo | Kind::StatsReq | Kind::Quit) => {
                    let my_mac = io.mac;
                    let f = m.data_mut();
                    f.copy_within(6..12, 0);
                    f[6..12].copy_from_slice(&my_mac.0);
                    if kind == Some(Kind::StatsReq) {
                        let phase = f[PHASE] as usize;
                        f[KIND] = Kind::StatsResp as u8;
                        f[VAL_A].copy_from_slice(&stream_pkts[phase].to_le_bytes());
                        f[VAL_B].copy_from_slice(&stream_bytes[phase].to_le_bytes());
                    }
                    quit |= kind == Some(Kind::Quit);
                    echoed += 1;
                    if let Err(m) = tx.push(m) {
                        drop(m);
                    }
                }
                _ => ignored += 1,
            }
        }
        tx_all(&mut io, &mut tx, deadline + 1_000_000_000);
    }
    // Let the quit echo leave before tearing down.
    std::thread::sleep(Duration::from_millis(50));
    let stats = io.port.stats()?;
    let in_use_end = io.pool.in_use();
    let out = serde_json::json!({
        "role": "server",
        "echoed": echoed,
        "ignored": ignored,
        "quit_received": quit,
        "mbufs_in_use_start": in_use_start,
        "mbufs_in_use_end": in_use_end,
        "port_rx_missed": stats.rx_missed,
    });
    Ok(out)
}

#[derive(Clone, Copy, Debug)]
pub struct ClientPlan {
    pub pings: u64,
    pub warmup: u64,
    pub stream_secs: f64,
    pub max_secs: f64,
}

/// Pings in a row without an echo after which the peer is declared gone.
const MAX_CONSECUTIVE_LOST: u32 = 20;

/// One ping-pong run of `n` frames of `len` bytes; records RTTs in ns.
fn ping_pong(
    io: &mut Io,
    len: usize,
    n: u64,
    warmup: u64,
    phase: u8,
    hist: &mut LatencyHist,
) -> anyhow::Result<u64> {
    let mut lost = 0u64;
    let mut consecutive_lost = 0u32;
    let mut rx = MbufBatch::new();
    let mut peer = MacAddr::BROADCAST;
    for seq in 0..(warmup + n) {
        let mut m = Mbuf::alloc(&io.pool)?;
        build_frame(m.room_mut(), len, io.mac, peer, Kind::Ping, phase);
        m.set_len(len);
        m.data_mut()[SEQ].copy_from_slice(&(seq as u32).to_le_bytes());
        let t0 = io.clock.cycles();
        let mut m = Some(m);
        while let Some(x) = m.take() {
            if let Err(back) = io.tx.tx_one(x) {
                m = Some(back);
            }
        }
        let timeout = t0 + io.clock.hz() / 10; // 100 ms
        let mut got = false;
        while !got {
            if io.rx.rx_burst(&mut rx) == 0 {
                if io.clock.cycles() > timeout {
                    break;
                }
                continue;
            }
            let t1 = io.clock.cycles();
            while let Some(m) = rx.pop() {
                let f = m.data();
                if floor_kind(f) == Some(Kind::Ping)
                    && f[PHASE] == phase
                    && u32::from_le_bytes(f[SEQ].try_into().unwrap_or([0; 4])) == seq as u32
                {
                    got = true;
                    peer = MacAddr(f[6..12].try_into().unwrap_or([0xff; 6]));
                    if seq >= warmup {
                        hist.record_ns(
                            io.clock.instant_of(t1).as_nanos() - io.clock.instant_of(t0).as_nanos(),
                        );
                    }
                }
            }
        }
        if got {
            consecutive_lost = 0;
        } else {
            consecutive_lost += 1;
            if seq >= warmup {
                lost += 1;
            }
            if consecutive_lost >= MAX_CONSECUTIVE_LOST {
                bail!("floor server stopped answering: {consecutive_lost} pings in a row got no echo within 100 ms");
            }
        }
    }
    Ok(lost)
}

/// Streams `len`-byte frames in bursts of 32 for `secs`.
fn stream(io: &mut Io, len: usize, secs: f64, phase: u8) -> anyhow::Result<Streamed> {
    let template = template(io, len, Kind::Stream, phase);
    let mut batch = MbufBatch::new();
    let mut sink = MbufBatch::new();
    let start = io.clock.now().as_nanos();
    let end = start + (secs * 1e9) as u64;
    let mut sent = 0u64;
    let (mut windows, mut window_end, mut in_window) = (Vec::new(), start + STREAM_WINDOW_NS, 0);
    loop {
        let now = io.clock.now().as_nanos();
        if now >= window_end {
            windows.push(in_window);
            in_window = 0;
            window_end += STREAM_WINDOW_NS;
        }
        if now >= end {
            break;
        }
        batch.alloc(&io.pool, BURST)?;
        for i in 0..batch.len() {
            batch.room_mut(i)[..len].copy_from_slice(&template);
            batch.set_len(i, len);
        }
        let n = batch.len() as u64;
        if tx_all(io, &mut batch, end + 100_000_000) {
            sent += n;
            in_window += n;
        }
        // Keep our RX ring drained (kernel frames on af_packet, stray echoes).
        io.rx.rx_burst(&mut sink);
        sink.clear();
    }
    let elapsed = (io.clock.now().as_nanos() - start) as f64 / 1e9;
    Ok(Streamed {
        sent,
        secs: elapsed,
        windows,
    })
}

/// Frames of `phase` that are echoes of burst `seq` (or any burst when
/// `seq` is None) in `rx`; frees the batch.
fn count_echoes(rx: &mut MbufBatch, phase: u8, seq: Option<u32>) -> u64 {
    let mut n = 0;
    while let Some(m) = rx.pop() {
        let f = m.data();
        if floor_kind(f) == Some(Kind::Echo)
            && f[PHASE] == phase
            && seq.is_none_or(|s| f[SEQ] == s.to_le_bytes())
        {
            n += 1;
        }
    }
    n
}

/// A broadcast floor frame of `len` bytes, copied into every burst.
fn template(io: &Io, len: usize, kind: Kind, phase: u8) -> Vec<u8> {
    let mut frame = vec![0u8; len];
    build_frame(&mut frame, len, io.mac, MacAddr::BROADCAST, kind, phase);
    frame
}

/// Fills `batch` with `BURST` echo frames of `len` bytes for burst `seq`.
fn echo_burst(io: &Io, batch: &mut MbufBatch, template: &[u8], seq: u32) -> anyhow::Result<()> {
    batch.alloc(&io.pool, BURST)?;
    let len = template.len();
    for i in 0..batch.len() {
        let room = batch.room_mut(i);
        room[..len].copy_from_slice(template);
        room[SEQ].copy_from_slice(&seq.to_le_bytes());
        batch.set_len(i, len);
    }
    Ok(())
}

/// The raw request-response ceiling: bursts of 32 `len`-byte frames with
/// at most `window` frames unanswered, the reflector echoing each; returns
/// echoed frames per second (Mpps). Frames lost on the way (a full ring)
/// are written off after 100 ms without an echo.
fn echo_rate(io: &mut Io, len: usize, secs: f64, phase: u8, window: u64) -> anyhow::Result<f64> {
    let template = template(io, len, Kind::Echo, phase);
    let (mut batch, mut rx) = (MbufBatch::new(), MbufBatch::new());
    let start = io.clock.now().as_nanos();
    let end = start + (secs * 1e9) as u64;
    let (mut outstanding, mut echoed, mut last_echo) = (0u64, 0u64, start);
    loop {
        let now = io.clock.now().as_nanos();
        if now >= end {
            break;
        }
        if outstanding + BURST as u64 <= window {
            echo_burst(io, &mut batch, &template, 0)?;
            outstanding += io.tx.tx_burst(&mut batch) as u64;
            batch.clear();
        }
        io.rx.rx_burst(&mut rx);
        let n = count_echoes(&mut rx, phase, None);
        if n > 0 {
            last_echo = now;
        } else if now - last_echo > 100_000_000 {
            outstanding = 0;
            last_echo = now;
        }
        echoed += n;
        outstanding = outstanding.saturating_sub(n);
    }
    let elapsed = (io.clock.now().as_nanos() - start) as f64 / 1e9;
    // Let the last echoes land so they do not meet the next phase.
    std::thread::sleep(Duration::from_millis(10));
    io.rx.rx_burst(&mut rx);
    rx.clear();
    Ok(echoed as f64 / elapsed / 1e6)
}

/// Round trip of one burst of 32 `len`-byte frames on an otherwise idle
/// link: from handing the burst to the driver to the last echo back. It
/// holds what an idle ping misses: both hosts' batching and the burst's
/// own serialization. Records `n` bursts in `hist`; returns bursts lost.
fn burst_rtt(
    io: &mut Io,
    len: usize,
    (n, train): (u64, u64),
    phase: u8,
    hist: &mut LatencyHist,
) -> anyhow::Result<u64> {
    let template = template(io, len, Kind::Echo, phase);
    let (mut batch, mut rx) = (MbufBatch::new(), MbufBatch::new());
    let mut lost = 0;
    for seq in 0..n as u32 {
        let t0 = io.clock.now().as_nanos();
        let mut sent = true;
        for _ in 0..train {
            echo_burst(io, &mut batch, &template, seq)?;
            sent &= tx_all(io, &mut batch, t0 + 100_000_000);
        }
        if !sent {
            lost += 1;
            continue;
        }
        let (mut got, want, timeout) = (0u64, train * BURST as u64, t0 + 100_000_000);
        while got < want && io.clock.now().as_nanos() < timeout {
            if io.rx.rx_burst(&mut rx) > 0 {
                got += count_echoes(&mut rx, phase, Some(seq));
            }
        }
        if got == want {
            hist.record_ns(io.clock.now().as_nanos() - t0);
        } else {
            lost += 1;
        }
    }
    Ok(lost)
}

/// Sends a control frame of `kind` and waits up to 50 ms for an answer that
/// `accept` takes, retrying `attempts` times (control frames may meet a full
/// ring on af_packet). Returns what `accept` extracted.
fn request<T>(
    io: &mut Io,
    kind: Kind,
    phase: u8,
    attempts: u32,
    accept: impl Fn(&[u8]) -> Option<T>,
) -> Option<T> {
    let mut rx = MbufBatch::new();
    for _ in 0..attempts {
        let mut m = Mbuf::alloc(&io.pool).ok()?;
        build_frame(
            m.room_mut(),
            MIN_FRAME,
            io.mac,
            MacAddr::BROADCAST,
            kind,
            phase,
        );
        m.set_len(MIN_FRAME);
        let _ = io.tx.tx_one(m);
        let until = io.clock.cycles() + io.clock.hz() / 20;
        while io.clock.cycles() < until {
            io.rx.rx_burst(&mut rx);
            while let Some(m) = rx.pop() {
                if let Some(v) = accept(m.data()) {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// Asks the reflector how many stream frames (and bytes) of `phase` it received.
fn stats_of(io: &mut Io, phase: u8) -> anyhow::Result<(u64, u64)> {
    request(io, Kind::StatsReq, phase, 50, |f| {
        (floor_kind(f) == Some(Kind::StatsResp) && f[PHASE] == phase)
            .then(|| (get_u64(f, VAL_A), get_u64(f, VAL_B)))
    })
    .ok_or_else(|| anyhow::anyhow!("floor server did not answer a stats request (is it running?)"))
}

/// Tells the reflector to exit; best effort (it also has a deadline).
fn quit(io: &mut Io) {
    let _ = request(io, Kind::Quit, 0, 20, |f| {
        (floor_kind(f) == Some(Kind::Quit)).then_some(())
    });
}

/// The measuring side. Prints one JSON line with the floor figures.
pub fn run_client(
    link: &LinkArgs,
    core: u32,
    plan: ClientPlan,
) -> anyhow::Result<serde_json::Value> {
    let mut io = open(link, Role::Client, core).context("floor client")?;
    let in_use_start = io.pool.in_use();
    // Give the peer a moment after link-up: memif reports up on connect.
    std::thread::sleep(Duration::from_millis(20));
    let mut h64 = LatencyHist::new();
    let mut h1k = LatencyHist::new();
    let lost64 = ping_pong(&mut io, MIN_FRAME, plan.pings, plan.warmup, 1, &mut h64)?;
    let lost1k = ping_pong(&mut io, 1024, plan.pings, plan.warmup, 2, &mut h1k)?;
    let mut stream_fig =
        |len: usize, phase: u8| -> anyhow::Result<(f64, f64, u64, u64, Option<f64>)> {
            let s = stream(&mut io, len, plan.stream_secs, phase)?;
            // Frames still in flight land within a few microseconds.
            std::thread::sleep(Duration::from_millis(10));
            let (got, bytes) = stats_of(&mut io, phase)?;
            Ok((
                got as f64 / s.secs / 1e6,
                bytes as f64 * 8.0 / s.secs / 1e9,
                s.sent,
                got,
                median_window_gbps(&s, got, len),
            ))
        };
    let (mpps64, gbps64, sent64, got64, _) = stream_fig(MIN_FRAME, 3)?;
    let (mpps_mtu, gbps_mtu, sent_mtu, got_mtu, median_mtu) = stream_fig(MTU_FRAME, 4)?;
    // Four bursts in flight: enough to keep both pollers busy, well within
    // a 1024-entry ring.
    let echo_mpps_64 = echo_rate(&mut io, MIN_FRAME, plan.stream_secs, 5, 4 * BURST as u64)?;
    let mut hburst = LatencyHist::new();
    let bursts = (plan.pings / 20).max(50);
    let bursts_lost = burst_rtt(&mut io, MTU_FRAME, (bursts, 1), 6, &mut hburst)?;
    // Trains of 2 and 8 bursts back to back: the difference of their round
    // trips is what 6 more bursts cost, the path's request-response rate.
    let (mut htrain_short, mut htrain_long) = (LatencyHist::new(), LatencyHist::new());
    let trains = (bursts / 2).max(50);
    let short = (trains, TRAIN_SHORT);
    let lost_short = burst_rtt(&mut io, MTU_FRAME, short, 7, &mut htrain_short)?;
    let long = (trains, TRAIN_LONG);
    let lost_long = burst_rtt(&mut io, MTU_FRAME, long, 8, &mut htrain_long)?;
    let (p50_short, p50_long) = (
        htrain_short.percentile_us(50.0),
        htrain_long.percentile_us(50.0),
    );
    let frames_between = (TRAIN_LONG - TRAIN_SHORT) * BURST as u64;
    quit(&mut io);
    let stats = io.port.stats()?;
    let in_use_end = io.pool.in_use();
    Ok(serde_json::json!({
        "role": "client",
        "link": format!("{:?}", link.link).to_lowercase(),
        "pings": plan.pings,
        "answered_64": plan.pings - lost64,
        "answered_1k": plan.pings - lost1k,
        "lost_64": lost64,
        "lost_1k": lost1k,
        "p50_us": h64.percentile_us(50.0),
        "p99_us": h64.percentile_us(99.0),
        "p999_us": h64.percentile_us(99.9),
        "max_us": h64.max_us(),
        "mean_us": h64.mean_us(),
        "p50_us_1k": h1k.percentile_us(50.0),
        "p99_us_1k": h1k.percentile_us(99.0),
        "p999_us_1k": h1k.percentile_us(99.9),
        "stream_secs": plan.stream_secs,
        "stream_mpps_64": mpps64,
        "stream_gbps_64": gbps64,
        "stream_sent_64": sent64,
        "stream_received_64": got64,
        "stream_mpps_mtu": mpps_mtu,
        "stream_gbps_mtu": gbps_mtu,
        "stream_sent_mtu": sent_mtu,
        "stream_received_mtu": got_mtu,
        "stream_gbps_mtu_median": median_mtu,
        "stream_window_ms": STREAM_WINDOW_NS / 1_000_000,
        "echo_mpps_64": echo_mpps_64,
        "burst_rtt_p50_us_mtu": hburst.percentile_us(50.0),
        "burst_rtt_p99_us_mtu": hburst.percentile_us(99.0),
        "bursts": bursts,
        "bursts_lost": bursts_lost,
        "train_bursts": [TRAIN_SHORT, TRAIN_LONG],
        "train_rtt_p50_us_mtu": [p50_short, p50_long],
        "trains": trains,
        "trains_lost": lost_short + lost_long,
        "train_gbps_mtu": train_gbps(p50_short, p50_long, frames_between, MTU_FRAME),
        "mbufs_in_use_start": in_use_start,
        "mbufs_in_use_end": in_use_end,
        "port_rx_missed": stats.rx_missed,
    }))
}
