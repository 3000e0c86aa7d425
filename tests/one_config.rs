//! One configuration, resolved once (issue 30): on one memif link,
//! `rpc-bench run`, `sweep --msg-sizes 64k --regimes lossless` and `compare
//! --regimes lossless` measure the link and report the same lossless credits
//! (within the measurement's spread), each saying where they came from; and
//! one `[transport]` section is accepted or refused alike by rpc-server,
//! rpc-client, rpc-bench and rpc-lab.

use crate::common;
use crate::common::{bench_bin, bin, client_bin, run, server_bin, u, unique};
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// Lossless credits of one rpc-bench invocation and where they came from.
fn lossless_credits(args: &[&str], pick: impl Fn(&Value) -> &Value) -> (u64, String) {
    let r = run(bench_bin(), args, LIMIT);
    r.assert_ok(&args.join(" "));
    let v = r.json();
    let p = pick(&v);
    (u(p, &["credits"]), p["credits_source"].to_string())
}

#[test]
fn run_sweep_and_compare_agree_on_the_lossless_credits_of_one_link() {
    let sock = format!("--socket=/tmp/{}.sock", unique("one"));
    let short = ["--seconds=0.3", "--set=workload.warmup_seconds=0.1"];
    let with = |head: &[&'static str]| {
        let mut a: Vec<&str> = head.to_vec();
        a.push(sock.as_str());
        a.extend(short);
        a.push("--json");
        a
    };
    // The three tools' credits on this link, each measured by its floor.
    let measure = || {
        let (run_c, run_src) = lossless_credits(
            &with(&[
                "run",
                "--workload=large",
                "--msg-size=65536",
                "--resp-size=32",
            ]),
            |v| &v["bdp"],
        );
        let (sweep_c, sweep_src) = lossless_credits(
            &with(&[
                "sweep",
                "--msg-sizes=64k",
                "--regimes=lossless",
                "--workload=large",
            ]),
            |v| &v["points"][0],
        );
        let (cmp_c, cmp_src) = lossless_credits(
            &with(&[
                "compare",
                "--regimes=lossless",
                "--workload=large",
                "--msg-size=65536",
                "--resp-size=32",
            ]),
            |v| &v["lossless"],
        );
        for src in [&run_src, &sweep_src, &cmp_src] {
            assert!(src.contains("derived"), "credits from the BDP rule: {src}");
        }
        [run_c, sweep_c, cmp_c]
    };
    // Within the floor's spread on this VM: its train rate and burst round
    // trip move between runs (14-93 Gb/s, 9-50 us), their product less
    // (54 to 74 credits in one session's runs, 2026-11-26; 39 to 66 in one
    // run of this test, 2026-11-27, 1.69x; 59 to 124 in a cold test.sh
    // the same day, 2.1x). The disagreement this guards against was 70
    // against 9 (7.8x): 3x keeps it caught and the floor's own noise out.
    // A vCPU stall during one floor's burst can still make one measurement
    // tiny (9, 66, 56 in a test.sh on 2026-11-28, the next three runs of
    // this test within 3x): a tool that derives its credits differently
    // disagrees every time, noise does not, so the three are measured
    // again once before the test fails.
    let agree = |all: &[u64; 3]| {
        let (lo, hi) = (*all.iter().min().unwrap(), *all.iter().max().unwrap());
        // The floor measured the link each time: far above the config's 9.
        lo > 9 && hi as f64 <= lo as f64 * 3.0
    };
    let mut all = measure();
    if !agree(&all) {
        eprintln!("one_config: {all:?} disagree; measuring the three again once");
        all = measure();
    }
    let [run_c, sweep_c, cmp_c] = all;
    assert!(
        agree(&all),
        "run {run_c}, sweep {sweep_c}, compare {cmp_c}: one link, one BDP (within the floor's spread), each above the config's 9"
    );
}

#[test]
fn no_floor_says_what_it_falls_back_to() {
    let sock = format!("--socket=/tmp/{}.sock", unique("onf"));
    let r = run(
        bench_bin(),
        &[
            "compare",
            &sock,
            "--no-floor",
            "--regimes=lossless,lossy",
            "--seconds=0.2",
            "--set=workload.warmup_seconds=0",
            "--json",
        ],
        LIMIT,
    );
    r.assert_ok("compare --no-floor");
    assert!(
        r.stderr.contains("link not measured (--no-floor)")
            && r.stderr.contains("nothing measured in this run"),
        "{}",
        r.stderr
    );
    let v = r.json();
    assert_eq!(u(&v["lossless"], &["credits"]), 9, "{v}");
    assert_eq!(u(&v["lossy"], &["credits"]), 36, "{v}");
    assert_eq!(v["lossless"]["bdp_source"], "default", "{v}");
}

/// Writes `text` to a fresh file and returns its path.
fn file(text: &str) -> String {
    let p = std::env::temp_dir().join(format!("{}.toml", unique("cfg")));
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn one_transport_section_is_accepted_or_refused_alike_by_every_tool() {
    let lab = bin("rpc-lab");
    let fast = Duration::from_secs(20);
    // Each tool reads the file without opening a port: the binaries'
    // --print-config, rpc-bench's engine cost (in memory), a small lab run.
    let tools = |path: &str| -> Vec<(&'static str, common::Run)> {
        vec![
            (
                "rpc-server",
                run(server_bin(), &["-c", path, "--print-config"], fast),
            ),
            (
                "rpc-client",
                run(client_bin(), &["-c", path, "--print-config"], fast),
            ),
            (
                "rpc-bench",
                run(bench_bin(), &["engine", "-c", path, "--rpcs=1000"], fast),
            ),
            (
                "rpc-lab",
                run(
                    lab,
                    &[
                        "-c",
                        path,
                        "--scenario=incast",
                        "--hosts=2",
                        "--flow-size=4096",
                    ],
                    fast,
                ),
            ),
        ]
    };
    let good =
        file("[transport]\nrto_us = 8000\nscan_us = 250\nmode = \"lossy\"\ncc = \"timely\"\n");
    for (tool, r) in tools(&good) {
        assert!(r.ok(), "{tool} refused a valid [transport]:\n{}", r.stderr);
    }
    // A whole run config: the lab reads its [transport] and says it does
    // not use the other sections.
    let whole = file(&format!(
        "[link]\nkind = \"memif\"\nmtu = 1500\n[cores]\nserver = [1]\nclient = [0]\n{}",
        std::fs::read_to_string(&good).unwrap()
    ));
    for (tool, r) in tools(&whole) {
        assert!(r.ok(), "{tool} refused a valid run config:\n{}", r.stderr);
        if tool == "rpc-lab" {
            assert!(
                r.stderr.contains("[link] is not used in the fabric"),
                "{}",
                r.stderr
            );
            assert!(
                r.stderr.contains("transport.mode is not applied"),
                "{}",
                r.stderr
            );
        }
    }
    let bad = [
        (
            "[transport]\nrto_us = 100\n",
            "transport.rto_us = 100 must be >= transport.scan_us = 500",
        ),
        ("[transport]\nrto_uss = 100\n", "rto_uss"),
        ("[transport]\nnak = true\n", "transport.nak"),
    ];
    for (text, needle) in bad {
        let path = file(text);
        for (tool, r) in tools(&path) {
            assert!(!r.ok(), "{tool} accepted {text:?}");
            assert!(
                r.stderr.contains(needle),
                "{tool} on {text:?}: {}",
                r.stderr
            );
        }
    }
}

#[test]
fn print_config_says_where_each_value_came_from() {
    let r = run(
        client_bin(),
        &["--set=transport.mode=lossy", "--print-config"],
        Duration::from_secs(20),
    );
    r.assert_ok("rpc-client --print-config");
    let line = |k: &str| {
        r.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{k} = ")))
            .unwrap_or_else(|| panic!("{k} missing:\n{}", r.stdout))
            .to_string()
    };
    assert!(line("mode").ends_with("# flag"), "{}", line("mode"));
    assert!(line("rto_us").ends_with("# default"), "{}", line("rto_us"));
    assert!(
        line("credits").contains("# derived: lossy: 4 x BDP"),
        "{}",
        line("credits")
    );
}
