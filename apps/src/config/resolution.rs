//! The run's side of the engine's one resolution step
//! (`engine::config::resolve`): the facts this config gives (the MTU, the
//! receive ring the device really has, the largest it takes, the sessions
//! per worker, the window and the request size), the measurement a tool
//! made, if any, and whether the tool starts both ends. Every binary and
//! every harness resolves through [`Config::resolve_with`]; nothing else in
//! the apps derives a transport setting.

use super::schema::{Config, ConfigError, Source, MAX_DESC};
use crate::config::link::{LinkKind, Role};
use engine::config::{resolve, Facts, Load, Measured, Resolved};
use engine::runtime::MEMIF_MAX_RING;

impl Config {
    /// The largest receive ring this link takes: DPDK 22.11's memif holds
    /// at most 16,384 entries, the others the engine's limit.
    pub fn largest_rx_ring(&self) -> usize {
        match self.link.kind {
            LinkKind::Memif => MEMIF_MAX_RING,
            _ => MAX_DESC as usize,
        }
    }

    /// Frames the configured device's receive ring holds for `link.rx_desc`
    /// descriptors (net_ring keeps one back).
    pub fn rx_ring_entries(&self) -> usize {
        self.nexus_builder(Role::Server)
            .map_or(self.link.rx_desc as usize, |b| b.rx_ring_entries())
    }

    /// What resolution needs to know about this run.
    pub fn facts(&self, own_pair: bool, measured: Option<Measured>, pending: bool) -> Facts {
        Facts {
            mtu: self.link.mtu as usize,
            rx_ring: self.rx_ring_entries(),
            largest_ring: self.largest_rx_ring(),
            load: Load {
                client_sessions: self.workload.sessions_per_thread as usize,
                server_sessions: self.max_sessions_per_server_worker(),
                window: self.window() as usize,
                req_size: self.workload.req_size,
            },
            measured,
            measurement_pending: pending,
            own_pair,
        }
    }

    /// Resolves `[transport]` for this run: `own_pair` when the tool starts
    /// both ends, `measured` what it measured of the link, `pending` when a
    /// measurement is still to come.
    pub fn resolve_with(
        &self,
        own_pair: bool,
        measured: Option<Measured>,
        pending: bool,
    ) -> Result<Resolved, ConfigError> {
        let facts = self.facts(own_pair, measured, pending);
        Ok(resolve(&self.transport, &facts, &self.origins)?)
    }

    /// What a binary resolves: this config as given, nothing measured.
    pub fn resolved(&self) -> Result<Resolved, ConfigError> {
        self.resolve_with(false, None, false)
    }

    /// This config with `r`'s values in place, each labelled with its
    /// source: what a tool hands the processes it starts (which then
    /// resolve to the same values) and what its reports stamp.
    pub fn with_resolved(&self, r: &Resolved) -> Config {
        let mut c = self.clone();
        c.transport = r.transport.clone();
        if r.setting("link.rx_desc").is_some() {
            c.link.rx_desc = r.rx_ring as u32;
        }
        for s in &r.settings {
            c.origins.set(s.key, s.source);
        }
        c
    }

    /// Where `key`'s value came from.
    pub fn source_of(&self, key: &str) -> Source {
        self.origins.of(key)
    }
}
