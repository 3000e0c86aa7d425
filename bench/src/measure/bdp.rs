//! The link as a harness measures it, for the engine's resolution: the raw
//! floor's figures (the MTU streaming rate and the round trip of one
//! 32-frame burst, which holds both hosts' batching that an idle ping
//! misses) as `engine::config::Measured`, and a run's resolution on them.
//! The BDP's rate is the marginal rate of echoed MTU burst trains
//! (`stream_rate::train_gbps`): it comes from the same short exchanges as
//! the round trip and stays put when this VM's one-way stream changes speed
//! state between runs. A floor without trains falls back to the median of
//! the MTU stream's 20 ms windows, then to the whole stream's mean. The line
//! rate (`link_gbps`: congestion control's ceiling and the rate cap's
//! limit) stays the one-way stream's, at least the trains': pacing a
//! session at the round-trip rate would hold it below what one direction
//! carries. The rules (configured values as the fallback,
//! `transport.credits` the override, the ring fit) are the engine's
//! (`engine::config::resolve`).

use apps::config::{Config, ConfigError, Source};
use engine::config::{Measured, Resolved};
use serde::Serialize;

/// How a run's credits were derived; reported in the run's JSON as `bdp`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BdpOrigin {
    /// `measured` (from this run's floor) or `config`.
    pub source: &'static str,
    /// Why the configured values were used, when `source` is `config`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_config: Option<String>,
    /// Which floor figure gave the BDP's rate: `train_gbps_mtu`,
    /// `stream_gbps_mtu_median` or `stream_gbps_mtu` (absent when `source`
    /// is `config`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_from: Option<&'static str>,
    /// The line rate (congestion control's ceiling, the rate cap's limit).
    pub link_gbps: f64,
    /// Rate and round trip the BDP was computed from.
    pub bdp_gbps: f64,
    pub rtt_us: f64,
    pub mtu: u32,
    /// `ceil(bdp_gbps x rtt_us / mtu)`.
    pub bdp_credits: u16,
    /// What the sessions use.
    pub credits: u16,
    /// Where the credits came from: `default`, `file`, `flag` or `derived`.
    pub credits_source: &'static str,
    /// How they were derived (empty when given).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub credits_why: String,
    /// True when lossless mode's ring reservation lowered the credits.
    pub clamped_to_ring: bool,
}

/// The floor's figures as a measurement of the link; `None` when the floor
/// lacks a rate or a round trip.
pub fn measured(f: &serde_json::Value) -> Option<Measured> {
    let figure = |k: &'static str| f[k].as_f64().filter(|g| *g > 0.0).map(|g| (k, g));
    let train = figure("train_gbps_mtu");
    let stream = figure("stream_gbps_mtu_median").or_else(|| figure("stream_gbps_mtu"));
    let rtt_us = f["burst_rtt_p50_us_mtu"].as_f64().filter(|r| *r > 0.0)?;
    let (rate_from, bdp_gbps) = train.or(stream)?;
    // The line rate is what the link carried one way, and at least what the
    // trains carried both ways.
    let line_gbps = stream.map_or(0.0, |s| s.1).max(train.map_or(0.0, |t| t.1));
    Some(Measured {
        line_gbps,
        bdp_gbps,
        rtt_us,
        rate_from,
    })
}

/// Resolves `cfg` for a pair the harness starts itself on a link whose
/// floor is `floor` (`None`: nothing measured), and returns the config to
/// hand its processes (every resolved value in place) with the resolution.
pub fn resolve_pair(
    cfg: &Config,
    floor: Option<&serde_json::Value>,
) -> Result<(Config, Resolved), ConfigError> {
    let r = cfg.resolve_with(true, floor.and_then(measured), false)?;
    Ok((cfg.with_resolved(&r), r))
}

/// As [`resolve_pair`], on the ring `link.rx_desc` gives, never grown:
/// lossless sessions share it (derived credits lowered to their share),
/// as an incast's do.
pub fn resolve_pair_on_ring(
    cfg: &Config,
    floor: Option<&serde_json::Value>,
) -> Result<(Config, Resolved), ConfigError> {
    let mut facts = cfg.facts(true, floor.and_then(measured), false);
    facts.largest_ring = facts.rx_ring;
    let r = engine::config::resolve(&cfg.transport, &facts, &cfg.origins)?;
    Ok((cfg.with_resolved(&r), r))
}

impl BdpOrigin {
    /// The account of `r`, resolved from `cfg` (the config as the user
    /// gave it).
    pub fn of(cfg: &Config, r: &Resolved) -> Self {
        let measured = r.bdp.source == Source::Measured;
        let credits = r.setting("transport.credits");
        BdpOrigin {
            source: if measured { "measured" } else { "config" },
            why_config: (!measured).then(|| r.bdp.why.clone()),
            rate_from: r.bdp.rate_from,
            link_gbps: r.transport.link_gbps,
            bdp_gbps: r.bdp.gbps,
            rtt_us: r.bdp.rtt_us,
            mtu: cfg.link.mtu,
            bdp_credits: r.bdp.packets,
            credits: r.credits(),
            credits_source: credits
                .map_or(cfg.source_of("transport.credits"), |s| s.source)
                .as_str(),
            credits_why: credits.map(|s| s.why.clone()).unwrap_or_default(),
            clamped_to_ring: r.credits_clamped,
        }
    }

    /// One line for stderr: the credits, the BDP and where it came from.
    pub fn describe(&self) -> String {
        let from = match (self.rate_from, &self.why_config) {
            (Some("train_gbps_mtu"), _) => " (round-trip rate of echoed MTU burst trains)".into(),
            (Some("stream_gbps_mtu_median"), _) => {
                " (median 20 ms window of the MTU stream)".into()
            }
            (Some(_), _) => " (mean of the MTU stream)".into(),
            (None, Some(why)) => format!(": {why}"),
            (None, None) => String::new(),
        };
        let lowered = match self.clamped_to_ring {
            true => ", lowered to what the receive ring backs",
            false => "",
        };
        format!(
            "{} credits per session ({}); BDP {} credits from {}{from} ({:.2} Gb/s x {:.1} us / {} B; line rate {:.2} Gb/s){lowered}",
            self.credits,
            self.credits_source,
            self.bdp_credits,
            self.source,
            self.bdp_gbps,
            self.rtt_us,
            self.mtu,
            self.link_gbps,
        )
    }
}

/// The lines saying what resolution changed in the link and timers of a
/// pair (ring grown, RTO raised), for stderr.
pub fn fit_lines(r: &Resolved) -> Vec<String> {
    r.pair_fits()
        .map(|s| format!("{} raised to {}: {}", s.key, s.value, s.why))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apps::config::FlowMode;
    use serde_json::json;

    fn floor(gbps: f64, rtt: f64) -> serde_json::Value {
        json!({"stream_gbps_mtu": gbps, "burst_rtt_p50_us_mtu": rtt})
    }

    fn origin(cfg: &Config, f: Option<&serde_json::Value>) -> BdpOrigin {
        let (_, r) = resolve_pair(cfg, f).unwrap();
        BdpOrigin::of(cfg, &r)
    }

    #[test]
    fn measured_rate_and_round_trip_set_the_credits() {
        let cfg = Config::default();
        let o = origin(&cfg, Some(&floor(12.0, 20.0)));
        // 12 Gb/s x 20 us = 30,000 B = 20 frames of 1500 B.
        assert_eq!(o.source, "measured");
        assert_eq!((o.bdp_credits, o.credits), (20, 20));
        assert_eq!(o.credits_source, "derived");
        assert!(!o.clamped_to_ring);
        let (run, _) = resolve_pair(&cfg, Some(&floor(12.0, 20.0))).unwrap();
        assert_eq!(run.transport.credits, Some(20));
    }

    #[test]
    fn the_train_rate_is_preferred_to_the_stream() {
        let mut f = floor(40.0, 20.0);
        f["stream_gbps_mtu_median"] = json!(20.0);
        f["train_gbps_mtu"] = json!(12.0);
        let o = origin(&Config::default(), Some(&f));
        assert_eq!(o.rate_from, Some("train_gbps_mtu"));
        assert_eq!((o.bdp_gbps, o.bdp_credits), (12.0, 20));
        // The line rate stays the stream's, never below the trains'.
        assert_eq!(o.link_gbps, 20.0);
        f["stream_gbps_mtu_median"] = json!(9.0);
        assert_eq!(origin(&Config::default(), Some(&f)).link_gbps, 12.0);
        f["stream_gbps_mtu_median"] = json!(20.0);
        f["train_gbps_mtu"] = serde_json::Value::Null;
        let o = origin(&Config::default(), Some(&f));
        assert_eq!(o.rate_from, Some("stream_gbps_mtu_median"));
    }

    #[test]
    fn configured_values_without_a_floor_or_when_asked() {
        let o = origin(&Config::default(), None);
        assert_eq!(o.source, "config");
        assert_eq!(
            o.why_config.as_deref(),
            Some("nothing measured in this run")
        );
        assert_eq!(o.credits, 9);
        let mut cfg = Config::default();
        cfg.transport.bdp = apps::config::BdpSource::Config;
        let o = origin(&cfg, Some(&floor(12.0, 20.0)));
        assert_eq!(o.source, "config");
        assert_eq!(o.link_gbps, Config::default().transport.link_gbps);
    }

    #[test]
    fn an_explicit_credit_count_wins() {
        let cfg = Config::load(None, &["transport.credits=7".into()]).unwrap();
        let o = origin(&cfg, Some(&floor(100.0, 100.0)));
        assert_eq!(
            (o.source, o.credits, o.credits_source),
            ("measured", 7, "flag")
        );
        assert!(o.bdp_credits > 7);
    }

    #[test]
    fn lossless_credits_are_lowered_to_what_the_ring_backs() {
        let mut cfg = Config::default();
        cfg.link.rx_desc = 256;
        cfg.workload.sessions_per_thread = 4;
        // 100 Gb/s x 100 us is 834 frames: more than even the largest
        // memif ring backs for 4 sessions (16384 / 4 - 1 = 4095 backs it:
        // the ring grows instead).
        let (run, r) = resolve_pair(&cfg, Some(&floor(100.0, 100.0))).unwrap();
        assert_eq!(r.credits(), 834);
        assert_eq!(run.link.rx_desc, 4096);
        assert!(fit_lines(&r)[0].starts_with("link.rx_desc raised to 4096"));
        // Lossy mode reserves nothing: no clamp, no ring growth.
        cfg.transport.mode = FlowMode::Lossy;
        let (run, r) = resolve_pair(&cfg, Some(&floor(100.0, 100.0))).unwrap();
        assert!(!r.credits_clamped);
        assert_eq!(run.link.rx_desc, 256);
        assert_eq!(r.credits(), 834 * 4);
    }

    #[test]
    fn link_rate_follows_the_measured_bdp() {
        let floor = serde_json::json!({"stream_gbps_mtu": 12.5, "burst_rtt_p50_us_mtu": 20.0});
        let (c, _) = resolve_pair(&Config::default(), Some(&floor)).unwrap();
        assert_eq!(c.transport.link_gbps, 12.5);
        let mac = engine::wire::MacAddr([2, 0, 0, 0, 0, 1]);
        let e = crate::testutil::endpoint(&c, apps::config::link::Role::Client, 0, mac);
        assert_eq!(e.link_bps, 12_500_000_000);
    }
}
