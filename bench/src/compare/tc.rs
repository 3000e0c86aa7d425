//! `tc -s qdisc` output: the per-qdisc counters (sent, dropped, overlimits,
//! backlog) a run reads before and after itself.

// ------------------------------------------------------------ tc -s qdisc

/// One qdisc as `tc -s qdisc show dev DEV` prints it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QdiscStats {
    /// `tbf`, `noqueue`, `fq_codel`, ...
    pub kind: String,
    /// `8001:`
    pub handle: String,
    /// Attached at the root of the device (its counters cover the device).
    pub root: bool,
    pub sent_bytes: u64,
    pub sent_pkts: u64,
    pub dropped: u64,
    pub overlimits: u64,
    pub requeues: u64,
    pub backlog_bytes: u64,
    pub backlog_pkts: u64,
}

/// Parses the output of `tc -s qdisc show [dev DEV]`:
///
/// ```text
/// qdisc tbf 8001: root refcnt 3 rate 1Gbit burst 4000b lat 99us
///  Sent 65917038 bytes 43771 pkt (dropped 594, overlimits 42497 requeues 0)
///  backlog 0b 0p requeues 0
/// ```
pub fn parse_tc_qdisc(text: &str) -> Vec<QdiscStats> {
    let mut out: Vec<QdiscStats> = Vec::new();
    for line in text.lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        match toks.first().copied() {
            Some("qdisc") => out.push(QdiscStats {
                kind: toks.get(1).unwrap_or(&"").to_string(),
                handle: toks.get(2).unwrap_or(&"").to_string(),
                root: toks.contains(&"root"),
                ..Default::default()
            }),
            Some("Sent") => {
                if let Some(q) = out.last_mut() {
                    q.sent_bytes = num_after(&toks, "Sent");
                    q.sent_pkts = num_after(&toks, "bytes");
                    q.dropped = num_after(&toks, "(dropped");
                    q.overlimits = num_after(&toks, "overlimits");
                    q.requeues = num_after(&toks, "requeues");
                }
            }
            Some("backlog") => {
                if let Some(q) = out.last_mut() {
                    q.backlog_bytes = toks.get(1).map_or(0, |s| parse_size(s));
                    q.backlog_pkts = toks
                        .get(2)
                        .and_then(|s| s.trim_end_matches('p').parse().ok())
                        .unwrap_or(0);
                }
            }
            _ => {}
        }
    }
    out
}

/// The number after token `key` ("594," and "0)" parse as 594 and 0).
pub(super) fn num_after(toks: &[&str], key: &str) -> u64 {
    toks.iter()
        .position(|t| *t == key)
        .and_then(|i| toks.get(i + 1))
        .and_then(|v| v.trim_end_matches([',', ')']).parse().ok())
        .unwrap_or(0)
}

/// tc's sizes: "0b", "3028b", "15Kb", "2Mb" (binary multiples).
pub(super) fn parse_size(s: &str) -> u64 {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = digits.parse().unwrap_or(0);
    n * match unit {
        "Kb" | "K" => 1 << 10,
        "Mb" | "M" => 1 << 20,
        "Gb" | "G" => 1 << 30,
        _ => 1,
    }
}

pub(super) fn root_sum(v: &[QdiscStats], f: impl Fn(&QdiscStats) -> u64) -> u64 {
    v.iter().filter(|q| q.root).map(f).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TBF: &str = "qdisc tbf 8002: root refcnt 3 rate 1Gbit burst 4000b lat 99us \n Sent 65917038 bytes 43771 pkt (dropped 594, overlimits 42497 requeues 0) \n backlog 3028b 2p requeues 0\n";

    #[test]
    fn parses_tc_qdisc_stats() {
        let q = parse_tc_qdisc(TBF);
        assert_eq!(q.len(), 1);
        let t = &q[0];
        assert_eq!(t.kind, "tbf");
        assert_eq!(t.handle, "8002:");
        assert!(t.root);
        assert_eq!(t.sent_bytes, 65917038);
        assert_eq!(t.sent_pkts, 43771);
        assert_eq!(t.dropped, 594);
        assert_eq!(t.overlimits, 42497);
        assert_eq!(t.requeues, 0);
        assert_eq!(t.backlog_bytes, 3028);
        assert_eq!(t.backlog_pkts, 2);
        // Several qdiscs (a classful root and a child); only roots are summed.
        let multi = "qdisc noqueue 0: root refcnt 2 \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0\n\
qdisc mq 0: root \n Sent 10 bytes 1 pkt (dropped 7, overlimits 0 requeues 1) \n backlog 12Kb 8p requeues 1\n\
qdisc fq_codel 0: parent :1 limit 10240p flows 1024 quantum 1514 \n Sent 10 bytes 1 pkt (dropped 7, overlimits 0 requeues 1) \n backlog 0b 0p requeues 0\n  maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n";
        let q = parse_tc_qdisc(multi);
        assert_eq!(q.len(), 3);
        assert!(!q[2].root);
        assert_eq!(q[1].backlog_bytes, 12 * 1024);
        assert_eq!(root_sum(&q, |s| s.dropped), 7);
        assert!(parse_tc_qdisc("").is_empty());
        assert!(parse_tc_qdisc("Cannot find device \"x\"").is_empty());
    }
}
