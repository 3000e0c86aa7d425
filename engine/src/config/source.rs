//! Where each setting of a run came from: the engine's default, the config
//! file, a command-line flag, a measurement of the link, or derived from
//! other settings by [`resolve`](super::resolve). The loader of a tool
//! records which keys the file and the flags set ([`Origins`]); resolution
//! adds what it measured or derived ([`Setting`]), so `--print-config` and
//! every report can say, per key, why it has its value.

use serde::Serialize;
use std::collections::BTreeMap;

/// Where a value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The engine's default.
    Default,
    /// The config file (`-c`).
    File,
    /// A command-line flag (`--set` or a shortcut).
    Flag,
    /// Measured on the link in this run.
    Measured,
    /// Computed from other settings (the BDP rule, a ring fit, ...).
    Derived,
}

impl Source {
    /// The word in `--print-config` and the reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File => "file",
            Source::Flag => "flag",
            Source::Measured => "measured",
            Source::Derived => "derived",
        }
    }
}

/// The keys a user set and where: what a tool's loader saw in the file and
/// on the command line. A key not listed has its default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origins(BTreeMap<String, Source>);

impl Origins {
    /// Records that `key` (dotted, e.g. `transport.credits`) was set by
    /// `source`; a later record wins (a flag overrides the file).
    pub fn set(&mut self, key: &str, source: Source) {
        self.0.insert(key.to_string(), source);
    }

    /// Where `key`'s value came from: [`Source::Default`] when no one set it.
    pub fn of(&self, key: &str) -> Source {
        self.0.get(key).copied().unwrap_or(Source::Default)
    }

    /// Whether the user set `key`.
    pub fn given(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Every key the user set, in key order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// One resolved value that resolution set, with its source and, for a
/// derived or measured one, how it was obtained.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setting {
    /// The dotted key.
    pub key: &'static str,
    /// The value as the config file would spell it.
    pub value: String,
    /// Where it came from.
    pub source: Source,
    /// How it was derived or measured (empty for a given value).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub why: String,
}
