//! The engine's verdict on a config, in the config's words. Validation builds
//! what the seam (`setup.rs`) builds for each role, the `NexusBuilder` and
//! every worker's `EndpointConfig`, and runs the engine's own checks on them
//! (`NexusBuilder::validate`, `EndpointConfig::validate`), the only copy of
//! those limits. A refusal names the config's key, the config's value, and
//! the engine's limit with the engine's field names turned into keys and
//! their values into the keys' units: `transport.rto_us = 100 must be >=
//! transport.scan_us = 500`. Where the config derives the value (credits
//! from the BDP, pause thresholds from the headroom), the config's own
//! explanation of the derivation is given instead.

use super::schema::{Config, ConfigError};
use super::setup::Worker;
use crate::config::link::Role;
use engine::proto::ConfigError as EngineError;
use engine::runtime::{
    BuilderError, Ring, ETH_HEADER_LEN, MAX_DATA_ROOM, MEMIF_MAX_LOG2_RING, MEMIF_MAX_RING,
};
use engine::wire::MacAddr;

/// How an engine field's value reads in its config key's unit.
#[derive(Clone, Copy)]
enum Unit {
    Same,
    NsToUs,
    NsToMs,
    BytesToMib,
    BpsToGbps,
}

/// Engine field -> config key (longest field names first where one
/// prefixes another).
const KEYS: &[(&str, &str, Unit)] = &[
    ("mtu", "link.mtu", Unit::Same),
    ("session_credits", "transport.credits", Unit::Same),
    ("req_window", "transport.req_window", Unit::Same),
    (
        "max_sessions_per_peer",
        "transport.max_sessions_per_peer",
        Unit::Same,
    ),
    ("max_sessions", "workload.sessions_per_thread", Unit::Same),
    ("max_msg_size", "transport.max_msg_size", Unit::Same),
    (
        "mem.per_peer",
        "transport.mem_per_peer_mib",
        Unit::BytesToMib,
    ),
    (
        "mem.per_worker",
        "transport.mem_per_worker_mib",
        Unit::BytesToMib,
    ),
    (
        "mem.reassembly_timeout",
        "transport.reassembly_timeout_ms",
        Unit::NsToMs,
    ),
    ("rx_ring_entries", "link.rx_desc", Unit::Same),
    ("pause.xon", "transport.pause_xon", Unit::Same),
    ("pause.xoff", "transport.pause_xoff", Unit::Same),
    ("pause.pause_time", "transport.pause_time_us", Unit::NsToUs),
    ("rto_low", "transport.rto_low_us", Unit::NsToUs),
    ("link_bps", "transport.link_gbps", Unit::BpsToGbps),
    ("nak", "transport.nak", Unit::Same),
    ("rate_cap_bps", "transport.rate_cap_gbps", Unit::BpsToGbps),
    ("scan_interval", "transport.scan_us", Unit::NsToUs),
    ("rto", "transport.rto_us", Unit::NsToUs),
    (
        "session_timeout",
        "transport.session_timeout_ms",
        Unit::NsToMs,
    ),
    ("connect_retry", "transport.connect_retry_ms", Unit::NsToMs),
    (
        "connect_timeout",
        "transport.connect_timeout_ms",
        Unit::NsToMs,
    ),
    ("keepalive_interval", "transport.keepalive_ms", Unit::NsToMs),
    (
        "half_open_timeout",
        "transport.half_open_timeout_ms",
        Unit::NsToMs,
    ),
    ("idle_timeout", "transport.idle_timeout_ms", Unit::NsToMs),
    (
        "admission.session_ring_share_pct",
        "transport.session_ring_share_pct",
        Unit::Same,
    ),
    (
        "admission.peer_ring_share_pct",
        "transport.peer_ring_share_pct",
        Unit::Same,
    ),
    (
        "admission.restart_probe_wait",
        "transport.restart_probe_wait_ms",
        Unit::NsToMs,
    ),
    (
        "admission.cookie_above_pct",
        "transport.cookie_above_pct",
        Unit::Same,
    ),
    (
        "admission.wrong_tokens_per_sec",
        "transport.wrong_tokens_per_sec",
        Unit::Same,
    ),
];

/// Keys whose values explain an engine limit that does not name them.
const RELATED: &[(&str, &[&str])] = &[
    ("rx_ring_entries", &["transport.credits"]),
    ("nak", &["transport.retransmit", "transport.mode"]),
    ("link_bps", &["transport.cc"]),
];

/// Where a worker's MAC is not configured: any unicast MAC (the port's is
/// known only once it is open).
const PLACEHOLDER_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);

impl Config {
    /// Runs the engine's checks on what each role's process would build.
    /// `role` `None` (rpc-bench before its floor has measured the line
    /// rate): a rate cap above `link_gbps` is left to `check_rate_cap`.
    pub(super) fn validate_with_engine(&self, role: Option<Role>) -> Result<(), ConfigError> {
        let capped;
        let cfg = match (role, self.transport.rate_cap_gbps) {
            (None, Some(cap)) if cap > self.transport.link_gbps => {
                let mut c = self.clone();
                c.transport.rate_cap_gbps = Some(c.transport.link_gbps);
                capped = c;
                &capped
            }
            _ => self,
        };
        for r in [Role::Server, Role::Client] {
            let b = self
                .nexus_builder(r)
                .map_err(|e| ConfigError::invalid("link.pci", e.to_string()))?;
            b.validate().map_err(|e| self.builder_refusal(r, e))?;
            for index in 0..self.cores(r).len() as u16 {
                let w = Worker {
                    index,
                    mac: self.mac(r).unwrap_or(PLACEHOLDER_MAC),
                    rx_ring_entries: b.rx_ring_entries(),
                };
                cfg.endpoint_config(r, &w)
                    .validate()
                    .map_err(|e| self.endpoint_refusal(&e))?;
            }
        }
        Ok(())
    }

    /// A refusal of `role`'s builder, by the key that set it.
    fn builder_refusal(&self, role: Role, e: BuilderError) -> ConfigError {
        let l = &self.link;
        let (key, msg) = match &e {
            BuilderError::Descriptors { ring, .. } => {
                let (key, v) = match ring {
                    Ring::Rx => ("link.rx_desc", l.rx_desc),
                    Ring::Tx => ("link.tx_desc", l.tx_desc),
                };
                let limit = e.to_string();
                let limit = limit.split_once(": ").map_or(limit.as_str(), |x| x.1);
                (key, format!("{key} = {v} {limit}"))
            }
            BuilderError::MemifRing { .. } if l.vdev.is_some() => {
                ("link.vdev", format!("link.vdev = {:?}: {e}", l.vdev.as_deref().unwrap_or("")))
            }
            BuilderError::MemifRing { entries } => (
                "link.rx_desc",
                format!(
                    "link.rx_desc = {} asks for a memif ring of {entries} entries; DPDK 22.11's memif holds at most {MEMIF_MAX_RING} (rsize {MEMIF_MAX_LOG2_RING})",
                    l.rx_desc
                ),
            ),
            BuilderError::SocketPath { .. } => ("link.socket", format!("link.socket = {:?}: {e}", l.socket)),
            BuilderError::IfaceName { iface } => (
                "link.iface",
                format!(
                    "link.iface = {:?}: the {} opens {iface:?}, which must be 1..={} bytes (IFNAMSIZ; the client side appends \"p\")",
                    l.iface,
                    role.as_str(),
                    engine::runtime::MAX_IFACE_LEN
                ),
            ),
            BuilderError::DataRoom { .. } => (
                "link.mbuf_data_room",
                format!("link.mbuf_data_room = {} must be in 1..={MAX_DATA_ROOM}", l.mbuf_data_room),
            ),
            BuilderError::MbufTooSmall { .. } => (
                "link.mtu",
                format!(
                    "link.mtu = {} needs {}-byte frames but link.mbuf_data_room = {}",
                    l.mtu,
                    l.mtu as usize + ETH_HEADER_LEN,
                    l.mbuf_data_room
                ),
            ),
            BuilderError::NoMemory => ("link.mem_mb", "link.mem_mb must be > 0".to_string()),
            BuilderError::UdpPorts { .. } if l.udp_port == 0 => {
                ("link.udp_port", "link.udp_port must be > 0".to_string())
            }
            BuilderError::UdpPorts { workers, .. } => (
                "link.udp_port",
                format!("link.udp_port = {} + {workers} workers runs past port 65535", l.udp_port),
            ),
            BuilderError::NoCores => {
                let key = format!("cores.{}", role.as_str());
                return ConfigError::invalid(&key, format!("{key} is empty (one core per worker)"));
            }
            BuilderError::NoDevice => ("link.kind", format!("link.kind: {e}")),
        };
        ConfigError::invalid(key, msg)
    }

    /// A refusal of an `EndpointConfig`, by the key its field comes from.
    fn endpoint_refusal(&self, e: &EngineError) -> ConfigError {
        // Values the config derives: its own account of the derivation.
        let derived = match e.field {
            "rx_ring_entries" => self.validate_credits().err(),
            f if f.starts_with("pause.") => self.explain_pause().err(),
            _ => None,
        };
        if let Some(d) = derived {
            return d;
        }
        let Some(&(_, key, unit)) = KEYS.iter().find(|k| k.0 == e.field) else {
            return ConfigError::invalid(e.field, format!("{} (engine)", e));
        };
        let mut value = self
            .value_of(key)
            .unwrap_or_else(|| format!("{} (derived)", convert(&e.value, unit)));
        if e.field == "rx_ring_entries" && value != e.value {
            // The device's real ring differs from the descriptor count.
            value += &format!(" (a ring of {} frames on this link)", e.value);
        }
        let mut limit = rename_fields(&e.limit);
        if let Unit::BytesToMib = unit {
            limit = bytes_to_mib(&limit);
        }
        if let Some((_, keys)) = RELATED.iter().find(|r| r.0 == e.field) {
            let vals: Vec<String> = keys
                .iter()
                .filter_map(|k| Some(format!("{k} = {}", self.value_of(k)?)))
                .collect();
            limit += &format!(" ({})", vals.join(", "));
        }
        let sep = if limit.starts_with("must") { " " } else { ": " };
        ConfigError::invalid(key, format!("{key} = {value}{sep}{limit}"))
    }

    /// The config's value at dotted `key`, as TOML writes it; `None` when
    /// unset (derived).
    fn value_of(&self, key: &str) -> Option<String> {
        let mut v = toml::Value::try_from(self).ok()?;
        for part in key.split('.') {
            v = v.get(part)?.clone();
        }
        Some(v.to_string())
    }
}

/// An engine value (an integer in the engine's unit) in the key's unit.
fn convert(raw: &str, unit: Unit) -> String {
    let Ok(n) = raw.parse::<u64>() else {
        return raw.to_string();
    };
    let div = match unit {
        Unit::Same => return raw.to_string(),
        Unit::NsToUs => 1_000,
        Unit::NsToMs => 1_000_000,
        Unit::BytesToMib => 1 << 20,
        Unit::BpsToGbps => 1_000_000_000,
    };
    if n % div == 0 {
        (n / div).to_string()
    } else {
        format!("{}", n as f64 / div as f64)
    }
}

/// Is `c` part of a field name or a number?
fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// Rewrites the engine's limit text in the config's terms: `FIELD (N ns)`,
/// `FIELD (N)`, `N ns (FIELD)`, `N (FIELD)` and `FIELD N` become `KEY =
/// value` in the key's unit, a bare `FIELD` becomes `KEY`.
fn rename_fields(limit: &str) -> String {
    let mut out = String::new();
    let mut rest = limit;
    while !rest.is_empty() {
        let at_word = !out.chars().next_back().is_some_and(word_char);
        let hit = KEYS.iter().find(|(f, _, _)| {
            at_word
                && rest.starts_with(f)
                && !rest[f.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        let Some(&(field, key, unit)) = hit else {
            if let Some((n, key, unit, len)) = number_then_field(rest) {
                out += &format!("{key} = {}", convert(n, unit));
                rest = &rest[len..];
                continue;
            }
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let after = &rest[field.len()..];
        if let Some((n, len)) = paren_number(after) {
            out += &format!("{key} = {}", convert(n, unit));
            rest = &after[len..];
        } else if let Some(n) = after.strip_prefix(' ').and_then(leading_number) {
            out += &format!("{key} = {}", convert(n, unit));
            rest = &after[1 + n.len()..];
        } else {
            out += key;
            rest = after;
        }
    }
    out
}

/// The digits at the start of `s`, if any.
fn leading_number(s: &str) -> Option<&str> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// ` (N ns)` or ` (N)` at the start of `s`: the number and the length.
fn paren_number(s: &str) -> Option<(&str, usize)> {
    let inner = s.strip_prefix(" (")?;
    let n = leading_number(inner)?;
    let tail = &inner[n.len()..];
    let close = if tail.starts_with(" ns)") {
        4
    } else if tail.starts_with(')') {
        1
    } else {
        return None;
    };
    Some((n, 2 + n.len() + close))
}

/// `N ns (FIELD)` or `N (FIELD)` at the start of `s`: the number, the key,
/// its unit and the length.
fn number_then_field(s: &str) -> Option<(&str, &'static str, Unit, usize)> {
    let n = leading_number(s)?;
    let tail = &s[n.len()..];
    let (skip, tail) = match tail.strip_prefix(" ns (") {
        Some(t) => (5, t),
        None => (2, tail.strip_prefix(" (")?),
    };
    let &(field, key, unit) = KEYS
        .iter()
        .find(|(f, _, _)| tail.strip_prefix(f).is_some_and(|t| t.starts_with(')')))?;
    Some((n, key, unit, n.len() + skip + field.len() + 1))
}

/// `N bytes` -> `M MiB` (rounded up), for limits of keys counted in MiB.
fn bytes_to_mib(limit: &str) -> String {
    let mut out = String::new();
    let mut rest = limit;
    while let Some(i) = rest.find(" bytes") {
        let head = &rest[..i];
        let digits = head.len() - head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        match head[head.len() - digits..].parse::<u64>() {
            Ok(n) if digits > 0 => {
                out += &head[..head.len() - digits];
                out += &format!("{} MiB", n.div_ceil(1 << 20));
            }
            _ => out += &rest[..i + 6],
        }
        rest = &rest[i + 6..];
    }
    out + rest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::*;

    #[test]
    fn engine_limits_read_in_the_configs_terms() {
        assert_eq!(
            rename_fields("must be >= scan_interval (500000 ns)"),
            "must be >= transport.scan_us = 500"
        );
        assert_eq!(
            rename_fields("must be in 1..=5000000 ns (rto)"),
            "must be in 1..=transport.rto_us = 5000"
        );
        assert_eq!(
            rename_fields("must be >= mem.per_peer (134217728)"),
            "must be >= transport.mem_per_peer_mib = 128"
        );
        assert_eq!(
            rename_fields("at most 9 bytes (65536 packets of 1448 bytes at mtu 1500)"),
            "at most 9 bytes (65536 packets of 1448 bytes at link.mtu = 1500)"
        );
        assert_eq!(
            rename_fields("the buffer of one max_msg_size message; rto_low"),
            "the buffer of one transport.max_msg_size message; transport.rto_low_us"
        );
        assert_eq!(
            bytes_to_mib("must be >= 8388608 bytes (the buffer of 1 bytes)"),
            "must be >= 8 MiB (the buffer of 1 MiB)"
        );
        assert_eq!(convert("1500000", Unit::NsToMs), "1.5");
    }

    #[test]
    fn engine_refusals_name_the_key_and_its_value() {
        let msg = |sets: &[&str]| {
            let c = with(sets).unwrap();
            c.validate(&ENV).unwrap_err().to_string()
        };
        assert_eq!(
            msg(&["transport.rto_us=100"]),
            "invalid config: transport.rto_us = 100 must be >= transport.scan_us = 500"
        );
        let e = msg(&["transport.half_open_timeout_ms=1000"]);
        assert!(
            e.contains("transport.half_open_timeout_ms = 1000 must be >= 2 * transport.keepalive_ms = 1000"),
            "{e}"
        );
        let e = msg(&["transport.nak=true"]);
        assert!(
            e.starts_with("invalid config: transport.nak = true: "),
            "{e}"
        );
        // net_ring's rings hold 1023 frames, whatever link.rx_desc says.
        let e = msg(&[
            "link.kind=ring",
            "transport.credits=1023",
            "transport.session_ring_share_pct=100",
            "transport.peer_ring_share_pct=100",
        ]);
        assert!(
            e.contains("link.rx_desc = 1024 (a ring of 1023 frames on this link)"),
            "{e}"
        );
        let e = msg(&["transport.session_ring_share_pct=101"]);
        assert!(
            e.contains("transport.session_ring_share_pct = 101: a share in per cent, 1..=100"),
            "{e}"
        );
    }
}
