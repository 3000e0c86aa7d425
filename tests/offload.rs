//! Checksum offloads in the binaries: `transport.checksum_offload =
//! "require"` on a device without them (memif) is a clear error naming the
//! key, the device and what it lacks. (The offloads themselves are tested
//! on net_tap, which has all four, in engine/tests/dpdk/offload.rs; the
//! startup line on memif in rpc_e2e.rs's two-worker test.)

use crate::common::{run, server_bin, unique};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn require_on_a_device_without_offloads_is_a_clear_error() {
    // memif offers no checksum offload: "require" refuses to start.
    let sock = format!("--socket=/tmp/{}.sock", unique("offreq"));
    let r = run(
        server_bin(),
        &[
            &sock,
            "--set=transport.checksum_offload=\"require\"",
            "--max-seconds=5",
        ],
        LIMIT,
    );
    assert!(!r.ok(), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("transport.checksum_offload = \"require\"")
            && r.stderr.contains("net_memif0")
            && r.stderr.contains("lacks tx ipv4, tx udp, rx ipv4, rx udp"),
        "{}",
        r.stderr
    );
}
