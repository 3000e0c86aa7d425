//! A run's endpoints: [`TransportConfig::endpoint`] builds one endpoint's
//! configuration, once, from a transport config (resolved, for a run:
//! [`Resolved::endpoint`]) and the endpoint's [`Site`] (what it takes from
//! its port and process).

use super::resolve::{to_bps, us_f, Resolved, MIN_TABLE_SESSIONS, PAIR_FITS};
use super::source::Setting;
use super::transport::TransportConfig;
use crate::proto::{
    bdp_credits, DcqcnParams, EndpointAddr, EndpointConfig, MemBudget, PauseConfig, SecretKey,
    MAX_SESSIONS,
};
use crate::time::Duration;

/// Where one endpoint of the run sits: what it takes from its port and
/// process rather than the config.
#[derive(Clone, Copy, Debug)]
pub struct Site {
    /// Its MAC, IPv4 address and UDP port.
    pub local: EndpointAddr,
    /// Frames its port's receive ring really holds.
    pub rx_ring_entries: usize,
    /// Sessions it opens (client) or accepts (server).
    pub sessions: usize,
    /// Check received IPv4 header checksums.
    pub verify_ipv4_checksum: bool,
    /// Its RNG seed (session tokens).
    pub seed: u64,
    /// The server's secret.
    pub secret: Option<SecretKey>,
}

impl TransportConfig {
    /// The endpoint configuration at `site` on a link of `mtu`: every
    /// transport field from this config, built once. Credits left unset
    /// are one BDP of the config's rate and round trip; a run resolves them
    /// first ([`Resolved::endpoint`]).
    pub fn endpoint(&self, mtu: usize, site: &Site) -> EndpointConfig {
        let t = self;
        let bdp = || {
            let gbps = t.bdp_gbps.unwrap_or(t.link_gbps);
            bdp_credits(to_bps(gbps), us_f(t.rtt_us), mtu)
        };
        EndpointConfig {
            local: site.local,
            mtu,
            session_credits: t.credits.unwrap_or_else(bdp),
            req_window: t.req_window as usize,
            rx_ring_entries: site.rx_ring_entries,
            max_sessions: site.sessions.clamp(MIN_TABLE_SESSIONS, MAX_SESSIONS),
            max_msg_size: t.max_msg_size as usize,
            rto: t.rto(),
            scan_interval: Duration::from_micros(t.scan_us),
            session_timeout: Duration::from_millis(t.session_timeout_ms),
            connect_retry: Duration::from_millis(t.connect_retry_ms),
            connect_timeout: Duration::from_millis(t.connect_timeout_ms),
            idle_timeout: Duration::from_millis(t.idle_timeout_ms),
            half_open_timeout: Duration::from_millis(t.half_open_timeout_ms),
            keepalive_interval: Duration::from_millis(t.keepalive_ms),
            max_sessions_per_peer: t.max_sessions_per_peer as usize,
            admission: t.admission(),
            police: t.police(),
            mem: MemBudget {
                per_worker: (t.mem_per_worker_mib << 20) as usize,
                per_peer: (t.mem_per_peer_mib << 20) as usize,
                reassembly_timeout: Duration::from_millis(t.reassembly_timeout_ms),
                pool_keep: (t.pool_keep_mib << 20) as usize,
            },
            mode: t.mode,
            on_loss: t.on_loss,
            pause: t.pause_config(),
            retransmit: t.retransmit,
            rto_low: t.rto_low(),
            cc: t.cc,
            link_bps: to_bps(t.link_gbps),
            rate_cap_bps: t.rate_cap_gbps.map(to_bps),
            base_rtt: us_f(t.rtt_us),
            dcqcn: t.dcqcn.map_or_else(
                || DcqcnParams::for_link(to_bps(t.link_gbps)),
                |s| s.params(),
            ),
            nak: t.nak,
            rccc: t.rccc,
            verify_ipv4_checksum: site.verify_ipv4_checksum,
            seed: site.seed,
            secret: site.secret,
            ..EndpointConfig::default()
        }
    }

    /// Pause mode's thresholds once all three are set (resolution derives
    /// them in pause mode); the engine's default otherwise.
    pub fn pause_config(&self) -> PauseConfig {
        match (self.pause_xoff, self.pause_xon, self.pause_headroom) {
            (Some(xoff), Some(xon), Some(h)) => PauseConfig {
                xoff: xoff as usize,
                xon: xon as usize,
                pause_time: Duration::from_micros(self.pause_time_us),
                headroom: h as usize,
            },
            _ => PauseConfig::default(),
        }
    }
}

impl Resolved {
    /// The endpoint configuration at `site`: every transport field from the
    /// resolved config, built once.
    pub fn endpoint(&self, site: &Site) -> EndpointConfig {
        self.transport.endpoint(self.mtu, site)
    }

    /// Pause mode's thresholds (the engine's default outside pause mode).
    pub fn pause_config(&self) -> PauseConfig {
        self.transport.pause_config()
    }

    /// The session credits.
    pub fn credits(&self) -> u16 {
        self.transport.credits.unwrap_or(self.bdp.packets)
    }

    /// What resolution changed in a pair's link and timers (the ring grown
    /// to back the load, the RTO raised past its queue), for a line each.
    pub fn pair_fits(&self) -> impl Iterator<Item = &Setting> {
        self.settings.iter().filter(|s| PAIR_FITS.contains(&s.key))
    }

    /// The resolved value of `key`, if resolution set it.
    pub fn setting(&self, key: &str) -> Option<&Setting> {
        self.settings.iter().find(|s| s.key == key)
    }
}
