//! Measurement hygiene end to end, through the real binaries over memif:
//! a server and client pinned to one core are refused (and, asked for,
//! run and reported as contended); the warm-up stays out of the headline
//! counts and its `--json-stream` lines say so; a setting the workload
//! would ignore is refused naming the flag and the workload; `--repeat`
//! reports each figure's spread; a server answering another size stops
//! the client at its first response. Each run is short (< 10 s).

use crate::common::{bench_bin, client_bin, run, unique, Run, Server};
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
/// A refusal takes milliseconds; a run that had started takes seconds.
const FAIL_FAST: Duration = Duration::from_secs(5);

fn socket() -> String {
    format!("--socket=/tmp/{}.sock", unique("rpchyg"))
}

/// A short `rpc-bench run`, no floor (each pair gets a memif socket of
/// its own: `run::bench::isolate`).
fn bench(extra: &[&str]) -> Run {
    let mut args = vec!["run", "--no-floor"];
    args.extend_from_slice(extra);
    run(bench_bin(), &args, LIMIT)
}

/// A refusal before anything started: not 0, quickly, saying `said`.
fn refused(r: &Run, said: &[&str]) {
    assert!(!r.ok(), "must be refused:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.elapsed < FAIL_FAST, "refused only after {:?}", r.elapsed);
    for s in said {
        assert!(r.stderr.contains(s), "must say {s:?}:\n{}", r.stderr);
    }
}

#[test]
fn a_shared_core_is_refused_and_when_allowed_reported() {
    let r = bench(&["--set=cores.client=[1]", "--seconds=0.3"]);
    refused(
        &r,
        &[
            "cores.server = [1] and cores.client = [1] both contain core 1",
            "cores.allow_shared = true",
        ],
    );
    // Asked for: it runs, and both loops are seen losing the core to the
    // other (each poll loop waits while the other runs).
    let r = bench(&[
        "--set=cores.client=[1]",
        "--set=cores.allow_shared=true",
        "--seconds=1",
        "--set=workload.warmup_seconds=0.1",
        "--json",
    ]);
    r.assert_ok("rpc-bench run on one shared core");
    let v = r.json();
    let cores = v["core_contention"].as_array().expect("core_contention");
    assert_eq!(cores.len(), 2, "server and client: {v}");
    for c in cores {
        assert_eq!(c["core"], 1, "{c}");
        assert!(c["other_pct"].as_f64().unwrap() > 10.0, "time-sliced: {c}");
    }
    assert!(v["core_other_pct_max"].as_f64().unwrap() > 10.0, "{v}");
    assert!(
        r.stderr.contains("warning      core 1 (server): ")
            && r.stderr
                .contains("of the run went to other work on that core"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_warm_up_is_out_of_the_headline_and_marked_in_the_stream() {
    let r = bench(&[
        "--seconds=2",
        "--set=workload.warmup_seconds=0.5",
        "--json-stream",
    ]);
    r.assert_ok("rpc-bench run --json-stream");
    let lines: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (summary, intervals) = lines.split_last().expect("output");
    let first = &intervals[0];
    assert_eq!(first["phase"], "warmup", "{first}");
    let warm = first["rpcs"].as_u64().unwrap() - first["measured_rpcs"].as_u64().unwrap();
    assert!(warm > 0, "the first second holds the warm-up: {first}");
    let measure: Vec<&Value> = intervals
        .iter()
        .filter(|l| l["phase"] == "measure")
        .collect();
    assert!(!measure.is_empty(), "{}", r.stdout);
    for l in &measure {
        assert_eq!(l["rpcs"], l["measured_rpcs"], "all counted: {l}");
    }
    // The headline counts the measured window alone, as the rate does.
    let completed = summary["completed"].as_u64().unwrap();
    let total = summary["completed_total"].as_u64().unwrap();
    assert!(completed + warm <= total, "{summary}");
    let rate = summary["mrps"].as_f64().unwrap() * 1e6 * summary["seconds"].as_f64().unwrap();
    assert!(
        (completed as f64 - rate).abs() <= 1.0,
        "completed {completed} vs rate x seconds {rate}"
    );
    let measured: u64 = intervals
        .iter()
        .map(|l| l["measured_rpcs"].as_u64().unwrap())
        .sum();
    assert!(measured <= completed, "{measured} vs {completed}");
    assert!(
        r.stderr
            .contains("completed in the warm-up and drain, not counted"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_setting_the_workload_ignores_is_refused_naming_flag_and_workload() {
    let sock = socket();
    for (bin, args, said) in [
        (
            bench_bin(),
            vec!["run", "--rate", "1000"],
            "workload.rate_rps (--rate) = 1000 does not apply to the latency workload",
        ),
        (
            bench_bin(),
            vec!["run", "--workload", "throughput", "--rate", "1000"],
            "does not apply to the throughput workload",
        ),
        (
            client_bin(),
            vec!["--window", "4", sock.as_str()],
            "workload.window (--window) = 4 does not apply to the latency workload",
        ),
    ] {
        let r = run(bin, &args, LIMIT);
        refused(&r, &[said]);
    }
}

#[test]
fn repeat_reports_each_figures_spread() {
    let r = bench(&[
        "--repeat=2",
        "--seconds=0.5",
        "--set=workload.warmup_seconds=0.1",
        "--json",
    ]);
    r.assert_ok("rpc-bench run --repeat 2");
    let v = r.json();
    let rep = &v["repeat"];
    assert_eq!(rep["runs"], 2, "{v}");
    for key in ["p50_us", "p99_us", "p999_us", "mrps", "gbps"] {
        let s = &rep[key];
        let f = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{key}.{k}: {v}"));
        assert!(
            f("min") <= f("median") && f("median") <= f("max"),
            "{key}: {s}"
        );
        assert_eq!(s["values"].as_array().map(Vec::len), Some(2), "{key}: {s}");
        assert!(f("min") > 0.0, "{key}: {s}");
    }
    assert!(
        r.stderr.contains("over 2 runs") && r.stderr.contains("run 2 of 2"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_first_response_of_the_wrong_size_stops_the_client() {
    // Requests under 12 B cannot ask for a size: the server answers with
    // its own (32 B), not the 100 B the client expects.
    let sock = socket();
    let server = Server::start(std::slice::from_ref(&sock));
    let r = run(
        client_bin(),
        &[
            sock.as_str(),
            "--msg-size=8",
            "--resp-size=100",
            "--seconds=5",
            "--json",
        ],
        LIMIT,
    );
    let srv = server.stop_after(&r);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("the server answered 32 B where --resp-size 100 asked for 100 B"),
        "{}",
        r.stderr
    );
    assert!(
        r.elapsed < Duration::from_secs(4),
        "ran on: {:?}",
        r.elapsed
    );
    let v = r.json();
    let failed = v["failed"].as_u64().unwrap();
    assert!(failed >= 1, "{v}");
    assert_eq!(
        v["bad_responses"], failed,
        "each wrong response failed: {v}"
    );
    assert_eq!(v["completed"], 0, "{v}");
    assert_eq!(v["gbps"], 0.0, "no goodput from wrong answers: {v}");
    assert_eq!(
        srv["handled"], failed,
        "one request per wrong answer: {srv}"
    );
}
