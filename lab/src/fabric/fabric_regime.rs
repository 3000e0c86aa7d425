//! The regime presets, named after the systems the seeds weigh (see
//! `docs/fabric.md` for what each keeps of the real system and what it
//! simplifies): how the fabric is made lossless, if at all, and how the
//! engine's endpoints send and recover on it.

use super::config::{FabricConfig, Pfc, Red};
use engine::proto::{
    bdp_credits, CcKind, DcqcnParams, EndpointConfig, FlowMode, LossPolicy, Retransmit, SackRule,
};
use engine::time::Duration;

/// A named regime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Regime {
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
}

impl Regime {
    /// Every preset, in the order the docs list them.
    pub const ALL: [Regime; 7] = [
        Regime::Ib,
        Regime::Roce,
        Regime::RoceNocc,
        Regime::Irn,
        Regime::Srd,
        Regime::Erpc,
        Regime::Lossy,
    ];

    /// The preset's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Regime::Ib => "ib",
            Regime::Roce => "roce",
            Regime::RoceNocc => "roce-nocc",
            Regime::Irn => "irn",
            Regime::Srd => "srd",
            Regime::Erpc => "erpc",
            Regime::Lossy => "lossy",
        }
    }

    /// The preset called `s`.
    pub fn from_name(s: &str) -> Result<Regime, String> {
        Regime::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Regime::ALL.iter().map(|r| r.name()).collect();
                format!(
                    "unknown regime `{s}` (expected one of {})",
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
            Regime::Ib => f.link_credits = Some(f.buffer_per_port / 2),
            Regime::Roce | Regime::RoceNocc => {
                let xoff = (f.buffer_per_port / 4).max(2 * f.max_frame());
                f.pfc = Some(Pfc {
                    xoff,
                    xon: xoff.saturating_sub(2 * f.max_frame()),
                    headroom: f.pfc_headroom,
                });
            }
            Regime::Srd => f.spray = true,
            Regime::Irn | Regime::Erpc | Regime::Lossy => {}
        }
    }

    /// Whether the regime's endpoints NAK a gap (go-back-N on a lossy
    /// fabric, as RoCE and InfiniBand NICs do; eRPC has no NAK, and IRN and
    /// SRD answer gaps with Sacks).
    pub fn naks(self) -> bool {
        self != Regime::Erpc && self.retransmit() == Retransmit::GoBackN
    }

    /// How the regime's endpoints repair loss.
    pub fn retransmit(self) -> Retransmit {
        match self {
            Regime::Irn | Regime::Srd => Retransmit::Selective,
            _ => Retransmit::GoBackN,
        }
    }

    /// Sets the endpoint side of the regime on `ep`, for a fabric whose
    /// longest unloaded round trip is `rtt` at `link_bps`.
    pub fn apply_endpoint(self, ep: &mut EndpointConfig, link_bps: u64, rtt: Duration) {
        let bdp = bdp_credits(link_bps, rtt, ep.mtu);
        ep.link_bps = link_bps;
        ep.base_rtt = rtt;
        ep.dcqcn = DcqcnParams::for_link(link_bps);
        ep.cc = CcKind::None;
        ep.retransmit = Retransmit::GoBackN;
        ep.mode = FlowMode::Lossy;
        // RoCE and InfiniBand NICs NAK the first gap; eRPC has no NAK.
        ep.nak = self.naks();
        // Timers on a 5 us grain: IRN's 100 us timeout must not round up to
        // the run loop's 500 us.
        ep.scan_interval = Duration::from_micros(5);
        ep.rto = Duration::from_millis(5);
        let large = bdp.saturating_mul(4);
        match self {
            Regime::Ib | Regime::RoceNocc => ep.session_credits = large,
            Regime::Roce => {
                ep.session_credits = large;
                ep.cc = CcKind::Dcqcn;
            }
            Regime::Irn | Regime::Srd => {
                ep.session_credits = bdp;
                ep.retransmit = Retransmit::Selective;
                // IRN resends at the first NACK; sprayed paths reorder, so
                // SRD waits for three later answers and a reordering window.
                ep.sack_rule = match self {
                    Regime::Srd => SackRule::Reordering,
                    _ => SackRule::FirstNack,
                };
                // IRN's RTO_high and RTO_low (SIGCOMM'18, section 4).
                ep.rto = Duration::from_micros(320);
                ep.rto_low = Duration::from_micros(100);
                if self == Regime::Srd {
                    ep.cc = CcKind::Timely;
                }
            }
            Regime::Erpc => {
                ep.session_credits = 32;
                ep.mode = FlowMode::Lossless {
                    on_loss: LossPolicy::Retransmit,
                };
                ep.cc = CcKind::Timely;
            }
            Regime::Lossy => ep.session_credits = large,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_listed() {
        for r in Regime::ALL {
            assert_eq!(Regime::from_name(r.name()), Ok(r));
        }
        let e = Regime::from_name("pfc").unwrap_err();
        assert!(
            e.contains("ib, roce, roce-nocc, irn, srd, erpc, lossy"),
            "{e}"
        );
    }

    #[test]
    fn presets_set_their_mechanisms() {
        let mut f = FabricConfig::default();
        Regime::Roce.apply_fabric(&mut f);
        assert_eq!(f.pfc.unwrap().headroom, None, "each link's own bound");
        assert_eq!(
            f.pfc_headroom_at(f.host_link_bps),
            f.pfc_headroom_bound(f.host_link_bps)
        );
        f.validate().unwrap();
        Regime::Ib.apply_fabric(&mut f);
        assert!(f.pfc.is_none() && f.link_credits.is_some());
        f.validate().unwrap();
        Regime::Srd.apply_fabric(&mut f);
        assert!(f.spray && f.link_credits.is_none());
        let mut ep = EndpointConfig::default();
        Regime::Irn.apply_endpoint(&mut ep, 100_000_000_000, Duration::from_micros(10));
        assert_eq!(ep.retransmit, Retransmit::Selective);
        // 100 Gb/s x 10 us = 125 kB = 84 frames of 1500.
        assert_eq!(ep.session_credits, 84);
        ep.validate().unwrap();
        Regime::Erpc.apply_endpoint(&mut ep, 100_000_000_000, Duration::from_micros(10));
        assert!(matches!(ep.mode, FlowMode::Lossless { .. }));
        assert_eq!(ep.session_credits, 32);
    }
}
