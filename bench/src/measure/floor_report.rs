//! The raw floor's text report: one line per figure `rpc-bench floor`
//! measures (ping-pong RTTs, streams, echo, burst and train RTTs), read
//! from the JSON summary its client side writes.

/// The floor's text report (what `rpc-bench floor` prints).
pub fn render_text(v: &serde_json::Value) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let _ = writeln!(
        o,
        "raw floor over {} (no RPC layer), client and server each pinned to a core",
        v["link"].as_str().unwrap_or("?")
    );
    let _ = writeln!(o, "  ping-pong RTT    64 B: p50 {:>8.2} us  p99 {:>8.2} us  p99.9 {:>8.2} us  ({} pings, {} lost)", f("p50_us"), f("p99_us"), f("p999_us"), v["pings"], v["lost_64"]);
    let _ = writeln!(
        o,
        "  ping-pong RTT  1 KiB: p50 {:>8.2} us  p99 {:>8.2} us  p99.9 {:>8.2} us  ({} lost)",
        f("p50_us_1k"),
        f("p99_us_1k"),
        f("p999_us_1k"),
        v["lost_1k"]
    );
    let _ = writeln!(
        o,
        "  stream 64 B  (bursts of 32): {:>7.3} Mpps {:>7.3} Gbps",
        f("stream_mpps_64"),
        f("stream_gbps_64")
    );
    let _ = writeln!(
        o,
        "  stream 1514 B(bursts of 32): {:>7.3} Mpps {:>7.3} Gbps (median of {} ms windows {:.3} Gbps)",
        f("stream_mpps_mtu"),
        f("stream_gbps_mtu"),
        v["stream_window_ms"],
        f("stream_gbps_mtu_median")
    );
    let _ = writeln!(
        o,
        "  echo 64 B   (4 bursts out) : {:>7.3} Mpps (the raw request-response ceiling)",
        f("echo_mpps_64")
    );
    let _ = writeln!(
        o,
        "  burst RTT 32 x 1514 B      : p50 {:>8.2} us  p99 {:>8.2} us  ({} bursts, {} lost)",
        f("burst_rtt_p50_us_mtu"),
        f("burst_rtt_p99_us_mtu"),
        v["bursts"],
        v["bursts_lost"]
    );
    let train = |i: usize| v["train_rtt_p50_us_mtu"][i].as_f64().unwrap_or(f64::NAN);
    let _ = writeln!(
        o,
        "  trains of 2 / 8 bursts     : p50 {:>8.2} / {:.2} us -> {:.3} Gbps round trip (the BDP's rate; {} trains each, {} lost)",
        train(0),
        train(1),
        f("train_gbps_mtu"),
        v["trains"],
        v["trains_lost"]
    );
    o
}
