//! The kernel link: the real rpc-server on DPDK's af_packet (one end of a
//! veth pair) answering the real rpc-client on `link.kind = kernel`, a
//! plain UDP socket in the other end's network namespace
//! (`scripts/kernel-link.sh`), every byte checked; and its bad inputs: no
//! server, an address the client's host does not own, a server configured
//! with the client's link.

use crate::common::{bench_bin, repo_root, run, unique, Server};
use std::process::Command;
use std::time::Duration;

const CLIENT: &str = env!("CARGO_BIN_EXE_rpc-client");
const SERVER: &str = env!("CARGO_BIN_EXE_rpc-server");
const LIMIT: Duration = Duration::from_secs(60);

/// A kernel link made by scripts/kernel-link.sh, removed on drop.
struct KernelLink {
    name: String,
    netns: String,
}

impl KernelLink {
    fn up() -> KernelLink {
        let name = unique("rpck");
        let netns = format!("{name}ns");
        let st = Command::new(repo_root().join("scripts/kernel-link.sh"))
            .args(["up", &name, "--netns", &netns])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run scripts/kernel-link.sh");
        assert!(
            st.success(),
            "scripts/kernel-link.sh up {name} failed (needs root and iproute2)"
        );
        KernelLink { name, netns }
    }

    /// configs/kernel.toml on this pair: the flags both sides take.
    fn args(&self) -> Vec<String> {
        let cfg = repo_root().join("configs/kernel.toml");
        vec![
            format!("--config={}", cfg.display()),
            format!("--iface={}", self.name),
            format!("--set=link.client_netns=\"{}\"", self.netns),
        ]
    }
}

impl Drop for KernelLink {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("scripts/kernel-link.sh"))
            .args(["down", &self.name, "--netns", &self.netns])
            .status();
    }
}

#[test]
fn a_kernel_client_calls_a_dpdk_server_over_af_packet() {
    let link = KernelLink::up();
    let mut srv = link.args();
    srv.push("--link=af_packet".into());
    srv.push(format!("--set=link.file_prefix=\"{}\"", link.name));
    let server = Server::start(&srv);
    let mut args = link.args();
    args.extend(
        [
            "--set=workload.max_requests=2000",
            "--set=workload.verify=true",
            "--msg-size=100",
            "--resp-size=300",
            "--seconds=20",
            "--json",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(CLIENT, &args, LIMIT);
    let s = server.stop_after(&r);
    r.assert_ok("rpc-client");
    let v = r.json();
    assert_eq!(v["link"], "kernel", "{v}");
    assert_eq!(v["completed_total"], 2000, "{v}");
    assert_eq!(v["failed"], 0, "{v}");
    assert_eq!(v["bad_responses"], 0, "{v}");
    // Every request went out of the socket and every answer came back in.
    let sock = &v["client_port"]["kernel_socket"];
    assert!(sock["tx_datagrams"].as_u64().unwrap() >= 2001, "{v}");
    assert!(sock["rx_datagrams"].as_u64().unwrap() >= 2001, "{v}");
    assert_eq!(sock["tx_errors"], 0, "{v}");
    // The DPDK server saw them: the same wire format, answered in full.
    assert!(s["handled"].as_u64().unwrap() >= 2000, "{s}");
    assert_eq!(s["bad_requests"], 0, "{s}");
}

#[test]
fn rpc_bench_runs_the_kernel_link_with_its_server_on_af_packet() {
    let link = KernelLink::up();
    let mut args = vec!["run".to_string()];
    args.extend(link.args());
    args.extend(
        [
            "--seconds=0.5",
            "--set=workload.warmup_seconds=0.1",
            "--json",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(bench_bin(), &args, LIMIT);
    r.assert_ok("rpc-bench run");
    let v = r.json();
    assert_eq!(v["link"], "kernel", "{v}");
    assert!(v["completed"].as_u64().unwrap() > 100, "{v}");
    assert_eq!(v["failed"], 0, "{v}");
    // The floor needs DPDK on both ends: skipped, and said so.
    assert!(
        r.stderr
            .contains("link not measured (the kernel link's client"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_kernel_client_without_a_server_fails_within_its_timeout() {
    let link = KernelLink::up();
    let mut args = link.args();
    args.push("--set=transport.connect_timeout_ms=500".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(CLIENT, &args, LIMIT);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "connect to 10.77.0.1:31851 over the kernel link failed: connect timed out (sent, no answer)"
        ),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("kernel-link.sh"), "{}", r.stderr);
    // 0.5 s connect timeout + 2 s: well under the test's bound.
    assert!(r.elapsed < Duration::from_secs(10), "{:?}", r.elapsed);
}

#[test]
fn a_kernel_client_on_an_address_it_does_not_own_says_so() {
    // No namespace, no pair: 192.0.2.77 (TEST-NET-1) is no address of this host.
    let args = ["--link=kernel", "--set=link.client_ip=\"192.0.2.77\""];
    let r = run(CLIENT, &args, LIMIT);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot bind UDP 192.0.2.77:"),
        "{}",
        r.stderr
    );
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
}

#[test]
fn a_server_on_the_kernel_link_is_a_config_error() {
    let cfg = repo_root().join("configs/kernel.toml");
    let c = format!("--config={}", cfg.display());
    let r = run(SERVER, &[c.as_str()], LIMIT);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("link.kind = kernel is rpc-client's"),
        "{}",
        r.stderr
    );
    // A kernel client has one socket: more cores are refused by key.
    let r = run(
        CLIENT,
        &["--link=kernel", "--set=cores.client=[0,1]"],
        LIMIT,
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("cores.client"), "{}", r.stderr);
}
