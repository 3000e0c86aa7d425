//! The fabric lab's promises, on small fabrics: the same seed gives the same
//! result; every packet is delivered, dropped at a named place or still in
//! flight; PFC with headroom at the bound never drops in a switch and with
//! too little does; link credits never drop; a victim flow is slower under
//! PFC; ECMP spreads flows over the uplinks; spraying reorders and
//! selective recovery copes.

use engine::time::Duration;
use lab::fabric::scenario::{build, Scenario, ScenarioSpec, Workload};
use lab::fabric::{run_regime, run_regime_in, Buffers, FabricConfig, FabricRegime, RegimeResult};

/// `base` with the `[transport]` lines `keys` ("credits = 36") given over
/// every regime's endpoints, as `rpc-lab -c` gives them.
fn with_transport(base: FabricConfig, keys: &[&str]) -> FabricConfig {
    let text = keys.join("\n");
    let transport: engine::config::TransportConfig = toml::from_str(&text).expect("[transport]");
    let mut given = engine::config::Origins::default();
    for k in keys {
        let key = k.split('=').next().unwrap_or_default().trim();
        given.set(&format!("transport.{key}"), engine::config::Source::File);
    }
    FabricConfig {
        transport,
        given,
        ..base
    }
}

fn workload(s: Scenario, seed: u64, f: impl FnOnce(&mut ScenarioSpec)) -> Workload {
    let mut spec = ScenarioSpec::new(s, seed);
    f(&mut spec);
    build(&spec).unwrap()
}

fn run_with(w: &Workload, r: FabricRegime, cfg: &FabricConfig, seed: u64) -> RegimeResult {
    let mut res = run_regime(w, r, cfg, seed, &mut |_| {}).unwrap();
    res.wall_secs = 0.0; // the one field that is not a function of the inputs
    res
}

fn run(w: &Workload, r: FabricRegime, seed: u64) -> RegimeResult {
    run_with(w, r, &FabricConfig::default(), seed)
}

fn small_incast() -> Workload {
    workload(Scenario::Incast, 1, |s| s.hosts = Some(16))
}

fn conserved(r: &RegimeResult) {
    assert_eq!(
        r.sim_pkts,
        r.delivered_pkts
            + r.drops_switch
            + r.drops_host_ring
            + r.drops_unroutable
            + r.in_flight_end,
        "{r:?}"
    );
}

#[test]
fn same_seed_same_result_and_another_seed_differs() {
    let w = |seed| {
        workload(Scenario::WebSearch, seed, |s| {
            s.hosts = Some(16);
            s.flows = Some(80);
        })
    };
    for r in [FabricRegime::Roce, FabricRegime::Irn] {
        let a = run(&w(5), r, 5);
        assert_eq!(a, run(&w(5), r, 5), "{}", r.name());
        assert_ne!(a, run(&w(6), r, 6), "{}", r.name());
        assert_eq!(a.completed, a.flows, "{a:?}");
    }
}

#[test]
fn every_packet_is_delivered_dropped_at_a_named_place_or_in_flight() {
    let w = small_incast();
    let mut dropped = false;
    for r in FabricRegime::ALL {
        let res = run(&w, r, 1);
        conserved(&res);
        assert_eq!(res.completed, res.flows, "{res:?}");
        dropped |= res.drops_switch > 0;
    }
    assert!(dropped, "the check above never saw a drop");
    // Cut short in the middle of the incast: packets are still in flight.
    let short = FabricConfig {
        grace: engine::time::Duration::from_micros(30),
        ..FabricConfig::default()
    };
    let res = run_with(&w, FabricRegime::Roce, &short, 1);
    conserved(&res);
    assert!(res.in_flight_end > 0 && res.unfinished > 0, "{res:?}");
}

#[test]
fn pfc_headroom_at_the_bound_never_drops_and_below_it_does() {
    let w = workload(Scenario::Incast, 2, |s| s.hosts = Some(64));
    let at_bound = run(&w, FabricRegime::Roce, 2);
    assert_eq!(at_bound.drops_switch, 0, "{at_bound:?}");
    assert!(
        at_bound.pause_frames > 0,
        "no pause: not a test of headroom"
    );
    let thin = FabricConfig {
        pfc_headroom: Some(1514),
        ..FabricConfig::default()
    };
    let below = run_with(&w, FabricRegime::Roce, &thin, 2);
    assert!(below.drops_headroom > 0, "{below:?}");
    conserved(&below);
}

#[test]
fn link_credits_never_drop() {
    // An incast that overflows a lossy switch, and a slow receiver that
    // overflows a lossy host ring.
    let incast = workload(Scenario::Incast, 3, |s| s.hosts = Some(64));
    let ib = run(&incast, FabricRegime::Ib, 3);
    let lossy = run(&incast, FabricRegime::Lossy, 3);
    assert!(lossy.drops_switch > 0, "{lossy:?}");
    assert_eq!(ib.drops_switch + ib.drops_host_ring, 0, "{ib:?}");
    assert_eq!(ib.completed, ib.flows);
    let slow = workload(Scenario::SlowReceiver, 3, |_| {});
    let small_ring = FabricConfig {
        host_ring: 128,
        ..FabricConfig::default()
    };
    let ib = run_with(&slow, FabricRegime::Ib, &small_ring, 3);
    let lossy = run_with(&slow, FabricRegime::Lossy, &small_ring, 3);
    assert!(lossy.drops_host_ring > 0, "{lossy:?}");
    assert_eq!(ib.drops_switch + ib.drops_host_ring, 0, "{ib:?}");
    assert_eq!(ib.completed, ib.flows);
}

#[test]
fn a_victim_flow_is_slower_under_pfc() {
    let w = workload(Scenario::Victim, 4, |_| {});
    let roce = run(&w, FabricRegime::Roce, 4);
    let irn = run(&w, FabricRegime::Irn, 4);
    let (v_roce, v_irn) = (
        roce.victim_goodput_gbps.unwrap(),
        irn.victim_goodput_gbps.unwrap(),
    );
    assert!(roce.links_paused > 0, "{roce:?}");
    assert!(v_roce < v_irn / 2.0, "roce {v_roce} Gb/s, irn {v_irn} Gb/s");
}

#[test]
fn ecmp_spreads_flows_and_spraying_reorders_and_selective_copes() {
    // 32 hosts on 4 leaves x 4 spines: 16 leaf uplinks.
    let w = workload(Scenario::Permutation, 5, |s| s.flow_size = Some(256 << 10));
    let ecmp = run(&w, FabricRegime::Irn, 5);
    assert!(
        ecmp.uplinks_used >= 10,
        "ECMP used {} of 16 uplinks",
        ecmp.uplinks_used
    );
    let spray = run(&w, FabricRegime::Srd, 5);
    assert_eq!(spray.uplinks_used, 16, "{spray:?}");
    // Spraying one flow over four paths reorders its packets; selective
    // recovery acknowledges them out of order and every flow completes.
    assert!(spray.sacks > 0, "no reordering seen: {spray:?}");
    assert_eq!(
        (spray.completed, spray.failed),
        (spray.flows, 0),
        "{spray:?}"
    );
    conserved(&spray);
}

#[test]
fn a_receiver_with_a_service_time_serves_one_frame_per_service_time() {
    // One sender, 400 one-frame requests, a window of 8: the receiver's
    // service time, not the link, sets the rate (the calibration case
    // against a real server with `server.work_ns`).
    let w = workload(Scenario::Incast, 1, |s| {
        s.hosts = Some(1);
        s.flows = Some(400);
        s.flow_size = Some(512);
        s.service = Some(engine::time::Duration::from_micros(5));
    });
    let cfg = with_transport(FabricConfig::default(), &["req_window = 8"]);
    let r = run_with(&w, FabricRegime::Erpc, &cfg, 1);
    assert_eq!(
        (r.completed, r.rpcs, r.drops_host_ring),
        (400, 400, 0),
        "{r:?}"
    );
    // 100 us of warm-up before the first request, then 5 us per request.
    let per_rpc_us = (r.sim_time_us - 100.0) / 400.0;
    assert!((per_rpc_us - 5.0).abs() < 0.05, "{per_rpc_us} us per RPC");
    let fast = run_with(&small_incast_of_one(), FabricRegime::Erpc, &cfg, 1);
    assert!(fast.sim_time_us < r.sim_time_us / 5.0, "{fast:?}");
}

fn small_incast_of_one() -> Workload {
    workload(Scenario::Incast, 1, |s| {
        s.hosts = Some(1);
        s.flows = Some(400);
        s.flow_size = Some(512);
    })
}

#[test]
fn endpoints_that_move_no_payload_bytes_give_the_same_results() {
    // The default (headers only) against endpoints that copy every payload
    // byte in and out, as on a real link; and one pool shared by runs one
    // after another against a fresh one per run.
    let w = workload(Scenario::WebSearch, 4, |s| {
        s.hosts = Some(16);
        s.flows = Some(60);
    });
    let copying = Buffers::copying();
    let cfg = FabricConfig::default();
    for r in [FabricRegime::Lossy, FabricRegime::Irn, FabricRegime::Roce] {
        let headers_only = run(&w, r, 4);
        let mut copied = run_regime_in(&copying, &w, r, &cfg, 4, &mut |_| {}, &|| false).unwrap();
        copied.wall_secs = 0.0;
        assert_eq!(headers_only, copied, "{}", r.name());
        assert_eq!(
            headers_only.completed, headers_only.flows,
            "{headers_only:?}"
        );
    }
    assert!(copying.copies() && copying.pool().stats().allocs > 0);
}

#[test]
fn a_coarse_timer_grain_rolls_a_sessions_timeouts_back_together() {
    // The injected-loss calibration case (docs/fabric.md): one sender, 64
    // KiB requests, window 4, 36 credits, 1 % loss, go-back-N without NAKs
    // (the real run's `transport.nak = false`). A stalled
    // session's holed requests time out within about 100 us of each other.
    // At a real run loop's 500 us grain they roll back at once; at the
    // regimes' 5 us, one by one, and the credits the first one reclaims
    // carry the others further past their holes first.
    let mut w = workload(Scenario::Incast, 7, |s| {
        s.hosts = Some(1);
        s.flows = Some(3000);
        s.flow_size = Some(65536);
    });
    w.host_link_bps = 40_000_000_000;
    w.fabric_link_bps = 40_000_000_000;
    let at_grain = |us| {
        let base = FabricConfig {
            loss: 0.01,
            link_delay: Duration::from_nanos(2_500),
            grace: Duration::from_millis(200),
            ..FabricConfig::default()
        };
        let scan = format!("scan_us = {us}");
        let cfg = with_transport(
            base,
            &["credits = 36", "req_window = 4", "nak = false", &scan],
        );
        let r = run_with(&w, FabricRegime::Lossy, &cfg, 7);
        assert!(r.rollbacks >= 50, "{r:?}");
        r.retransmitted_pkts as f64 / r.rollbacks as f64
    };
    let (fine, coarse) = (at_grain(5), at_grain(500));
    assert!(
        coarse < 0.88 * fine,
        "resent per rollback: {coarse:.1} at 500 us, {fine:.1} at 5 us"
    );
}

/// FCT in us of one flow of `bytes` from one sender on an otherwise idle
/// 1:1 "incast", every link at `link_bps`, the sender capped at `cap_bps`.
fn capped_fct_us(bytes: u64, link_bps: u64, cap_bps: Option<u64>) -> f64 {
    let mut w = workload(Scenario::Incast, 3, |s| {
        s.hosts = Some(1);
        s.flows = Some(1);
        s.flow_size = Some(bytes);
    });
    w.host_link_bps = link_bps;
    w.fabric_link_bps = link_bps;
    let cap = cap_bps.map(|b| format!("rate_cap_gbps = {}", b as f64 / 1e9));
    let cfg = with_transport(
        FabricConfig::default(),
        &cap.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let r = run_with(&w, FabricRegime::Ib, &cfg, 3);
    assert_eq!(r.completed, 1, "{r:?}");
    r.fct_us.p50
}

#[test]
fn a_rate_capped_session_sends_at_its_cap_in_the_fabric() {
    // Frames of 1514 B carry 1500 - 56 = 1444 payload bytes (the headers:
    // engine::wire::HEADERS_LEN). The rate over the sending time: the FCT
    // of 8 MiB less that of one small packet (the round trip and the
    // response), against the 8 MiB's frames at the cap. Before the pacing
    // fix a paced session held about one frame per 1 us wheel grain.
    let dpp = 1514 - engine::wire::HEADERS_LEN as u64;
    let bytes = 8u64 << 20;
    let frames = bytes.div_ceil(dpp);
    let wire_bits = (frames * 1514 - (frames * dpp - bytes)) as f64 * 8.0;
    for (gbps, link) in [(1, 10), (10, 100), (50, 100), (99, 100), (390, 400)] {
        let (cap, link) = (gbps * 1_000_000_000, link * 1_000_000_000);
        let small = capped_fct_us(64, link, Some(cap));
        let big = capped_fct_us(bytes, link, Some(cap));
        let rate = wire_bits / ((big - small) * 1e3);
        let ratio = rate / gbps as f64;
        assert!(
            (0.98..=1.01).contains(&ratio),
            "{gbps} Gb/s cap: sent at {rate:.3} Gb/s ({ratio:.4}x)"
        );
    }
    // And uncapped, the link rate sets it.
    let free = capped_fct_us(bytes, 100_000_000_000, None);
    let capped = capped_fct_us(bytes, 100_000_000_000, Some(50_000_000_000));
    assert!(capped > 1.9 * free, "{capped} vs {free}");
}

#[test]
fn pfc_with_dcqcn_keeps_a_two_to_one_incast_at_line_rate_at_every_speed() {
    // 2:1 incast of 8 MiB flows: PFC alone holds it lossless at line rate,
    // and DCQCN must not throttle it below that. With the paper's 40G
    // constants at any speed and the 12 Gb/s pacing cap, roce got 0.54x of
    // ib at 100 Gb/s and 0.22x at 400 Gb/s.
    for gbps in [10u64, 100, 400] {
        let mut w = workload(Scenario::Incast, 1, |s| {
            s.hosts = Some(2);
            s.flow_size = Some(8 << 20);
        });
        w.host_link_bps = gbps * 1_000_000_000;
        w.fabric_link_bps = gbps * 1_000_000_000;
        let ib = run(&w, FabricRegime::Ib, 1);
        let roce = run(&w, FabricRegime::Roce, 1);
        let nocc = run(&w, FabricRegime::RoceNocc, 1);
        let ratio = roce.goodput_gbps / ib.goodput_gbps;
        assert!(ratio >= 0.9, "{gbps} Gb/s: roce/ib {ratio:.2}");
        assert!(
            nocc.goodput_gbps >= 0.9 * ib.goodput_gbps,
            "{gbps}: {nocc:?}"
        );
        assert_eq!(roce.drops_switch + nocc.drops_switch, 0);
    }
}

#[test]
fn ecn_marks_show_in_regimes_that_do_not_react_to_them() {
    // Every frame is ECN-capable: the 32:1 incast's queue is marked under
    // irn and ib as under roce, though only roce sends CNPs.
    let w = workload(Scenario::Incast, 7, |_| {});
    for r in [FabricRegime::Irn, FabricRegime::Ib, FabricRegime::RoceNocc] {
        let res = run(&w, r, 7);
        assert!(res.ecn_marks > 0, "{r:?}: no marks");
        assert_eq!(res.cnps, 0, "{r:?} sent CNPs");
    }
    assert!(run(&w, FabricRegime::Roce, 7).cnps > 0);
}
