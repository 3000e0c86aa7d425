//! The DPDK layer's tests on real drivers, one test binary (each test
//! binary is compiled and linked on its own: one, not four, builds faster).
//! EAL initialises once per process and each test starts it with devices
//! of its own, so every test runs its body in a child process of this
//! binary (`own_process`): the parent starts the child on exactly that test
//! and passes only if the child passed.
#![cfg(feature = "dpdk")]

mod call;
mod frames;
mod layer;
mod offload;
mod virtio_offload;

use std::process::Command;

/// Set in a child process: run the test's body here.
const CHILD: &str = "ENGINE_DPDK_TEST_CHILD";

/// Whether the caller (test `test` of module `module`, its
/// `module_path!()`) runs its body in this process: true in the child;
/// in the parent, runs the child on that one test, asserts it passed, and
/// returns false.
fn own_process(module: &str, test: &str) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    // `dpdk::layer` -> the test's libtest name `layer::eal_pool_...`.
    let path = module.split_once("::").map_or(module, |(_, rest)| rest);
    let name = format!("{path}::{test}");
    let exe = std::env::current_exe().expect("this test binary's path");
    let out = Command::new(exe)
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("start the test's own process");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} failed in its own process ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // The child ran the test (a filter matching nothing also succeeds).
    assert!(
        stdout.contains("1 passed"),
        "{name} did not run in its own process:\n{stdout}\n{stderr}"
    );
    false
}
