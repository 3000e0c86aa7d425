//! `rpc-bench fabric` end to end (the `lab` crate's command, which
//! `rpc-lab` runs too; lab/tests/suite/rpc_lab.rs checks that binary): the real
//! binary on small simulated fabrics (no DPDK, no devices, well under a
//! second each): one seed gives
//! byte-identical JSON (apart from the stamp: build, time, host, settings),
//! the JSON has one result per regime with the counters
//! the docs name, `--timing` adds the wall-clock rate, `--ring` sizes the
//! hosts' receive rings, `--seeds N` reports intervals over N seeds (the
//! same bytes twice, each seed's result the single-seed run's), bad input
//! is an error (exit 1, the problem named, no panic), the `-c` file works
//! under flag overrides and rejects unknown keys, and `--plot` writes an
//! SVG.

use crate::common;
use crate::common::{run, Run, STAMP};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

const BENCH: &str = env!("CARGO_BIN_EXE_rpc-bench");
const LIMIT: Duration = Duration::from_secs(120);
/// A small incast: 8 senders of 64 KiB into one receiver.
const SMALL: [&str; 6] = [
    "--scenario",
    "incast",
    "--hosts",
    "8",
    "--flow-size",
    "65536",
];

fn fabric(args: &[&str]) -> Run {
    let mut v = vec!["fabric"];
    v.extend_from_slice(args);
    run(BENCH, &v, LIMIT)
}

/// A path under the system temp folder unique to this test process.
fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("fabric-cli-{}-{name}", std::process::id()))
}

/// Stdout's last line, the one `--json` promises to be the report.
fn last_line_json(r: &Run) -> Value {
    r.assert_ok("rpc-bench fabric");
    let line = r.stdout.lines().last().expect("stdout is empty");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {line}"))
}

/// The report without its stamp (checked to be there): what the seed and
/// the simulated fabric determine, byte for byte.
fn result_of(r: &Run) -> String {
    let mut v = last_line_json(r);
    let o = v.as_object_mut().expect("the report is an object");
    for k in STAMP {
        assert!(o.remove(k).is_some(), "no {k} in the report: {}", r.stdout);
    }
    v.to_string()
}

#[test]
fn one_seed_gives_the_same_bytes_and_another_seed_differs() {
    let args = [
        "--scenario",
        "incast",
        "--hosts",
        "8",
        "--regimes",
        "irn,lossy",
        "--seed",
        "3",
        "--json",
    ];
    let a = fabric(&args);
    let b = fabric(&args);
    a.assert_ok("first run");
    b.assert_ok("second run");
    assert_eq!(result_of(&a), result_of(&b), "same seed, different output");
    // Endpoints that copy every payload byte reach the same result.
    let copied = fabric(&[&args[..], &["--copy-payload"]].concat());
    copied.assert_ok("--copy-payload");
    assert_eq!(
        result_of(&a),
        result_of(&copied),
        "--copy-payload changed the result"
    );
    assert_eq!(
        a.stdout.lines().count(),
        1,
        "--json: stdout is the JSON line alone"
    );
    // A random workload (Poisson arrivals, sizes from a CDF) follows its seed.
    let ws = |seed: &str| {
        let r = fabric(&[
            "--scenario",
            "websearch",
            "--hosts",
            "16",
            "--flows",
            "60",
            "--regimes",
            "irn",
            "--seed",
            seed,
            "--json",
        ]);
        result_of(&r)
    };
    assert_ne!(
        ws("1"),
        ws("2"),
        "seeds 1 and 2 gave the same websearch run"
    );
}

#[test]
fn json_has_one_result_per_regime_with_every_counter() {
    let mut args = SMALL.to_vec();
    args.extend(["--regimes", "roce,irn,lossy", "--seed", "5", "--json"]);
    let v = last_line_json(&fabric(&args));
    assert_eq!(v["scenario"], "incast", "{v}");
    assert_eq!(v["seed"], 5, "{v}");
    assert!(
        v.get("sim_pkts_per_sec").is_none(),
        "wall-clock rate without --timing: {v}"
    );
    let results = v["results"].as_array().expect("results is an array");
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["regime"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(names, ["roce", "irn", "lossy"]);
    for r in results {
        for key in [
            "goodput_gbps",
            "mean_flow_gbps",
            "buckets",
            "drops_switch",
            "drops_host_ring",
            "pause_frames",
            "paused_us",
            "links_paused",
            "ecn_marks",
            "retransmitted_pkts",
            "rollbacks",
            "spurious_retransmits",
            "peak_buffer_bytes",
        ] {
            assert!(
                r.get(key).is_some(),
                "{} has no {key}: {r}",
                names.join(",")
            );
        }
        for p in ["p50", "p99", "p999"] {
            assert!(r["slowdown"][p].as_f64().is_some(), "slowdown.{p}: {r}");
        }
        assert!(
            r["buckets"].as_array().is_some_and(|b| !b.is_empty()),
            "{r}"
        );
        assert_eq!(r["flows"], 8, "{r}");
        assert!(
            r.get("wall_secs").is_none(),
            "wall time is not part of the JSON: {r}"
        );
    }
    args.push("--timing");
    let v = last_line_json(&fabric(&args));
    let rate = v["sim_pkts_per_sec"]
        .as_f64()
        .expect("--timing adds sim_pkts_per_sec");
    assert!(rate > 0.0, "{v}");
}

#[test]
fn ring_sets_every_hosts_receive_ring() {
    // 8 sessions x 32 outstanding one-frame requests into a receiver that
    // takes one every 4.59 us: 256 frames fit a 1024-entry ring, not a
    // 64-entry one (the overrun slow-receiver calibration, smaller).
    let drops = |ring: &str| {
        let r = fabric(&[
            "--scenario",
            "incast",
            "--hosts",
            "8",
            "--flows",
            "200",
            "--flow-size",
            "32",
            "--set",
            "transport.req_window=32",
            "--set",
            "transport.credits=32",
            "--service-us",
            "4.59",
            "--regimes",
            "lossy",
            "--ring",
            ring,
            "--json",
        ]);
        let v = last_line_json(&r);
        let res = &v["results"][0];
        assert_eq!(res["completed"], 1600, "{res}");
        res["drops_host_ring"].as_u64().unwrap()
    };
    assert!(drops("64") > 0, "a 64-entry ring overflows");
    assert_eq!(drops("1024"), 0, "256 frames fit 1024 entries");
}

#[test]
fn seeds_report_intervals_and_the_same_bytes_twice() {
    let mut args = SMALL.to_vec();
    args.extend(["--regimes", "roce,lossy", "--seeds", "3"]);
    let table = fabric(&args);
    table.assert_ok("--seeds 3");
    assert!(table.stdout.contains("seeds 1-3"), "{}", table.stdout);
    assert!(
        table.stdout.contains("confidence interval"),
        "{}",
        table.stdout
    );
    for regime in ["roce", "lossy"] {
        let row = table
            .stdout
            .lines()
            .find(|l| l.starts_with(regime) && !l.contains("by size"))
            .unwrap_or_else(|| panic!("no {regime} row: {}", table.stdout));
        assert!(row.matches(" ±").count() >= 10, "{row}");
    }

    args.push("--json");
    let a = fabric(&args);
    let b = fabric(&args);
    a.assert_ok("first --seeds run");
    assert_eq!(result_of(&a), result_of(&b), "same seeds, different JSON");
    assert_eq!(a.stdout.lines().count(), 1, "stdout is the JSON line alone");
    let v = last_line_json(&a);
    assert_eq!(v["seeds"], serde_json::json!([1, 2, 3]), "{v}");
    let regimes = v["regimes"].as_array().expect("regimes is an array");
    assert_eq!(regimes.len(), 2, "{v}");
    for r in regimes {
        for key in [
            "completed",
            "goodput_gbps",
            "mean_flow_gbps",
            "slowdown_p50",
            "slowdown_p99",
            "slowdown_p999",
            "drops_switch",
            "drops_host_ring",
            "pause_frames",
            "ecn_marks",
            "retransmitted_pkts",
        ] {
            let s = &r["stats"][key];
            assert_eq!(s["n"], 3, "{key}: {r}");
            assert_eq!(s["values"].as_array().map(Vec::len), Some(3), "{key}");
            assert!(s["mean"].as_f64().is_some(), "{key}: {s}");
            assert!(s["ci95"].as_f64().is_some_and(|h| h >= 0.0), "{key}: {s}");
        }
        assert_eq!(r["results"].as_array().map(Vec::len), Some(3), "{r}");
    }

    // Each seed's result is that seed's single run; one seed is the
    // single-seed report, byte for byte.
    let mut one = SMALL.to_vec();
    one.extend(["--regimes", "roce,lossy", "--seed", "2", "--json"]);
    let single = fabric(&one);
    let s = last_line_json(&single);
    assert_eq!(regimes[0]["results"][1], s["results"][0]);
    assert_eq!(regimes[1]["results"][1], s["results"][1]);
    one.extend(["--seeds", "1"]);
    let seeds1 = fabric(&one);
    seeds1.assert_ok("--seeds 1");
    assert_eq!(
        result_of(&seeds1),
        result_of(&single),
        "--seeds 1 changed the report"
    );
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let cases: [(&[&str], &str); 15] = [
        (&["--scenario", "bogus"], "bogus"),
        (&["--scenario", "incast", "--regimes", "irn,pfc"], "pfc"),
        (
            &["--scenario", "websearch", "--hosts", "16", "--load", "2"],
            "load",
        ),
        (&["--scenario", "incast", "--load", "0.5"], "load"),
        (&["--regimes", "irn"], "scenario"),
        (&["--scenario", "incast", "--service-us", "0"], "service"),
        (&["--scenario", "websearch", "--service-us", "2"], "service"),
        (&["--scenario", "incast", "--service-us=-1"], "service"),
        (&["--scenario", "incast", "--ring", "0"], "ring"),
        (&["--scenario", "incast", "--seeds", "0"], "--seeds"),
        (
            &["--scenario", "incast", "--set", "transport.scan_us=0"],
            "transport.scan_us",
        ),
        (
            &["--scenario", "incast", "--set", "transport.rto_low_us=0"],
            "transport.rto_low_us",
        ),
        (
            &["--scenario", "incast", "--set", "credits=9"],
            "transport.KEY=VALUE",
        ),
        // The engine's [transport] validation judges how the timers
        // relate, as rpc-server's does, and says which keys.
        (
            &[
                "--scenario",
                "incast",
                "--regimes",
                "lossy",
                "--set",
                "transport.scan_us=500",
                "--set",
                "transport.rto_us=100",
            ],
            "transport.rto_us = 100 must be >= transport.scan_us = 500",
        ),
        // What a regime then makes of them, the endpoint judges: irn's
        // 320 us RTO under a 500 us grain.
        (
            &[
                "--scenario",
                "incast",
                "--regimes",
                "irn",
                "--set",
                "transport.scan_us=500",
            ],
            "must be >= scan_interval",
        ),
    ];
    for (args, named) in cases {
        let r = fabric(args);
        // Refused settings: a usage error, exit 2.
        assert_eq!(r.code, Some(2), "{args:?}: exit {:?}\n{}", r.code, r.stderr);
        assert!(
            r.stderr.contains("rpc-bench: error"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(named),
            "{args:?} should name `{named}`: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn config_file_with_flag_overrides_and_unknown_keys() {
    let cfg = common::repo_root().join("configs/fabric-incast.toml");
    let cfg = cfg.to_str().expect("utf-8 path");
    let r = fabric(&[
        "-c",
        cfg,
        "--hosts",
        "8",
        "--flow-size",
        "65536",
        "--regimes",
        "ib,irn",
        "--json",
    ]);
    let v = last_line_json(&r);
    assert_eq!(v["seed"], 7, "the file's seed: {v}");
    assert_eq!(v["scenario"], "incast", "{v}");
    assert_eq!(v["results"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(
        v["results"][0]["flows"], 8,
        "--hosts overrides the file: {v}"
    );
    assert!(r.stderr.contains("8 flows, seed 7"), "header: {}", r.stderr);

    let bad = tmp("unknown-key.toml");
    std::fs::write(&bad, "scenario = \"incast\"\nsenders = 8\n").expect("write temp config");
    let r = fabric(&["-c", bad.to_str().expect("utf-8 path")]);
    let _ = std::fs::remove_file(&bad);
    assert_eq!(r.code, Some(2), "exit {:?}: {}", r.code, r.stderr);
    assert!(r.stderr.contains("rpc-bench: error"), "{}", r.stderr);
    assert!(
        r.stderr.contains("senders"),
        "the unknown key is named: {}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

#[test]
fn plot_writes_an_svg() {
    let svg = tmp("slowdown.svg");
    let mut args = SMALL.to_vec();
    args.extend([
        "--regimes",
        "irn,lossy",
        "--plot",
        svg.to_str().expect("utf-8 path"),
    ]);
    let r = fabric(&args);
    let text = std::fs::read_to_string(&svg);
    let _ = std::fs::remove_file(&svg);
    r.assert_ok("fabric --plot");
    let text = text.expect("--plot wrote no file");
    assert!(
        text.starts_with("<svg"),
        "not an SVG: {}",
        &text[..text.len().min(80)]
    );
    assert!(
        text.contains("irn") && text.contains("lossy"),
        "regimes in the legend"
    );
    // Without --json the table is on stdout.
    assert!(
        r.stdout.contains("regime") && r.stdout.contains("lossy"),
        "{}",
        r.stdout
    );
}

#[test]
fn htsim_compare_refuses_a_missing_source_tree_and_says_where_htsim_is() {
    // The outside check builds htsim from the user's own clone; without
    // one it must say so before doing anything (it is not part of CI).
    let script = common::repo_root().join("scripts/reference/htsim-compare.sh");
    let script = script.to_str().expect("utf-8 path");
    let empty = std::env::temp_dir().join(common::unique("nohtsim"));
    std::fs::create_dir_all(&empty).unwrap();
    let not_htsim = empty.to_str().unwrap().to_string();
    for (args, names) in [
        (vec![script], "exactly one argument"),
        (vec![script, "/nonexistent/htsim"], "/nonexistent/htsim"),
        (vec![script, not_htsim.as_str()], not_htsim.as_str()),
    ] {
        let r = run("bash", &args, Duration::from_secs(30));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(names), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("Broadcom/csg-htsim"), "{}", r.stderr);
    }
    let _ = std::fs::remove_dir(&empty);
}

#[test]
fn uet_htsim_compare_refuses_a_missing_or_wrong_source_tree() {
    // The side-by-side with uet-htsim builds it from the user's own tree;
    // without one (or given its htsim/sim folder) it must say so before
    // building or running anything.
    let script = common::repo_root().join("scripts/reference/uet-htsim-compare.sh");
    let script = script.to_str().expect("utf-8 path");
    let empty = std::env::temp_dir().join(common::unique("nouethtsim"));
    let sim = empty.join("htsim/sim");
    std::fs::create_dir_all(sim.join("datacenter")).unwrap();
    std::fs::write(sim.join("datacenter/main_uec.cpp"), "").unwrap();
    let top = empty.to_str().unwrap().to_string();
    let sim = sim.to_str().unwrap().to_string();
    for (args, names) in [
        (vec![script], "exactly one argument"),
        (
            vec![script, "/nonexistent/uet-htsim"],
            "/nonexistent/uet-htsim",
        ),
        (
            vec![script, top.as_str()],
            "does not look like a uet-htsim tree",
        ),
        (vec![script, sim.as_str()], "pass the top of the clone"),
    ] {
        let r = run("bash", &args, Duration::from_secs(30));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(names), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("ultraethernet/uet-htsim"), "{}", r.stderr);
    }
    let _ = std::fs::remove_dir_all(&empty);
}
