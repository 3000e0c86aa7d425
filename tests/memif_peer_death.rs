//! A memif server outlives clients SIGKILLed mid-run: DPDK 22.11's memif
//! PMD unmaps a dead peer's shared memory under the server's poller, which
//! used to kill the server about once in twenty kills (the burst guard,
//! `engine::dpdk::burst_guard`, now catches that fault). Runs
//! `scripts/memif-kill-loop.sh`, the measurement's own script, with six
//! kills (about 2 s each), and a last client that must complete with nothing failed.

use crate::common::run;
use std::path::Path;
use std::time::Duration;

#[test]
fn a_memif_server_survives_its_clients_being_killed() {
    let server = env!("CARGO_BIN_EXE_rpc-server");
    let bins = Path::new(server).parent().unwrap().display().to_string();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/memif-kill-loop.sh");
    let r = run("bash", &[script, "6", &bins], Duration::from_secs(240));
    let last = r.stdout.lines().last().unwrap_or_default().to_string();
    assert!(r.ok(), "kill loop failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(last.contains("6 kills, 0 server deaths"), "{}", r.stdout);
    let completed: u64 = last
        .split("completed ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(completed > 0 && last.ends_with("failed 0"), "{last}");
}
