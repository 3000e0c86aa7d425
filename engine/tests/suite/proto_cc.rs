//! Congestion control on the in-memory link, end to end through the
//! endpoint: Timely lowers a session's rate when its RTT rises behind a
//! slow bottleneck and recovers once the queue is gone; DCQCN cuts on the
//! CNPs a marking bottleneck causes and recovers without them; NSCC cuts
//! its window on ECN (echoed by CNPs) behind a marking bottleneck, holds
//! the rate near the bottleneck's and grows back without marks; paced
//! sessions wait on the timing wheel and every RPC still completes.

use crate::proto_common::*;
use engine::proto::{CcKind, EndpointConfig, FlowMode, SessionId};
use engine::sim::ChannelConfig;
use engine::time::Duration;

const LINK_BPS: u64 = 10_000_000_000;

fn cc_cfg(i: u8, cc: CcKind) -> EndpointConfig {
    EndpointConfig {
        mode: FlowMode::Lossy,
        session_credits: 64,
        cc,
        link_bps: LINK_BPS,
        ..cfg(i)
    }
}

/// A 1 Gb/s bottleneck (a tenth of what the sender believes) with a deep
/// queue, optionally ECN-marking from 20 packets on.
fn bottleneck(mark: Option<usize>) -> ChannelConfig {
    ChannelConfig {
        delay: Duration::from_micros(5),
        rate_bps: Some(1_000_000_000),
        queue_pkts: 4096,
        ecn_mark_pkts: mark,
        ..Default::default()
    }
}

/// Sends `n` requests of `len` bytes on `s` and runs until idle.
fn load(p: &mut Pair, s: SessionId, first_tag: u64, n: u64, len: usize) {
    for tag in first_tag..first_tag + n {
        p.app.send(&mut p.sim, CLIENT, s, tag, len);
    }
    p.run_idle(Duration::from_secs(60));
}

#[test]
fn timely_lowers_the_rate_when_rtt_rises_and_recovers() {
    let mut p = Pair::new(
        1,
        bottleneck(None),
        cc_cfg(1, CcKind::Timely),
        cc_cfg(2, CcKind::Timely),
    );
    p.app.resp_len = Some(|_| 32);
    let s = p.session;
    assert_eq!(p.sim.ep(CLIENT).session_rate_bps(s), Some(LINK_BPS));
    // 64 credits of 1.5 kB behind 1 Gb/s: up to ~0.8 ms of queue, RTTs
    // far above Timely's t_low (50 us) and rising.
    load(&mut p, s, 0, 40, 64 << 10);
    let congested = p.sim.ep(CLIENT).session_rate_bps(s).unwrap();
    assert!(congested < LINK_BPS / 2, "rate {congested} did not drop");
    let c = p.sim.ep(CLIENT).stats();
    assert!(
        c.pacing_waits > 0,
        "a limited session was never paced: {c:?}"
    );
    // Small requests one at a time: no queue, RTT near the 10 us floor.
    for tag in 100..400 {
        load(&mut p, s, tag, 1, 32);
    }
    let recovered = p.sim.ep(CLIENT).session_rate_bps(s).unwrap();
    assert!(
        recovered > congested * 2,
        "no recovery: {congested} -> {recovered}"
    );
    p.check_clean();
}

#[test]
fn dcqcn_cuts_on_cnps_and_recovers() {
    let mut p = Pair::new(
        2,
        bottleneck(Some(20)),
        cc_cfg(1, CcKind::Dcqcn),
        cc_cfg(2, CcKind::Dcqcn),
    );
    p.app.resp_len = Some(|_| 32);
    let s = p.session;
    load(&mut p, s, 0, 40, 64 << 10);
    let (c, sv) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert!(p.sim.link_stats(CLIENT, SERVER).ecn_marked > 0);
    assert!(sv.ecn_marks > 0 && sv.cnps_sent > 0, "{sv:?}");
    assert_eq!(
        c.cnps_received, sv.cnps_sent,
        "a CNP was lost on a lossless link"
    );
    let cut = p.sim.ep(CLIENT).session_rate_bps(s).unwrap();
    assert!(cut < LINK_BPS / 2, "rate {cut} was not cut");
    // No marks for a while: DCQCN's timers raise the rate back, all the
    // way to line rate, where the limiter lets the session go.
    p.sim.advance(&mut p.app, Duration::from_millis(50));
    load(&mut p, s, 100, 1, 32);
    let back = p.sim.ep(CLIENT).session_rate_bps(s).unwrap();
    assert!(back > cut * 2, "no recovery: {cut} -> {back}");
    p.sim.advance(&mut p.app, Duration::from_millis(200));
    load(&mut p, s, 200, 1, 32);
    assert_eq!(p.sim.ep(CLIENT).session_rate_bps(s), Some(LINK_BPS));
    p.check_clean();
}

#[test]
fn without_cc_nothing_is_paced_or_marked() {
    let mut p = Pair::new(
        3,
        bottleneck(Some(20)),
        cc_cfg(1, CcKind::None),
        cc_cfg(2, CcKind::None),
    );
    p.app.resp_len = Some(|_| 32);
    let s = p.session;
    load(&mut p, s, 0, 10, 64 << 10);
    let (c, sv) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert_eq!(p.sim.ep(CLIENT).session_rate_bps(s), None);
    assert_eq!((c.pacing_waits, sv.cnps_sent), (0, 0));
    // Frames are ECN-capable in every mode: the marks show the queue even
    // though nobody reacts to them.
    let marked = p.sim.link_stats(CLIENT, SERVER).ecn_marked;
    assert!(marked > 0 && sv.ecn_marks == marked, "{marked} {sv:?}");
    p.check_clean();
}

/// Virtual time `n` requests of `len` bytes take on a 40 Gb/s link that
/// the sender takes for 80 Gb/s (as `rpc-bench` on memif takes the raw
/// floor's rate, above what RPCs get), with credits enough to keep a
/// standing queue of their own (256 frames: 77 us, past Timely's t_low).
fn idle_link_time(cc: CcKind, seed: u64) -> Duration {
    let mut p = forty_gig_pair(cc, seed, 256, 80_000_000_000);
    timed_load(&mut p, 16)
}

/// A client and server on an idle 40 Gb/s link with 2 us of delay, each
/// with `credits` per session, taking the link for `sender_bps`, 32-byte
/// answers; configured as real hosts are (`host_stalls`: Timely takes a
/// silence of the answers longer than `t_high` for a stall).
fn forty_gig_pair(cc: CcKind, seed: u64, credits: u16, sender_bps: u64) -> Pair {
    let link = ChannelConfig {
        delay: Duration::from_micros(2),
        rate_bps: Some(40_000_000_000),
        queue_pkts: 4096,
        ..Default::default()
    };
    let ep = |i| EndpointConfig {
        session_credits: credits,
        link_bps: sender_bps,
        base_rtt: Duration::from_micros(15),
        host_stalls: true,
        ..cc_cfg(i, cc)
    };
    let mut p = Pair::new(seed, link, ep(1), ep(2));
    p.app.resp_len = Some(|_| 32);
    p
}

/// Virtual time `n` requests of 1 MiB take on `p`, all completed, clean.
fn timed_load(p: &mut Pair, n: usize) -> Duration {
    let s = p.session;
    let start = p.sim.now();
    load(p, s, 0, n as u64, 1 << 20);
    assert_eq!(p.app.completed.len(), n);
    p.check_clean();
    p.sim.now().saturating_since(start)
}

#[test]
fn congestion_control_leaves_an_uncongested_link_alone() {
    // One sender, nobody else: its own credits queue at the bottleneck,
    // which is no congestion to back off from. Before the fixes of issue
    // 20 Timely held such a session at a few percent of the link.
    let none = idle_link_time(CcKind::None, 4);
    for cc in [CcKind::Timely, CcKind::Dcqcn, CcKind::Nscc] {
        let t = idle_link_time(cc, 4);
        let ratio = none.as_nanos() as f64 / t.as_nanos() as f64;
        assert!(ratio >= 0.9, "{cc:?}: {ratio:.3}x the goodput of none");
    }
}

/// eRPC's additive step (`kAddRate`, 5 MB/s), Timely's `add_rate_bps`.
const TIMELY_ADD_BPS: u64 = 40_000_000;

/// Sends 40 requests of 64 KiB on a fresh Timely pair over `link` and
/// samples the client session's rate and the frames in flight every 5 us
/// of virtual time until idle.
fn timely_trace(link: ChannelConfig) -> (Pair, Vec<(usize, u64)>) {
    let mut p = Pair::new(
        5,
        link,
        cc_cfg(1, CcKind::Timely),
        cc_cfg(2, CcKind::Timely),
    );
    p.app.resp_len = Some(|_| 32);
    let s = p.session;
    for tag in 0..40 {
        p.app.send(&mut p.sim, CLIENT, s, tag, 64 << 10);
    }
    let mut trace = Vec::new();
    let deadline = p.sim.now() + Duration::from_secs(10);
    loop {
        let idle = p.sim.run_for(&mut p.app, Duration::from_micros(5));
        let rate = p.sim.ep(CLIENT).session_rate_bps(s).unwrap();
        trace.push((p.sim.in_flight(), rate));
        if idle {
            break;
        }
        assert!(p.sim.now() < deadline, "not idle");
    }
    assert_eq!(p.app.completed.len(), 40);
    (p, trace)
}

/// Timely's mechanism, not only its outcome: the same load leaves the rate
/// alone when no queue builds (RTT below t_low: eRPC's bypass), and cuts it
/// as soon as a queue builds behind a bottleneck (the RTT and its gradient
/// rise; nothing is lost or marked, so the RTT is the only signal), then
/// holds it around the bottleneck's rate, pacing the session; once the
/// queue is gone, every RTT sample below t_low adds the same fixed step
/// (additive increase) until line rate.
#[test]
fn timely_cuts_on_a_rising_rtt_and_recovers_additively() {
    // No bottleneck: no queue, no RTT rise, no cut, no pacing.
    let fast = ChannelConfig {
        delay: Duration::from_micros(5),
        ..Default::default()
    };
    let (p, trace) = timely_trace(fast);
    assert!(
        trace.iter().all(|&(_, r)| r == LINK_BPS),
        "cut without a queue"
    );
    assert_eq!(p.sim.ep(CLIENT).stats().pacing_waits, 0);

    // Behind a 1 Gb/s bottleneck: the first window (64 credits) queues.
    let (mut p, trace) = timely_trace(bottleneck(None));
    let l = p.sim.link_stats(CLIENT, SERVER);
    assert_eq!(
        (l.dropped_queue, l.dropped_loss, l.ecn_marked),
        (0, 0, 0),
        "a signal other than the RTT"
    );
    let first_cut = trace
        .iter()
        .position(|&(_, r)| r < LINK_BPS)
        .expect("never cut");
    // Cut while the window still waits at the bottleneck, one queued round
    // trip after the RTT first passed t_low (12 us a frame at 1 Gb/s: the
    // samples pass t_low after ~4 frames, and the first packet sent after
    // that waits behind the 64-frame window, ~0.8 ms): Timely counts a
    // delay once it stands for a round trip, so that a host's stall is not
    // taken for a queue (`cc::timely`). Each update at most halves the rate,
    // and the updates that follow while the queue stays take it down to a
    // tenth within 200 us.
    assert!(first_cut < 200, "first cut after {} us", first_cut * 5);
    let (queued, cut) = trace[first_cut];
    assert!(queued > 32, "queue at the cut: {queued}");
    assert!(cut >= LINK_BPS / 2, "more than halved at once: {cut}");
    let low = trace[first_cut..first_cut + 40]
        .iter()
        .map(|&(_, r)| r)
        .min()
        .unwrap();
    assert!(low < LINK_BPS / 10, "lowest rate in 200 us: {low}");
    // Then the rate follows the queue around the bottleneck's 1 Gb/s, far
    // below the 10 Gb/s the sender believes in, and the session is paced.
    let steady = &trace[trace.len() / 4..];
    let mean = steady.iter().map(|&(_, r)| r as f64).sum::<f64>() / steady.len() as f64;
    assert!(
        (250e6..4e9).contains(&mean),
        "mean rate {mean:.3e} not near the 1 Gb/s bottleneck"
    );
    assert!(steady.iter().all(|&(_, r)| r < LINK_BPS / 2));
    assert!(p.sim.ep(CLIENT).stats().pacing_waits > 0);

    // The queue is gone: one small request at a time, RTT near the 10 us
    // floor, below t_low: each sample adds exactly the additive step,
    // whatever the rate already is, until the rate is back at line rate.
    let s = p.session;
    let mut rate = p.sim.ep(CLIENT).session_rate_bps(s).unwrap();
    let start = rate;
    let mut steps = 0;
    for tag in 100..1000 {
        load(&mut p, s, tag, 1, 32);
        let next = p.sim.ep(CLIENT).session_rate_bps(s).unwrap();
        assert_eq!(
            next,
            (rate + TIMELY_ADD_BPS).min(LINK_BPS),
            "step {steps} from {rate}"
        );
        rate = next;
        steps += 1;
        if rate == LINK_BPS {
            break;
        }
    }
    assert_eq!(rate, LINK_BPS, "not back at line rate after {steps} steps");
    assert_eq!(steps, (LINK_BPS - start).div_ceil(TIMELY_ADD_BPS));
    p.check_clean();
}

/// NSCC behind the 1 Gb/s bottleneck that marks from 20 packets on: the
/// marks come back as CNPs, and the window (as a rate, `cwnd / base_rtt`)
/// falls from the link rate to around the bottleneck's and holds there
/// while the queue lasts; every RPC completes, nothing is dropped. Then,
/// unmarked, one small request at a time, it grows back to line rate.
#[test]
fn nscc_converges_behind_a_marking_bottleneck_and_recovers() {
    let mut p = Pair::new(
        6,
        bottleneck(Some(20)),
        cc_cfg(1, CcKind::Nscc),
        cc_cfg(2, CcKind::Nscc),
    );
    p.app.resp_len = Some(|_| 32);
    let s = p.session;
    assert_eq!(p.sim.ep(CLIENT).session_rate_bps(s), Some(LINK_BPS));
    for tag in 0..40 {
        p.app.send(&mut p.sim, CLIENT, s, tag, 64 << 10);
    }
    let mut trace = Vec::new();
    let deadline = p.sim.now() + Duration::from_secs(10);
    while !p.sim.run_for(&mut p.app, Duration::from_micros(5)) {
        trace.push(p.sim.ep(CLIENT).session_rate_bps(s).unwrap());
        assert!(p.sim.now() < deadline, "not idle");
    }
    assert_eq!(p.app.completed.len(), 40);
    let (c, sv) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert!(sv.cnps_sent > 0 && c.cnps_received > 0, "{sv:?}");
    let l = p.sim.link_stats(CLIENT, SERVER);
    assert_eq!((l.dropped_queue, l.dropped_loss), (0, 0));
    assert!(c.pacing_waits > 0, "a cut window never paced the session");
    // Converged: after the first quarter, the mean rate sits near the
    // bottleneck's 1 Gb/s, far below the 10 Gb/s the sender believes in.
    let steady = &trace[trace.len() / 4..];
    let mean = steady.iter().map(|&r| r as f64).sum::<f64>() / steady.len() as f64;
    assert!(
        (250e6..4e9).contains(&mean),
        "mean rate {mean:.3e} not near the 1 Gb/s bottleneck"
    );
    let cut = *trace.last().unwrap();
    assert!(cut < LINK_BPS / 2, "window not cut: {cut}");
    // No queue, no marks: the window grows back (proportional and fast
    // increase) to the link rate.
    for tag in 100..3000 {
        load(&mut p, s, tag, 1, 32);
        if p.sim.ep(CLIENT).session_rate_bps(s) == Some(LINK_BPS) {
            break;
        }
    }
    assert_eq!(p.sim.ep(CLIENT).session_rate_bps(s), Some(LINK_BPS));
    p.check_clean();
}

/// Virtual time `n` requests of 1 MiB take on an idle 40 Gb/s link whose
/// client stalls for `stall` at the start of every 2 ms (a descheduled
/// process: the answers wait, then arrive at once).
fn stalled_link_time(cc: CcKind, stall: Duration) -> Duration {
    stalled_host_time(cc, CLIENT, Duration::from_millis(2), stall).0
}

/// Virtual time 32 requests of 1 MiB take on an idle 40 Gb/s link whose
/// `node` stalls for `stall` at the start of every `period`, and the
/// client's rate cuts.
fn stalled_host_time(
    cc: CcKind,
    node: usize,
    period: Duration,
    stall: Duration,
) -> (Duration, u64) {
    let mut p = forty_gig_pair(cc, 7, 64, 40_000_000_000);
    p.sim.set_stalls(node, period, stall);
    let t = timed_load(&mut p, 32);
    (t, p.sim.ep(CLIENT).stats().cc_rate_cuts)
}

/// The cause of Timely's 0.08-0.41x on an idle memif link on this
/// repository's AMD EPYC VM, reproduced: the host stalls (0.3 ms and 1 ms
/// every 2 ms; the samples there reached 2-16 ms), every answer in flight comes
/// back that late at once, and Timely took each burst for a queue (above
/// t_low, a gradient of many min RTTs: a halving each time).
/// Now a delay counts once a packet sent after it began comes
/// back late too; these never do. NSCC does not cut on delay without ECN.
#[test]
fn congestion_control_leaves_a_stalling_host_on_an_idle_link_alone() {
    for stall in [Duration::from_micros(300), Duration::from_millis(1)] {
        let none = stalled_link_time(CcKind::None, stall);
        for cc in [CcKind::Timely, CcKind::Nscc] {
            let t = stalled_link_time(cc, stall);
            let ratio = none.as_nanos() as f64 / t.as_nanos() as f64;
            assert!(
                ratio >= 0.9,
                "{cc:?}, {stall:?} stalls: {ratio:.3}x the goodput of none"
            );
        }
    }
}

/// A host that runs only a few microseconds between long stalls, as a
/// poll-mode process on a 2-vCPU VM does while other builds take the cores
/// (Timely on an idle memif link there: about 50 rate cuts a second, most
/// on samples of 2-8 ms). A packet sent in one short run window is answered
/// only after the next stall, so the late delay "stands for a round trip"
/// and the round-trip rule alone takes it for a queue: with that rule only,
/// Timely cut its rate here (the assertion on cuts fails). Now the answer
/// stream's silences are taken off the samples (`Timely::on_answer`).
/// Either end may be the one that stalls. Timely and NSCC hold >= 0.9x of
/// none's goodput and Timely cuts nothing.
#[test]
fn congestion_control_leaves_a_host_stalling_back_to_back_alone() {
    let ms = Duration::from_millis;
    let us = Duration::from_micros;
    for (node, period, stall) in [
        (CLIENT, ms(2), us(1_996)),
        (SERVER, ms(2), us(1_996)),
        (CLIENT, ms(4), us(3_990)),
    ] {
        let (none, _) = stalled_host_time(CcKind::None, node, period, stall);
        for cc in [CcKind::Timely, CcKind::Nscc] {
            let (t, cuts) = stalled_host_time(cc, node, period, stall);
            let ratio = none.as_nanos() as f64 / t.as_nanos() as f64;
            let at = format!("{cc:?}, node {node} stalls {stall:?} every {period:?}");
            assert!(ratio >= 0.9, "{at}: {ratio:.3}x the goodput of none");
            if cc == CcKind::Timely {
                assert_eq!(cuts, 0, "{at}: Timely cut its rate");
            }
        }
    }
}
