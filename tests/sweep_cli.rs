//! `rpc-bench sweep` from the command line: bad inputs (a size that is not
//! one, a plot that is not SVG, an output in a missing folder, a size past
//! the configured limit) fail in well under a second, naming the flag or
//! key, before any process starts; and one short message-size sweep over
//! memif writes its rows to CSV as they finish and one JSON summary line
//! with a point per size.

use crate::common::{run, unique};
use serde_json::Value;
use std::time::Duration;

/// The rpc-bench under test: `RPC_BIN_DIR`'s, else the one cargo built.
fn bench() -> String {
    match std::env::var("RPC_BIN_DIR") {
        Ok(d) => format!("{d}/rpc-bench"),
        Err(_) => env!("CARGO_BIN_EXE_rpc-bench").to_string(),
    }
}

/// What "fail fast" means here: no run started (a run takes seconds).
const FAST: Duration = Duration::from_secs(3);

#[test]
fn bad_inputs_fail_fast_naming_the_flag() {
    let csv_dir = format!("/nonexistent-{}/a.csv", unique("sw"));
    let cases: &[(&[&str], &[&str], i32)] = &[
        // clap refuses the value: usage error, exit 2.
        (&["--msg-sizes", "32,abc"], &["--msg-sizes", "\"abc\""], 2),
        (
            &["--msg-sizes", "0"],
            &["--msg-sizes", "at least 1 byte"],
            2,
        ),
        (&["--msg-sizes", "32", "--credits", "1x"], &["--credits"], 2),
        // Checked by the command before loading anything: a refused
        // flag value, exit 2 as well.
        (
            &["--msg-sizes", "32", "--plot", "x.png"],
            &["--plot x.png", "SVG"],
            2,
        ),
        (
            &["--msg-sizes", "32", "--csv", &csv_dir],
            &["--csv", "does not exist"],
            2,
        ),
        (&["--credits", "1x", "--csv", &csv_dir], &["--csv"], 2),
        // Every point validated before the first run: a config error.
        (
            &["--msg-sizes", "32,16M"],
            &["--msg-sizes 16M", "transport.max_msg_size"],
            2,
        ),
    ];
    for (args, needles, code) in cases {
        let mut a = vec!["sweep"];
        a.extend_from_slice(args);
        let r = run(&bench(), &a, Duration::from_secs(30));
        assert_eq!(r.code, Some(*code), "{a:?}: {}", r.stderr);
        for n in *needles {
            assert!(r.stderr.contains(n), "{a:?}: {n:?} not in:\n{}", r.stderr);
        }
        assert!(r.elapsed < FAST, "{a:?} took {:?}", r.elapsed);
        assert!(r.stdout.is_empty(), "{a:?}: {}", r.stdout);
    }
    let r = run(
        &bench(),
        &["incast", "--fan-in", "1", "--csv", &csv_dir],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--csv"), "{}", r.stderr);
}

#[test]
fn a_size_sweep_writes_a_row_and_a_point_per_size() {
    let dir = std::env::temp_dir().join(unique("sweepcli"));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("sizes.csv");
    let sock = format!("--socket=/tmp/{}.sock", unique("swc"));
    let csv_arg = format!("--csv={}", csv.display());
    let r = run(
        &bench(),
        &[
            "sweep",
            "--msg-sizes=32,4k",
            &sock,
            "--seconds=0.5",
            "--set=workload.warmup_seconds=0.1",
            &csv_arg,
            "--json",
        ],
        Duration::from_secs(120),
    );
    r.assert_ok("sweep --msg-sizes");
    // The convention: with --json, stdout is the summary line alone.
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "stdout:\n{}", r.stdout);
    let v: Value = serde_json::from_str(lines[0]).expect("summary is JSON");
    assert_eq!(v["swept"], "msg_size", "{v}");
    assert_eq!(v["interrupted"], false, "{v}");
    assert_eq!(v["points_planned"], 2, "{v}");
    assert!(v["version"].is_string() && v["config"].is_object(), "{v}");
    let pts = v["points"].as_array().expect("points");
    let sizes: Vec<u64> = pts
        .iter()
        .map(|p| p["req_size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, vec![32, 4096], "{v}");
    for p in pts {
        assert_eq!(p["mode"], "lossy", "{p}");
        assert_eq!(p["resp_size"], 32, "{p}");
        assert_eq!(p["failed"], 0, "{p}");
        assert!(p["mrps"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["p99_us"].as_f64().unwrap() > 0.0, "{p}");
    }
    // The table went to stderr, one row per size.
    assert!(r.stderr.contains("p99.9 us"), "{}", r.stderr);
    assert!(
        r.stderr.lines().any(|l| l.starts_with("4k ")),
        "{}",
        r.stderr
    );
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "header + 2 rows:\n{text}");
    assert!(rows[0].starts_with("req_size,resp_size,mode,"), "{text}");
    assert!(rows[1].starts_with("32,32,lossy,"), "{text}");
    assert!(rows[2].starts_with("4096,32,lossy,"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
