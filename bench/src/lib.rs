//! The benchmark harness behind `rpc-bench`, a crate of its own beside the
//! binaries it drives: `apps` holds rpc-server, rpc-client and rpc-hostile
//! (config in, report out) and this crate runs them as it needs.
//!
//! Laid out by what it does: `run` (a server and a client of `apps` as
//! two pinned child processes of this binary), `measure` (the raw frame
//! floor, the link measured once per invocation and the resolution on it,
//! the kernel UDP baseline, the engine's own cost, one port's bring-up) and
//! `compare` (regimes, sweeps and incasts side by side, drops by
//! source). `rpc-bench fabric` is the `lab` crate's command (`lab::cli`).

pub mod compare;
pub mod measure;
mod readme_demo;
pub mod run;

/// Loads `args` for a pair this tool starts itself (its server trusts its
/// own client, its ring grows to back the load: `Config::validate_pair`).
/// The config comes back as the user gave it: it is resolved once the
/// link is measured (`measure::bdp::resolve_pair`).
pub fn load_pair(args: &apps::config::cli::ConfigArgs) -> anyhow::Result<apps::config::Config> {
    let cfg = apps::config::Config::load(args.config.as_deref(), &args.overrides())?;
    cfg.validate_pair(&apps::config::ValidationEnv::detect())?;
    Ok(cfg)
}

#[cfg(test)]
pub(crate) mod testutil {
    use apps::config::{Config, ConfigError};

    /// The defaults with `overrides` (`key=value`) applied.
    pub fn with(overrides: &[&str]) -> Result<Config, ConfigError> {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Config::load(None, &o)
    }

    /// `c`'s endpoint for `role`'s worker `index` with MAC `mac` and the
    /// ring the configured device would have.
    pub fn endpoint(
        c: &Config,
        role: apps::config::link::Role,
        index: u16,
        mac: engine::wire::MacAddr,
    ) -> engine::proto::EndpointConfig {
        c.endpoint_config(role, &c.offline_worker(role, index, mac))
            .expect("resolves")
    }
}
