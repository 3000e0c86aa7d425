//! `--capture` end to end: rpc-server and rpc-client over memif, each writing
//! a pcap file, read back by tshark with scripts/wireshark/erpc.lua. Checks
//! that the dissector finds the handshake, the requests and the responses
//! with their req_type and msg_size, that the client's file holds every
//! request frame the client sent, and that a small --capture-limit stops the
//! server's file at the bound with the rest counted; with two workers per
//! process, one file per worker holding that worker's frames. Needs tshark
//! (scripts/install-deps.sh installs it).

use crate::common::{repo_root, run, unique};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_rpc-server");
const CLIENT: &str = env!("CARGO_BIN_EXE_rpc-client");
const LIMIT: Duration = Duration::from_secs(60);

const REQUESTS: u64 = 300;
const REQ_SIZE: u32 = 100;
const RESP_SIZE: u32 = 200;
/// workload::REQ_ECHO, the only request type the apps send.
const REQ_ECHO: u32 = 1;
const CLIENT_IP: &str = "127.77.0.1";
const SERVER_IP: &str = "127.77.0.2";
/// The server's capture bound: room for a few dozen of the ~600 frames.
const SERVER_LIMIT_MIB: f64 = 0.02;

// wire::PktType and wire::SmType values.
const REQUEST: u32 = 0;
const RESPONSE: u32 = 1;
const SESSION_MGMT: u32 = 4;
const CONNECT_REQ: u32 = 1;
const CONNECT_RESP: u32 = 2;

/// One dissected frame: the fields the test asks tshark for.
#[derive(Debug)]
struct Frame {
    src: String,
    pkt_type: Option<u32>,
    req_type: Option<u32>,
    msg_size: Option<u32>,
    req_num: Option<u64>,
    sm_type: Option<u32>,
    sm_status: Option<u32>,
}

const FIELDS: [&str; 7] = [
    "ip.src",
    "erpc.pkt_type",
    "erpc.req_type",
    "erpc.msg_size",
    "erpc.req_num",
    "erpc.sm.type",
    "erpc.sm.status",
];

/// Runs tshark with the dissector on `file`; stdout.
fn tshark(file: &Path, extra: &[&str]) -> String {
    let lua = repo_root().join("scripts/wireshark/erpc.lua");
    assert!(lua.exists(), "{} missing", lua.display());
    let out = Command::new("tshark")
        .arg("-X")
        .arg(format!("lua_script:{}", lua.display()))
        .arg("-r")
        .arg(file)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run tshark ({e}): run scripts/install-deps.sh"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {stderr}");
    // A Lua error does not fail tshark; it only warns.
    assert!(
        !stderr.contains("Lua") && !stderr.contains("lua"),
        "erpc.lua did not load cleanly: {stderr}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn dissect(file: &Path) -> Vec<Frame> {
    let mut args = vec!["-T", "fields", "-E", "separator=,"];
    for f in FIELDS {
        args.extend(["-e", f]);
    }
    let num = |s: &str| (!s.is_empty()).then(|| s.parse::<u64>().expect(s));
    tshark(file, &args)
        .lines()
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            assert_eq!(c.len(), FIELDS.len(), "{l}");
            Frame {
                src: c[0].to_string(),
                pkt_type: num(c[1]).map(|v| v as u32),
                req_type: num(c[2]).map(|v| v as u32),
                msg_size: num(c[3]).map(|v| v as u32),
                req_num: num(c[4]),
                sm_type: num(c[5]).map(|v| v as u32),
                sm_status: num(c[6]).map(|v| v as u32),
            }
        })
        .collect()
}

/// The frames from `ip` of packet type `pkt_type` (and SM type `sm_type`).
fn pick<'a>(frames: &'a [Frame], ip: &str, pkt_type: u32, sm_type: Option<u32>) -> Vec<&'a Frame> {
    frames
        .iter()
        .filter(|f| f.src == ip && f.pkt_type == Some(pkt_type))
        .filter(|f| sm_type.is_none() || f.sm_type == sm_type)
        .collect()
}

/// Frames matched by a display filter, with only the port table or only the
/// heuristic registration active.
fn count_filtered(file: &Path, filter: &str, how: &[&str]) -> usize {
    let mut args = how.to_vec();
    args.extend(["-Y", filter]);
    tshark(file, &args).lines().count()
}

/// (written, not written) from a "worker W captured N frames ...; M more
/// frames not written" line on stderr.
fn capture_line(who: &str, worker: u16, stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&format!("{who}: worker {worker} captured ")))
        .unwrap_or_else(|| panic!("no capture summary from {who}:\n{stderr}"));
    let number_after = |key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    let written = number_after("captured ").expect(line);
    let not_written = number_after("; ").unwrap_or(0);
    (written, not_written)
}

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs REQUESTS RPCs per client worker, the client capturing into
/// DIR/client.pcap; `server_args` and `both` are added to the server's
/// arguments (`both` to the client's too). (client JSON, server JSON,
/// client stderr, server stderr).
fn exchange(
    dir: &Path,
    server_args: &[String],
    both: &[&str],
) -> (serde_json::Value, serde_json::Value, String, String) {
    let sock = format!("/tmp/{}.sock", unique("rpccap"));
    let srv_err = dir.join("server.stderr");
    let mut server = Command::new(SERVER)
        .arg(format!("--socket={sock}"))
        .args(server_args)
        .args(both)
        // No sizes: the client's requests name their response size.
        .arg("--max-seconds=60")
        // The exit summary as one JSON line, read back below.
        .arg("--json")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&srv_err).expect("server stderr file"))
        .spawn()
        .expect("start rpc-server");
    std::thread::sleep(Duration::from_millis(300));
    let cli_pcap = dir.join("client.pcap");
    let r = run(
        CLIENT,
        &[
            format!("--socket={sock}").as_str(),
            &format!("--capture={}", cli_pcap.display()),
            &format!("--set=workload.max_requests={REQUESTS}"),
            &format!("--msg-size={REQ_SIZE}"),
            &format!("--resp-size={RESP_SIZE}"),
            "--seconds=20",
            "--json",
        ]
        .into_iter()
        .chain(both.iter().copied())
        .collect::<Vec<_>>(),
        LIMIT,
    );
    // Stop the server by PID (SIGTERM: it flushes its capture and prints JSON).
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(server.id().to_string())
        .status();
    let start = Instant::now();
    let status = loop {
        if let Some(st) = server.try_wait().expect("try_wait") {
            break st;
        }
        if start.elapsed() > Duration::from_secs(15) {
            let _ = server.kill();
            let _ = server.wait();
            panic!("rpc-server did not stop within 15 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut srv_out = String::new();
    if let Some(mut o) = server.stdout.take() {
        use std::io::Read;
        let _ = o.read_to_string(&mut srv_out);
    }
    let srv_stderr = std::fs::read_to_string(&srv_err).unwrap_or_default();
    // The client's outcome first: when it fails, the server's complaint
    // (no peer on the link) says nothing about why.
    r.assert_ok("rpc-client");
    assert!(status.success(), "rpc-server failed: {srv_stderr}");
    let srv = srv_out
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .unwrap_or_else(|| panic!("no JSON from rpc-server: {srv_out}"));
    (r.json(), srv, r.stderr, srv_stderr)
}

#[test]
fn memif_capture_read_back_by_tshark_with_the_dissector() {
    let dir = Dir(std::env::temp_dir().join(unique("rpccap")));
    std::fs::create_dir_all(&dir.0).expect("temp dir");
    let server_args = [
        format!("--capture={}", dir.0.join("server.pcap").display()),
        format!("--capture-limit={SERVER_LIMIT_MIB}"),
    ];
    let (v, srv, cli_stderr, srv_stderr) = exchange(&dir.0, &server_args, &[]);
    assert_eq!(v["completed_total"], REQUESTS, "{v}");
    assert_eq!(srv["handled"], REQUESTS, "{srv}");
    let retransmissions = v["retransmissions"].as_u64().expect("retransmissions");

    // ---- the client's file: unbounded here, so it holds every frame ----
    let cli_pcap = dir.0.join("client.pcap");
    let (written, not_written) = capture_line("rpc-client", 0, &cli_stderr);
    assert_eq!(not_written, 0, "{cli_stderr}");
    let frames = dissect(&cli_pcap);
    assert_eq!(frames.len() as u64, written, "tshark reads every record");
    for f in &frames {
        assert!(f.pkt_type.is_some(), "not dissected as eRPC: {f:?}");
    }
    let from = |ip: &str, t: u32| pick(&frames, ip, t, None);
    let sm = |ip: &str, sm_type: u32| pick(&frames, ip, SESSION_MGMT, Some(sm_type));
    let connect_req = sm(CLIENT_IP, CONNECT_REQ);
    assert!(!connect_req.is_empty(), "no ConnectReq: {frames:?}");
    assert!(connect_req.iter().all(|f| f.msg_size == Some(20)));
    let connect_resp = sm(SERVER_IP, CONNECT_RESP);
    assert!(!connect_resp.is_empty(), "no ConnectResp: {frames:?}");
    assert!(
        connect_resp.iter().all(|f| f.sm_status == Some(0)),
        "{connect_resp:?}"
    );

    let requests = from(CLIENT_IP, REQUEST);
    for f in &requests {
        assert_eq!(f.req_type, Some(REQ_ECHO), "{f:?}");
        assert_eq!(f.msg_size, Some(REQ_SIZE), "{f:?}");
    }
    // Every request is one packet here: the client sent one request frame
    // per completed request plus one per retransmission.
    assert_eq!(
        requests.len() as u64,
        REQUESTS + retransmissions,
        "request frames in the client's capture vs sent"
    );
    let mut req_nums: Vec<u64> = requests.iter().filter_map(|f| f.req_num).collect();
    req_nums.sort_unstable();
    req_nums.dedup();
    assert_eq!(req_nums.len() as u64, REQUESTS, "distinct req_nums");
    let responses = from(SERVER_IP, RESPONSE);
    assert!(responses.len() as u64 >= REQUESTS, "{}", responses.len());
    for f in &responses {
        assert_eq!(f.req_type, Some(REQ_ECHO), "{f:?}");
        assert_eq!(f.msg_size, Some(RESP_SIZE), "{f:?}");
    }

    // Both registrations work on their own: the UDP port table and the
    // heuristic (magic + version).
    let all = frames.len();
    let ports_only = ["--disable-heuristic", "erpc_udp"];
    let heuristic_only = ["-o", "erpc.ports:"];
    assert_eq!(count_filtered(&cli_pcap, "erpc", &ports_only), all);
    assert_eq!(count_filtered(&cli_pcap, "erpc", &heuristic_only), all);
    assert_eq!(
        count_filtered(&cli_pcap, "erpc.sm.type == 1", &heuristic_only),
        connect_req.len()
    );
    // The ConnectReq carries the client's request window (default 8).
    assert_eq!(
        count_filtered(
            &cli_pcap,
            "erpc.sm.type == 1 && erpc.sm.req_window == 8",
            &[]
        ),
        connect_req.len()
    );

    // ---- the server's file: bounded, the rest counted ----
    let srv_pcap = dir.0.join("server.pcap");
    let (s_written, s_not_written) = capture_line("rpc-server", 0, &srv_stderr);
    let limit = (SERVER_LIMIT_MIB * 1048576.0) as u64;
    let size = std::fs::metadata(&srv_pcap).expect("server.pcap").len();
    assert!(size <= limit, "{size} > {limit}");
    assert!(s_not_written > 0, "the limit was not reached: {srv_stderr}");
    let s_frames = dissect(&srv_pcap);
    assert_eq!(s_frames.len() as u64, s_written);
    // It is a prefix of the traffic: the handshake first.
    assert_eq!(s_frames[0].sm_type, Some(CONNECT_REQ), "{:?}", s_frames[0]);
    assert_eq!(s_frames[1].sm_type, Some(CONNECT_RESP), "{:?}", s_frames[1]);
    // Over lossless memif the server saw exactly the client's frames.
    assert_eq!(
        s_written + s_not_written,
        written,
        "server's written + not written vs client's frames"
    );
}

#[test]
fn two_workers_capture_into_one_file_each() {
    // Worker 0 writes client.pcap, worker 1 client.w1.pcap; each holds its
    // own endpoint's traffic (worker i uses UDP port base + i).
    let dir = Dir(std::env::temp_dir().join(unique("rpccap")));
    std::fs::create_dir_all(&dir.0).expect("temp dir");
    let cores = ["--set=cores.server=[0, 1]", "--set=cores.client=[0, 1]"];
    let (v, _, cli_stderr, _) = exchange(&dir.0, &[], &cores);
    assert_eq!(v["completed_total"], 2 * REQUESTS, "{v}");
    let retransmissions = v["retransmissions"].as_u64().expect("retransmissions");
    let mut requests = 0;
    for (worker, file, port) in [(0, "client.pcap", 31851), (1, "client.w1.pcap", 31852)] {
        let path = dir.0.join(file);
        let (written, not_written) = capture_line("rpc-client", worker, &cli_stderr);
        assert_eq!(not_written, 0, "{cli_stderr}");
        assert_eq!(dissect(&path).len() as u64, written, "{file}");
        let filter = format!("erpc.pkt_type == 0 && udp.srcport == {port}");
        let mine = count_filtered(&path, &filter, &[]) as u64;
        assert!(mine >= REQUESTS, "{file}: {mine} requests from port {port}");
        requests += mine;
        let other = format!("udp.srcport != {port} && udp.dstport != {port}");
        assert_eq!(
            count_filtered(&path, &other, &[]),
            0,
            "{file} holds another worker's frames"
        );
    }
    assert_eq!(requests, 2 * REQUESTS + retransmissions);
}
