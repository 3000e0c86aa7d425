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
        (&["--scenario", "matrix"][..], "--matrix FILE"),
        (
            &["--scenario", "matrix", "--matrix", "/nonexistent/m.cm"][..],
            "/nonexistent/m.cm",
        ),
        (
            &["--scenario", "incast", "--matrix", "/nonexistent/m.cm"][..],
            "`matrix` cannot be set",
        ),
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

/// A uet-htsim connection matrix (`--scenario matrix --matrix FILE`): the
/// binary runs the file's connections as the library does, and
/// `last_end_us`, the suite's "tail FCT", is the last flow's start plus its
/// FCT.
#[test]
fn a_connection_matrix_runs_its_flows() {
    let dir = std::env::temp_dir().join(format!("rpc-lab-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("late.cm");
    // One flow from rack 0 to rack 6 (16 nodes: two per rack), 40 us in.
    std::fs::write(
        &file,
        "Nodes 16\nConnections 1\n0->13 id 1 start 40 size 200000\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let out = rpc_lab(&[
        "--scenario",
        "matrix",
        "--matrix",
        path,
        "--regimes",
        "srd",
        "--json",
        "-q",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rpc-lab failed: {stderr}");
    let got: serde_json::Value =
        serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim_end()).expect("JSON");
    assert_eq!(got["scenario"], "matrix", "{got}");
    let r = &got["results"][0];
    assert_eq!(
        (r["flows"].as_u64(), r["completed"].as_u64()),
        (Some(1), Some(1)),
        "{r}"
    );
    let fct = r["fct_us"]["p50"].as_f64().unwrap();
    let last = r["last_end_us"].as_f64().unwrap();
    assert!(
        (last - (40.0 + fct)).abs() < 1e-6,
        "last_end_us {last} != 40 + fct {fct}"
    );
    // 200 kB at 100 Gb/s is 16 us on the wire, plus a few hops.
    assert!(fct > 16.0 && fct < 40.0, "fct {fct} us");
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

/// A signal stops a regime in its run, not only between regimes: one
/// regime of a large fabric runs for minutes, and Ctrl-C or SIGTERM must
/// end it within a progress tick (2^20 events), exiting 128 + N with no
/// partial regime reported as a result.
#[test]
fn sigterm_stops_a_long_regime_in_its_run() {
    let mut child = Command::new(LAB)
        .args([
            "--scenario",
            "websearch",
            "--hosts",
            "256",
            "--flows",
            "100000",
            "--load",
            "0.5",
            "--regimes",
            "irn",
            "--json",
            "-q",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rpc-lab starts");
    // Well into the run (the workload is built in well under a second);
    // the whole run would take minutes.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rpc-lab still running 20 s after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = child.wait_with_output().expect("output");
    assert_eq!(status.code(), Some(143), "{status:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("interrupted before a regime finished"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "no report of a cut run: {:?}",
        out.stdout
    );
}

#[test]
fn the_allocators_layout_never_reaches_a_result() {
    // rpc-lab starts itself again with glibc's huge pages and mapped
    // buffers (lab::malloc) unless the caller chose `hugetlb` already: both
    // ways give the same bytes but for the stamp's time, and the second
    // start keeps every argument and the output stream.
    let run = |tunables: Option<&str>| {
        let mut cmd = Command::new(LAB);
        cmd.args([
            "--scenario",
            "websearch",
            "--hosts",
            "32",
            "--flows",
            "200",
            "--regimes",
            "irn,uec",
            "--seed",
            "3",
            "--json",
            "-q",
        ]);
        match tunables {
            Some(t) => cmd.env("GLIBC_TUNABLES", t),
            None => cmd.env_remove("GLIBC_TUNABLES"),
        };
        let out = cmd.output().expect("rpc-lab starts");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "rpc-lab failed: {stderr}");
        assert!(!stderr.contains("without huge pages"), "{stderr}");
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
        v["timestamp"] = serde_json::Value::Null;
        v.to_string()
    };
    let tuned = run(None);
    assert!(tuned.contains("\"completed\":200"), "{tuned}");
    assert_eq!(run(Some("glibc.malloc.hugetlb=0")), tuned);
}
