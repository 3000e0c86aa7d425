//! Runs each engine example binary (built by
//! `cargo build --release --workspace --examples`, as scripts/test.sh does)
//! with a 60 s limit and checks its exit status and expected output lines.
//! The examples live in `target/release/examples/`: found from
//! `RPC_BIN_DIR`'s parent, `CARGO_TARGET_DIR`, or this test binary's path.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn examples_dir() -> PathBuf {
    if let Ok(d) = std::env::var("RPC_BIN_DIR") {
        if let Some(p) = PathBuf::from(d).parent() {
            return p.join("release/examples");
        }
    }
    if let Ok(t) = std::env::var("CARGO_TARGET_DIR") {
        return PathBuf::from(t).join("release/examples");
    }
    // target/release/deps/examples-HASH -> target/release/examples
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .map(|rel| rel.join("examples"))
        .expect("target directory")
}

/// Runs example `name`; asserts exit 0 and, for each of `expect`, a
/// stdout line starting with it.
fn run_example(name: &str, expect: &[&str]) {
    let path = examples_dir().join(name);
    assert!(
        path.exists(),
        "{} not built: run cargo build --release --workspace --examples",
        path.display()
    );
    let mut child = Command::new(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start example");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (mut out, mut err) = (String::new(), String::new());
    let _ = child.stdout.take().map(|mut s| s.read_to_string(&mut out));
    let _ = child.stderr.take().map(|mut s| s.read_to_string(&mut err));
    assert!(
        status.is_some_and(|s| s.success()),
        "{name}: status {status:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    for e in expect {
        assert!(
            out.lines().any(|l| l.starts_with(e)),
            "{name}: no line starting with {e:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

#[test]
fn hello() {
    run_example("hello", &["response: hello, world"]);
}

/// Two processes: the client reaches the server from its address alone,
/// then stops it with SIGINT, which the server's `StopHandle` turns into a
/// clean return from its loop (the example fails unless the server exits
/// 0), after serving every PUT and GET.
#[test]
fn kv() {
    run_example(
        "kv",
        &[
            "kv server: serving at 10.0.0.1:31850",
            "GET p50: ",
            "kv server: stopped after 2000 requests",
        ],
    );
}

/// A handler with state, and ten blocking calls whose answers depend on it.
#[test]
fn counter() {
    run_example("counter", &["counter: 55 after 10 calls"]);
}

#[test]
fn nested() {
    run_example("nested", &["nested response: front(back(hi))"]);
}

#[test]
fn large() {
    run_example(
        "large",
        &["large: 8388608-byte request and response, checksums ok"],
    );
}
