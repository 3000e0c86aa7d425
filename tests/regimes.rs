//! The four regimes of `rpc-bench compare --regimes` on real links with the
//! real binaries (the in-memory tests of each mechanism are in
//! `engine/tests/proto_{selective,pause,cc}.rs`):
//! - af_packet: the slow-receiver preset (a 64-entry receive ring the
//!   kernel overflows) with 1 % injected loss on top: every regime completes
//!   every RPC with every byte checked, and pause mode pauses;
//! - memif: multi-packet requests under 1 % injected loss, the same number
//!   of RPCs per regime: selective repair resends fewer packets than
//!   go-back-N;
//! - memif: DCQCN with the injected ECN marker (CE, CNPs, rate cuts) and
//!   Timely (its rate cut below the link's: the session paced) complete
//!   every RPC;
//! - memif, idle: Timely and DCQCN keep 8 MiB requests near the goodput of
//!   no congestion control, and a rate cap paces the client at the cap.
//!
//! Every run is bounded in time; veth pairs and namespaces are unique per
//! test and removed on drop.

use crate::common;
use crate::common::{assert_complete, run, u, unique, Veth};
use serde_json::Value;
use std::time::Duration;

const BENCH: &str = env!("CARGO_BIN_EXE_rpc-bench");
const LIMIT: Duration = Duration::from_secs(90);
const REGIMES: [&str; 4] = ["lossless", "pause", "lossy", "irn"];

#[test]
fn every_regime_completes_on_the_slow_receiver_with_injected_loss() {
    let name = unique("rgs");
    let veth = Veth::up(&name, &["--netns", &format!("{name}ns")]);
    let args = [
        "compare".to_string(),
        "--no-floor".into(),
        "--link=af_packet".into(),
        format!("--iface={}", veth.name),
        format!(
            "--set=link.client_netns=\"{}\"",
            veth.netns.as_deref().expect("netns")
        ),
        "--regimes=lossless,pause,lossy,irn".into(),
        // The slow receiver (configs/slow-receiver.toml): 8 sessions x 32
        // outstanding small requests, 2 us per request, a 64-entry ring.
        "--workload=throughput".into(),
        "--sessions=8".into(),
        "--window=32".into(),
        "--set=transport.req_window=32".into(),
        "--set=link.rx_desc=64".into(),
        "--set=server.work_ns=2000".into(),
        "--set=transport.bdp=\"config\"".into(),
        "--set=transport.link_gbps=3".into(),
        "--set=transport.rtt_us=5".into(),
        "--multiple=16".into(),
        // ... and 1 % of the frames lost on the server's receive side.
        "--set=faults.drop=uniform".into(),
        "--set=faults.p=0.01".into(),
        // Lossless: a timeout is fault detection and must outlast a stall.
        "--lossless-set=transport.rto_us=100000".into(),
        "--set=transport.session_timeout_ms=10000".into(),
        "--seconds=1".into(),
        "--json".into(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(BENCH, &args, LIMIT);
    r.assert_ok("rpc-bench compare --regimes (slow receiver, 1 % loss)");
    let v = r.json();
    for regime in REGIMES {
        assert_eq!(v[regime]["mode"], regime, "{v}");
        assert_complete(&v[regime], 100);
        assert!(
            u(&v[regime], &["drop_sources", "injected_server"]) > 0,
            "{regime}: {v}"
        );
    }
    // 64 ring entries, 2 x 2 + 32 of headroom: XOFF at 28 waiting frames.
    let pause = &v["pause"];
    assert_eq!(u(pause, &["pause", "xoff"]), 28, "{pause}");
    assert!(
        u(pause, &["pause_frames"]) > 0,
        "the slow receiver never paused: {pause}"
    );
    assert!(u(pause, &["paused_us"]) > 0, "{pause}");
}

/// `compare` on memif with 64 KiB requests (46 packets) under 1 % loss,
/// each regime running the same `max` RPCs.
fn equal_work(regimes: &str, max: u64, extra: &[&str]) -> Value {
    let sock = format!("--socket=/tmp/{}.sock", unique("rgm"));
    let regimes = format!("--regimes={regimes}");
    let max = format!("--set=workload.max_requests={max}");
    let mut args = vec!["compare", sock.as_str(), "--no-floor", regimes.as_str()];
    args.extend(common::LOSS_64K_ARGS);
    args.extend([
        max.as_str(),
        "--seconds=30",
        "--set=workload.warmup_seconds=0",
        "--set=transport.session_timeout_ms=10000",
        "--json",
    ]);
    args.extend_from_slice(extra);
    let r = run(BENCH, &args, LIMIT);
    r.assert_ok("rpc-bench compare (equal work)");
    r.json()
}

#[test]
fn selective_resends_fewer_packets_than_go_back_n_for_the_same_rpcs() {
    let v = equal_work("lossy,irn", 300, &[]);
    for regime in ["lossy", "irn"] {
        assert_complete(&v[regime], 300);
        assert!(u(&v[regime], &["lost"]) > 0, "{regime} lost nothing: {v}");
        // No congestion control, no rate cap: nothing is ever paced (the
        // contrast to the Timely run below).
        assert_eq!(u(&v[regime], &["client_stats", "pacing_waits"]), 0, "{v}");
    }
    let (gbn, sel) = (
        u(&v["lossy"], &["retransmitted_pkts"]),
        u(&v["irn"], &["retransmitted_pkts"]),
    );
    assert!(
        sel > 0 && sel < gbn,
        "irn resent {sel}, lossy (go-back-N) {gbn}: {v}"
    );
}

#[test]
fn dcqcn_and_timely_complete_under_marks_and_loss() {
    // DCQCN: every received ECN-capable frame marked CE with 5 %.
    let v = equal_work(
        "lossy,irn",
        200,
        &["--set=transport.cc=\"dcqcn\"", "--set=faults.ecn_p=0.05"],
    );
    for regime in ["lossy", "irn"] {
        let m = &v[regime];
        assert_complete(m, 200);
        assert!(u(m, &["ecn_marks"]) > 0, "{regime}: no CE seen: {m}");
        assert!(u(m, &["cnps"]) > 0, "{regime}: no CNP sent: {m}");
        assert!(u(m, &["client_stats", "cnps_received"]) > 0, "{m}");
    }
    // Timely completes under loss too. It no longer cuts the rate here, by
    // design (issue 33): on this idle memif link the only delay is the
    // senders' own queue and the host's stalls, and a delay now counts only
    // once a packet sent after it began comes back late as well. Before,
    // this test asserted the cut (pacing waits) that made Timely run an
    // idle link at 0.08-0.41x. Its reaction to a real queue is checked in
    // the simulator (engine/tests/suite/proto_cc.rs,
    // `timely_lowers_the_rate_when_rtt_rises_and_recovers`).
    let v = equal_work("irn", 200, &["--set=transport.cc=\"timely\""]);
    let m = &v["irn"];
    assert_complete(m, 200);
    assert_eq!(u(m, &["violations"]), 0, "{m}");
}

/// One `rpc-bench run` of 8 MiB requests over memif for 1 s with `extra`
/// settings, the link taken as 100 Gb/s with 128 credits (no floor, so
/// every run gets the same credits); returns its JSON summary.
fn large_on_memif(extra: &[&str]) -> Value {
    let sock = format!("--socket=/tmp/{}.sock", unique("rgc"));
    let mut args = vec![
        "run",
        sock.as_str(),
        "--no-floor",
        "--workload=large",
        "--msg-size=8388608",
        "--resp-size=32",
        "--seconds=1",
        "--set=workload.verify=false",
        "--set=transport.bdp=\"config\"",
        "--set=transport.link_gbps=100",
        "--set=transport.credits=128",
        "--json",
    ];
    args.extend_from_slice(extra);
    let r = run(BENCH, &args, LIMIT);
    r.assert_ok("rpc-bench run (8 MiB over memif)");
    r.json()
}

#[test]
fn congestion_control_and_a_rate_cap_do_what_they_say_on_an_idle_link() {
    // Alone on memif nothing is congested: Timely and DCQCN must leave the
    // session near what it gets without them (once, Timely held it at 6 %).
    // The bound is loose: this VM's stalls move any one timed run.
    // memif on this VM also flips between a fast and a slow state from run
    // to run (8 MiB goodput 12-15 or 45-75 Gb/s, with or without cc, on
    // fb62c17 as now): a ratio under the bound is measured again, up to
    // three runs a side, each side keeping its best, and the bound, 0.2x,
    // is what a slow state against a fast one can still give while the
    // failure it guards (Timely holding an idle session at 6 %, in every
    // run) stays far below it. Most runs pass at the first: 5 runs, not 13.
    let gbps = |v: &Value| v["gbps"].as_f64().unwrap_or(0.0);
    let better = |best: &mut Value, extra: &[&str]| {
        let v = large_on_memif(extra);
        if gbps(&v) > gbps(best) {
            *best = v;
        }
    };
    let mut none = large_on_memif(&[]);
    assert!(gbps(&none) > 1.0, "{none}");
    for cc in ["timely", "dcqcn", "nscc"] {
        let set = format!("--set=transport.cc=\"{cc}\"");
        let mut v = large_on_memif(&[set.as_str()]);
        for _ in 0..2 {
            if gbps(&v) > 0.2 * gbps(&none) {
                break;
            }
            better(&mut none, &[]);
            better(&mut v, &[set.as_str()]);
        }
        let ratio = gbps(&v) / gbps(&none);
        assert!(ratio > 0.2, "{cc}: {ratio:.2}x of cc=none: {v}");
    }
    // A 2 Gb/s cap: the client's wire rate sits at it (the report says
    // how close), never above it. Only the upper bound is tight here: a
    // paced session does not burst to catch up after the scheduler took
    // its core (two grains of slack), and its credits stall while the
    // server's core is taken, so the wire rate falls with CPU contention:
    // 0.98x alone on this 2-core machine, 0.28-0.37x with a third busy
    // process (and a 5 Gb/s cap at the 5 ms RTO resent into the cap). The
    // pacer's exact rate (>= 0.98 R from 1 to 390 Gb/s) is checked by its
    // unit tests and the fabric's, which take time from the caller.
    let v = large_on_memif(&[
        "--set=transport.rate_cap_gbps=2",
        "--set=transport.rto_us=100000",
    ]);
    assert!(u(&v, &["client_stats", "pacing_waits"]) > 0, "{v}");
    let r = v["ratio_cap"].as_f64().expect("ratio_cap reported");
    assert!(
        (0.1..=1.02).contains(&r),
        "paced at {r:.3}x of the cap: {v}"
    );
}
