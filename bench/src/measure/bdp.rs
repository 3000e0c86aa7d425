//! The default credits' bandwidth-delay product, measured: `rpc-bench run`
//! measures the link with the raw floor before the RPC run, and the credits
//! come from what the floor saw (the MTU streaming rate and the round trip
//! of one 32-frame burst, which holds both hosts' batching that an idle
//! ping misses) instead of a configured 10 Gb/s x 10 us. The rate is the
//! marginal rate of echoed MTU burst trains (`stream_rate::train_gbps`):
//! it comes from the same short exchanges as the round trip and stays put
//! when this VM's one-way stream changes speed state between runs. A floor
//! without trains falls back to the median of the MTU stream's 20 ms
//! windows, then to the whole stream's mean. The configured values stay
//! the fallback and `transport.credits` the override. The line rate
//! (`link_gbps`: congestion control's ceiling and the rate cap's limit)
//! stays the one-way stream's, at least the trains': pacing a session at
//! the round-trip rate would hold it below what one direction carries.

use apps::config::{BdpSource, Config, Mode};
use serde::Serialize;

/// How a run's credits were derived; reported in the run's JSON as `bdp`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BdpOrigin {
    /// `measured` (from this run's floor) or `config`.
    pub source: &'static str,
    /// Why the configured values were used, when `source` is `config`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_config: Option<&'static str>,
    /// Which floor figure gave the BDP's rate: `train_gbps_mtu`,
    /// `stream_gbps_mtu_median` or `stream_gbps_mtu` (absent when `source`
    /// is `config`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_from: Option<&'static str>,
    /// The line rate (congestion control's ceiling, the rate cap's limit):
    /// the one-way MTU stream's, at least the trains' when measured.
    pub link_gbps: f64,
    /// Rate and round trip the BDP was computed from.
    pub bdp_gbps: f64,
    pub rtt_us: f64,
    pub mtu: u32,
    /// `ceil(bdp_gbps x rtt_us / mtu)`.
    pub bdp_credits: u16,
    /// What the sessions use: `transport.credits` when set, else the BDP
    /// (times the lossy multiple), lowered to what the receive ring can
    /// back in lossless mode.
    pub credits: u16,
    /// True when lossless mode's ring reservation lowered the credits.
    pub clamped_to_ring: bool,
}

/// What the floor gave: the BDP's rate (and the figure it came from), the
/// line rate, and the burst round trip.
struct Measured {
    bdp_rate: (&'static str, f64),
    line_gbps: f64,
    rtt_us: f64,
}

fn measured(f: &serde_json::Value) -> Option<Measured> {
    let figure = |k: &'static str| f[k].as_f64().filter(|g| *g > 0.0).map(|g| (k, g));
    let train = figure("train_gbps_mtu");
    let stream = figure("stream_gbps_mtu_median").or_else(|| figure("stream_gbps_mtu"));
    let rtt_us = f["burst_rtt_p50_us_mtu"].as_f64().filter(|r| *r > 0.0)?;
    let bdp_rate = train.or(stream)?;
    // The line rate is what the link carried one way, and at least what the
    // trains carried both ways.
    let line_gbps = stream.map_or(0.0, |s| s.1).max(train.map_or(0.0, |t| t.1));
    Some(Measured {
        bdp_rate,
        line_gbps,
        rtt_us,
    })
}

/// Applies the floor's figures to `cfg` (when `transport.bdp = "measured"`
/// and the floor has them) and pins the credits the run will use.
pub fn apply(cfg: &mut Config, floor: Option<&serde_json::Value>) -> BdpOrigin {
    let measured = floor.and_then(measured);
    let why_config = match (cfg.transport.bdp, &measured) {
        (BdpSource::Config, _) => Some("transport.bdp = \"config\""),
        (BdpSource::Measured, None) => Some("no floor measured in this run"),
        (BdpSource::Measured, Some(m)) => {
            cfg.transport.link_gbps = m.line_gbps;
            cfg.transport.bdp_gbps = Some(m.bdp_rate.1);
            cfg.transport.rtt_us = m.rtt_us;
            None
        }
    };
    let mut clamped_to_ring = false;
    if cfg.transport.credits.is_none() && cfg.transport.mode == Mode::Lossless {
        let most = cfg.lossless_credit_limit().max(1);
        if cfg.effective_credits() > most {
            cfg.transport.credits = Some(most);
            clamped_to_ring = true;
        }
    }
    BdpOrigin {
        source: if why_config.is_none() {
            "measured"
        } else {
            "config"
        },
        rate_from: why_config
            .is_none()
            .then(|| measured.map(|m| m.bdp_rate.0))
            .flatten(),
        why_config,
        link_gbps: cfg.transport.link_gbps,
        bdp_gbps: cfg.transport.bdp_gbps.unwrap_or(cfg.transport.link_gbps),
        rtt_us: cfg.transport.rtt_us,
        mtu: cfg.link.mtu,
        bdp_credits: cfg.bdp_credits(),
        credits: cfg.effective_credits(),
        clamped_to_ring,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn floor(gbps: f64, rtt: f64) -> serde_json::Value {
        json!({"stream_gbps_mtu": gbps, "burst_rtt_p50_us_mtu": rtt})
    }

    #[test]
    fn measured_rate_and_round_trip_set_the_credits() {
        let mut cfg = Config::default();
        let o = apply(&mut cfg, Some(&floor(12.0, 20.0)));
        // 12 Gb/s x 20 us = 30,000 B = 20 frames of 1500 B.
        assert_eq!(o.source, "measured");
        assert_eq!((o.bdp_credits, o.credits), (20, 20));
        assert!(!o.clamped_to_ring);
        assert_eq!(cfg.effective_credits(), 20);
    }

    #[test]
    fn the_train_rate_is_preferred_to_the_stream() {
        // A slow-state stream (20 Gb/s) beside a train rate of 12 Gb/s: the
        // credits follow the trains.
        let mut cfg = Config::default();
        let mut f = floor(40.0, 20.0);
        f["stream_gbps_mtu_median"] = json!(20.0);
        f["train_gbps_mtu"] = json!(12.0);
        let o = apply(&mut cfg, Some(&f));
        assert_eq!(o.rate_from, Some("train_gbps_mtu"));
        assert_eq!((o.bdp_gbps, o.bdp_credits), (12.0, 20));
        // The line rate stays the stream's, never below the trains'.
        assert_eq!(o.link_gbps, 20.0);
        f["stream_gbps_mtu_median"] = json!(9.0);
        assert_eq!(apply(&mut Config::default(), Some(&f)).link_gbps, 12.0);
        f["stream_gbps_mtu_median"] = json!(20.0);
        // A floor whose trains measured nothing (null) takes the median.
        f["train_gbps_mtu"] = serde_json::Value::Null;
        let o = apply(&mut Config::default(), Some(&f));
        assert_eq!(o.rate_from, Some("stream_gbps_mtu_median"));
    }

    #[test]
    fn the_median_window_rate_is_preferred_to_the_mean() {
        let mut cfg = Config::default();
        let mut f = floor(40.0, 20.0);
        f["stream_gbps_mtu_median"] = json!(12.0);
        let o = apply(&mut cfg, Some(&f));
        assert_eq!(o.rate_from, Some("stream_gbps_mtu_median"));
        assert_eq!((o.link_gbps, o.bdp_credits), (12.0, 20));
        // A floor without windows (or with a null median) takes the mean.
        let mut cfg = Config::default();
        let mut f = floor(12.0, 20.0);
        f["stream_gbps_mtu_median"] = serde_json::Value::Null;
        let o = apply(&mut cfg, Some(&f));
        assert_eq!(o.rate_from, Some("stream_gbps_mtu"));
        assert_eq!(o.bdp_credits, 20);
    }

    #[test]
    fn configured_values_without_a_floor_or_when_asked() {
        let mut cfg = Config::default();
        let o = apply(&mut cfg, None);
        assert_eq!(o.source, "config");
        assert_eq!(o.why_config, Some("no floor measured in this run"));
        assert_eq!(o.credits, Config::default().effective_credits());
        let mut cfg = Config::default();
        cfg.transport.bdp = BdpSource::Config;
        let o = apply(&mut cfg, Some(&floor(12.0, 20.0)));
        assert_eq!(o.source, "config");
        assert_eq!(o.link_gbps, Config::default().transport.link_gbps);
    }

    #[test]
    fn an_explicit_credit_count_wins() {
        let mut cfg = Config::default();
        cfg.transport.credits = Some(7);
        let o = apply(&mut cfg, Some(&floor(100.0, 100.0)));
        assert_eq!((o.source, o.credits), ("measured", 7));
        assert!(o.bdp_credits > 7);
    }

    #[test]
    fn lossless_credits_are_lowered_to_what_the_ring_backs() {
        let mut cfg = Config::default();
        cfg.trust_own_client();
        cfg.link.rx_desc = 256;
        cfg.workload.sessions_per_thread = 4;
        // 100 Gb/s x 100 us is 834 frames; 256 entries / 4 sessions - 1.
        let o = apply(&mut cfg, Some(&floor(100.0, 100.0)));
        assert!(o.clamped_to_ring);
        assert_eq!(o.credits, 63);
        let entries = engine::proto::lossless_ring_entries(o.credits);
        assert!(entries * 4 <= 256, "fits the ring: {entries} x 4 sessions");
        // Lossy mode reserves nothing: no clamp.
        let mut cfg = Config::default();
        cfg.transport.mode = Mode::Lossy;
        let o = apply(&mut cfg, Some(&floor(100.0, 100.0)));
        assert!(!o.clamped_to_ring);
        assert_eq!(o.credits, (o.bdp_credits as u32 * 4).min(65535) as u16);
    }

    #[test]
    fn link_rate_follows_the_measured_bdp() {
        let mut c = Config::default();
        let floor = serde_json::json!({"stream_gbps_mtu": 12.5, "burst_rtt_p50_us_mtu": 20.0});
        apply(&mut c, Some(&floor));
        assert_eq!(c.link_bps(), 12_500_000_000);
        let mac = engine::wire::MacAddr([2, 0, 0, 0, 0, 1]);
        let e = crate::testutil::endpoint(&c, apps::config::link::Role::Client, 0, mac);
        assert_eq!(e.link_bps, 12_500_000_000);
    }
}
