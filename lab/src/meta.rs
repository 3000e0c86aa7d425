//! Where a lab result came from: the fields its JSON report carries so that
//! results saved today can be told apart later (which build, when, on what
//! machine, with which settings), the same keys as the real runs' reports
//! ([`engine::stamp`] holds the build and machine facts for both).
//! The lab runs no DPDK: `dpdk_version` says so rather than naming the
//! library a workspace build happens to link.

use engine::stamp::{cpu_description, host_name, now_utc, COMMIT, VERSION};
use serde_json::{json, Value};

/// What `dpdk_version` says in a lab report.
pub const NO_DPDK: &str = "none: simulated";

/// Adds `version`, `commit`, `dpdk_version` ([`NO_DPDK`]), `timestamp`,
/// `host`, `cpu` and `config` ([`engine::stamp::STAMP_KEYS`]) to a JSON
/// report object; keys it already has are kept. Anything but an object is
/// left alone.
pub fn stamp(report: &mut Value, config: Value) {
    let Some(o) = report.as_object_mut() else {
        return;
    };
    let fields = [
        ("version", json!(VERSION)),
        ("commit", json!(COMMIT)),
        ("dpdk_version", json!(NO_DPDK)),
        ("timestamp", json!(now_utc())),
        ("host", json!(host_name())),
        ("cpu", json!(cpu_description())),
        ("config", config),
    ];
    for (k, v) in fields {
        o.entry(k).or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lab_report_is_stamped_without_a_dpdk_and_keeps_its_keys() {
        let mut v = json!({"scenario": "incast", "host": "mine"});
        stamp(&mut v, json!({"seed": 3}));
        for k in ["version", "commit", "timestamp", "cpu"] {
            assert!(v[k].as_str().is_some_and(|s| !s.is_empty()), "{k}: {v}");
        }
        assert_eq!(v["dpdk_version"], NO_DPDK);
        assert_eq!(v["config"]["seed"], 3);
        assert_eq!(v["host"], "mine", "an existing key is kept");
        for k in engine::stamp::STAMP_KEYS {
            assert!(v.get(k).is_some(), "{k} missing in {v}");
        }
        let mut not_object = json!([1]);
        stamp(&mut not_object, json!({}));
        assert_eq!(not_object, json!([1]));
    }
}
