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
        // A trimming threshold above the per-port buffer, or of nothing.
        (
            &[
                "--scenario",
                "incast",
                "--buffer-kb",
                "64",
                "--trim-kb",
                "65",
            ][..],
            "--trim-kb",
        ),
        (&["--scenario", "incast", "--trim-kb", "0"][..], "--trim-kb"),
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
