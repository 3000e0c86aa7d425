//! The adaptive idle mode end to end (`transport.idle = "adaptive"`): an
//! rpc-server on memif (whose DPDK 22.11 driver has no RX interrupts, so
//! the documented fallback, timed sleeps) says how it idles at startup,
//! uses well under a core while its client is connected but quiet, still
//! answers every request that comes after a quiet spell, and stops on
//! SIGINT at once. memif only: nothing here kills a peer mid-burst.

use crate::common::{client_bin, server_bin, unique, Running};
use std::time::{Duration, Instant};

/// Start-up bound (EAL init on a busy 2-core machine).
const START: Duration = Duration::from_secs(30);

/// CPU ticks (utime + stime, 1/100 s) of process `pid` so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/PID/stat");
    // Fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')').expect("(comm)") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5); rest starts at 3.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn an_adaptive_server_sleeps_while_its_client_is_quiet_and_still_answers() {
    let sock = format!("/tmp/{}.sock", unique("idle"));
    let socket = format!("--socket={sock}");
    let server = Running::start(
        server_bin(),
        &[
            &socket,
            "--set=transport.idle=\"adaptive\"",
            "--max-seconds=60",
            "--json",
        ],
    );
    // Two requests a second: the server is quiet ~500 ms between them,
    // with its session open (a server without one polls every 1 ms in
    // either mode, which would prove nothing).
    let client = Running::start(
        client_bin(),
        &[
            &socket,
            "--workload=open_loop",
            "--rate=2",
            "--seconds=3",
            "--json",
        ],
    );
    // Said once the port is up (the worker's start).
    let line = server.line_with("rpc-server: idle:", START);
    assert!(
        line.contains("adaptive: no RX interrupts")
            && line.contains("timed sleeps of 500 us, doubling to 2000 us"),
        "memif falls back to timed sleeps, and says so: {line}"
    );
    client.wait_for("[  1.0 s]", START);
    let (t0, c0) = (Instant::now(), cpu_ticks(server.pid()));
    std::thread::sleep(Duration::from_millis(1500));
    let (secs, ticks) = (t0.elapsed().as_secs_f64(), cpu_ticks(server.pid()) - c0);
    let share = ticks as f64 / 100.0 / secs;
    let run = client.finish(START);
    run.assert_ok("rpc-client");
    let v = run.json();
    assert!(
        v["completed_total"].as_u64().unwrap_or(0) >= 3,
        "requests after quiet spells are answered: {v}"
    );
    assert_eq!(v["failed"].as_u64(), Some(0), "{v}");
    // Spin would be ~1.0 (a whole core); the goal is < 0.02 on a quiet
    // machine; this one is shared, so the bound is generous.
    assert!(
        share < 0.20,
        "an idle adaptive server used {:.1} % of a core",
        share * 100.0
    );
    // Sleeping, it still sees SIGINT at once (sleeps are <= 20 ms).
    let (r, took) = server.signal_and_finish("INT", Duration::from_secs(15));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        took < Duration::from_secs(3),
        "stopped {took:?} after SIGINT"
    );
}
