//! The named transport presets that `compare`, `sweep` and `incast` run
//! (`--modes`), and each one's own overrides (`--lossless-set`,
//! `--lossy-set`, `--mode-set MODE:KEY=VALUE`). The modes are the entries
//! of the shared table `engine::regimes` that run on real links (the fabric
//! lab runs the same table's `lossy` and `irn`); each maps the table's
//! flow, retransmission and credit rule to the run config's keys:
//!
//! | preset     | `transport.mode` | default credits               | ring reserved | retransmit |
//! |------------|------------------|-------------------------------|---------------|------------|
//! | `lossless` | lossless         | BDP                           | yes           | go-back-N  |
//! | `pause`    | pause            | `lossy_credit_multiple` x BDP | no            | go-back-N  |
//! | `lossy`    | lossy            | `lossy_credit_multiple` x BDP | no            | go-back-N  |
//! | `irn`      | lossy            | 1 x BDP                       | no            | selective  |
//!
//! Order of application: the configuration every mode shares (file,
//! shortcuts, `--set`), then the preset, then that mode's own overrides,
//! so a per-mode override wins over the preset (e.g. `--mode-set
//! irn:transport.lossy_credit_multiple=2`).

use anyhow::bail;
use apps::config::{Config, CreditMultiple, FlowMode, LossPolicy, Retransmit};
use clap::Args;
use engine::regimes::{CreditRule, Regime};

/// One named configuration of the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Preset {
    /// Credits = BDP, backed by reserved receive-ring entries; go-back-N.
    Lossless,
    /// Nothing reserved; the receiver pauses its senders above XOFF;
    /// credits a multiple of the BDP; go-back-N.
    Pause,
    /// Nothing reserved; credits a multiple of the BDP; go-back-N.
    Lossy,
    /// Nothing reserved; credits = 1 x BDP; selective retransmission
    /// (IRN: loss is repaired quickly instead of prevented).
    Irn,
}

impl Preset {
    /// Every preset, in the order tables list them.
    pub const ALL: [Preset; 4] = [Preset::Lossless, Preset::Pause, Preset::Lossy, Preset::Irn];

    /// This mode's entry of the shared table (`engine::regimes`).
    pub fn preset(self) -> Regime {
        match self {
            Preset::Lossless => Regime::Lossless,
            Preset::Pause => Regime::Pause,
            Preset::Lossy => Regime::Lossy,
            Preset::Irn => Regime::Irn,
        }
    }

    /// The mode's name (the table's).
    pub fn name(self) -> &'static str {
        self.preset().name()
    }

    /// A preset by name; unknown names are an error listing the presets.
    pub fn parse(name: &str) -> anyhow::Result<Preset> {
        let name = name.trim();
        match Preset::ALL.into_iter().find(|p| p.name() == name) {
            Some(p) => Ok(p),
            None => bail!(
                "unknown mode {name:?}: the presets are {}",
                Preset::ALL.map(Preset::name).join(", ")
            ),
        }
    }

    /// `transport.mode`: the table's flow.
    pub fn flow_mode(self) -> FlowMode {
        self.preset().settings().flow
    }

    /// `transport.retransmit`: the table's.
    pub fn retransmit(self) -> Retransmit {
        self.preset().settings().retransmit
    }

    /// `shared` with this preset's settings from the table: flow mode,
    /// retransmission and credit rule (congestion control, NAKs and timers
    /// stay the shared config's). Credits are not touched: with
    /// `transport.credits` unset they follow from the mode and the
    /// multiple, which a one-BDP rule sets to 1 outside lossless mode
    /// (lossless credits are one BDP already).
    pub fn apply(self, shared: &Config) -> Config {
        let mut c = for_mode(shared, self.flow_mode(), shared.transport.credits);
        c.transport.retransmit = self.retransmit();
        let e = self.preset().settings();
        match e.credits {
            CreditRule::Bdp if e.flow != FlowMode::Lossless => {
                c.transport.lossy_credit_multiple = CreditMultiple::Factor(1.0);
            }
            CreditRule::Bdp | CreditRule::LossyMultiple => {}
            CreditRule::Fixed(n) => c.transport.credits = Some(n),
        }
        c
    }
}

/// The base configuration in `mode`; `credits` None = the mode's default
/// (BDP, or `lossy_credit_multiple` x BDP).
pub fn for_mode(base: &Config, mode: FlowMode, credits: Option<u16>) -> Config {
    let mut c = base.clone();
    c.transport.mode = mode;
    c.transport.credits = credits;
    if mode != FlowMode::Lossless {
        // `reset` is a lossless policy; validation rejects it in the others.
        c.transport.on_loss = LossPolicy::Retransmit;
    }
    c
}

/// `--modes` as presets, in the order given, without repeats.
pub fn parse_presets(list: &[String]) -> anyhow::Result<Vec<Preset>> {
    let mut v = Vec::new();
    for name in list.iter().filter(|n| !n.trim().is_empty()) {
        let p = Preset::parse(name).map_err(|e| anyhow::anyhow!("--modes: {e}"))?;
        if !v.contains(&p) {
            v.push(p);
        }
    }
    if v.is_empty() {
        bail!(
            "--modes needs at least one of {}",
            Preset::ALL.map(Preset::name).join(", ")
        );
    }
    Ok(v)
}

/// One `--mode-set MODE:KEY=VALUE`: the preset and the `KEY=VALUE`
/// override (split at the first colon, so values may hold colons).
pub fn parse_mode_set(item: &str) -> anyhow::Result<(Preset, String)> {
    let Some((mode, set)) = item.split_once(':').filter(|(m, _)| !m.contains('=')) else {
        bail!("--mode-set {item:?} is not MODE:KEY=VALUE (e.g. irn:transport.rto_low_us=200)");
    };
    let p = Preset::parse(mode).map_err(|e| anyhow::anyhow!("--mode-set {item:?}: {e}"))?;
    if !set.contains('=') {
        bail!("--mode-set {item:?}: {set:?} is not KEY=VALUE");
    }
    Ok((p, set.trim().to_string()))
}

/// Overrides for one flow mode only, applied after the preset.
#[derive(Args, Clone, Debug, Default)]
pub struct ModeOverrides {
    /// Override a config key in the lossless runs only (repeatable), e.g.
    /// --lossless-set transport.credits=64.
    #[arg(long = "lossless-set", value_name = "KEY=VALUE")]
    pub lossless_set: Vec<String>,
    /// Override a config key in the lossy runs only (repeatable).
    #[arg(long = "lossy-set", value_name = "KEY=VALUE")]
    pub lossy_set: Vec<String>,
    /// Override a config key in one mode's runs only (repeatable), e.g.
    /// --mode-set pause:transport.pause_time_us=100.
    #[arg(long = "mode-set", value_name = "MODE:KEY=VALUE")]
    pub mode_set: Vec<String>,
}

impl ModeOverrides {
    /// The overrides of `p`'s runs, in order: `--lossless-set` or
    /// `--lossy-set` (for those two presets), then its `--mode-set`s.
    pub fn for_preset(&self, p: Preset) -> anyhow::Result<Vec<String>> {
        let mut v = match p {
            Preset::Lossless => self.lossless_set.clone(),
            Preset::Lossy => self.lossy_set.clone(),
            _ => Vec::new(),
        };
        for item in &self.mode_set {
            let (q, set) = parse_mode_set(item)?;
            if q == p {
                v.push(set);
            }
        }
        Ok(v)
    }

    /// Every `--mode-set` parses and names a mode that runs.
    pub fn check(&self, running: &[Preset]) -> anyhow::Result<()> {
        for item in &self.mode_set {
            let (p, _) = parse_mode_set(item)?;
            if !running.contains(&p) {
                bail!(
                    "--mode-set {item:?}: mode {} is not in --modes ({})",
                    p.name(),
                    running
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(",")
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apps::config::ValidationEnv;

    const ENV: ValidationEnv = ValidationEnv { online_cores: 2 };

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn presets_derive_mode_retransmit_and_credits() {
        let shared = Config::default();
        // BDP 9 packets (10 Gb/s x 10 us at 1500 B), multiple 4.
        let want = [
            (Preset::Lossless, FlowMode::Lossless, Retransmit::GoBackN, 9),
            (Preset::Pause, FlowMode::Pause, Retransmit::GoBackN, 36),
            (Preset::Lossy, FlowMode::Lossy, Retransmit::GoBackN, 36),
            (Preset::Irn, FlowMode::Lossy, Retransmit::Selective, 9),
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
        assert_eq!(Preset::Pause.apply(&m8).resolved().unwrap().credits(), 72);
        assert_eq!(Preset::Lossy.apply(&m8).resolved().unwrap().credits(), 72);
        assert_eq!(Preset::Irn.apply(&m8).resolved().unwrap().credits(), 9);
        // Nothing reserved except lossless: a ring too small for lossless.
        let mut small = shared.clone();
        small.link.rx_desc = 64;
        small.workload.sessions_per_thread = 8;
        assert!(Preset::Lossless.apply(&small).validate(&ENV).is_err());
        for p in [Preset::Pause, Preset::Lossy, Preset::Irn] {
            p.apply(&small).validate(&ENV).unwrap();
        }
        // A lossless-only policy does not leak into the other presets.
        let mut reset = shared;
        reset.transport.on_loss = LossPolicy::ResetSession;
        assert_eq!(
            Preset::Lossless.apply(&reset).transport.on_loss,
            LossPolicy::ResetSession
        );
        Preset::Pause.apply(&reset).validate(&ENV).unwrap();
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

    /// The endpoints preset `p`'s runs build on the shared config `sets`.
    fn endpoints(p: Preset, sets: &[&str]) -> Vec<engine::proto::EndpointConfig> {
        endpoints_of(&p.apply(&crate::testutil::with(sets).unwrap()))
    }

    /// Golden: what each compare preset's endpoints were before the
    /// presets came from `engine::regimes` (commit "compare: golden test of
    /// the presets' endpoints", against the code of `e49c486`): the
    /// fields a preset decides, literally, and every field equal to the
    /// preset as it was written then (`old_apply`, frozen here).
    #[test]
    fn presets_build_the_golden_endpoints() {
        use engine::proto::{CcKind, FlowMode, LossPolicy, Retransmit, SackRule};
        use engine::time::Duration;
        fn old_apply(p: Preset, shared: &Config) -> Config {
            let mut c = shared.clone();
            c.transport.mode = match p {
                Preset::Lossless => FlowMode::Lossless,
                Preset::Pause => FlowMode::Pause,
                Preset::Lossy | Preset::Irn => FlowMode::Lossy,
            };
            if c.transport.mode != FlowMode::Lossless {
                c.transport.on_loss = LossPolicy::Retransmit;
            }
            c.transport.retransmit = match p {
                Preset::Irn => Retransmit::Selective,
                _ => Retransmit::GoBackN,
            };
            if p == Preset::Irn {
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
            for p in Preset::ALL {
                assert_eq!(p.apply(&shared), old_apply(p, &shared), "{p:?} {s:?}");
                assert_eq!(
                    endpoints_of(&p.apply(&shared)),
                    endpoints_of(&old_apply(p, &shared)),
                    "{p:?} {s:?}"
                );
            }
        }
        // The fields a preset decides, on the default config (BDP 9).
        let want: [(Preset, &str, Retransmit, u16); 4] = [
            (Preset::Lossless, "lossless", Retransmit::GoBackN, 9),
            (Preset::Pause, "pause", Retransmit::GoBackN, 36),
            (Preset::Lossy, "lossy", Retransmit::GoBackN, 36),
            (Preset::Irn, "lossy", Retransmit::Selective, 9),
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
        for e in endpoints(Preset::Lossy, &["transport.cc=dcqcn", "transport.nak=true"]) {
            assert_eq!((e.cc, e.nak, e.session_credits), (CcKind::Dcqcn, true, 36));
        }
        for e in endpoints(Preset::Irn, &["transport.lossy_credit_multiple=8"]) {
            assert_eq!(e.session_credits, 9);
        }
    }

    #[test]
    fn the_modes_are_the_tables_real_link_presets() {
        let table: Vec<Regime> = Regime::ALL
            .into_iter()
            .filter(|p| p.on_real_links())
            .collect();
        assert_eq!(table, Preset::ALL.map(Preset::preset).to_vec());
    }

    #[test]
    fn all_lists_the_presets_in_declaration_order() {
        // `Bases` indexes its configurations by `preset as usize`.
        for (i, p) in Preset::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i, "{p:?}");
        }
    }

    #[test]
    fn mode_lists() {
        let v = parse_presets(&names(&["lossless", " irn", "pause", "irn"])).unwrap();
        assert_eq!(v, vec![Preset::Lossless, Preset::Irn, Preset::Pause]);
        let e = parse_presets(&names(&["lossless", "rdma"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"rdma\"") && e.contains("lossless, pause, lossy, irn"),
            "{e}"
        );
        assert!(parse_presets(&names(&[""])).is_err());
    }

    #[test]
    fn mode_set_parsing() {
        assert_eq!(
            parse_mode_set("irn:transport.rto_low_us=200").unwrap(),
            (Preset::Irn, "transport.rto_low_us=200".to_string())
        );
        // Only the first colon splits: values may hold colons.
        assert_eq!(
            parse_mode_set("pause:link.server_mac=02:00:00:00:00:02").unwrap(),
            (
                Preset::Pause,
                "link.server_mac=02:00:00:00:00:02".to_string()
            )
        );
        for bad in [
            "transport.rto_us=1",
            "irn",
            "irn:transport.rto_us",
            "tcp:a.b=1",
        ] {
            assert!(parse_mode_set(bad).is_err(), "{bad}");
        }
        let e = parse_mode_set("tcp:a.b=1").unwrap_err().to_string();
        assert!(e.contains("lossless, pause, lossy, irn"), "{e}");

        let o = ModeOverrides {
            lossless_set: names(&["transport.rto_us=100000"]),
            lossy_set: names(&["transport.lossy_credit_multiple=16"]),
            mode_set: names(&[
                "lossless:transport.scan_us=100",
                "irn:transport.rto_low_us=200",
                "pause:transport.pause_time_us=50",
            ]),
        };
        assert_eq!(
            o.for_preset(Preset::Lossless).unwrap(),
            names(&["transport.rto_us=100000", "transport.scan_us=100"])
        );
        assert_eq!(
            o.for_preset(Preset::Lossy).unwrap(),
            names(&["transport.lossy_credit_multiple=16"])
        );
        assert_eq!(
            o.for_preset(Preset::Irn).unwrap(),
            names(&["transport.rto_low_us=200"])
        );
        o.check(&Preset::ALL).unwrap();
        let e = o
            .check(&[Preset::Lossless, Preset::Irn])
            .unwrap_err()
            .to_string();
        assert!(e.contains("pause is not in --modes (lossless,irn)"), "{e}");
    }
}
