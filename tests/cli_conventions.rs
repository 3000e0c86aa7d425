//! The command-line conventions of the binaries, end to end with the real
//! executables: sizes with suffixes in flags, `--set` and the file; one
//! spelling per value (`af_packet`, `open_loop`) with the other accepted;
//! `-c`/`--set` on the raw port tools; rpc-server refusing client flags;
//! `--print-config`; completions and the man page. Every case here exits
//! before a DPDK port is opened, so they are cheap and run anywhere.

use crate::common::{bench_bin, run, unique};
use std::time::Duration;

const SERVER: &str = env!("CARGO_BIN_EXE_rpc-server");
const CLIENT: &str = env!("CARGO_BIN_EXE_rpc-client");
const LIMIT: Duration = Duration::from_secs(30);

/// A temporary config file holding `text`, removed on drop.
struct TempConfig(std::path::PathBuf);

impl TempConfig {
    fn new(text: &str) -> TempConfig {
        let p = std::env::temp_dir().join(format!("{}.toml", unique("rpccli")));
        std::fs::write(&p, text).expect("write temp config");
        TempConfig(p)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `bin args... --print-config`: exit 0 and the printed TOML, parsed.
fn printed_config(bin: &str, args: &[&str]) -> toml::Table {
    let mut a = args.to_vec();
    a.push("--print-config");
    let r = run(bin, &a, LIMIT);
    assert_eq!(r.code, Some(0), "{a:?}: {}", r.stderr);
    r.stdout
        .parse::<toml::Table>()
        .unwrap_or_else(|e| panic!("{a:?}: not TOML ({e}):\n{}", r.stdout))
}

fn key<'a>(t: &'a toml::Table, dotted: &str) -> &'a toml::Value {
    let (section, k) = dotted.split_once('.').expect("section.key");
    &t[section][k]
}

/// A usage error: exit 2, the message names `says`, and points to --help.
fn usage_error(bin: &str, args: &[&str], says: &[&str]) {
    let r = run(bin, args, LIMIT);
    assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
    for s in says {
        assert!(
            r.stderr.contains(s),
            "{args:?}: must say {s:?}:\n{}",
            r.stderr
        );
    }
    assert!(r.stderr.contains("try '--help'"), "{args:?}: {}", r.stderr);
}

#[test]
fn rpc_server_refuses_client_only_flags() {
    for args in [
        &["--seconds", "2"][..],
        &["--workload", "throughput"],
        &["--window", "8"],
        &["--rate", "1000"],
        // Requests name their response size; the server checks any size.
        &["--msg-size", "4k"],
    ] {
        usage_error(
            SERVER,
            args,
            &[
                &format!("unexpected argument '{}'", args[0]),
                "Usage: rpc-server",
            ],
        );
    }
    // What the server does use is still taken.
    let t = printed_config(
        SERVER,
        &[
            "--set=workload.req_size=4k",
            "--resp-size=64k",
            "--sessions=3",
            "--mode=lossy",
        ],
    );
    assert_eq!(key(&t, "workload.req_size").as_integer(), Some(4096));
    assert_eq!(key(&t, "workload.resp_size").as_integer(), Some(65536));
    assert_eq!(
        key(&t, "workload.sessions_per_thread").as_integer(),
        Some(3)
    );
    assert_eq!(key(&t, "transport.mode").as_str(), Some("lossy"));
    let help = run(SERVER, &["--help"], LIMIT);
    assert!(help.stdout.contains("--json"), "{}", help.stdout);
    assert!(!help.stdout.contains("--seconds"), "{}", help.stdout);
}

#[test]
fn print_config_is_the_effective_config_as_toml() {
    let file = TempConfig::new("[transport]\ncredits = 4\n[workload]\nreq_size = \"2k\"\n");
    for bin in [SERVER, CLIENT] {
        let t = printed_config(
            bin,
            &[
                "-c",
                file.path(),
                "--set=transport.credits=16",
                "--set",
                "workload.resp_size=1M",
            ],
        );
        // The file's value, an override over the file, a suffixed override.
        assert_eq!(key(&t, "workload.req_size").as_integer(), Some(2048));
        assert_eq!(key(&t, "transport.credits").as_integer(), Some(16));
        assert_eq!(key(&t, "workload.resp_size").as_integer(), Some(1 << 20));
        // Defaults are filled in.
        assert_eq!(key(&t, "link.kind").as_str(), Some("memif"));
        assert!(t["transport"].get("idle_timeout_ms").is_some(), "{t}");
    }
    let t = printed_config(
        CLIENT,
        &["--seconds=2", "--workload=open-loop", "--rate=1e5"],
    );
    assert_eq!(key(&t, "workload.seconds").as_float(), Some(2.0));
    assert_eq!(key(&t, "workload.kind").as_str(), Some("open_loop"));
}

#[test]
fn sizes_take_suffixes_in_set_and_name_the_key_when_bad() {
    let t = printed_config(CLIENT, &["--set=workload.req_size=4k"]);
    assert_eq!(key(&t, "workload.req_size").as_integer(), Some(4096));
    let t = printed_config(CLIENT, &["--set=transport.mem_per_worker_mib=1G"]);
    assert_eq!(
        key(&t, "transport.mem_per_worker_mib").as_integer(),
        Some(1024)
    );
    for (set, k, says, forms) in [
        (
            "workload.req_size=4x",
            "workload.req_size",
            "is not a size",
            "4k",
        ),
        (
            "transport.pool_keep_mib=100k",
            "transport.pool_keep_mib",
            "whole number of MiB",
            "512M",
        ),
    ] {
        let r = run(CLIENT, &["--set", set, "--print-config"], LIMIT);
        // A config error, as a usage error: exit 2.
        assert_eq!(r.code, Some(2), "{set}: {}", r.stderr);
        assert!(
            r.stderr.contains(k) && r.stderr.contains(says),
            "{set}: names {k}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(forms),
            "{set}: the accepted forms: {}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "nothing printed: {}", r.stdout);
    }
    // A count is not a size.
    let r = run(
        CLIENT,
        &["--set=transport.credits=4k", "--print-config"],
        LIMIT,
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("transport.credits"), "{}", r.stderr);
    // The flag's own parser says the same of a bad size (exit 2).
    usage_error(
        CLIENT,
        &["--msg-size", "4x"],
        &["--msg-size", "is not a size"],
    );
}

#[test]
fn one_spelling_per_value_and_the_other_accepted() {
    for kind in ["af_packet", "af-packet"] {
        let t = printed_config(CLIENT, &["--link", kind]);
        assert_eq!(key(&t, "link.kind").as_str(), Some("af_packet"), "{kind}");
        let t = printed_config(CLIENT, &[&format!("--set=link.kind={kind}")]);
        assert_eq!(key(&t, "link.kind").as_str(), Some("af_packet"), "{kind}");
        // floor parses its link and stops at the bad --cores, before any port.
        let r = run(
            bench_bin(),
            &["floor", "--link", kind, "--cores", "0"],
            LIMIT,
        );
        assert_eq!(r.code, Some(2), "{kind}: {}", r.stderr);
        assert!(r.stderr.contains("--cores needs two cores"), "{}", r.stderr);
    }
    // Help lists the canonical spelling only.
    for (bin, args) in [
        (bench_bin(), &["floor", "--help"][..]),
        (bench_bin(), &["port-check", "--help"]),
        (CLIENT, &["--help"]),
    ] {
        let r = run(bin, args, LIMIT);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
        assert!(r.stdout.contains("af_packet"), "{args:?}: {}", r.stdout);
        assert!(!r.stdout.contains("af-packet"), "{args:?}: {}", r.stdout);
    }
    let r = run(CLIENT, &["--help"], LIMIT);
    assert!(r.stdout.contains("open_loop") && !r.stdout.contains("open-loop"));
    // A value no spelling matches is a usage error listing the values.
    usage_error(
        CLIENT,
        &["--workload", "warp_speed"],
        &["--workload", "open_loop"],
    );
    usage_error(
        bench_bin(),
        &["floor", "--link", "carrier-pigeon"],
        &["af_packet"],
    );
    usage_error(CLIENT, &["--mode", "fast"], &["lossless"]);
}

#[test]
fn floor_and_port_check_take_a_config_file_and_overrides() {
    // The link comes from the file: a single-process link is refused by
    // name, before any port is opened.
    let ring = TempConfig::new("[link]\nkind = \"ring\"\n");
    let r = run(bench_bin(), &["floor", "-c", ring.path()], LIMIT);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("ring is single-process"), "{}", r.stderr);
    let r = run(bench_bin(), &["floor", "--set", "link.kind=null"], LIMIT);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("null is single-process"), "{}", r.stderr);
    // ... and a shortcut over the file wins only where --set does not.
    let r = run(
        bench_bin(),
        &[
            "floor",
            "-c",
            ring.path(),
            "--link=memif",
            "--set=link.kind=pcap",
        ],
        LIMIT,
    );
    assert!(r.stderr.contains("pcap is single-process"), "{}", r.stderr);
    for sub in ["floor", "port-check"] {
        let r = run(bench_bin(), &[sub, "-c", "/nonexistent/rpc.toml"], LIMIT);
        assert_eq!(r.code, Some(2), "{sub}: {}", r.stderr);
        assert!(
            r.stderr
                .contains("cannot read config file /nonexistent/rpc.toml"),
            "{sub}: {}",
            r.stderr
        );
        let r = run(bench_bin(), &[sub, "--set=link.colour=blue"], LIMIT);
        assert_eq!(r.code, Some(2), "{sub}: {}", r.stderr);
        assert!(r.stderr.contains("link.colour"), "{sub}: {}", r.stderr);
    }
    // The two-host sides are `floor --peer`; the hidden subcommand is gone.
    usage_error(
        bench_bin(),
        &["floor", "--peer", "both"],
        &["--peer", "server", "client"],
    );
    usage_error(
        bench_bin(),
        &["floor-peer", "--role=server"],
        &["floor-peer"],
    );
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let r = run(bench_bin(), &["completions", shell], LIMIT);
        assert_eq!(r.code, Some(0), "{shell}: {}", r.stderr);
        assert!(r.stdout.contains("rpc-bench"), "{shell}: {}", r.stdout);
        assert!(r.stdout.contains("port-check"), "{shell}: subcommands");
    }
    usage_error(bench_bin(), &["completions", "tcsh"], &["tcsh", "bash"]);
    let r = run(bench_bin(), &["man"], LIMIT);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains(".TH rpc-bench"), "{}", r.stdout);
    assert!(r.stdout.contains("floor"), "lists the subcommands");
}
