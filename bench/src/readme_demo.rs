//! The README's demo output guard: the block `scripts/readme-demo.sh`
//! writes into README.md must show every line kind the current floor and
//! run reports print. Each expected line is checked twice: the current
//! renderer still prints it (so this list cannot go stale unnoticed), and
//! the README block has it (so a new or renamed line means regenerating).

#[cfg(test)]
mod tests {
    use crate::measure::floor_report;
    use apps::measure::hist::LatencyHist;
    use apps::report::Report;
    use serde_json::json;

    const README: &str = include_str!("../../README.md");

    fn demo_block() -> &'static str {
        let begin = README
            .find("<!-- demo-output: begin -->")
            .expect("README.md has the demo-output begin marker");
        let end = README
            .find("<!-- demo-output: end -->")
            .expect("README.md has the demo-output end marker");
        assert!(begin < end, "markers out of order");
        &README[begin..end]
    }

    /// What `rpc-bench`'s default run prints on a floor and a report.
    fn rendered() -> String {
        let mut text = floor_report::render_text(&json!({"link": "memif"}));
        let mut r = Report::new("latency", "memif", "lossless", 32, 32);
        let mut h = LatencyHist::new();
        for ns in [900, 1_400, 1_500, 2_000, 30_000] {
            h.record_ns(ns);
        }
        r.latency = h;
        r.completed = 5;
        r.floor_p50_us = Some(1.0);
        r.floor_p99_us = Some(1.5);
        r.server = Some(json!({"handled": 5, "workers": 1, "stats": {}, "port": {}}));
        text.push_str(&r.render_text());
        text
    }

    /// Line heads the demo must show: the floor's, then the run report's.
    const MUST_SHOW: &[&str] = &[
        "raw floor over memif (no RPC layer)",
        "ping-pong RTT    64 B",
        "ping-pong RTT  1 KiB",
        "stream 64 B",
        "stream 1514 B",
        "echo 64 B",
        "burst RTT 32 x 1514 B",
        "trains of 2 / 8 bursts",
        "latency over memif (lossless), request 32 B, response 32 B",
        "latency (us)       p50       p90       p99     p99.9    p99.99       max",
        "throughput ",
        "loss         retransmissions",
        "vs floor     p50",
        "server ",
        "histogram (",
    ];

    #[test]
    fn the_readme_demo_shows_every_line_the_reports_print() {
        let now = rendered();
        let block = demo_block();
        for head in MUST_SHOW {
            assert!(
                now.contains(head),
                "the reports no longer print {head:?}: update MUST_SHOW\n{now}"
            );
            assert!(
                block.contains(head),
                "README.md's demo output lacks {head:?}: run ./scripts/readme-demo.sh"
            );
        }
        // The lines rpc-bench itself adds around the report.
        for head in [
            "credits per session (",
            "rpc-server: 127.77.0.2 on net_memif0",
        ] {
            assert!(
                block.contains(head),
                "README.md's demo output lacks {head:?}"
            );
        }
    }

    #[test]
    fn each_report_line_appears_once() {
        // A child's own report leaking beside rpc-bench's would repeat it.
        let block = demo_block();
        for head in ["raw floor over", "latency (us)", "histogram ("] {
            assert_eq!(block.matches(head).count(), 1, "{head:?} in:\n{block}");
        }
    }
}
