//! The regimes that `compare`, `sweep` and `incast` run (`--regimes`,
//! alias `--modes`), and each one's own overrides (`--lossless-set`,
//! `--lossy-set`, `--regime-set REGIME:KEY=VALUE`, alias `--mode-set`).
//! The regimes are the engine's table, [`Regime`] (`engine::regimes`),
//! every entry of which runs on real links (the fabric lab runs the same
//! table's `lossy` and `irn`); [`ApplyRegime`] maps each one's flow mode,
//! retransmission and credit rule to the run config's keys:
//!
//! | regime     | `transport.mode` | default credits               | ring reserved | retransmit |
//! |------------|------------------|-------------------------------|---------------|------------|
//! | `lossless` | lossless         | BDP                           | yes           | go-back-N  |
//! | `pause`    | pause            | `lossy_credit_multiple` x BDP | no            | go-back-N  |
//! | `lossy`    | lossy            | `lossy_credit_multiple` x BDP | no            | go-back-N  |
//! | `irn`      | lossy            | 1 x BDP                       | no            | selective  |
//!
//! Order of application: the configuration every regime shares (file,
//! shortcuts, `--set`), then the regime, then that regime's own overrides,
//! so a per-regime override wins over the regime (e.g. `--regime-set
//! irn:transport.lossy_credit_multiple=2`).

use apps::config::{Config, CreditMultiple, FlowMode, LossPolicy};
use apps::exit::usage;
use clap::Args;
use engine::regimes::CreditRule;

/// The engine's table of regimes, the one type `compare`, `sweep` and
/// `incast` name them by.
pub use engine::regimes::Regime;

/// A regime of the engine's table laid over a run configuration (the
/// engine's table knows no `apps` config: this is the mapping real links
/// use).
pub trait ApplyRegime {
    /// `shared` with this regime's settings from the table: flow mode,
    /// retransmission and credit rule (congestion control, NAKs and timers
    /// stay the shared config's). Credits are not touched: with
    /// `transport.credits` unset they follow from the flow mode and the
    /// multiple, which a one-BDP rule sets to 1 outside the lossless flow mode
    /// (lossless credits are one BDP already).
    fn apply(self, shared: &Config) -> Config;
}

impl ApplyRegime for Regime {
    fn apply(self, shared: &Config) -> Config {
        let s = self.settings();
        let mut c = for_flow_mode(shared, s.flow, shared.transport.credits);
        c.transport.retransmit = s.retransmit;
        match s.credits {
            CreditRule::Bdp if s.flow != FlowMode::Lossless => {
                c.transport.lossy_credit_multiple = CreditMultiple::Factor(1.0);
            }
            CreditRule::Bdp | CreditRule::LossyMultiple => {}
            CreditRule::Fixed(n) => c.transport.credits = Some(n),
            // No regime of the engine's table: the lab's UEC regimes only.
            CreditRule::BdpAndHalf => {
                c.transport.lossy_credit_multiple = CreditMultiple::Factor(1.5);
            }
        }
        c
    }
}

/// A regime by name; unknown names are an error listing the regimes.
pub fn parse_regime(name: &str) -> anyhow::Result<Regime> {
    let name = name.trim();
    match Regime::from_name(name) {
        Some(r) => Ok(r),
        None => Err(usage(format!(
            "unknown regime {name:?}: the regimes are {}",
            Regime::ALL.map(Regime::name).join(", ")
        ))),
    }
}

/// The base configuration in flow mode `mode`; `credits` None = the flow
/// mode's default (BDP, or `lossy_credit_multiple` x BDP).
pub fn for_flow_mode(base: &Config, mode: FlowMode, credits: Option<u16>) -> Config {
    let mut c = base.clone();
    c.transport.mode = mode;
    c.transport.credits = credits;
    if mode != FlowMode::Lossless {
        // `reset` is a lossless policy; validation rejects it in the others.
        c.transport.on_loss = LossPolicy::Retransmit;
    }
    c
}

/// `--regimes` as regimes, in the order given, without repeats.
pub fn parse_regimes(list: &[String]) -> anyhow::Result<Vec<Regime>> {
    let mut v = Vec::new();
    for name in list.iter().filter(|n| !n.trim().is_empty()) {
        let r = parse_regime(name).map_err(|e| usage(format!("--regimes: {e}")))?;
        if !v.contains(&r) {
            v.push(r);
        }
    }
    if v.is_empty() {
        return Err(usage(format!(
            "--regimes needs at least one of {}",
            Regime::ALL.map(Regime::name).join(", ")
        )));
    }
    Ok(v)
}

/// One `--regime-set REGIME:KEY=VALUE`: the regime and the `KEY=VALUE`
/// override (split at the first colon, so values may hold colons).
pub fn parse_regime_set(item: &str) -> anyhow::Result<(Regime, String)> {
    let Some((name, set)) = item.split_once(':').filter(|(m, _)| !m.contains('=')) else {
        return Err(usage(format!(
            "--regime-set {item:?} is not REGIME:KEY=VALUE (e.g. irn:transport.rto_low_us=200)"
        )));
    };
    let r = parse_regime(name).map_err(|e| usage(format!("--regime-set {item:?}: {e}")))?;
    if !set.contains('=') {
        return Err(usage(format!(
            "--regime-set {item:?}: {set:?} is not KEY=VALUE"
        )));
    }
    Ok((r, set.trim().to_string()))
}

/// Overrides for one regime only, applied after the regime.
#[derive(Args, Clone, Debug, Default)]
pub struct RegimeOverrides {
    /// Override a config key in the lossless regime's runs only
    /// (repeatable), e.g. --lossless-set transport.credits=64.
    #[arg(long = "lossless-set", value_name = "KEY=VALUE")]
    pub lossless_set: Vec<String>,
    /// Override a config key in the lossy regime's runs only (repeatable).
    #[arg(long = "lossy-set", value_name = "KEY=VALUE")]
    pub lossy_set: Vec<String>,
    /// Override a config key in one regime's runs only (repeatable), e.g.
    /// --regime-set pause:transport.pause_time_us=100.
    #[arg(
        long = "regime-set",
        visible_alias = "mode-set",
        value_name = "REGIME:KEY=VALUE"
    )]
    pub regime_set: Vec<String>,
}

impl RegimeOverrides {
    /// The overrides of `r`'s runs, in order: `--lossless-set` or
    /// `--lossy-set` (for those two regimes), then its `--regime-set`s.
    pub fn for_regime(&self, r: Regime) -> anyhow::Result<Vec<String>> {
        let mut v = match r {
            Regime::Lossless => self.lossless_set.clone(),
            Regime::Lossy => self.lossy_set.clone(),
            _ => Vec::new(),
        };
        for item in &self.regime_set {
            let (q, set) = parse_regime_set(item)?;
            if q == r {
                v.push(set);
            }
        }
        Ok(v)
    }

    /// Every `--regime-set` parses and names a regime that runs.
    pub fn check(&self, running: &[Regime]) -> anyhow::Result<()> {
        for item in &self.regime_set {
            let (r, _) = parse_regime_set(item)?;
            if !running.contains(&r) {
                return Err(usage(format!(
                    "--regime-set {item:?}: regime {} is not in --regimes ({})",
                    r.name(),
                    running
                        .iter()
                        .map(|r| r.name())
                        .collect::<Vec<_>>()
                        .join(",")
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apps::config::{Retransmit, ValidationEnv};

    const ENV: ValidationEnv = ValidationEnv { online_cores: 2 };

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn regimes_derive_flow_mode_retransmit_and_credits() {
        let shared = Config::default();
        // BDP 9 packets (10 Gb/s x 10 us at 1500 B), multiple 4.
        let want = [
            (Regime::Lossless, FlowMode::Lossless, Retransmit::GoBackN, 9),
            (Regime::Pause, FlowMode::Pause, Retransmit::GoBackN, 36),
            (Regime::Lossy, FlowMode::Lossy, Retransmit::GoBackN, 36),
            (Regime::Irn, FlowMode::Lossy, Retransmit::Selective, 9),
        ];
        for (p, mode, retransmit, credits) in want {
            let c = p.apply(&shared);
            assert_eq!(c.transport.mode, mode, "{p:?}");
            assert_eq!(c.transport.retransmit, retransmit, "{p:?}");
            assert_eq!(c.resolved().unwrap().credits(), credits, "{p:?}");
            assert_eq!(
                c.transport.credits, None,
                "{p:?}: credits come from the BDP"
            );
            c.validate(&ENV).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        }
        // The lossy multiple moves lossy and pause, not irn.
        let mut m8 = shared.clone();
        m8.transport.lossy_credit_multiple = CreditMultiple::Factor(8.0);
        assert_eq!(Regime::Pause.apply(&m8).resolved().unwrap().credits(), 72);
        assert_eq!(Regime::Lossy.apply(&m8).resolved().unwrap().credits(), 72);
        assert_eq!(Regime::Irn.apply(&m8).resolved().unwrap().credits(), 9);
        // Nothing reserved except lossless: a ring too small for lossless.
        let mut small = shared.clone();
        small.link.rx_desc = 64;
        small.workload.sessions_per_thread = 8;
        assert!(Regime::Lossless.apply(&small).validate(&ENV).is_err());
        for p in [Regime::Pause, Regime::Lossy, Regime::Irn] {
            p.apply(&small).validate(&ENV).unwrap();
        }
        // A lossless-only policy does not leak into the other regimes.
        let mut reset = shared;
        reset.transport.on_loss = LossPolicy::ResetSession;
        assert_eq!(
            Regime::Lossless.apply(&reset).transport.on_loss,
            LossPolicy::ResetSession
        );
        Regime::Pause.apply(&reset).validate(&ENV).unwrap();
    }

    /// The endpoints `c`'s runs build (client and server worker 0), with
    /// the per-process random seed and secret fixed.
    fn endpoints_of(c: &Config) -> Vec<engine::proto::EndpointConfig> {
        use apps::config::link::Role;
        [Role::Client, Role::Server]
            .map(|role| {
                let mac = engine::wire::MacAddr([2, 0, 0, 0, 0, 1]);
                // A combination resolution refuses builds no endpoint.
                let mut e = c
                    .endpoint_config(role, &c.offline_worker(role, 0, mac))
                    .ok()?;
                e.seed = 0;
                e.secret = None;
                Some(e)
            })
            .into_iter()
            .flatten()
            .collect()
    }

    /// The endpoints regime `p`'s runs build on the shared config `sets`.
    fn endpoints(p: Regime, sets: &[&str]) -> Vec<engine::proto::EndpointConfig> {
        endpoints_of(&p.apply(&crate::testutil::with(sets).unwrap()))
    }

    /// Golden: what each compare regime's endpoints were before the
    /// regimes came from the engine's table (then `engine::presets`; commit
    /// "compare: golden test of the presets' endpoints", against the code
    /// of `e49c486`): the fields a regime decides, literally, and every
    /// field equal to the regime as it was written then (`old_apply`,
    /// frozen here).
    #[test]
    fn regimes_build_the_golden_endpoints() {
        use engine::proto::{CcKind, FlowMode, LossPolicy, Retransmit, SackRule};
        use engine::time::Duration;
        fn old_apply(p: Regime, shared: &Config) -> Config {
            let mut c = shared.clone();
            c.transport.mode = match p {
                Regime::Lossless => FlowMode::Lossless,
                Regime::Pause => FlowMode::Pause,
                Regime::Lossy | Regime::Irn => FlowMode::Lossy,
            };
            if c.transport.mode != FlowMode::Lossless {
                c.transport.on_loss = LossPolicy::Retransmit;
            }
            c.transport.retransmit = match p {
                Regime::Irn => Retransmit::Selective,
                _ => Retransmit::GoBackN,
            };
            if p == Regime::Irn {
                c.transport.lossy_credit_multiple = CreditMultiple::Factor(1.0);
            }
            c
        }
        let sets: &[&[&str]] = &[
            &[],
            &["transport.lossy_credit_multiple=8"],
            &["transport.credits=20"],
            &[
                "transport.cc=dcqcn",
                "transport.nak=true",
                "transport.on_loss=reset",
            ],
            &[
                "transport.rto_us=1000",
                "transport.rto_low_us=200",
                "link.mtu=9000",
                "link.mbuf_data_room=9216",
            ],
        ];
        for s in sets {
            let shared = crate::testutil::with(s).unwrap();
            for p in Regime::ALL {
                assert_eq!(p.apply(&shared), old_apply(p, &shared), "{p:?} {s:?}");
                assert_eq!(
                    endpoints_of(&p.apply(&shared)),
                    endpoints_of(&old_apply(p, &shared)),
                    "{p:?} {s:?}"
                );
            }
        }
        // The fields a regime decides, on the default config (BDP 9).
        let want: [(Regime, &str, Retransmit, u16); 4] = [
            (Regime::Lossless, "lossless", Retransmit::GoBackN, 9),
            (Regime::Pause, "pause", Retransmit::GoBackN, 36),
            (Regime::Lossy, "lossy", Retransmit::GoBackN, 36),
            (Regime::Irn, "lossy", Retransmit::Selective, 9),
        ];
        for (p, mode, retransmit, credits) in want {
            for e in endpoints(p, &[]) {
                assert_eq!(e.on_loss, LossPolicy::Retransmit, "{p:?}");
                let m = e.mode.as_str();
                assert_eq!(m, mode, "{p:?}");
                assert_eq!(e.retransmit, retransmit, "{p:?}");
                assert_eq!(e.session_credits, credits, "{p:?}");
                assert_eq!(e.cc, CcKind::None, "{p:?}");
                assert!(!e.nak, "{p:?}");
                assert_eq!(e.sack_rule, SackRule::FirstNack, "{p:?}");
                assert_eq!(e.rto, Duration::from_micros(5000), "{p:?}");
                assert_eq!(e.rto_low, Duration::from_micros(500), "{p:?}");
                assert_eq!(e.scan_interval, Duration::from_micros(500), "{p:?}");
            }
        }
        // The run config's congestion control and NAK stay as given.
        for e in endpoints(Regime::Lossy, &["transport.cc=dcqcn", "transport.nak=true"]) {
            assert_eq!((e.cc, e.nak, e.session_credits), (CcKind::Dcqcn, true, 36));
        }
        for e in endpoints(Regime::Irn, &["transport.lossy_credit_multiple=8"]) {
            assert_eq!(e.session_credits, 9);
        }
    }

    #[test]
    fn every_regime_of_the_table_runs_on_real_links() {
        assert!(Regime::ALL.iter().all(|r| r.on_real_links()));
    }

    #[test]
    fn all_lists_the_regimes_in_declaration_order() {
        // `Bases` indexes its configurations by `regime as usize`.
        for (i, p) in Regime::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i, "{p:?}");
        }
    }

    #[test]
    fn regime_lists() {
        let v = parse_regimes(&names(&["lossless", " irn", "pause", "irn"])).unwrap();
        assert_eq!(v, vec![Regime::Lossless, Regime::Irn, Regime::Pause]);
        let e = parse_regimes(&names(&["lossless", "rdma"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"rdma\"") && e.contains("lossless, pause, lossy, irn"),
            "{e}"
        );
        assert!(parse_regimes(&names(&[""])).is_err());
    }

    #[test]
    fn regime_set_parsing() {
        assert_eq!(
            parse_regime_set("irn:transport.rto_low_us=200").unwrap(),
            (Regime::Irn, "transport.rto_low_us=200".to_string())
        );
        // Only the first colon splits: values may hold colons.
        assert_eq!(
            parse_regime_set("pause:link.server_mac=02:00:00:00:00:02").unwrap(),
            (
                Regime::Pause,
                "link.server_mac=02:00:00:00:00:02".to_string()
            )
        );
        for bad in [
            "transport.rto_us=1",
            "irn",
            "irn:transport.rto_us",
            "tcp:a.b=1",
        ] {
            assert!(parse_regime_set(bad).is_err(), "{bad}");
        }
        let e = parse_regime_set("tcp:a.b=1").unwrap_err().to_string();
        assert!(e.contains("lossless, pause, lossy, irn"), "{e}");

        let o = RegimeOverrides {
            lossless_set: names(&["transport.rto_us=100000"]),
            lossy_set: names(&["transport.lossy_credit_multiple=16"]),
            regime_set: names(&[
                "lossless:transport.scan_us=100",
                "irn:transport.rto_low_us=200",
                "pause:transport.pause_time_us=50",
            ]),
        };
        assert_eq!(
            o.for_regime(Regime::Lossless).unwrap(),
            names(&["transport.rto_us=100000", "transport.scan_us=100"])
        );
        assert_eq!(
            o.for_regime(Regime::Lossy).unwrap(),
            names(&["transport.lossy_credit_multiple=16"])
        );
        assert_eq!(
            o.for_regime(Regime::Irn).unwrap(),
            names(&["transport.rto_low_us=200"])
        );
        o.check(&Regime::ALL).unwrap();
        let e = o
            .check(&[Regime::Lossless, Regime::Irn])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("pause is not in --regimes (lossless,irn)"),
            "{e}"
        );
    }
}
