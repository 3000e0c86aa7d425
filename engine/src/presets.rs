//! The one table of transport presets: every named way the workspace runs
//! the transport (the compare modes of `rpc-bench compare`, `sweep` and
//! `incast` on real links, and the fabric lab's regimes), each name once,
//! with where it runs and what it sets on an endpoint. rpc-bench's `--modes`
//! (`bench/src/compare/modes.rs`) and the lab's `--regimes`
//! (`lab/src/fabric/fabric_regime.rs`, which adds the fabric side: PFC,
//! link credits, spraying) both read it; a name never means two things.
//!
//! | preset      | runs on    | flow     | credits        | retransmit           | cc     | NAK | timers (fabric)  |
//! |-------------|------------|----------|----------------|----------------------|--------|-----|------------------|
//! | `lossless`  | real links | lossless | BDP (reserved) | go-back-N            | -      | no  | -                |
//! | `pause`     | real links | pause    | lossy multiple | go-back-N            | -      | -   | -                |
//! | `lossy`     | both       | lossy    | lossy multiple | go-back-N            | none   | yes | -                |
//! | `irn`       | both       | lossy    | BDP            | selective, first NACK| none   | no  | RTO 320, low 100 |
//! | `ib`        | fabric     | lossy    | lossy multiple | go-back-N            | none   | yes | -                |
//! | `roce`      | fabric     | lossy    | lossy multiple | go-back-N            | DCQCN  | yes | -                |
//! | `roce-nocc` | fabric     | lossy    | lossy multiple | go-back-N            | none   | yes | -                |
//! | `srd`       | fabric     | lossy    | BDP            | selective, reordering| Timely | no  | RTO 320, low 100 |
//! | `erpc`      | fabric     | lossless | 32             | go-back-N            | Timely | no  | -                |
//!
//! "lossy multiple" is [`LOSSY_CREDIT_MULTIPLE`](crate::presets::LOSSY_CREDIT_MULTIPLE) x BDP in the fabric; on
//! real links `transport.lossy_credit_multiple` (default the same 4).
//! On real links a preset sets the flow mode, the retransmission and the
//! credit rule only: congestion control, NAKs and timers stay the run
//! config's (`transport.cc`, `transport.nak`, `transport.rto_us`,
//! `transport.rto_low_us`; a 100 us timeout needs the fabric's 5 us timer
//! grain, not a run loop's 500 us). The fabric applies every column.

use crate::proto::{CcKind, Retransmit, SackRule};
use crate::time::Duration;

/// Session credits as a multiple of the bandwidth-delay product where the
/// preset says "lossy multiple" (the run config's default
/// `transport.lossy_credit_multiple`, and the fabric's `4 x BDP`).
pub const LOSSY_CREDIT_MULTIPLE: u16 = 4;

/// One named preset. Declaration order is the table's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TransportPreset {
    /// `lossless`: credits = BDP backed by reserved ring entries.
    Lossless,
    /// `pause`: the receiver pauses its senders above XOFF.
    Pause,
    /// `lossy`: nothing reserved, a large window, go-back-N.
    Lossy,
    /// `irn`: a BDP in flight, selective retransmission.
    Irn,
    /// `ib`: InfiniBand's link-level credits (fabric side).
    Ib,
    /// `roce`: PFC, ECN and DCQCN.
    Roce,
    /// `roce-nocc`: PFC without congestion control.
    RoceNocc,
    /// `srd`: spraying, reordering-tolerant selective repair, Timely.
    Srd,
    /// `erpc`: eRPC's 32 reserved credits, no NAK, Timely.
    Erpc,
}

/// Where a preset runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsOn {
    /// Real links only (`rpc-bench compare/sweep/incast --modes`).
    RealLinks,
    /// The fabric lab only (`rpc-lab --regimes`): it needs a fabric feature
    /// (PFC, link credits, spraying) or is a published system's settings.
    Fabric,
    /// Both.
    Both,
}

/// How the endpoints keep the receiver from dropping, if at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresetFlow {
    /// Credits backed by reserved receive-ring entries.
    Lossless,
    /// Nothing reserved; the receiver pauses its senders above XOFF.
    Pause,
    /// Nothing reserved.
    Lossy,
}

/// A session's credits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreditRule {
    /// One bandwidth-delay product.
    Bdp,
    /// [`LOSSY_CREDIT_MULTIPLE`] x BDP (real links: the run config's
    /// `transport.lossy_credit_multiple`).
    LossyMultiple,
    /// A fixed count.
    Fixed(u16),
}

impl CreditRule {
    /// The credits for a BDP of `bdp` packets, the multiple at its default.
    pub fn credits(self, bdp: u16) -> u16 {
        match self {
            CreditRule::Bdp => bdp,
            CreditRule::LossyMultiple => bdp.saturating_mul(LOSSY_CREDIT_MULTIPLE),
            CreditRule::Fixed(n) => n,
        }
    }
}

/// What a preset sets on an endpoint (see the module's table for which of
/// these real links take).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointPreset {
    /// The flow mode.
    pub flow: PresetFlow,
    /// Session credits.
    pub credits: CreditRule,
    /// How loss is repaired.
    pub retransmit: Retransmit,
    /// Selective recovery's trigger; `None` for go-back-N.
    pub sack_rule: Option<SackRule>,
    /// Congestion control (the fabric's; real links keep `transport.cc`).
    pub cc: CcKind,
    /// Whether a receiver NAKs the first gap (go-back-N on a lossy path, as
    /// RoCE and InfiniBand NICs do).
    pub nak: bool,
    /// The preset's own timeouts (RTO, short RTO), if it fixes them.
    pub timers: Option<(Duration, Duration)>,
}

impl TransportPreset {
    /// Every preset, in the table's order.
    pub const ALL: [TransportPreset; 9] = [
        TransportPreset::Lossless,
        TransportPreset::Pause,
        TransportPreset::Lossy,
        TransportPreset::Irn,
        TransportPreset::Ib,
        TransportPreset::Roce,
        TransportPreset::RoceNocc,
        TransportPreset::Srd,
        TransportPreset::Erpc,
    ];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            TransportPreset::Lossless => "lossless",
            TransportPreset::Pause => "pause",
            TransportPreset::Lossy => "lossy",
            TransportPreset::Irn => "irn",
            TransportPreset::Ib => "ib",
            TransportPreset::Roce => "roce",
            TransportPreset::RoceNocc => "roce-nocc",
            TransportPreset::Srd => "srd",
            TransportPreset::Erpc => "erpc",
        }
    }

    /// The preset called `name`.
    pub fn from_name(name: &str) -> Option<TransportPreset> {
        TransportPreset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// One line on what the preset is.
    pub fn about(self) -> &'static str {
        match self {
            TransportPreset::Lossless => {
                "credits = BDP backed by reserved receive-ring entries; go-back-N"
            }
            TransportPreset::Pause => {
                "nothing reserved; the receiver pauses its senders above XOFF; go-back-N"
            }
            TransportPreset::Lossy => {
                "no PFC, a large window (4 BDP), go-back-N with NAKs (a RoCE NIC on a lossy path)"
            }
            TransportPreset::Irn => {
                "IRN: no PFC, a BDP in flight, selective retransmission at the first NACK"
            }
            TransportPreset::Ib => {
                "InfiniBand: link-level credits hop by hop, go-back-N with NAKs, no rate control"
            }
            TransportPreset::Roce => "RoCEv2: PFC with headroom, ECN, DCQCN, go-back-N with NAKs",
            TransportPreset::RoceNocc => "RoCEv2 without congestion control: PFC and go-back-N",
            TransportPreset::Srd => {
                "AWS SRD: spraying, selective retransmission tolerant of reordering, Timely"
            }
            TransportPreset::Erpc => {
                "eRPC: 32 reserved session credits, go-back-N without NAK, 5 ms RTO, Timely"
            }
        }
    }

    /// Where the preset runs.
    pub fn runs_on(self) -> RunsOn {
        match self {
            TransportPreset::Lossless | TransportPreset::Pause => RunsOn::RealLinks,
            TransportPreset::Lossy | TransportPreset::Irn => RunsOn::Both,
            _ => RunsOn::Fabric,
        }
    }

    /// Whether `rpc-bench compare/sweep/incast --modes` runs it.
    pub fn on_real_links(self) -> bool {
        self.runs_on() != RunsOn::Fabric
    }

    /// Whether the fabric lab runs it.
    pub fn on_fabric(self) -> bool {
        self.runs_on() != RunsOn::RealLinks
    }

    /// What the preset sets on an endpoint.
    pub fn endpoint(self) -> EndpointPreset {
        use TransportPreset as P;
        let selective = matches!(self, P::Irn | P::Srd);
        EndpointPreset {
            flow: match self {
                P::Lossless | P::Erpc => PresetFlow::Lossless,
                P::Pause => PresetFlow::Pause,
                _ => PresetFlow::Lossy,
            },
            credits: match self {
                P::Lossless | P::Irn | P::Srd => CreditRule::Bdp,
                P::Erpc => CreditRule::Fixed(32),
                _ => CreditRule::LossyMultiple,
            },
            retransmit: match selective {
                true => Retransmit::Selective,
                false => Retransmit::GoBackN,
            },
            // IRN resends at the first NACK; sprayed paths reorder, so SRD
            // waits for three later answers and a reordering window.
            sack_rule: match self {
                P::Irn => Some(SackRule::FirstNack),
                P::Srd => Some(SackRule::Reordering),
                _ => None,
            },
            cc: match self {
                P::Roce => CcKind::Dcqcn,
                P::Srd | P::Erpc => CcKind::Timely,
                _ => CcKind::None,
            },
            // RoCE and InfiniBand NICs NAK the first gap; eRPC has no NAK,
            // IRN and SRD answer gaps with Sacks; the real-link-only modes
            // leave it to `transport.nak`.
            nak: matches!(self, P::Lossy | P::Ib | P::Roce | P::RoceNocc),
            // IRN's RTO_high and RTO_low (SIGCOMM'18, section 4).
            timers: selective.then(|| (Duration::from_micros(320), Duration::from_micros(100))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for p in TransportPreset::ALL {
            assert_eq!(TransportPreset::from_name(p.name()), Some(p));
            assert_eq!(
                TransportPreset::ALL
                    .iter()
                    .filter(|q| q.name() == p.name())
                    .count(),
                1
            );
            assert!(p.on_real_links() || p.on_fabric());
        }
        assert_eq!(TransportPreset::from_name("pfc"), None);
    }

    #[test]
    fn credit_rules() {
        assert_eq!(CreditRule::Bdp.credits(9), 9);
        assert_eq!(CreditRule::LossyMultiple.credits(9), 36);
        assert_eq!(CreditRule::Fixed(32).credits(9), 32);
        let irn = TransportPreset::Irn.endpoint();
        assert_eq!(
            (irn.retransmit, irn.credits, irn.nak),
            (Retransmit::Selective, CreditRule::Bdp, false)
        );
        assert!(TransportPreset::Lossy.endpoint().nak);
        assert!(!TransportPreset::Erpc.endpoint().nak);
    }
}
