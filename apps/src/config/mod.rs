//! The run configuration: one TOML file (every section and key optional, see
//! `docs/configs.md`), `dotted.key=value` overrides from the command line,
//! and one validation pass that rejects impossible combinations (credits the
//! receive ring cannot back, an MTU the mbufs cannot hold, cores the machine
//! does not have, ...) with a message naming the key and the limit.
//!
//! Contract: [`Config::load`] parses (unknown keys and wrong types are errors
//! naming the dotted key, for the file and the overrides alike) and records
//! which keys the file and the flags set; the caller then calls
//! [`Config::validate`] once, which checks the sections the apps own and
//! resolves `[transport]` with the engine (`engine::config`: the type, its
//! defaults, its validation and the one resolution step are the engine's);
//! after that [`setup`] (the one seam to the engine: [`Config::open_nexus`],
//! [`Config::endpoint_config`], ...) produces engine configurations the
//! engine accepts.
//!
//! Layout: [`schema`] (the structs), [`load`] (file, presets, overrides,
//! origins), [`sizes`] (which keys are sizes and their `4k` forms),
//! [`validate`] (what only the config knows, and the engine's builder and
//! endpoint checks run on what the config builds), [`resolution`] (the
//! run's facts for the engine's resolution), [`engine_map`] (ports,
//! targets, sessions per worker), [`setup`] (the engine's builder, devices
//! and each worker's endpoint).

pub mod cli;
#[cfg(test)]
mod doc_keys;
mod engine_map;
pub mod link;
mod load;
mod mac;
mod print;
mod resolution;
mod schema;
pub mod setup;
pub mod sizes;
pub mod units;
mod validate;

pub use schema::*;
pub use setup::{PortShape, Worker};
pub use validate::ValidationEnv;

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;
    use std::path::{Path, PathBuf};

    pub const ENV: ValidationEnv = ValidationEnv { online_cores: 2 };
    pub const PRESETS: &[&str] = &[
        "memif",
        "af_packet",
        "ring",
        "null",
        "real-nic",
        "lossy",
        "tbf-veth",
        "slow-receiver",
        "kernel",
    ];

    /// `c`'s endpoint for `role`'s worker `index` with MAC `mac` and the
    /// ring the configured device would have.
    pub fn endpoint(
        c: &Config,
        role: crate::config::link::Role,
        index: u16,
        mac: engine::wire::MacAddr,
    ) -> engine::proto::EndpointConfig {
        c.endpoint_config(role, &c.offline_worker(role, index, mac))
            .expect("resolves")
    }

    pub fn preset_path(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../configs")
            .join(format!("{name}.toml"))
    }

    pub fn with(overrides: &[&str]) -> Result<Config, ConfigError> {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Config::load(None, &o)
    }

    /// Loads with overrides, validates on a 2-core machine, returns the
    /// error's key.
    pub fn rejected_key(overrides: &[&str]) -> String {
        let c = with(overrides).expect("parses");
        let e = c.validate(&ENV).expect_err("must be rejected");
        let key = e.key().expect("error names a key").to_string();
        assert!(e.to_string().contains(&key), "{e} does not name {key}");
        key
    }
}
