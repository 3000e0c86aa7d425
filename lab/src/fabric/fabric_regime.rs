//! The fabric's regimes: what each sets on an endpoint, and the fabric side
//! each adds (PFC, link credits, spraying, ECN marking). Two are entries of
//! the engine's table of real-link regimes (`engine::regimes`): `lossy` and
//! `irn` are the same endpoints here and under `rpc-bench compare
//! --regimes`. The other seven run only here and are this module's own
//! table, stated with the engine's regime types (each relative to the
//! real-link regime it departs from, every field pinned by a test):
//!
//! | regime      | flow     | credits        | retransmit            | cc     | NAK | timers           |
//! |-------------|----------|----------------|-----------------------|--------|-----|------------------|
//! | `ib`        | lossy    | lossy multiple | go-back-N             | none   | yes | -                |
//! | `roce`      | lossy    | lossy multiple | go-back-N             | DCQCN  | yes | -                |
//! | `roce-nocc` | lossy    | lossy multiple | go-back-N             | none   | yes | -                |
//! | `srd`       | lossy    | BDP            | selective, reordering | Timely | no  | RTO 320, low 100 |
//! | `erpc`      | lossless | 32             | go-back-N             | Timely | no  | -                |
//! | `uec`       | lossy    | 1.5 BDP        | selective, NACK only  | NSCC   | no  | RTO 320, low 100 |
//! | `uec-rccc`  | as `uec`, and the receiver's credits paced (`transport.rccc`) |||||
//! | `uec-rcv`   | as `uec-rccc`, but no sender control (cc none): RCCC alone        |||||
//!
//! `uec`'s fabric side is REPS path selection, trimming above one BDP of queue and ECN marking
//! between 0.2 and 0.8 BDP (uet-htsim's defaults).
//!
//! A fabric-only regime's name never names a regime of the engine's table.
//! See `docs/fabric.md` for what each keeps of the real system and what it
//! simplifies.

use super::config::{FabricConfig, Pfc, Red};
use super::paths::PathSelection;
use engine::config::{Origins, TransportConfig, ADMISSION_KEYS, LINK_KEYS, REGIME_KEYS};
use engine::proto::{bdp_credits, CcKind, FlowMode, Retransmit, SackRule};
use engine::regimes::{CreditRule, Regime, RegimeSettings};
use engine::time::Duration;
use serde::Deserialize;

/// A regime the fabric runs: two of the engine's table ([`Regime`]) and
/// five of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FabricRegime {
    /// InfiniBand: link-level credits hop by hop, go-back-N with NAKs, no
    /// rate control.
    Ib,
    /// RoCEv2: PFC with headroom, ECN marking, DCQCN, go-back-N with NAKs.
    Roce,
    /// RoCEv2 without congestion control: PFC and go-back-N with NAKs only,
    /// to tell PFC's own head-of-line blocking from DCQCN's reaction.
    RoceNocc,
    /// IRN: no PFC, at most a BDP in flight per session, selective
    /// retransmission at the first NACK, IRN's two timeouts.
    Irn,
    /// AWS SRD: no PFC, per-packet spraying over the uplinks, selective
    /// retransmission tolerant of reordering, delay-based rate control
    /// (Timely here), a BDP cap.
    Srd,
    /// eRPC: no PFC, 32 session credits backed by receive-ring
    /// reservations, go-back-N with a 5 ms timeout and no NAK, Timely.
    Erpc,
    /// No PFC, a large window (4 BDP), go-back-N with NAKs (a RoCE NIC on
    /// a lossy fabric), no rate control.
    Lossy,
    /// Ultra Ethernet 1.0's transport with its sender-based congestion
    /// control: per-packet spraying with path feedback, packet trimming,
    /// selective retransmission on Sacks, NSCC; a BDP of credits is each
    /// sender's window.
    Uec,
    /// `Uec` plus RCCC, UEC's receiver credit control: each receiver
    /// returns credits paced at its link rate (`engine::proto`'s `rccc`).
    UecRccc,
    /// RCCC alone: `UecRccc` without NSCC, as uet-htsim's
    /// `-receiver_cc_only` runs (`main_uec.cpp` calls `initRccc` and not
    /// `initNscc`), and without ECN marking on the last hop, which that
    /// mode turns off (`set_ecn_parameters(.., !receiver_driven, ..)`).
    UecRcv,
}

/// Where a regime is stated.
enum Entry {
    /// An entry of the engine's table, run here as on real links.
    Engine(Regime),
    /// The fabric's own: its name and what it sets on an endpoint (the
    /// `FabricRegime` variant's docs say what it is).
    Own(&'static str, RegimeSettings),
}

impl FabricRegime {
    /// Every regime, in the order the docs list them.
    pub const ALL: [FabricRegime; 10] = [
        FabricRegime::Ib,
        FabricRegime::Roce,
        FabricRegime::RoceNocc,
        FabricRegime::Irn,
        FabricRegime::Srd,
        FabricRegime::Erpc,
        FabricRegime::Lossy,
        FabricRegime::Uec,
        FabricRegime::UecRccc,
        FabricRegime::UecRcv,
    ];

    /// The regime's entry: the engine's regime for `lossy` and `irn`, the
    /// fabric's own for the others (the module's table).
    fn entry(self) -> Entry {
        // RoCE and InfiniBand NICs: go-back-N with a NAK at the first gap
        // and a large window, as `lossy`; what sets them apart is the
        // fabric's (link credits, PFC) and RoCE's DCQCN.
        let lossy = Regime::Lossy.settings();
        let roce = RegimeSettings {
            cc: CcKind::Dcqcn,
            ..lossy
        };
        // IRN's selective repair and timeouts, but sprayed paths reorder:
        // a packet is lost after three later answers and a reordering
        // window, not at the first NACK; and Timely.
        let srd = RegimeSettings {
            sack_rule: Some(SackRule::Reordering),
            cc: CcKind::Timely,
            ..Regime::Irn.settings()
        };
        // eRPC: lossless credits, but 32 of them, and Timely.
        let erpc = RegimeSettings {
            credits: CreditRule::Fixed(32),
            cc: CcKind::Timely,
            ..Regime::Lossless.settings()
        };
        // UEC 1.0: sprayed packets reorder freely and a trimming fabric
        // names its losses, so a hole is lost only when a trim's NACK or a
        // timeout says so, never from SACKs (uet-htsim's default: its
        // out-of-order heuristic SLEEK is off). 1.5 BDP of credits is the
        // window (uet-htsim's `UecSrc::initNscc` starts at cwnd = `_maxwnd`
        // = 1.5 BDP).
        let uec = RegimeSettings {
            sack_rule: Some(SackRule::NackOnly),
            credits: CreditRule::BdpAndHalf,
            // NSCC, UEC's sender-side control (delay and ECN, a window
            // applied as a rate: engine/src/proto/cc/nscc.rs).
            cc: CcKind::Nscc,
            ..Regime::Irn.settings()
        };
        match self {
            FabricRegime::Irn => Entry::Engine(Regime::Irn),
            FabricRegime::Lossy => Entry::Engine(Regime::Lossy),
            FabricRegime::Ib => Entry::Own("ib", lossy),
            FabricRegime::Roce => Entry::Own("roce", roce),
            FabricRegime::RoceNocc => Entry::Own("roce-nocc", lossy),
            FabricRegime::Srd => Entry::Own("srd", srd),
            FabricRegime::Erpc => Entry::Own("erpc", erpc),
            FabricRegime::Uec => Entry::Own("uec", uec),
            // The endpoint settings of `uec`; RCCC is set in `transport`.
            // Simplified: uet-htsim's NSCC under RCCC leaves last-hop
            // congestion to the receiver (`UecSrc::updateCwndOnNack_NSCC`
            // cuts only if `!_receiver_based_cc || !last_hop`); ours cannot
            // tell the last hop and reacts to every signal.
            FabricRegime::UecRccc => Entry::Own("uec-rccc", uec),
            // RCCC alone: the receiver's paced credits are the only
            // control; the sender keeps its 1.5 BDP window (`initRccc`'s
            // `_maxwnd`) and no rate of its own.
            FabricRegime::UecRcv => Entry::Own(
                "uec-rcv",
                RegimeSettings {
                    cc: CcKind::None,
                    ..uec
                },
            ),
        }
    }

    /// The engine's regime this one is, for the two that real links run
    /// too; `None` for the fabric's own.
    pub fn shared(self) -> Option<Regime> {
        match self.entry() {
            Entry::Engine(p) => Some(p),
            Entry::Own(..) => None,
        }
    }

    /// The regime's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self.entry() {
            Entry::Engine(p) => p.name(),
            Entry::Own(name, _) => name,
        }
    }

    /// What the regime sets on an endpoint.
    pub fn settings(self) -> RegimeSettings {
        match self.entry() {
            Entry::Engine(r) => r.settings(),
            Entry::Own(_, settings) => settings,
        }
    }

    /// The regime called `s`.
    pub fn from_name(s: &str) -> Result<FabricRegime, String> {
        FabricRegime::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = FabricRegime::ALL.iter().map(|r| r.name()).collect();
                // The engine's regimes the fabric does not run.
                let real = match Regime::from_name(s) {
                    Some(_) => " runs on real links only (rpc-bench compare --regimes)",
                    None => "",
                };
                format!(
                    "unknown regime `{s}`{real} (expected one of {})",
                    names.join(", ")
                )
            })
    }

    /// Sets the fabric side of the regime on `f` (PFC, credits, ECN,
    /// spraying), leaving rates, delays and buffers as they are.
    pub fn apply_fabric(self, f: &mut FabricConfig) {
        f.pfc = None;
        f.link_credits = None;
        f.spray = false;
        // Every regime's switches mark (every frame is ECN-capable): the
        // counts show what congestion the senders saw, even where no sender
        // reacts to the marks. The thresholds are DCQCN's for the link
        // speed, so the counts compare across regimes.
        f.ecn = Some(Red::for_link(f.host_link_bps));
        match self {
            FabricRegime::Ib => f.link_credits = Some(f.buffer_per_port / 2),
            FabricRegime::Roce | FabricRegime::RoceNocc => {
                let xoff = (f.buffer_per_port / 4).max(2 * f.max_frame());
                f.pfc = Some(Pfc {
                    xoff,
                    xon: xoff.saturating_sub(2 * f.max_frame()),
                    headroom: f.pfc_headroom,
                });
            }
            FabricRegime::Srd => f.spray = true,
            FabricRegime::Uec | FabricRegime::UecRccc | FabricRegime::UecRcv => {
                // REPS (entropy per packet, recycled when it comes back
                // unmarked), unless the user chose a path selection. The
                // queue sizes that trimming and marking need depend on the
                // round trip: `apply_queues`. UEC's 4 KiB frames are the
                // fabric's `--mtu` for every regime of a run, so that the
                // regimes compare at one frame size.
                f.path_selection.get_or_insert(PathSelection::Reps);
            }
            FabricRegime::Irn | FabricRegime::Erpc | FabricRegime::Lossy => {}
        }
    }

    /// The queue settings of the regime that depend on the fabric's
    /// unloaded round trip `rtt`: for `uec` and `uec-rccc`, uet-htsim's
    /// (`main_uec.cpp`): a data queue of one BDP that trims above it
    /// (`DEFAULT_TRIMMING_QUEUESIZE_FACTOR` = 1; a `--trim-kb` given
    /// wins), and ECN marking from 0.2 to 0.8 BDP, with a probability
    /// rising to 1 (`ecn_low`, `ecn_high`), which REPS and NSCC read; a
    /// degraded link's thresholds scaled with its rate
    /// (`FatTreeTopology::alloc_queue`, `reduced_speed`); for `uec-rcv`
    /// no marking on the last hop (receiver-driven mode).
    /// Other regimes are left as they are.
    pub fn apply_queues(self, f: &mut FabricConfig, rtt: Duration) {
        if !matches!(
            self,
            FabricRegime::Uec | FabricRegime::UecRccc | FabricRegime::UecRcv
        ) {
            return;
        }
        let bdp = (u128::from(f.host_link_bps) * u128::from(rtt.as_nanos()) / 8_000_000_000) as u64;
        let bdp = bdp.clamp(2 * f.max_frame(), f.buffer_per_port);
        f.trim.get_or_insert(bdp);
        f.ecn = Some(Red {
            kmin: bdp / 5,
            kmax: bdp * 4 / 5,
            pmax: 1.0,
        });
        f.scale_degraded_queues = true;
        f.ecn_last_hop = self != FabricRegime::UecRcv;
    }

    /// Whether the regime's endpoints NAK a gap (the table's `nak`: go-back-N
    /// on a lossy fabric, as RoCE and InfiniBand NICs do; eRPC has no NAK,
    /// and IRN and SRD answer gaps with Sacks).
    pub fn naks(self) -> bool {
        self.settings().nak
    }

    /// How the regime's endpoints repair loss.
    pub fn retransmit(self) -> Retransmit {
        self.settings().retransmit
    }

    /// The endpoints' `[transport]` under this regime, for a fabric whose
    /// longest unloaded round trip is `rtt` at `link_bps` with frames of
    /// `mtu`: the regime's every column, timers on the fabric's 5 us grain,
    /// then the user's keys (`user`, the ones `given` lists) over it, but
    /// for the keys the regime or the fabric's links set ([`not_applied`])
    /// and NAKs in a regime that repairs without them.
    pub fn transport(
        self,
        link_bps: u64,
        rtt: Duration,
        mtu: usize,
        user: &TransportConfig,
        given: &Origins,
    ) -> Result<TransportConfig, String> {
        let p = self.settings();
        let mut t = TransportConfig {
            // Timers on a 5 us grain: IRN's 100 us timeout must not round
            // up to the run loop's 500 us.
            scan_us: 5,
            ..TransportConfig::default()
        };
        p.apply_to(&mut t, bdp_credits(link_bps, rtt, mtu));
        // No fabric regime pauses at the host (PFC is the fabric's).
        if t.mode == FlowMode::Pause {
            t.mode = FlowMode::Lossy;
        }
        let mut t = overlay(&t, user, given)?;
        // irn and srd repair with Sacks, erpc is lossless: theirs stays.
        if !p.nak {
            t.nak = false;
        }
        // uec-rccc is uec with the receiver's credit control: it is what
        // the regime is, so no user key turns it off (others may turn it
        // on with `--set transport.rccc=true`).
        if matches!(self, FabricRegime::UecRccc | FabricRegime::UecRcv) {
            t.rccc = true;
        }
        Ok(t)
    }
}

/// Why the fabric does not apply `key` of the user's `[transport]`, if it
/// does not: the regime sets it, the fabric's links do, or it is a
/// server's defence the fabric's hosts (all genuine) leave open.
pub fn not_applied(key: &str) -> Option<&'static str> {
    if REGIME_KEYS.contains(&key) {
        Some("each regime sets it")
    } else if LINK_KEYS.contains(&key) {
        Some("the fabric's links set it (--link-gbps, --link-delay-us)")
    } else if ADMISSION_KEYS.contains(&key) {
        Some("every host of the fabric is genuine: no admission limits")
    } else {
        None
    }
}

/// `base` with the keys `given` lists taken from `user`, through the
/// config's own serde form, so no key is mapped by hand here.
fn overlay(
    base: &TransportConfig,
    user: &TransportConfig,
    given: &Origins,
) -> Result<TransportConfig, String> {
    let table = |t: &TransportConfig| match toml::Value::try_from(t) {
        Ok(toml::Value::Table(t)) => Ok(t),
        other => Err(format!("[transport] is not a table: {other:?}")),
    };
    let (mut out, from) = (table(base)?, table(user)?);
    let keys = given.keys().filter(|k| not_applied(k).is_none());
    for key in keys.filter_map(|k| k.strip_prefix("transport.")) {
        match from.get(key) {
            Some(v) => out.insert(key.to_string(), v.clone()),
            None => out.remove(key),
        };
    }
    TransportConfig::deserialize(toml::Value::Table(out)).map_err(|e| format!("[transport]: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_listed() {
        for r in FabricRegime::ALL {
            assert_eq!(FabricRegime::from_name(r.name()), Ok(r));
        }
        let e = FabricRegime::from_name("pfc").unwrap_err();
        assert!(
            e.contains("ib, roce, roce-nocc, irn, srd, erpc, lossy, uec, uec-rccc, uec-rcv"),
            "{e}"
        );
    }

    #[test]
    fn lossy_and_irn_are_the_engines_regimes_and_no_other_name_is() {
        let shared: Vec<Regime> = FabricRegime::ALL
            .iter()
            .filter_map(|r| r.shared())
            .collect();
        assert_eq!(shared, [Regime::Irn, Regime::Lossy]);
        for r in FabricRegime::ALL {
            match r.shared() {
                Some(e) => assert_eq!((r.name(), r.settings()), (e.name(), e.settings())),
                None => assert_eq!(Regime::from_name(r.name()), None, "{r:?}"),
            }
        }
        let e = FabricRegime::from_name("pause").unwrap_err();
        assert!(e.contains("real links only"), "{e}");
        assert!(!FabricRegime::from_name("pfc")
            .unwrap_err()
            .contains("real links"));
    }

    /// Golden: the fabric-only regimes' endpoint settings, field by field:
    /// the first five as they were when they sat in the engine's table
    /// (fb62c17), then `uec` and `uec-rccc`.
    #[test]
    fn the_fabric_only_settings_are_as_they_were() {
        use CcKind::{Dcqcn, None as NoCc, Nscc, Timely};
        use CreditRule::{Bdp, BdpAndHalf as Half, Fixed, LossyMultiple as Multiple};
        use FabricRegime as R;
        use FlowMode::{Lossless, Lossy};
        use Retransmit::{GoBackN, Selective};
        let irn = Some((Duration::from_micros(320), Duration::from_micros(100)));
        let reo = Some(SackRule::Reordering);
        let nack = Some(SackRule::NackOnly);
        #[rustfmt::skip]
        let want = [
            (R::Ib,       Lossy,    Multiple,  GoBackN,   None, NoCc,   true,  None),
            (R::Roce,     Lossy,    Multiple,  GoBackN,   None, Dcqcn,  true,  None),
            (R::RoceNocc, Lossy,    Multiple,  GoBackN,   None, NoCc,   true,  None),
            (R::Srd,      Lossy,    Bdp,       Selective, reo,  Timely, false, irn),
            (R::Erpc,     Lossless, Fixed(32), GoBackN,   None, Timely, false, None),
            (R::Uec,      Lossy,    Half,      Selective, nack, Nscc,   false, irn),
            (R::UecRccc,  Lossy,    Half,      Selective, nack, Nscc,   false, irn),
            (R::UecRcv,   Lossy,    Half,      Selective, nack, NoCc,   false, irn),
        ];
        for (r, flow, credits, retransmit, sack_rule, cc, nak, timers) in want {
            let p = RegimeSettings {
                flow,
                credits,
                retransmit,
                sack_rule,
                cc,
                nak,
                timers,
            };
            assert_eq!(r.settings(), p, "{r:?}");
        }
    }

    #[test]
    fn regimes_set_their_mechanisms() {
        let mut f = FabricConfig::default();
        FabricRegime::Roce.apply_fabric(&mut f);
        assert_eq!(f.pfc.unwrap().headroom, None, "each link's own bound");
        assert_eq!(
            f.pfc_headroom_at(f.host_link_bps),
            f.pfc_headroom_bound(f.host_link_bps)
        );
        f.validate().unwrap();
        FabricRegime::Ib.apply_fabric(&mut f);
        assert!(f.pfc.is_none() && f.link_credits.is_some());
        f.validate().unwrap();
        FabricRegime::Srd.apply_fabric(&mut f);
        assert!(f.spray && f.link_credits.is_none());
        let (user, none) = (TransportConfig::default(), Origins::default());
        let at = |r: FabricRegime| {
            r.transport(
                100_000_000_000,
                Duration::from_micros(10),
                1500,
                &user,
                &none,
            )
        };
        let irn = at(FabricRegime::Irn).unwrap();
        assert_eq!(irn.retransmit, Retransmit::Selective);
        // 100 Gb/s x 10 us = 125 kB = 84 frames of 1500.
        assert_eq!(irn.credits, Some(84));
        irn.validate().unwrap();
        let erpc = at(FabricRegime::Erpc).unwrap();
        assert_eq!(erpc.mode, FlowMode::Lossless);
        assert_eq!(erpc.credits, Some(32));
        FabricRegime::Uec.apply_fabric(&mut f);
        assert!(!f.spray && f.pfc.is_none() && f.link_credits.is_none());
        assert_eq!(f.path_selection, Some(PathSelection::Reps));
        // One BDP of queue, trimmed above it; ECN from 0.2 to 0.8 of it
        // (100 Gb/s x 10 us = 125,000 bytes).
        FabricRegime::Uec.apply_queues(&mut f, Duration::from_micros(10));
        assert_eq!(f.trim, Some(125_000));
        let red = f.ecn.unwrap();
        assert_eq!((red.kmin, red.kmax), (25_000, 100_000));
        // A degraded link's queue scales with its rate; the last hop marks.
        assert!(f.scale_degraded_queues && f.ecn_last_hop);
        let mut rcv = FabricConfig::default();
        FabricRegime::UecRcv.apply_fabric(&mut rcv);
        FabricRegime::UecRcv.apply_queues(&mut rcv, Duration::from_micros(10));
        assert_eq!(rcv.trim, Some(125_000));
        assert!(rcv.scale_degraded_queues && !rcv.ecn_last_hop);
        // A threshold the user gave wins; other regimes keep theirs.
        let mut g = FabricConfig {
            trim: Some(64 * 1024),
            ..FabricConfig::default()
        };
        FabricRegime::UecRccc.apply_fabric(&mut g);
        FabricRegime::UecRccc.apply_queues(&mut g, Duration::from_micros(10));
        assert_eq!(g.trim, Some(64 * 1024));
        let mut h = FabricConfig::default();
        FabricRegime::Irn.apply_queues(&mut h, Duration::from_micros(10));
        assert_eq!(h.trim, None);
        assert!(!h.scale_degraded_queues && h.ecn_last_hop);
        let (uec, rccc) = (
            at(FabricRegime::Uec).unwrap(),
            at(FabricRegime::UecRccc).unwrap(),
        );
        assert_eq!((uec.rccc, rccc.rccc), (false, true));
        assert_eq!(
            TransportConfig {
                rccc: false,
                ..rccc
            },
            uec
        );
        // The user's key cannot turn uec-rccc's RCCC off.
        let off: TransportConfig = toml::from_str("rccc = false").unwrap();
        let mut given = Origins::default();
        given.set("transport.rccc", engine::config::Source::File);
        let rtt = Duration::from_micros(10);
        let t = FabricRegime::UecRccc.transport(100_000_000_000, rtt, 1500, &off, &given);
        assert!(t.unwrap().rccc);
    }

    #[test]
    fn the_users_keys_go_over_the_regimes_but_not_what_the_regime_is() {
        let toml = "credits = 9\nrto_us = 7000\nmode = \"lossless\"\nnak = true\n";
        let user: TransportConfig = toml::from_str(toml).unwrap();
        let mut given = Origins::default();
        for k in ["credits", "rto_us", "mode", "nak"] {
            given.set(&format!("transport.{k}"), engine::config::Source::File);
        }
        let rtt = Duration::from_micros(10);
        let irn = FabricRegime::Irn
            .transport(100_000_000_000, rtt, 1500, &user, &given)
            .unwrap();
        assert_eq!((irn.credits, irn.rto().as_nanos()), (Some(9), 7_000_000));
        // IRN's short timeout stays; its flow mode and Sacks too.
        assert_eq!(irn.rto_low().as_nanos(), 100_000);
        assert_eq!((irn.mode, irn.nak), (FlowMode::Lossy, false));
        let ib = FabricRegime::Ib
            .transport(100_000_000_000, rtt, 1500, &user, &given)
            .unwrap();
        assert!(ib.nak);
        assert_eq!(not_applied("transport.mode"), Some("each regime sets it"));
        assert_eq!(not_applied("transport.rto_us"), None);
    }
}
