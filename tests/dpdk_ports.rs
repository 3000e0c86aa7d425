//! Foundation end-to-end tests: the real `rpc-bench` binary brings ports up on
//! every virtual device kind, exchanges frames between two processes over
//! memif with every frame answered and no mbuf leaked, and fails cleanly
//! (non-zero exit, a message naming the problem, no hang) on bad input.

use crate::common;
use crate::common::{run, unique, Veth};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_rpc-bench");
const LIMIT: Duration = Duration::from_secs(60);

fn port_check(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["port-check", "--json"];
    a.extend_from_slice(args);
    let r = run(BIN, &a, LIMIT);
    assert!(r.ok(), "port-check {args:?} failed: {}", r.stderr);
    let v = r.json();
    assert_eq!(v["link_up"], true, "{v}");
    assert_eq!(
        v["mbufs_in_use_before"], v["mbufs_in_use_after"],
        "mbuf leak: {v}"
    );
    v
}

#[test]
fn null_port_sends_and_receives() {
    let v = port_check(&["--link", "null", "--frames", "256"]);
    assert_eq!(v["sent"], 256);
    // net_null is an endless RX source.
    assert!(v["received"].as_u64().unwrap() >= 256, "{v}");
}

#[test]
fn ring_port_loops_every_frame_back() {
    let v = port_check(&["--link", "ring", "--frames", "300"]);
    assert_eq!(v["sent"], 300);
    assert_eq!(v["received"], 300, "{v}");
}

/// Writes a pcap file with `n` 64-byte frames.
fn write_pcap(path: &std::path::Path, n: u32) {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes()); // pcap magic, microseconds
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0u8; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes()); // Ethernet
    for i in 0..n {
        b.extend_from_slice(&i.to_le_bytes()); // ts sec
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&64u32.to_le_bytes());
        b.extend_from_slice(&64u32.to_le_bytes());
        let mut f = [0u8; 64];
        f[0..6].copy_from_slice(&[0xff; 6]);
        f[12..14].copy_from_slice(&0x88B5u16.to_be_bytes());
        f[14..18].copy_from_slice(&i.to_be_bytes());
        b.extend_from_slice(&f);
    }
    std::fs::write(path, b).expect("write pcap");
}

fn pcap_records(path: &std::path::Path) -> usize {
    let b = std::fs::read(path).expect("read pcap");
    let mut off = 24;
    let mut n = 0;
    while off + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16 + incl;
        n += 1;
    }
    n
}

#[test]
fn pcap_port_replays_and_captures() {
    let dir = std::env::temp_dir().join(unique("rpcpcap"));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.pcap");
    let output = dir.join("out.pcap");
    write_pcap(&input, 50);
    let spec = format!(
        "net_pcap0,rx_pcap={},tx_pcap={}",
        input.display(),
        output.display()
    );
    let v = port_check(&["--vdev", &spec, "--frames", "40"]);
    assert_eq!(v["received"], 50, "every replayed frame arrives: {v}");
    assert_eq!(v["sent"], 40);
    // The pcap PMD flushes its dumper when the port closes at exit.
    assert_eq!(pcap_records(&output), 40, "every sent frame is captured");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn af_packet_port_on_veth() {
    let name = unique("rpct");
    let _veth = Veth::up(&name, &[]);
    let v = port_check(&["--link", "af-packet", "--iface", &name, "--frames", "100"]);
    assert_eq!(v["sent"], 100);
    assert_eq!(v["port_tx_packets"], 100, "{v}");
}

#[test]
fn memif_two_processes_every_frame_answered() {
    let sock = format!("/tmp/{}.sock", unique("rpcfloor"));
    let r = run(
        BIN,
        &[
            "floor",
            "--socket",
            &sock,
            "--pings",
            "2000",
            "--warmup",
            "100",
            "--stream-secs",
            "0.2",
            "--json",
        ],
        LIMIT,
    );
    assert!(r.ok(), "floor failed: {}\n{}", r.stdout, r.stderr);
    let v = r.json();
    assert_eq!(v["answered_64"], 2000, "{v}");
    assert_eq!(v["answered_1k"], 2000, "{v}");
    assert_eq!(v["server"]["quit_received"], true);
    // memif applies backpressure instead of dropping: every streamed frame arrives.
    assert_eq!(v["stream_sent_64"], v["stream_received_64"], "{v}");
    assert_eq!(v["stream_sent_mtu"], v["stream_received_mtu"], "{v}");
    assert!(v["stream_received_64"].as_u64().unwrap() > 0);
    for side in [&v, &v["server"]] {
        assert_eq!(
            side["mbufs_in_use_start"], side["mbufs_in_use_end"],
            "mbuf leak: {side}"
        );
    }
    for k in [
        "p50_us",
        "p99_us",
        "p999_us",
        "p50_us_1k",
        "p99_us_1k",
        "stream_mpps_64",
        "stream_gbps_mtu",
        "echo_mpps_64",
        "burst_rtt_p50_us_mtu",
        "train_gbps_mtu",
    ] {
        assert!(v[k].as_f64().unwrap() > 0.0, "{k} missing or zero: {v}");
    }
    // memif drops nothing: every 32-frame burst came back whole.
    assert_eq!(v["bursts_lost"], 0, "{v}");
    assert!(v["bursts"].as_u64().unwrap() >= 50, "{v}");
    assert_eq!(v["trains_lost"], 0, "{v}");
    // The long train (8 bursts) takes longer than the short one (2).
    let trains = v["train_rtt_p50_us_mtu"].as_array().unwrap();
    assert!(trains[1].as_f64() > trains[0].as_f64(), "{v}");
    // A burst of 32 MTU frames takes longer than one 64 B ping (p50s).
    assert!(
        v["burst_rtt_p50_us_mtu"].as_f64() >= v["p50_us"].as_f64(),
        "{v}"
    );
    assert!(v["p50_us"].as_f64() <= v["p99_us"].as_f64());
}

fn expect_failure(args: &[&str], needle: &str) {
    let r = run(BIN, args, LIMIT);
    assert!(!r.ok(), "{args:?} should fail");
    assert_eq!(
        r.code,
        Some(1),
        "clean error exit, not a crash: {}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "panic: {}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "stderr should mention {needle:?}:\n{}",
        r.stderr
    );
}

#[test]
fn bad_eal_argument_is_a_clear_error() {
    expect_failure(
        &[
            "port-check",
            "--link",
            "null",
            "--eal-arg=--no-such-eal-flag",
        ],
        "rte_eal_init failed",
    );
}

#[test]
fn missing_vdev_driver_is_a_clear_error() {
    expect_failure(
        &["port-check", "--vdev", "net_nosuchdriver0"],
        "rte_eal_init failed: No such device",
    );
}

#[test]
fn unknown_pci_address_is_a_clear_error() {
    expect_failure(
        &["port-check", "--link", "pci", "--pci", "0000:99:00.0"],
        "no DPDK port named \"0000:99:00.0\"",
    );
}

#[test]
fn link_that_never_comes_up_times_out() {
    let sock = format!("/tmp/{}.sock", unique("rpcnobody"));
    let r = run(
        BIN,
        &[
            "port-check",
            "--link",
            "memif",
            "--socket",
            &sock,
            "--link-timeout-ms",
            "500",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("did not come up within 500 ms"),
        "{}",
        r.stderr
    );
    assert!(
        r.elapsed < Duration::from_secs(20),
        "bounded: took {:?}",
        r.elapsed
    );
}

#[test]
fn bad_cli_arguments_are_rejected() {
    let r = run(BIN, &["floor", "--link", "carrier-pigeon"], LIMIT);
    assert_eq!(r.code, Some(2), "clap usage error: {}", r.stderr);
    assert!(r.stderr.contains("carrier-pigeon"));
    let r = run(BIN, &["floor", "--link", "ring"], LIMIT);
    assert_eq!(r.code, Some(2), "a link the floor cannot use: {}", r.stderr);
    assert!(r.stderr.contains("single-process"), "{}", r.stderr);
}

/// Sizes take suffixes and seconds must be a finite number above zero:
/// each bad value is a usage error (exit 2) that names the flag and says
/// what is accepted, before any port is opened; a missing config file is
/// said once.
#[test]
fn sizes_take_suffixes_and_bad_seconds_are_named() {
    let client = common::client_bin();
    for (args, says) in [
        (
            &["--msg-size", "4x"][..],
            "is not a size: use bytes (4096) or a suffix k, M, G",
        ),
        (&["--resp-size", "5G"][..], "over 4 GiB"),
        (
            &["--seconds", "-1"][..],
            "seconds must be a finite number above 0",
        ),
        (
            &["--seconds", "nan"][..],
            "seconds must be a finite number above 0",
        ),
    ] {
        let r = run(client, args, LIMIT);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(args[0]), "names the flag: {}", r.stderr);
    }
    // A missing config file: its cause once, exit 2 (a config error).
    let server = common::server_bin();
    let r = run(server, &["-c", "/nonexistent/rpc.toml"], LIMIT);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("cannot read config file /nonexistent/rpc.toml"),
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stderr.matches("No such file or directory").count(),
        1,
        "{}",
        r.stderr
    );
    // A suffixed size is taken: rpc-bench runs 4 KiB requests.
    let r = run(
        BIN,
        &[
            "run",
            "--msg-size",
            "4k",
            "--seconds",
            "0.2",
            "--no-floor",
            "--json",
        ],
        LIMIT,
    );
    assert!(r.ok(), "{}\n{}", r.stdout, r.stderr);
    let v = r.json();
    assert_eq!(v["msg_size"].as_u64(), Some(4096), "{v}");
}
