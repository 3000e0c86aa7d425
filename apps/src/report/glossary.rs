//! The glossary's guard: `docs/glossary.md` explains every name the
//! reports print. The test walks the engine's counters (by their own
//! names, so a new counter is caught with no edit here) and the drop
//! reasons the apps add, and fails on any the glossary does not mention.

#[cfg(test)]
mod tests {
    use engine::counters::Counters;
    use engine::proto::Stats;

    const GLOSSARY: &str = include_str!("../../../docs/glossary.md");

    fn mentioned(name: &str) -> bool {
        GLOSSARY.contains(&format!("`{name}`"))
    }

    #[test]
    fn every_engine_counter_and_drop_reason_is_in_the_glossary() {
        let mut missing = Vec::new();
        for (name, _) in Stats::default().to_pairs() {
            // "drops.stale" is listed as `stale` under the drop reasons.
            let leaf = name.rsplit('.').next().unwrap_or(&name).to_string();
            if !mentioned(&leaf) {
                missing.push(name);
            }
        }
        let report_names = [
            "completed",
            "completed_measured",
            "failed",
            "retransmissions",
            "drops_by_reason",
            "violations",
            "resets",
            "credit_stalls",
            "bad_responses",
            "completed_total",
            "core_contention",
            "core_other_pct_max",
            "rx_not_ours",
            "ratio_p50",
            "ratio_echo",
            "drops_total",
            "rx_missed",
            "rx_no_mbuf",
        ];
        let drop_reasons = [
            "injected",
            "server_injected",
            "rx_ring_overflow",
            "server_rx_ring_overflow",
        ];
        for n in report_names.iter().chain(&drop_reasons) {
            if !mentioned(n) {
                missing.push(n.to_string());
            }
        }
        assert!(
            missing.is_empty(),
            "docs/glossary.md lacks an entry for: {missing:?}"
        );
    }

    #[test]
    fn the_guard_can_fail() {
        assert!(!mentioned("no_such_counter_anywhere"));
    }
}
