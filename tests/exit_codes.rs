//! One rule for how every binary ends (docs/output.md, "Exit codes and
//! interruption"), end to end with the real executables:
//!
//! - Ctrl-C (SIGINT) in the middle of `rpc-bench run`, `compare`, `sweep`
//!   and rpc-client gives exit 130 and a report of what finished, marked
//!   `"interrupted": true`; SIGTERM gives 143 the same way; rpc-bench's
//!   child processes are gone when it exits;
//! - a configuration or usage error exits 2 on every binary, a run
//!   failure 1;
//! - a closed stdout (`rpc-bench man | head -1`) ends quietly, exit 0;
//! - `-q` is taken by every command that prints a report.
//!
//! The interrupted runs are short memif pairs with `--no-floor`, each
//! under ten seconds; each spawns its processes with unique socket paths.

use crate::common;
use crate::common::{bench_bin, client_bin, run, server_bin, unique, Run, Running, Server};
use serde_json::Value;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// rpc-lab, next to rpc-bench (the lab's binary; `cargo build --workspace
/// --bins` puts it there).
fn lab_bin() -> String {
    let bench = std::path::Path::new(bench_bin());
    let p = bench.with_file_name("rpc-lab");
    assert!(p.exists(), "{} is not built", p.display());
    p.display().to_string()
}

/// Stdout's last line as JSON.
fn last_json(r: &Run) -> Value {
    let line = r.stdout.lines().last().unwrap_or_else(|| {
        panic!("stdout is empty; stderr:\n{}", r.stderr);
    });
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{}", r.stderr))
}

/// Processes still running with `needle` in their command line.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in dir.flatten() {
        let cmdline = e.path().join("cmdline");
        if let Ok(bytes) = std::fs::read(&cmdline) {
            let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
            if text.contains(needle) {
                found.push(format!("{}: {text}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// rpc-bench's children read `/tmp/rpc-bench-PID-N/run.toml`: none of them
/// may outlive it.
fn assert_no_children_left(bench_pid: u32) {
    let left = processes_with(&format!("rpc-bench-{bench_pid}-"));
    assert!(left.is_empty(), "children outlived rpc-bench: {left:?}");
}

/// The arguments of a short memif run with no floor on a unique socket.
fn memif_run(seconds: &str) -> Vec<String> {
    vec![
        format!("--socket=/tmp/{}.sock", unique("exit")),
        "--no-floor".into(),
        format!("--seconds={seconds}"),
        "--set=workload.warmup_seconds=0.2".into(),
    ]
}

#[test]
fn ctrl_c_in_run_keeps_a_partial_report_and_exits_130() {
    let args = memif_run("8");
    let mut a: Vec<&str> = vec!["run", "--json"];
    a.extend(args.iter().map(String::as_str));
    let p = Running::start(bench_bin(), &a);
    let pid = p.pid();
    // The client's first progress line: the measured interval is running.
    p.wait_for("[  1.", Duration::from_secs(20));
    p.signal("INT");
    let r = p.finish(Duration::from_secs(20));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    let v = last_json(&r);
    assert_eq!(v["interrupted"], true, "{v}");
    assert!(v["completed"].as_u64().unwrap_or(0) > 0, "{v}");
    let secs = v["seconds"].as_f64().unwrap_or(f64::NAN);
    assert!(secs > 0.0 && secs < 7.0, "the part that ran: {secs} s: {v}");
    assert!(v["server"].is_object(), "the server's counters too: {v}");
    assert!(r.stderr.contains("interrupted"), "{}", r.stderr);
    assert!(!r.stderr.contains("error:"), "not a failure: {}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(20), "took {:?}", r.elapsed);
    assert_no_children_left(pid);
}

#[test]
fn ctrl_c_in_compare_keeps_the_finished_regimes() {
    let dir = std::env::temp_dir().join(unique("exitcmp"));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("cmp.csv");
    let csv_arg = format!("--csv={}", csv.display());
    let args = memif_run("1.5");
    let mut a: Vec<&str> = vec!["compare", "--regimes=lossless,lossy", "--json", &csv_arg];
    a.extend(args.iter().map(String::as_str));
    let p = Running::start(bench_bin(), &a);
    let pid = p.pid();
    // Once the second regime starts, the first has finished.
    p.wait_for("compare: lossy run", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(1200));
    p.signal("INT");
    let r = p.finish(Duration::from_secs(20));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    let v = last_json(&r);
    assert_eq!(v["interrupted"], true, "{v}");
    assert!(
        v["lossless"]["completed"].as_u64().unwrap_or(0) > 0,
        "the finished regime is kept: {v}"
    );
    assert!(v.get("lossy").is_none(), "the cut regime is discarded: {v}");
    let rows = std::fs::read_to_string(&csv).expect("csv written");
    assert_eq!(
        rows.lines().count(),
        2,
        "header + the lossless row:\n{rows}"
    );
    assert!(r.stderr.contains("1 of 2 regimes finished"), "{}", r.stderr);
    assert_no_children_left(pid);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_in_sweep_keeps_the_finished_points() {
    let args = memif_run("1.5");
    let mut a: Vec<&str> = vec!["sweep", "--msg-sizes=32,64", "--json"];
    a.extend(args.iter().map(String::as_str));
    let p = Running::start(bench_bin(), &a);
    let pid = p.pid();
    p.wait_for("[2/2]", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(1200));
    p.signal("INT");
    let r = p.finish(Duration::from_secs(20));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    let v = last_json(&r);
    assert_eq!(v["interrupted"], true, "{v}");
    assert_eq!(v["points_planned"], 2, "{v}");
    assert_eq!(v["points_finished"], 1, "{v}");
    assert_eq!(v["points"][0]["req_size"], 32, "{v}");
    assert_no_children_left(pid);
}

#[test]
fn ctrl_c_and_sigterm_in_rpc_client_report_what_completed() {
    for (sig, status) in [("INT", 130), ("TERM", 143)] {
        let sock = format!("--socket=/tmp/{}.sock", unique("exitcl"));
        let server = Server::start(std::slice::from_ref(&sock));
        let p = Running::start(
            client_bin(),
            &[
                &sock,
                "--seconds=8",
                "--set=workload.warmup_seconds=0.2",
                "--json",
            ],
        );
        p.wait_for("[  1.", Duration::from_secs(20));
        p.signal(sig);
        let r = p.finish(Duration::from_secs(15));
        let _ = server.stop_after(&r);
        assert_eq!(r.code, Some(status), "SIG{sig}: {}", r.stderr);
        let v = last_json(&r);
        assert_eq!(v["interrupted"], true, "SIG{sig}: {v}");
        assert!(v["completed"].as_u64().unwrap_or(0) > 0, "SIG{sig}: {v}");
        assert!(v["seconds"].as_f64().unwrap_or(9.0) < 7.0, "SIG{sig}: {v}");
    }
}

#[test]
fn config_and_usage_errors_exit_2_and_run_failures_1() {
    let lab = lab_bin();
    let dir = std::env::temp_dir().join(unique("exitcfg"));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[link]\ncolour = \"blue\"\n").unwrap();
    let bad = format!("--config={}", bad.display());
    let (bad, lab) = (bad.as_str(), lab.as_str());
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        // A key no section has, from the file and from --set.
        (server_bin(), vec![bad], "colour"),
        (client_bin(), vec!["--set=link.colour=blue"], "link.colour"),
        (bin("rpc-hostile"), vec![bad], "colour"),
        (bench_bin(), vec!["run", bad], "colour"),
        // A value out of range.
        (
            client_bin(),
            vec!["--set=transport.credits=0"],
            "transport.credits",
        ),
        (
            server_bin(),
            vec!["--set=workload.req_size=4x"],
            "workload.req_size",
        ),
        (bench_bin(), vec!["run", "--set=link.mtu=9000"], "link.mtu"),
        (bench_bin(), vec!["floor", "--cores", "0"], "--cores"),
        (bench_bin(), vec!["compare", "--regimes=warp"], "warp"),
        (bench_bin(), vec!["sweep", "--credits=abc"], "--credits"),
        (bench_bin(), vec!["incast", "--plot=x.png"], "--plot"),
        (
            bench_bin(),
            vec!["fabric", "--scenario=incast", "--ring=0"],
            "--ring 0",
        ),
        (lab, vec!["--scenario=bogus"], "bogus"),
        (
            lab,
            vec!["--scenario=incast", "--set=transport.rto_us=1"],
            "rto_us",
        ),
    ];
    for (bin, args, names) in cases {
        let r = run(bin, &args, LIMIT);
        let what = format!("{} {args:?}", bin.rsplit('/').next().unwrap_or(bin));
        assert_eq!(r.code, Some(2), "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains(names),
            "{what}: names {names}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("error: "), "{what}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{what}: {}", r.stdout);
    }
    // A run that fails is 1: a driver that does not exist.
    let r = run(
        bench_bin(),
        &["port-check", "--vdev", "net_nosuchdriver0"],
        LIMIT,
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The binary `name` of this build.
fn bin(name: &str) -> &'static str {
    common::bin(name)
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let lab = lab_bin();
    let lab = lab.as_str();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (bench_bin(), vec!["man"]),
        (bench_bin(), vec!["--help"]),
        (bench_bin(), vec!["completions", "bash"]),
        (bench_bin(), vec!["engine", "--rpcs=2000"]),
        (bench_bin(), vec!["engine", "--rpcs=2000", "--json"]),
        (
            lab,
            vec![
                "--scenario=incast",
                "--hosts=2",
                "--flow-size=65536",
                "--regimes=irn",
            ],
        ),
        (client_bin(), vec!["--print-config"]),
    ];
    for (bin, args) in cases {
        let what = format!("{} {args:?}", bin.rsplit('/').next().unwrap_or(bin));
        // The reader is gone before the first write: every write to
        // stdout meets a closed pipe (`| head -0` at its most abrupt).
        let mut child = Command::new(bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
        drop(child.stdout.take());
        let (status, _) = common::wait_output(&mut child, LIMIT);
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let status = status.unwrap_or_else(|| panic!("{what}: did not exit"));
        assert_eq!(status.code(), Some(0), "{what}: {err}");
        assert!(!err.contains("Broken pipe"), "{what}: {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
}

#[test]
fn quiet_is_taken_by_every_command_that_prints_a_report() {
    // -q with --json: the JSON line alone.
    let r = run(
        bench_bin(),
        &["engine", "--rpcs=2000", "-q", "--json"],
        LIMIT,
    );
    r.assert_ok("engine -q --json");
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(
        !r.stderr.contains("ns per RPC"),
        "no text report: {}",
        r.stderr
    );
    let r = run(bench_bin(), &["engine", "--rpcs=2000", "-q"], LIMIT);
    r.assert_ok("engine -q");
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let r = run(
        &lab_bin(),
        &[
            "--scenario=incast",
            "--hosts=2",
            "--flow-size=65536",
            "--regimes=irn",
            "-q",
            "--json",
        ],
        LIMIT,
    );
    r.assert_ok("rpc-lab -q --json");
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(!r.stderr.contains("slowdown"), "no table: {}", r.stderr);
    // Every reporting subcommand parses -q (here it stops at the next
    // refusal, a value of its own, before anything runs).
    for sub in [
        &["compare", "-q", "--regimes=warp"][..],
        &["sweep", "-q", "--regimes=warp"],
        &["incast", "-q", "--regimes=warp"],
        &["fabric", "-q", "--scenario=bogus"],
        &["floor", "-q", "--cores=0"],
        &["kernel-udp", "-q", "--cores=0"],
        &["port-check", "-q", "--set=link.colour=blue"],
        &["run", "-q", "--set=link.colour=blue"],
    ] {
        let r = run(bench_bin(), sub, LIMIT);
        assert_eq!(r.code, Some(2), "{sub:?}: {}", r.stderr);
        assert!(
            !r.stderr.contains("unexpected argument"),
            "{sub:?} refuses -q: {}",
            r.stderr
        );
    }
}
