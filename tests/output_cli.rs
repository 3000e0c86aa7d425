//! The output convention end to end, through the real binaries and with no
//! DPDK port except one null device: a bad output path (`--plot`, `--csv`,
//! `--hist-out`, `--capture`) fails at once, exit 2, naming the flag,
//! before anything starts; a plot name not ending in `.svg` is refused the
//! same way; with `--json` stdout is exactly one line, the summary stamped
//! with the build, the DPDK, the time, the host and the configuration,
//! and the text report is on stderr; without it the text is on stdout.

use crate::common::{client_bin, run, server_bin, Run, STAMP};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

const BENCH: &str = env!("CARGO_BIN_EXE_rpc-bench");
const LIMIT: Duration = Duration::from_secs(60);
/// A refusal takes milliseconds; a run that had started would take
/// seconds at least (a floor, a link that never comes up, a simulation).
const FAIL_FAST: Duration = Duration::from_secs(5);

/// A folder of this test process's own, made empty.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("output-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Stdout as the one JSON line `--json` promises, checked to be stamped.
fn one_stamped_line(r: &Run, what: &str) -> Value {
    assert!(r.ok(), "{what} failed:\n{}\n{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: stdout is one line:\n{}", r.stdout);
    let v: Value = serde_json::from_str(lines[0])
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", lines[0]));
    for k in STAMP {
        assert!(v.get(k).is_some(), "{what}: no {k} in {v}");
    }
    for k in ["version", "commit", "timestamp", "host", "cpu"] {
        assert!(
            v[k].as_str().is_some_and(|s| !s.is_empty()),
            "{what}: {k} is empty: {v}"
        );
    }
    v
}

#[test]
fn bad_output_paths_fail_fast_naming_the_flag() {
    let dir = scratch("bad");
    let png = dir.join("lat.png");
    let png = png.to_str().unwrap();
    let jpg = dir.join("modes.jpg");
    let jpg = jpg.to_str().unwrap();
    let folder = dir.to_str().unwrap();
    let cases: Vec<(&str, Vec<&str>, &str, &str)> = vec![
        (
            BENCH,
            vec!["run", "--plot", "/nonexistent/x.svg"],
            "--plot /nonexistent/x.svg",
            "does not exist",
        ),
        (BENCH, vec!["run", "--plot", png], "--plot", "only SVG"),
        (
            BENCH,
            vec!["run", "--csv", "/nonexistent/a.csv"],
            "--csv /nonexistent/a.csv",
            "does not exist",
        ),
        (
            BENCH,
            vec!["run", "--hist-out", "/nonexistent/h.hgrm"],
            "--hist-out",
            "does not exist",
        ),
        // The default command (no subcommand) is `run`.
        (BENCH, vec!["--plot", png], "--plot", "only SVG"),
        (BENCH, vec!["--csv", folder], "--csv", "is a folder"),
        (BENCH, vec!["compare", "--plot", jpg], "--plot", "only SVG"),
        (
            BENCH,
            vec!["compare", "--csv", "/nonexistent/c.csv"],
            "--csv",
            "does not exist",
        ),
        (
            BENCH,
            vec!["fabric", "--scenario", "incast", "--plot", png],
            "--plot",
            "only SVG",
        ),
        (
            client_bin(),
            vec!["--capture", "/nonexistent/c.pcap"],
            "--capture",
            "does not exist",
        ),
        (client_bin(), vec!["--plot", png], "--plot", "only SVG"),
        (
            client_bin(),
            vec!["--csv", "/nonexistent/r.csv"],
            "--csv",
            "does not exist",
        ),
        (
            server_bin(),
            vec!["--capture", "/nonexistent/s.pcap"],
            "--capture",
            "does not exist",
        ),
    ];
    for (bin, args, flag, why) in cases {
        let r = run(bin, &args, LIMIT);
        let what = format!("{} {args:?}", bin.rsplit('/').next().unwrap_or(bin));
        assert_eq!(
            r.code,
            Some(2),
            "{what}: exit 2:\n{}\n{}",
            r.stdout,
            r.stderr
        );
        let err = r.stderr.lines().last().unwrap_or_default();
        assert!(
            err.contains("error: ") && err.contains(flag) && err.contains(why),
            "{what}: the error names {flag} and says {why:?}:\n{}",
            r.stderr
        );
        assert!(
            r.elapsed < FAIL_FAST,
            "{what}: refused after {:?}, not at once",
            r.elapsed
        );
        // Nothing ran: no progress, no report, and the one line is the error.
        assert_eq!(r.stderr.lines().count(), 1, "{what}:\n{}", r.stderr);
        assert!(r.stdout.is_empty(), "{what}: {}", r.stdout);
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "a refused run wrote {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn engine_json_is_one_stamped_line_and_the_text_goes_to_stderr() {
    let r = run(BENCH, &["engine", "--rpcs", "20000", "--json"], LIMIT);
    let v = one_stamped_line(&r, "engine --json");
    assert_eq!(v["engine_rpcs"], 20000, "{v}");
    assert!(
        v["engine_ns_per_rpc"].as_f64().is_some_and(|n| n > 0.0),
        "{v}"
    );
    assert!(
        v["dpdk_version"]
            .as_str()
            .is_some_and(|d| d.starts_with('2')),
        "the DPDK this build links: {v}"
    );
    // The full effective configuration, defaults included.
    assert_eq!(v["config"]["workload"]["req_size"], 32, "{v}");
    assert_eq!(v["config"]["link"]["kind"], "memif", "{v}");
    assert!(r.stderr.contains("engine cost, no wire"), "{}", r.stderr);

    let r = run(BENCH, &["engine", "--rpcs", "20000"], LIMIT);
    assert!(r.ok(), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("engine cost, no wire"), "{}", r.stdout);
    assert!(
        !r.stdout.lines().any(|l| l.starts_with('{')),
        "no JSON without --json: {}",
        r.stdout
    );
}

#[test]
fn port_check_on_a_null_device_follows_the_convention() {
    let r = run(BENCH, &["port-check", "--link", "null", "--json"], LIMIT);
    let v = one_stamped_line(&r, "port-check --json");
    assert_eq!(v["sent"], 256, "{v}");
    assert_eq!(v["link_up"], true, "{v}");
    assert_eq!(v["check"]["frames"], 256, "{v}");
    assert_eq!(v["config"]["link"]["kind"], "null", "{v}");
    assert!(r.stderr.contains("link up"), "text on stderr: {}", r.stderr);

    let r = run(BENCH, &["port-check", "--link", "null"], LIMIT);
    assert!(r.ok(), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("link up") && r.stdout.contains("sent 256 frames"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains('{'), "text only: {}", r.stdout);
}

#[test]
fn fabric_json_is_stamped_as_simulated() {
    let args = [
        "fabric",
        "--scenario",
        "incast",
        "--hosts",
        "2",
        "--flow-size",
        "8192",
        "--regimes",
        "irn",
        "--json",
    ];
    let r = run(BENCH, &args, LIMIT);
    let v = one_stamped_line(&r, "fabric --json");
    assert_eq!(v["dpdk_version"], "none: simulated", "{v}");
    assert_eq!(v["config"]["hosts"], 2, "{v}");
    assert_eq!(v["config"]["regimes"], serde_json::json!(["irn"]), "{v}");
    assert!(
        r.stderr.contains("regime"),
        "the table on stderr: {}",
        r.stderr
    );
}
