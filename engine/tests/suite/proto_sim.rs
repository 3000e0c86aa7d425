//! End-to-end protocol tests on the in-memory link: every RPC completes with
//! the right bytes under loss, reordering, duplication, delay and a
//! tail-dropping bottleneck, for message sizes from 0 B to 8 MiB; no handler
//! runs twice; no credit leaks.

use crate::proto_common::*;
use engine::fault::DropModel;
use engine::proto::{EndpointConfig, FlowMode};
use engine::sim::ChannelConfig;
use engine::time::Duration;

const MIB: usize = 1 << 20;

/// Sizes every scenario runs: empty, one byte, exactly one packet, one
/// packet plus a byte, 1 MiB.
fn sizes(dpp: usize) -> [usize; 5] {
    [0, 1, dpp, dpp + 1, MIB]
}

fn lossy(i: u8) -> EndpointConfig {
    EndpointConfig {
        mode: FlowMode::Lossy,
        ..cfg(i)
    }
}

/// Runs `rounds` requests of each size (all enqueued at once, so the window
/// and backlog are exercised) over `link`, then checks the invariants.
fn scenario(
    seed: u64,
    link: ChannelConfig,
    extra: &[usize],
    rounds: usize,
    limit: Duration,
) -> Pair {
    let mut p = Pair::new(seed, link, lossy(1), lossy(2));
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    let mut tag = 0;
    for _ in 0..rounds {
        for &len in sizes(dpp).iter().chain(extra) {
            p.app.send(&mut p.sim, CLIENT, p.session, tag, len);
            tag += 1;
        }
    }
    p.run_idle(limit);
    p.check_clean();
    if link.drop != DropModel::None {
        // A seeded-loss scenario must really lose packets, and repair them.
        let lost = p.sim.link_stats(CLIENT, SERVER).dropped_loss
            + p.sim.link_stats(SERVER, CLIENT).dropped_loss;
        let c = p.sim.ep(CLIENT).stats();
        assert!(lost > 0, "seed {seed}: the drop model dropped nothing");
        assert!(c.rollbacks > 0 && c.retransmissions > 0, "no repair: {c:?}");
    }
    p
}

fn uniform(p: f64) -> ChannelConfig {
    ChannelConfig {
        drop: DropModel::Uniform { p },
        ..Default::default()
    }
}

#[test]
fn no_loss_all_sizes_up_to_8mib() {
    let p = scenario(
        1,
        ChannelConfig::default(),
        &[8 * MIB],
        2,
        Duration::from_secs(10),
    );
    let c = p.sim.ep(CLIENT).stats();
    assert_eq!(c.retransmissions, 0);
    assert_eq!(c.rollbacks, 0);
    assert_eq!(c.drops.total(), 0);
    assert_eq!(p.sim.ep(SERVER).stats().drops.total(), 0);
}

#[test]
fn loss_0_1_percent() {
    for seed in [2, 102, 202] {
        scenario(seed, uniform(0.001), &[], 3, Duration::from_secs(20));
    }
}

#[test]
fn loss_1_percent_many_seeds() {
    for seed in 300..306 {
        scenario(seed, uniform(0.01), &[], 2, Duration::from_secs(30));
    }
}

#[test]
fn loss_1_percent_with_8mib() {
    let p = scenario(3, uniform(0.01), &[8 * MIB], 1, Duration::from_secs(60));
    let c = p.sim.ep(CLIENT).stats();
    assert!(c.rollbacks > 0 && c.retransmissions > 0, "{c:?}");
}

#[test]
fn loss_10_percent() {
    for seed in [4, 104, 204] {
        let p = scenario(seed, uniform(0.1), &[], 1, Duration::from_secs(120));
        let c = p.sim.ep(CLIENT).stats();
        assert!(c.rollbacks > 10, "{c:?}");
        // Lossy mode: rollbacks are not violations.
        assert_eq!(c.lossless_violations, 0);
    }
}

#[test]
fn bursty_loss() {
    let link = ChannelConfig {
        drop: DropModel::GilbertElliott {
            p_good_to_bad: 0.002,
            p_bad_to_good: 0.3,
            loss_good: 0.0,
            loss_bad: 0.7,
        },
        ..Default::default()
    };
    scenario(5, link, &[], 2, Duration::from_secs(60));
}

#[test]
fn reordering() {
    let link = ChannelConfig {
        delay: Duration::from_micros(10),
        reorder_p: 0.05,
        reorder_max: Duration::from_micros(300),
        ..Default::default()
    };
    let p = scenario(6, link, &[], 2, Duration::from_secs(60));
    let (c, s) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert!(p.sim.link_stats(CLIENT, SERVER).reordered > 0);
    // Go-back-N drops what arrives early.
    assert!(c.drops.future + s.drops.future > 0, "{c:?} {s:?}");
}

#[test]
fn duplication() {
    let link = ChannelConfig {
        dup_p: 0.1,
        ..Default::default()
    };
    let p = scenario(7, link, &[], 2, Duration::from_secs(20));
    let (c, s) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert!(s.drops.dup_request > 0, "{s:?}");
    assert!(c.drops.dup_response + c.drops.dup_cr > 0, "{c:?}");
}

#[test]
fn long_delay() {
    let link = ChannelConfig {
        delay: Duration::from_millis(2),
        ..Default::default()
    };
    let p = scenario(8, link, &[], 1, Duration::from_secs(20));
    assert_eq!(p.sim.ep(CLIENT).stats().rollbacks, 0);
}

#[test]
fn delay_beyond_rto_still_correct() {
    // RTT 8 ms > rto 5 ms: spurious rollbacks, late answers, no harm.
    let link = ChannelConfig {
        delay: Duration::from_millis(4),
        ..Default::default()
    };
    let p = scenario(9, link, &[], 1, Duration::from_secs(60));
    assert!(p.sim.ep(CLIENT).stats().rollbacks > 0);
}

#[test]
fn mixed_faults() {
    let link = ChannelConfig {
        delay: Duration::from_micros(20),
        drop: DropModel::Uniform { p: 0.01 },
        reorder_p: 0.02,
        reorder_max: Duration::from_micros(100),
        dup_p: 0.02,
        ..Default::default()
    };
    scenario(10, link, &[], 2, Duration::from_secs(60));
}

#[test]
fn bottleneck_tail_drop_in_lossy_mode() {
    // 10 Gb/s, 10 us each way: BDP ~ 17 packets. 256 credits overrun a
    // 16-packet queue: real drops, repaired by go-back-N.
    let link = ChannelConfig {
        delay: Duration::from_micros(10),
        rate_bps: Some(10_000_000_000),
        queue_pkts: 16,
        ..Default::default()
    };
    let big = |i| EndpointConfig {
        session_credits: 256,
        ..lossy(i)
    };
    let mut p = Pair::new(11, link, big(1), big(2));
    for tag in 0..4 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, MIB);
    }
    p.run_idle(Duration::from_secs(30));
    p.check_clean();
    assert!(p.sim.link_stats(CLIENT, SERVER).dropped_queue > 0);
    assert!(p.sim.ep(CLIENT).stats().rollbacks > 0);
}

#[test]
fn credits_at_bdp_avoid_bottleneck_drops() {
    // Same bottleneck, lossless mode with credits at the BDP: no drops.
    let link = ChannelConfig {
        delay: Duration::from_micros(10),
        rate_bps: Some(10_000_000_000),
        queue_pkts: 32,
        ..Default::default()
    };
    let c = engine::proto::bdp_credits(10_000_000_000, Duration::from_micros(22), 1500);
    let bdp = |i| EndpointConfig {
        session_credits: c,
        ..cfg(i)
    };
    let mut p = Pair::new(12, link, bdp(1), bdp(2));
    for tag in 0..2 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, MIB);
    }
    p.run_idle(Duration::from_secs(10));
    p.check_clean();
    assert_eq!(p.sim.link_stats(CLIENT, SERVER).dropped_queue, 0);
    assert_eq!(p.sim.ep(CLIENT).stats().lossless_violations, 0);
}

#[test]
fn one_credit_stalls_but_completes() {
    let one = |i| EndpointConfig {
        session_credits: 1,
        ..lossy(i)
    };
    let mut p = Pair::new(13, uniform(0.01), one(1), one(2));
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    for tag in 0..6 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 5 * dpp + 3);
    }
    p.run_idle(Duration::from_secs(30));
    p.check_clean();
    assert!(p.sim.ep(CLIENT).stats().credit_stalls > 0);
}

#[test]
fn different_response_sizes() {
    let mut p = Pair::new(14, uniform(0.01), lossy(1), lossy(2));
    // Small requests with large responses and the reverse.
    p.app.resp_len = Some(|l| if l < 100 { 300_000 } else { l % 7 });
    for (tag, len) in [0usize, 5, 99, 100, 5000, 200_000].into_iter().enumerate() {
        p.app.send(&mut p.sim, CLIENT, p.session, tag as u64, len);
    }
    p.run_idle(Duration::from_secs(30));
    p.check_clean();
}

#[test]
fn steady_state_reuses_buffers() {
    let mut p = Pair::new(15, ChannelConfig::default(), lossy(1), lossy(2));
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    let mut tag = 0;
    let mut round = |p: &mut Pair| {
        for &len in &sizes(dpp) {
            p.app.send(&mut p.sim, CLIENT, p.session, tag, len);
            tag += 1;
        }
        p.run_idle(Duration::from_secs(5));
    };
    round(&mut p);
    let fresh = (
        p.sim.ep(CLIENT).pool_stats().fresh,
        p.sim.ep(SERVER).pool_stats().fresh,
    );
    for _ in 0..3 {
        round(&mut p);
    }
    p.check_clean();
    let after = (
        p.sim.ep(CLIENT).pool_stats().fresh,
        p.sim.ep(SERVER).pool_stats().fresh,
    );
    assert_eq!(fresh, after, "message buffers allocated in steady state");
}

#[test]
fn late_answers_are_spurious_timeouts_not_violations() {
    // Lossless, RTT 8 ms > rto 5 ms, nothing lost: every timeout probes,
    // the duplicate answer to each probe proves the original was late, and
    // no violation is counted.
    let link = ChannelConfig {
        delay: Duration::from_millis(4),
        ..Default::default()
    };
    let mut p = Pair::new(13, link, cfg(1), cfg(2));
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    for tag in 0..12 {
        p.app.send(
            &mut p.sim,
            CLIENT,
            p.session,
            tag,
            (tag as usize % 3) * dpp + 10,
        );
    }
    p.run_idle(Duration::from_secs(60));
    p.check_clean();
    let c = p.sim.ep(CLIENT).stats();
    assert_eq!(p.sim.link_stats(CLIENT, SERVER).dropped_loss, 0);
    assert!(c.probes_sent > 0, "{c:?}");
    assert_eq!(c.lossless_violations, 0, "{c:?}");
    assert_eq!(c.spurious_timeouts, c.probes_sent, "{c:?}");
}

#[test]
fn real_losses_in_lossless_mode_are_violations_and_are_repaired() {
    // The same link with 2 % loss: some timeouts are real losses.
    let link = ChannelConfig {
        delay: Duration::from_millis(4),
        drop: DropModel::Uniform { p: 0.02 },
        ..Default::default()
    };
    let mut p = Pair::new(14, link, cfg(1), cfg(2));
    for tag in 0..40 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 3000);
    }
    p.run_idle(Duration::from_secs(60));
    p.check_clean();
    let lost = p.sim.link_stats(CLIENT, SERVER).dropped_loss
        + p.sim.link_stats(SERVER, CLIENT).dropped_loss;
    let c = p.sim.ep(CLIENT).stats();
    assert!(lost > 0);
    assert!(c.lossless_violations > 0, "{c:?}");
    // Each loss is judged once at most, and only losses are violations:
    // a timeout is either proven spurious or judged a loss.
    assert!(c.lossless_violations <= lost, "{c:?} lost {lost}");
    assert_eq!(
        c.lossless_violations + c.spurious_timeouts,
        c.probes_sent,
        "{c:?}"
    );
}
