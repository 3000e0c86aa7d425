//! End-to-end tests of the virtio and af_xdp links (docs/links.md): the
//! real rpc-server and rpc-client over net_vhost <-> net_virtio_user and
//! over net_af_xdp on a veth pair, virtio with two queue pairs on each side
//! (queue i reaches the peer's queue i, as memif), port-check on af_xdp, and
//! the bad inputs: a virtio client whose backend never comes and an af_xdp
//! interface that does not exist each fail with a message naming it, within
//! the wait, never hanging; and two processes on net_tap ports joined by a
//! kernel bridge.

use crate::common;
use crate::common::{bench_bin, repo_root, run, unique, Running, Server, Veth};
use std::process::Command;
use std::time::{Duration, Instant};

const CLIENT: &str = env!("CARGO_BIN_EXE_rpc-client");
const SERVER: &str = env!("CARGO_BIN_EXE_rpc-server");
const LIMIT: Duration = Duration::from_secs(60);

/// `n` RPCs per client worker over `link` (shared flags), `total` in all;
/// the client's and server's reports and the client's stderr.
fn exchange(
    link: &[String],
    n: u64,
    total: u64,
    extra: &[&str],
) -> (serde_json::Value, serde_json::Value, String) {
    let server = Server::start(&[link, &common::server_flags(extra)].concat());
    let mut args: Vec<String> = link.to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(format!("--set=workload.max_requests={n}"));
    args.push("--seconds=20".into());
    args.push("--json".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(CLIENT, &args, LIMIT);
    let srv = server.stop_after(&r);
    r.assert_ok("rpc-client");
    let v = r.json();
    assert_eq!(
        (v["failed"].as_u64(), v["bad_responses"].as_u64()),
        (Some(0), Some(0)),
        "{v}"
    );
    assert_eq!(v["completed_total"], total, "{v}");
    assert_eq!(srv["handled"], total, "each request handled once: {srv}");
    assert_eq!(srv["bad_requests"], 0, "{srv}");
    (v, srv, r.stderr)
}

fn virtio_link() -> Vec<String> {
    vec![
        "--link=virtio".to_string(),
        format!("--socket=/tmp/{}.sock", unique("rpcvirtio")),
    ]
}

/// With `checksum_offload = "auto"` (the default) both ends take virtio's
/// UDP checksum offload, and nothing is dropped as malformed on either end
/// (what crosses the virtqueues is checked frame by frame in
/// engine/tests/dpdk/virtio_offload.rs).
#[test]
fn virtio_rpcs_complete() {
    let (v, srv, stderr) = exchange(&virtio_link(), 3000, 3000, &[]);
    assert_eq!(v["link"], "virtio");
    assert!(
        stderr.contains(
            "driver net_virtio_user, checksum offload tx udp (ipv4: software), rx udp (ipv4: software)"
        ),
        "{stderr}"
    );
    assert_eq!(srv["stats"]["drops"]["malformed"], 0, "{srv}");
    assert_eq!(v["client_stats"]["drops"]["malformed"], 0, "{v}");
}

/// Two workers a side on one virtio port with queues=2, two sessions each:
/// both sessions of client worker i dial server worker i, whose UDP port
/// only that worker owns. Its frames leave on queue i and reach the
/// backend's queue i, so all four connect and complete; were the queues not
/// paired by position, or a session of worker 0 aimed at server worker 1
/// (round robin did, before docs/links.md "Several workers on one port"),
/// its frames would land on the other worker's queue, be dropped as not its
/// own, and its connect would time out. Four poll loops share two cores:
/// few RPCs.
#[test]
fn virtio_two_queues_pair_queue_i_with_the_peers_queue_i() {
    let (v, srv, _) = exchange(
        &virtio_link(),
        40,
        80,
        &[
            "--set=cores.server=[0, 1]",
            "--set=cores.client=[0, 1]",
            "--set=cores.allow_shared=true",
            "--set=workload.sessions_per_thread=2",
        ],
    );
    assert_eq!(v["client_workers"], 2, "{v}");
    assert_eq!(srv["stats"]["sessions_accepted"], 4, "{srv}");
    assert_eq!(srv["stats"]["drops"]["not_ours"], 0, "{srv}");
}

#[test]
fn virtio_client_without_a_backend_names_the_socket_within_its_wait() {
    let sock = format!("/tmp/{}.sock", unique("rpcnovhost"));
    let t = Instant::now();
    let r = run(
        CLIENT,
        &["--link=virtio", &format!("--socket={sock}"), "--wait=2"],
        LIMIT,
    );
    assert!(!r.ok(), "no backend: must fail\n{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "no vhost-user backend listens on {sock} after 2000 ms"
        )),
        "{}",
        r.stderr
    );
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "bounded: {:?}",
        t.elapsed()
    );
}

#[test]
fn af_xdp_on_veth_rpcs_complete() {
    let name = unique("rpcx");
    let ns = format!("{name}ns");
    let _veth = Veth::up(&name, &["--netns", &ns]);
    let link = vec![
        "--link=af_xdp".to_string(),
        format!("--iface={name}"),
        format!("--set=link.client_netns=\"{ns}\""),
    ];
    let (v, _, _) = exchange(&link, 2000, 2000, &[]);
    assert_eq!(v["link"], "af_xdp");
}

#[test]
fn af_xdp_port_check_sends_every_frame() {
    let name = unique("rpcx");
    let _veth = Veth::up(&name, &[]);
    let r = run(
        bench_bin(),
        &[
            "port-check",
            "--json",
            "--link=af_xdp",
            &format!("--iface={name}"),
            "--frames=100",
        ],
        LIMIT,
    );
    assert!(r.ok(), "{}", r.stderr);
    let v = r.json();
    assert_eq!(v["link_up"], true, "{v}");
    assert_eq!(
        v["port_tx_packets"], 100,
        "the packed pool: every frame leaves: {v}"
    );
    // The kernel's own count: the frames really left the socket.
    let tx: u64 = std::fs::read_to_string(format!("/sys/class/net/{name}/statistics/tx_packets"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(tx >= 100, "kernel tx_packets {tx}: {v}");
}

#[test]
fn af_xdp_on_a_missing_interface_is_refused_at_once() {
    let t = Instant::now();
    let r = run(
        SERVER,
        &["--link=af_xdp", "--iface=rpcnosuch0", "--wait=5"],
        LIMIT,
    );
    assert!(!r.ok(), "{}", r.stderr);
    assert!(
        r.stderr.contains("interface rpcnosuch0 does not exist"),
        "{}",
        r.stderr
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// A kernel bridge made by scripts/tap-bridge.sh, removed on drop.
struct TapBridge(String);

impl Drop for TapBridge {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("scripts/tap-bridge.sh"))
            .args(["down", &self.0])
            .status();
    }
}

/// rpc-server and rpc-client each on a net_tap port, the two taps joined
/// by a kernel bridge (scripts/tap-bridge.sh, docs/links.md): every RPC
/// completes. The script gives each tap's kernel side a MAC other than its
/// DPDK port's; without that the bridge takes every frame one process
/// addresses to the other for the host itself and the connect times out
/// (the cause of the failed try on net_tap before this script).
#[test]
fn tap_two_processes_through_a_bridge_complete_rpcs() {
    let name = unique("rpct");
    let (srv_tap, cli_tap, bridge) = (format!("{name}s"), format!("{name}c"), format!("{name}b"));
    let _bridge = TapBridge(bridge.clone());
    let server = Server::start(&[
        "--link=af_packet".to_string(),
        format!("--set=link.vdev=\"net_tap0,iface={srv_tap}\""),
    ]);
    let client = Running::start(
        CLIENT,
        &[
            "--link=af_packet",
            &format!("--set=link.vdev=\"net_tap0,iface={cli_tap}\""),
            "--set=workload.max_requests=300",
            // The bridge comes after both ports started: room for a slow
            // start on a loaded machine.
            "--set=transport.connect_timeout_ms=10000",
            "--seconds=20",
            "--json",
        ],
    );
    let st = Command::new(repo_root().join("scripts/tap-bridge.sh"))
        .args(["up", &bridge, &srv_tap, &cli_tap, "--wait", "10"])
        .status()
        .expect("run scripts/tap-bridge.sh");
    assert!(
        st.success(),
        "scripts/tap-bridge.sh up failed (root, iproute2)"
    );
    let r = client.finish(LIMIT);
    let srv = server.stop_after(&r);
    r.assert_ok("rpc-client");
    assert!(r.stderr.contains("driver net_tap"), "{}", r.stderr);
    let v = r.json();
    assert_eq!(
        (v["completed_total"].as_u64(), v["failed"].as_u64()),
        (Some(300), Some(0)),
        "{v}"
    );
    assert_eq!(srv["handled"], 300, "{srv}");
}
