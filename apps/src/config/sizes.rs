//! The config keys that hold sizes, and their text forms: in the TOML file
//! and in `--set` a byte size may be written as on the command line
//! (`req_size = "4k"`, `--set workload.resp_size=1M`; k = 1024, see
//! [`super::units::parse_size`]) and a MiB budget as a size that is a
//! whole number of MiB (`mem_per_worker_mib = "1G"`). Plain integers keep
//! their meaning (bytes, or MiB for the `_mib` / `mem_mb` keys).
//!
//! Contract: [`resolve_sizes`] runs on the parsed document before the one
//! typed deserialization, so a size string becomes the integer the schema
//! expects and a bad one is an error naming its key and the accepted forms.

use super::schema::ConfigError;
use super::units::parse_size;

/// What a size key counts, which sets how a suffixed value converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeUnit {
    Bytes,
    /// Whole MiB: `"512M"` and `"1G"` are 512 and 1024; `"1500k"` is refused.
    Mib,
}

/// Every key that holds a size, as `(section, key, unit)`. Counts
/// (credits, descriptors, sessions, windows) are not sizes and take plain
/// integers only.
pub const SIZE_KEYS: &[(&str, &str, SizeUnit)] = &[
    ("link", "mtu", SizeUnit::Bytes),
    ("link", "mbuf_data_room", SizeUnit::Bytes),
    ("link", "mem_mb", SizeUnit::Mib),
    ("transport", "max_msg_size", SizeUnit::Bytes),
    ("transport", "mem_per_worker_mib", SizeUnit::Mib),
    ("transport", "mem_per_peer_mib", SizeUnit::Mib),
    ("transport", "pool_keep_mib", SizeUnit::Mib),
    ("workload", "req_size", SizeUnit::Bytes),
    ("workload", "resp_size", SizeUnit::Bytes),
];

/// Replaces each size key's string value in `doc` by its integer.
pub fn resolve_sizes(doc: &mut toml::Table) -> Result<(), ConfigError> {
    for &(section, key, unit) in SIZE_KEYS {
        let Some(toml::Value::Table(t)) = doc.get_mut(section) else {
            continue;
        };
        let Some(toml::Value::String(text)) = t.get(key) else {
            continue;
        };
        let n = size_value(&format!("{section}.{key}"), text, unit)?;
        t.insert(key.to_string(), toml::Value::Integer(n));
    }
    Ok(())
}

/// `text` as the integer `dotted` holds, in its unit.
fn size_value(dotted: &str, text: &str, unit: SizeUnit) -> Result<i64, ConfigError> {
    // parse_size's message says what was typed and the accepted forms.
    let bytes = parse_size(text).map_err(|e| {
        let mib = match unit {
            SizeUnit::Bytes => "",
            SizeUnit::Mib => " (a plain number is MiB)",
        };
        ConfigError::invalid(dotted, format!("{dotted} = {e}{mib}"))
    })?;
    let n = match unit {
        SizeUnit::Bytes => bytes,
        SizeUnit::Mib if bytes % (1 << 20) == 0 => bytes >> 20,
        SizeUnit::Mib => {
            return Err(ConfigError::invalid(
                dotted,
                format!("{dotted} = {text:?} is not a whole number of MiB (e.g. 512M, 1G or 512)"),
            ))
        }
    };
    i64::try_from(n)
        .map_err(|_| ConfigError::invalid(dotted, format!("{dotted} = {text:?} is too large")))
}

#[cfg(test)]
mod tests {
    use crate::config::testutil::with;
    use crate::config::Config;

    #[test]
    fn size_keys_take_suffixes_in_the_file_and_in_overrides() {
        let c = with(&[
            "workload.req_size=4k",
            "workload.resp_size=1M",
            "transport.max_msg_size=\"16MiB\"",
            "transport.mem_per_worker_mib=1G",
            "transport.pool_keep_mib=64",
            "link.mtu=9000",
        ])
        .unwrap();
        assert_eq!((c.workload.req_size, c.workload.resp_size), (4096, 1 << 20));
        assert_eq!(c.transport.max_msg_size, 16 << 20);
        assert_eq!(c.transport.mem_per_worker_mib, 1024);
        assert_eq!(c.transport.pool_keep_mib, 64);
        assert_eq!(c.link.mtu, 9000);
        let f = Config::from_toml_str(
            "[workload]\nreq_size = \"64KiB\"\nresp_size = 32\n[link]\nmbuf_data_room = \"2k\"\n",
        )
        .unwrap();
        assert_eq!(
            (
                f.workload.req_size,
                f.workload.resp_size,
                f.link.mbuf_data_room
            ),
            (65536, 32, 2048)
        );
    }

    #[test]
    fn a_bad_size_names_its_key_and_the_accepted_forms() {
        for (o, key, says) in [
            ("workload.req_size=4x", "workload.req_size", "is not a size"),
            ("link.mtu=1.5k", "link.mtu", "is not a size"),
            (
                "transport.mem_per_peer_mib=1500k",
                "transport.mem_per_peer_mib",
                "whole number of MiB",
            ),
            (
                "workload.resp_size=99999999999999G",
                "workload.resp_size",
                "too large",
            ),
        ] {
            let e = with(&[o]).expect_err(o);
            assert_eq!(e.key(), Some(key), "{o}: {e}");
            let shown = e.to_string();
            assert!(shown.contains(key) && shown.contains(says), "{o}: {shown}");
        }
        let e = with(&["workload.req_size=4x"]).unwrap_err().to_string();
        assert!(e.contains("4k") && e.contains("k = 1024"), "{e}");
        // Counts are not sizes.
        let e = with(&["transport.credits=4k"]).unwrap_err();
        assert_eq!(e.key(), Some("transport.credits"), "{e}");
    }
}
