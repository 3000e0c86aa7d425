//! Helpers for end-to-end tests: run a real binary with a hard time bound,
//! unique names for sockets and veth pairs, a veth pair torn down on drop.
#![allow(dead_code)]

mod running;
#[allow(unused_imports)] // not every test binary drives a running process
pub use running::Running;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `rpc-bench compare` arguments of the injected-loss case the regime docs
/// use (docs/lossy-vs-lossless.md): 64 KiB requests (46 packets), 32 B
/// answers, a window of 4, 1 % uniform loss.
pub const LOSS_64K_ARGS: [&str; 6] = [
    "--workload=throughput",
    "--window=4",
    "--msg-size=65536",
    "--resp-size=32",
    "--set=faults.drop=uniform",
    "--set=faults.p=0.01",
];

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        self.stdout
            .lines()
            .rev()
            .find_map(|l| {
                serde_json::from_str::<serde_json::Value>(l.trim())
                    .ok()
                    .filter(|v| v.is_object())
            })
            .unwrap_or_else(|| {
                panic!(
                    "no JSON line in stdout:\n{}\nstderr:\n{}",
                    self.stdout, self.stderr
                )
            })
    }
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// Panics with the exit code and both outputs unless the run exited 0.
    pub fn assert_ok(&self, what: &str) {
        assert!(
            self.ok(),
            "{what} failed (exit {:?}):\n{}\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
    }
}

/// Starts `bin args` with no stdin and both outputs piped.
fn spawn_piped(bin: &str, args: &[&str]) -> std::process::Child {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"))
}

/// Runs `bin args` and kills it (by PID) if it outlives `limit`.
pub fn run(bin: &str, args: &[&str], limit: Duration) -> Run {
    let start = Instant::now();
    let mut child = spawn_piped(bin, args);
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let code = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{bin} {args:?} did not finish within {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
        elapsed: start.elapsed(),
    }
}

/// A name unique to this test run (pid + counter), short enough for an interface.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}{}{}",
        std::process::id() % 100_000,
        N.fetch_add(1, Ordering::SeqCst)
    )
}

pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the package folder has a parent")
        .to_path_buf()
}

/// A veth pair NAME <-> NAMEp made by scripts/veth.sh, removed on drop.
pub struct Veth {
    pub name: String,
    pub netns: Option<String>,
}

impl Veth {
    pub fn up(name: &str, extra: &[&str]) -> Veth {
        let script = repo_root().join("scripts/veth.sh");
        let st = Command::new(&script)
            .arg("up")
            .arg(name)
            .args(extra)
            .status()
            .expect("run scripts/veth.sh");
        assert!(
            st.success(),
            "scripts/veth.sh up {name} failed (needs root and iproute2)"
        );
        let netns = extra
            .windows(2)
            .find(|w| w[0] == "--netns")
            .map(|w| w[1].to_string());
        Veth {
            name: name.to_string(),
            netns,
        }
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let script = repo_root().join("scripts/veth.sh");
        let mut cmd = Command::new(script);
        cmd.arg("down").arg(&self.name);
        if let Some(ns) = &self.netns {
            cmd.arg("--netns").arg(ns);
        }
        let _ = cmd.status();
    }
}

/// Flags only rpc-client takes; rpc-server refuses them as unexpected
/// arguments (it serves whatever workload a client runs).
pub const CLIENT_ONLY_FLAGS: [&str; 5] = [
    "--workload",
    "--seconds",
    "--window",
    "--rate",
    "--msg-size",
];

/// `args` shared by both sides (`--flag=value` forms), without the client's
/// own flags: what the server of the same run takes.
pub fn server_flags<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    args.iter()
        .map(|a| a.as_ref())
        .filter(|a| {
            let flag = a.split('=').next().unwrap_or(a);
            assert!(
                !CLIENT_ONLY_FLAGS.contains(a),
                "{a}: use the --flag=value form in shared arguments"
            );
            !CLIENT_ONLY_FLAGS.contains(&flag)
        })
        .map(str::to_string)
        .collect()
}

/// The binary `name` (`rpc-server`, `rpc-client`, `rpc-hostile` of apps,
/// `rpc-bench` of bench) of this build. A test sees its own package's
/// binaries as cargo built them for it (`CARGO_BIN_EXE_*`); the other
/// package's come from `RPC_BIN_DIR` when set (scripts/test.sh), else from
/// the folder cargo put this package's binaries in. `cargo test
/// --workspace` builds every binary; `cargo test -p apps` (or `-p bench`)
/// alone leaves the other package's as last built.
pub fn bin(name: &str) -> &'static str {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    static PATHS: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());
    let mut paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = paths.get(name) {
        return p;
    }
    let own = [
        ("rpc-server", option_env!("CARGO_BIN_EXE_rpc-server")),
        ("rpc-client", option_env!("CARGO_BIN_EXE_rpc-client")),
        ("rpc-hostile", option_env!("CARGO_BIN_EXE_rpc-hostile")),
        ("rpc-bench", option_env!("CARGO_BIN_EXE_rpc-bench")),
    ];
    let path = match own.iter().find(|(n, _)| *n == name).and_then(|(_, p)| *p) {
        Some(p) => p.to_string(),
        None => {
            let dir = match std::env::var("RPC_BIN_DIR") {
                Ok(d) => std::path::PathBuf::from(d),
                Err(_) => {
                    let built = own
                        .iter()
                        .find_map(|(_, p)| *p)
                        .expect("this test's package builds a binary");
                    std::path::Path::new(built)
                        .parent()
                        .expect("a binary sits in a folder")
                        .to_path_buf()
                }
            };
            let p = dir.join(name);
            assert!(
                p.exists(),
                "{} is not built: run `cargo build --release --workspace --bins` first",
                p.display()
            );
            p.display().to_string()
        }
    };
    let path: &'static str = Box::leak(path.into_boxed_str());
    paths.insert(name.to_string(), path);
    path
}

/// rpc-server of this build ([`bin`]).
pub fn server_bin() -> &'static str {
    bin("rpc-server")
}

/// rpc-client of this build ([`bin`]).
pub fn client_bin() -> &'static str {
    bin("rpc-client")
}

/// rpc-bench of this build ([`bin`]).
pub fn bench_bin() -> &'static str {
    bin("rpc-bench")
}

/// A running rpc-server, stopped by PID (SIGTERM, then SIGKILL) on drop.
pub struct Server {
    child: std::process::Child,
}

impl Server {
    pub fn start(args: &[String]) -> Server {
        let child = Command::new(server_bin())
            .args(args)
            .arg("--max-seconds=120")
            // The exit summary as one JSON line, for `stop`.
            .arg("--json")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start rpc-server");
        // memif: the server creates the socket; the client also retries.
        std::thread::sleep(Duration::from_millis(300));
        Server { child }
    }

    /// The server's process id (for /proc reads while it runs).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM and the server's JSON summary.
    pub fn stop(self) -> serde_json::Value {
        self.stop_reporting("")
    }

    /// `stop`, with `client`'s output in the message if the server fails:
    /// a server that never saw its link is explained by its client.
    pub fn stop_after(self, client: &Run) -> serde_json::Value {
        self.stop_reporting(&format!(
            "\n--- the client (exit {:?}) ---\n{}\n{}",
            client.code, client.stdout, client.stderr
        ))
    }

    fn stop_reporting(mut self, context: &str) -> serde_json::Value {
        // kill(1): libc is not a dev-dependency of the tests.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let out = wait_output(&mut self.child, Duration::from_secs(15));
        assert!(
            out.0.map(|s| s.success()).unwrap_or(false),
            "rpc-server did not exit cleanly: {}{context}",
            out.1
        );
        out.1
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .unwrap_or_else(|| panic!("no JSON from rpc-server: {}", out.1))
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn wait_output(
    child: &mut std::process::Child,
    limit: Duration,
) -> (Option<std::process::ExitStatus>, String) {
    use std::io::Read;
    let start = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            let mut s = String::new();
            if let Some(mut o) = child.stdout.take() {
                let _ = o.read_to_string(&mut s);
            }
            return (Some(st), s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return (None, "killed after timeout".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The number at `path` in a JSON report; panics naming the path if it is
/// missing or not a whole number.
pub fn u(v: &serde_json::Value, path: &[&str]) -> u64 {
    let mut x = v;
    for k in path {
        x = &x[*k];
    }
    x.as_u64()
        .unwrap_or_else(|| panic!("{} missing or not a number in {v}", path.join(".")))
}

/// Every RPC of a `rpc-bench` report completed and every byte (both
/// directions) was right; at least `min` completed.
pub fn assert_complete(v: &serde_json::Value, min: u64) {
    assert_eq!(u(v, &["failed"]), 0, "no request may fail: {v}");
    assert_eq!(u(v, &["bad_responses"]), 0, "every byte checked: {v}");
    assert_eq!(u(v, &["server", "bad_requests"]), 0, "{v}");
    // Every RPC of the run, warm-up and drain included: the headline
    // `completed` counts the measured window only.
    let total = match v.get("completed_total") {
        Some(_) => u(v, &["completed_total"]),
        None => u(v, &["completed"]),
    };
    assert!(total >= min, "{v}");
}

/// What every stamped JSON summary carries: the build, the time, the
/// machine and the settings of the run (written out here, not taken from
/// the code under test).
#[allow(dead_code)]
pub const STAMP: [&str; 7] = [
    "version",
    "commit",
    "dpdk_version",
    "timestamp",
    "host",
    "cpu",
    "config",
];
