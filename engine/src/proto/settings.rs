//! The endpoint's configuration as the endpoint reads it: the validated
//! [`EndpointConfig`] and the values derived from it once at construction,
//! so no packet recomputes them.

use super::config::EndpointConfig;
use std::ops::Deref;

/// A validated configuration and what follows from it. Derefs to the
/// configuration, so `cfg.mtu` reads as before; the derived values are
/// its own fields.
#[derive(Debug)]
pub(crate) struct Settings {
    base: EndpointConfig,
    /// Payload bytes per packet (`base.max_data_per_pkt()`).
    pub dpp: usize,
}

impl Settings {
    /// `cfg` must have been validated (`EndpointConfig::validate`).
    pub fn new(cfg: EndpointConfig) -> Self {
        Settings {
            dpp: cfg.max_data_per_pkt(),
            base: cfg,
        }
    }

    /// The configuration itself.
    pub fn config(&self) -> &EndpointConfig {
        &self.base
    }
}

impl Deref for Settings {
    type Target = EndpointConfig;

    #[inline]
    fn deref(&self) -> &EndpointConfig {
        &self.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_values_follow_the_config() {
        let cfg = EndpointConfig {
            mtu: 1500,
            ..EndpointConfig::default()
        };
        let s = Settings::new(cfg.clone());
        assert_eq!(s.dpp, cfg.max_data_per_pkt());
        assert_eq!(s.mtu, 1500, "reads through to the config");
    }
}
