//! Loading: a TOML file (a preset or the user's) or all defaults, then
//! `dotted.key=value` overrides applied onto the parsed document before one
//! typed deserialization, so overrides get the file's key and type checks
//! (and size keys their suffixes, `sizes`).

use super::schema::{Config, ConfigError, Origins, Source};
use std::path::Path;

impl Config {
    /// Parses a whole TOML document (no overrides).
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let value = parse_document(text)?;
        let mut origins = Origins::default();
        record(&value, "", Source::File, &mut origins);
        let mut c = from_value(value)?;
        c.origins = origins;
        Ok(c)
    }

    /// Reads `path` (or starts from all defaults when `None`), applies each
    /// `dotted.key=value` override onto the parsed document, then
    /// deserializes, so overrides get the same key and type checks.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Config, ConfigError> {
        let mut value = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|cause| ConfigError::Io {
                    path: p.to_path_buf(),
                    cause,
                })?;
                parse_document(&text).map_err(|e| match e {
                    ConfigError::Parse { msg } => ConfigError::Parse {
                        msg: format!("{}: {msg}", p.display()),
                    },
                    other => other,
                })?
            }
            None => toml::Table::new(),
        };
        let mut origins = Origins::default();
        record(&value, "", Source::File, &mut origins);
        for o in overrides {
            apply_override(&mut value, o, &mut origins)?;
        }
        let mut c = from_value(value)?;
        c.origins = origins;
        Ok(c)
    }

    /// This configuration with `dotted.key=value` overrides applied on top,
    /// checked like [`Self::load`]'s (e.g. one flow mode's own overrides
    /// after the settings every mode shares).
    pub fn with_overrides(&self, overrides: &[String]) -> Result<Config, ConfigError> {
        let mut value = parse_document(&self.to_toml_string())?;
        let mut origins = self.origins.clone();
        for o in overrides {
            apply_override(&mut value, o, &mut origins)?;
        }
        let mut c = from_value(value)?;
        c.origins = origins;
        Ok(c)
    }

    /// The configuration as TOML (every key, defaults filled in), for logs
    /// and for passing one resolved config to child processes.
    pub fn to_toml_string(&self) -> String {
        // Every field serializes (no maps with non-string keys), so this
        // cannot fail; fall back to a comment rather than panic.
        toml::to_string(self).unwrap_or_else(|e| format!("# unserializable config: {e}\n"))
    }
}

/// Records every leaf key of `table` (under `prefix`) as set by `source`.
fn record(table: &toml::Table, prefix: &str, source: Source, origins: &mut Origins) {
    for (k, v) in table {
        let key = match prefix {
            "" => k.clone(),
            p => format!("{p}.{k}"),
        };
        match v {
            toml::Value::Table(t) => record(t, &key, source, origins),
            _ => origins.set(&key, source),
        }
    }
}

fn parse_document(text: &str) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>().map_err(|e| ConfigError::Parse {
        msg: e.to_string().trim_end().to_string(),
    })
}

fn from_value(mut table: toml::Table) -> Result<Config, ConfigError> {
    super::sizes::resolve_sizes(&mut table)?;
    let value = toml::Value::Table(table);
    serde_path_to_error::deserialize::<_, Config>(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let msg = e.into_inner().to_string();
        classify_serde_error(&path, msg)
    })
}

/// Turns a serde message at `path` into `UnknownKey` or `Invalid`.
fn classify_serde_error(path: &str, msg: String) -> ConfigError {
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        if let Some((field, expected)) = rest.split_once('`') {
            // serde_path_to_error may or may not have pushed the field itself.
            let key = if path.is_empty() {
                field.to_string()
            } else if path == field || path.ends_with(&format!(".{field}")) {
                path.to_string()
            } else {
                format!("{path}.{field}")
            };
            let expected = expected.trim_start_matches(',').trim().to_string();
            return ConfigError::UnknownKey { key, expected };
        }
    }
    let key = if path.is_empty() { "<top level>" } else { path };
    ConfigError::invalid(key, format!("{key}: {msg}"))
}

/// Applies one `dotted.key=value` onto the document. The value is parsed as
/// a TOML value (`16`, `true`, `[1, 2]`, `"x"`), else taken as a string
/// (`throughput`, `/tmp/a.sock`, `10.0.0.1`).
fn apply_override(
    doc: &mut toml::Table,
    item: &str,
    origins: &mut Origins,
) -> Result<(), ConfigError> {
    let Some((key, raw)) = item.split_once('=') else {
        return Err(ConfigError::Parse {
            msg: format!("override `{item}` is not dotted.key=value"),
        });
    };
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(ConfigError::Parse {
            msg: format!("override `{item}`: empty key segment in `{key}`"),
        });
    }
    let value = parse_override_value(raw.trim());
    let (last, sections) = parts.split_last().ok_or_else(|| ConfigError::Parse {
        msg: format!("override `{item}` has no key"),
    })?;
    let mut table = doc;
    for (i, part) in sections.iter().enumerate() {
        let entry = table
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = match entry {
            toml::Value::Table(t) => t,
            _ => {
                let prefix = parts[..=i].join(".");
                return Err(ConfigError::invalid(
                    &prefix,
                    format!("{prefix} is a value, not a section (override `{item}`)"),
                ));
            }
        };
    }
    table.insert(last.to_string(), value);
    origins.set(key, Source::Flag);
    Ok(())
}

fn parse_override_value(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::link::Role;
    use crate::config::testutil::*;
    use crate::config::{ValidationEnv, WorkloadKind};
    use engine::wire::MacAddr;
    use std::net::Ipv4Addr;

    #[test]
    fn every_preset_parses_and_validates() {
        for name in PRESETS {
            let c = Config::load(Some(&preset_path(name)), &[])
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            // real-nic names cores for bigger machines: check its own role lists
            // against a large machine, the others against this 2-core one.
            let env = if *name == "real-nic" {
                ValidationEnv { online_cores: 64 }
            } else {
                ENV
            };
            c.validate(&env).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mac = MacAddr([2, 0, 0, 0, 0, 9]);
            for role in [Role::Server, Role::Client] {
                for w in 0..c.cores(role).len() {
                    endpoint(&c, role, w as u16, mac)
                        .validate()
                        .unwrap_or_else(|e| panic!("{name} {role:?} {w}: {e}"));
                }
            }
        }
    }

    #[test]
    fn defaults() {
        let c = Config::from_toml_str("").unwrap();
        assert_eq!(c, Config::default());
        c.validate(&ENV).unwrap();
        assert_eq!(c.window(), 1);
        // 10 Gb/s x 10 us / (8 x 1500 B) = 8.3 -> 9
        assert_eq!(c.resolved().unwrap().credits(), 9);
        let t = with(&["workload.kind=throughput"]).unwrap();
        assert_eq!(t.window(), 8);
    }

    #[test]
    fn overrides_apply_and_are_typed() {
        let c = with(&[
            "transport.credits=16",
            "workload.kind=throughput",
            "cores.server=[1]",
            "link.socket=/tmp/x=y.sock",
            "link.server_ip=10.0.0.2",
            "link.server_mac=02:00:00:00:00:02",
            "workload.seconds=2",
        ])
        .unwrap();
        assert_eq!(c.transport.credits, Some(16));
        assert_eq!(c.workload.kind, WorkloadKind::Throughput);
        assert_eq!(c.cores.server, vec![1]);
        assert_eq!(c.link.socket, "/tmp/x=y.sock");
        assert_eq!(c.link.server_ip, Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(c.workload.seconds, 2.0);
        assert_eq!(c.server_peer(1).port, 31852);
        // Overrides win over the file.
        let path = preset_path("memif");
        let c = Config::load(Some(&path), &["link.mtu=1400".into()]).unwrap();
        assert_eq!(c.link.mtu, 1400);

        for (o, key) in [
            ("transport.credits=many", "transport.credits"),
            ("transport.credits=70000", "transport.credits"),
            ("link.rx_desc=-1", "link.rx_desc"),
            ("cores.server=1", "cores.server"),
            ("workload.kind=fast", "workload.kind"),
            ("link.server_mac=02:00", "link.server_mac"),
            ("link.client_ip=nowhere", "link.client_ip"),
            ("link.huge=yes", "link.huge"),
        ] {
            let e = with(&[o]).expect_err(o);
            assert!(matches!(e, ConfigError::Invalid { .. }), "{o}: {e}");
            assert_eq!(e.key(), Some(key), "{o}: {e}");
            assert!(e.to_string().contains(key), "{o}: {e}");
        }
        assert!(matches!(with(&["credits"]), Err(ConfigError::Parse { .. })));
        assert!(matches!(
            with(&["transport..x=1"]),
            Err(ConfigError::Parse { .. })
        ));
        let e = with(&["link.mtu=1500", "link.mtu.x=1"]).unwrap_err();
        assert_eq!(e.key(), Some("link.mtu"), "{e}");
    }

    #[test]
    fn overrides_on_a_loaded_config() {
        let base = with(&["link.mtu=1400", "transport.mode=pause"]).unwrap();
        let c = base
            .with_overrides(&["transport.pause_xoff=500".into()])
            .unwrap();
        assert_eq!((c.link.mtu, c.transport.pause_xoff), (1400, Some(500)));
        assert_eq!(base.with_overrides(&[]).unwrap(), base);
        let e = base
            .with_overrides(&["transport.xoff=1".into()])
            .unwrap_err();
        assert_eq!(e.key(), Some("transport.xoff"), "{e}");
    }

    #[test]
    fn unknown_keys_rejected() {
        let e = Config::from_toml_str("[transport]\ncredit = 3\n").unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, .. } if key == "transport.credit"),
            "{e}"
        );
        assert!(
            e.to_string().contains("credits"),
            "lists the valid keys: {e}"
        );
        let e = Config::from_toml_str("[transprot]\ncredits = 3\n").unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, .. } if key == "transprot"),
            "{e}"
        );
        let e = with(&["workload.sizes=3"]).unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, .. } if key == "workload.sizes"),
            "{e}"
        );
        let e = with(&["seconds=3"]).unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, .. } if key == "seconds"),
            "{e}"
        );
        let e = Config::from_toml_str("[link\n").unwrap_err();
        assert!(matches!(e, ConfigError::Parse { .. }), "{e}");
        let e = Config::load(Some(Path::new("/nonexistent/x.toml")), &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Io { .. }), "{e}");
        // The cause once, also through anyhow's chain (`{:#}`).
        let shown = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(
            shown.matches("No such file or directory").count(),
            1,
            "{shown}"
        );
    }
}
