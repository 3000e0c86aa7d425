//! `rpc-lab`, the binary: a thin front over the library. Its JSON is the
//! report the library's own runs give, stamped with the build, time, host
//! and settings (no DPDK: "none: simulated"); bad input is an
//! error naming the problem (exit 1, no panic). The flags' behaviour is
//! tested through `rpc-bench fabric` (tests/fabric_cli.rs), which runs the
//! same `lab::cli::run`.

use lab::fabric::scenario::{build, Scenario, ScenarioSpec};
use lab::fabric::{run_regime, FabricConfig, FabricRegime, FabricReport};
use std::process::{Command, Output};

const LAB: &str = env!("CARGO_BIN_EXE_rpc-lab");

fn rpc_lab(args: &[&str]) -> Output {
    Command::new(LAB)
        .args(args)
        .output()
        .expect("rpc-lab starts")
}

#[test]
fn json_is_the_librarys_report() {
    let out = rpc_lab(&[
        "--scenario",
        "incast",
        "--hosts",
        "8",
        "--flow-size",
        "65536",
        "--regimes",
        "roce,irn",
        "--seed",
        "5",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rpc-lab failed: {stderr}");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    assert_eq!(
        stdout.lines().count(),
        1,
        "stdout is the JSON line: {stdout}"
    );

    let mut spec = ScenarioSpec::new(Scenario::Incast, 5);
    spec.hosts = Some(8);
    spec.flow_size = Some(65536);
    let w = build(&spec).unwrap();
    let results = [FabricRegime::Roce, FabricRegime::Irn]
        .into_iter()
        .map(|r| run_regime(&w, r, &FabricConfig::default(), 5, &mut |_| {}).unwrap())
        .collect();
    let report = FabricReport {
        scenario: "incast",
        seed: 5,
        sim_pkts_per_sec: None,
        results,
    };
    let got: serde_json::Value = serde_json::from_str(stdout.trim_end()).expect("JSON");
    for k in ["version", "commit", "timestamp", "host", "cpu"] {
        assert!(got[k].as_str().is_some_and(|s| !s.is_empty()), "{k}: {got}");
    }
    assert_eq!(got["dpdk_version"], "none: simulated");
    let config = &got["config"];
    assert_eq!(config["scenario"], "incast", "{config}");
    assert_eq!((&config["seed"], &config["hosts"]), (&5.into(), &8.into()));
    assert_eq!(config["regimes"], serde_json::json!(["roce", "irn"]));
    // The library's report plus that stamp (strings and integers, which
    // read back exactly), byte for byte: floats are compared as printed.
    let mut want = serde_json::to_value(&report).unwrap();
    for k in [
        "version",
        "commit",
        "dpdk_version",
        "timestamp",
        "host",
        "cpu",
        "config",
    ] {
        want[k] = got[k].clone();
    }
    assert_eq!(stdout.trim_end(), want.to_string());
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    for (args, named) in [
        (&["--scenario", "bogus"][..], "bogus"),
        (&["--regimes", "irn"][..], "scenario"),
        (&["--scenario", "incast", "--regimes", "irn,pfc"][..], "pfc"),
        (&["--scenario", "incast", "--jobs", "0"][..], "--jobs 0"),
    ] {
        let out = rpc_lab(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Refused settings: a usage error, exit 2.
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("rpc-lab: error"), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?} names `{named}`: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn jobs_run_in_parallel_give_the_serial_bytes() {
    // Seeds x regimes on three threads, against the same runs in turn: the
    // same JSON line, in the same order, but for the stamp's time. Regimes
    // of different lengths, so the threads finish out of plan order.
    let run = |jobs: &str| {
        let out = rpc_lab(&[
            "--scenario",
            "incast",
            "--hosts",
            "16",
            "--flow-size",
            "262144",
            "--regimes",
            "ib,roce,irn,srd,lossy",
            "--seeds",
            "2",
            "--jobs",
            jobs,
            "--json",
            "-q",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "--jobs {jobs}: {stderr}");
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
        v["timestamp"] = serde_json::Value::Null;
        (v.to_string(), stderr)
    };
    let (serial, _) = run("1");
    let (parallel, stderr) = run("3");
    assert_eq!(parallel, serial, "--jobs 3 changed the report");
    let v: serde_json::Value = serde_json::from_str(&serial).unwrap();
    let names: Vec<&str> = v["regimes"]
        .as_array()
        .expect("a seeds report")
        .iter()
        .map(|r| r["regime"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ib", "roce", "irn", "srd", "lossy"], "plan order");
    assert!(
        v["config"].get("jobs").is_none(),
        "how it ran is not what ran"
    );
    // Every run closed with its line; no live line off a terminal.
    assert_eq!(stderr.matches(" done in ").count(), 10, "{stderr}");
    assert!(!stderr.contains("ms simulated"), "{stderr}");
}
