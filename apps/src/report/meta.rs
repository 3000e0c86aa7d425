//! Where a result came from: the fields every JSON summary carries so that
//! results saved today can be told apart later (which build, which DPDK,
//! when, on what machine, with which effective configuration). The build
//! and machine facts are [`engine::stamp`]'s, where the lab takes its own.

use crate::config::Config;
use engine::stamp::{cpu_description, host_name};
use serde_json::{json, Value};

/// The build, the DPDK it links, the time, the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct RunMeta {
    /// The crate version (`Cargo.toml`).
    pub version: &'static str,
    /// `git rev-parse --short=12 HEAD` at build time, or "unknown".
    pub commit: &'static str,
    pub dpdk_version: &'static str,
    /// UTC, RFC 3339, second precision ("2026-11-24T21:40:03Z").
    pub timestamp: String,
    pub host: String,
    /// `model name` from /proc/cpuinfo and the online core count.
    pub cpu: String,
}

impl RunMeta {
    /// This process, now.
    pub fn now() -> RunMeta {
        RunMeta {
            version: engine::stamp::VERSION,
            commit: engine::stamp::COMMIT,
            dpdk_version: engine::stamp::DPDK_VERSION,
            timestamp: engine::stamp::now_utc(),
            host: host_name(),
            cpu: cpu_description(),
        }
    }
}

/// The keys [`stamp`] adds (the lab's too). A parent reading a child's
/// summary back drops them: its own summary is stamped with its own build
/// and config.
pub use engine::stamp::STAMP_KEYS;

/// Adds `version`, `commit`, `dpdk_version`, `timestamp`, `host`, `cpu`
/// and, when given, `config` (the full effective configuration) to a JSON
/// summary object. Keys the summary already has are kept: a child's own
/// stamp is not overwritten by its parent's.
pub fn stamp(summary: &mut Value, cfg: Option<&Config>) {
    stamp_with(summary, &RunMeta::now(), cfg);
}

/// [`stamp`] with a given [`RunMeta`] (tests, or one stamp for many points).
pub fn stamp_with(summary: &mut Value, meta: &RunMeta, cfg: Option<&Config>) {
    let Some(o) = summary.as_object_mut() else {
        return;
    };
    let fields = [
        ("version", json!(meta.version)),
        ("commit", json!(meta.commit)),
        ("dpdk_version", json!(meta.dpdk_version)),
        ("timestamp", json!(meta.timestamp)),
        ("host", json!(meta.host)),
        ("cpu", json!(meta.cpu)),
    ];
    for (k, v) in fields {
        o.entry(k).or_insert(v);
    }
    if let Some(c) = cfg {
        let v = serde_json::to_value(c).unwrap_or(Value::Null);
        o.entry("config").or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_adds_every_field_and_keeps_existing_ones() {
        let meta = RunMeta {
            version: "1.2.3",
            commit: "abc",
            dpdk_version: "22.11.4",
            timestamp: engine::stamp::rfc3339_utc(0),
            host: "h".into(),
            cpu: "c".into(),
        };
        let cfg = Config::default();
        let mut v = json!({"mrps": 1.0, "host": "child"});
        stamp_with(&mut v, &meta, Some(&cfg));
        for k in ["version", "commit", "dpdk_version", "timestamp", "cpu"] {
            assert!(v[k].is_string(), "{k} missing in {v}");
        }
        assert_eq!(v["host"], "child", "an existing key is kept");
        assert_eq!(v["config"]["workload"]["req_size"], cfg.workload.req_size);
        let mut not_object = json!([1]);
        stamp_with(&mut not_object, &meta, None);
        assert_eq!(not_object, json!([1]));
    }

    #[test]
    fn this_build_knows_its_dpdk_and_commit() {
        let m = RunMeta::now();
        assert!(m.dpdk_version.starts_with("2"), "{}", m.dpdk_version);
        assert!(!m.commit.is_empty());
        assert!(m.timestamp.ends_with('Z'));
    }
}
