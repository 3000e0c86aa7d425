//! The table of named transport presets that real links run: the compare
//! modes of `rpc-bench compare`, `sweep` and `incast` (`--modes`,
//! `bench/src/compare/modes.rs`), each name once, with what it sets on an
//! endpoint. The fabric lab runs two of them, `lossy` and `irn`, as the
//! same endpoints (its `--regimes`), and states its fabric-only regimes
//! (`ib`, `roce`, `roce-nocc`, `srd`, `erpc`) in its own table with this
//! module's types ([`EndpointPreset`](crate::presets::EndpointPreset),
//! [`CreditRule`](crate::presets::CreditRule),
//! the flow mode, [`FlowMode`](crate::proto::FlowMode);
//! `lab/src/fabric/fabric_regime.rs`, which also adds every regime's fabric
//! side: PFC, link credits, spraying). A name never means two things.
//!
//! | preset     | flow     | credits        | retransmit            | cc   | NAK | timers (fabric)  |
//! |------------|----------|----------------|-----------------------|------|-----|------------------|
//! | `lossless` | lossless | BDP (reserved) | go-back-N             | -    | no  | -                |
//! | `pause`    | pause    | lossy multiple | go-back-N             | -    | -   | -                |
//! | `lossy`    | lossy    | lossy multiple | go-back-N             | none | yes | -                |
//! | `irn`      | lossy    | BDP            | selective, first NACK | none | no  | RTO 320, low 100 |
//!
//! "lossy multiple" is [`LOSSY_CREDIT_MULTIPLE`](crate::presets::LOSSY_CREDIT_MULTIPLE) x BDP in the fabric; on
//! real links `transport.lossy_credit_multiple` (default the same 4).
//! On real links a preset sets the flow mode, the retransmission and the
//! credit rule only: congestion control, NAKs and timers stay the run
//! config's (`transport.cc`, `transport.nak` and the timeouts; a 100 us
//! timeout needs the fabric's 5 us timer grain, not a run loop's 500 us).
//! The fabric applies every column ([`EndpointPreset::apply_to`]).

use crate::config::TransportConfig;
use crate::proto::{CcKind, FlowMode, LossPolicy, Retransmit, SackRule};
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
    pub flow: FlowMode,
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

impl EndpointPreset {
    /// Sets every column of the preset on `t` (the fabric's regimes): the
    /// flow mode, loss repair on retransmission, the rate control, the NAK,
    /// the preset's timeouts if it fixes them, and its credits for a BDP of
    /// `bdp` packets. The selective trigger ([`Self::sack_rule`]) is no
    /// `[transport]` key: the caller sets it on the endpoint.
    pub fn apply_to(&self, t: &mut TransportConfig, bdp: u16) {
        t.mode = self.flow;
        t.on_loss = LossPolicy::Retransmit;
        t.retransmit = self.retransmit;
        t.cc = self.cc;
        t.nak = self.nak;
        if let Some((rto, rto_low)) = self.timers {
            t.set_timers(rto, rto_low);
        }
        t.credits = Some(self.credits.credits(bdp));
    }
}

impl TransportPreset {
    /// Every preset, in the table's order.
    pub const ALL: [TransportPreset; 4] = [
        TransportPreset::Lossless,
        TransportPreset::Pause,
        TransportPreset::Lossy,
        TransportPreset::Irn,
    ];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            TransportPreset::Lossless => "lossless",
            TransportPreset::Pause => "pause",
            TransportPreset::Lossy => "lossy",
            TransportPreset::Irn => "irn",
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
        }
    }

    /// Whether `rpc-bench compare/sweep/incast --modes` runs it: every
    /// preset of this table does (the fabric-only regimes are the lab's).
    pub fn on_real_links(self) -> bool {
        true
    }

    /// What the preset sets on an endpoint.
    pub fn endpoint(self) -> EndpointPreset {
        use TransportPreset as P;
        let selective = self == P::Irn;
        EndpointPreset {
            flow: match self {
                P::Lossless => FlowMode::Lossless,
                P::Pause => FlowMode::Pause,
                P::Lossy | P::Irn => FlowMode::Lossy,
            },
            credits: match self {
                P::Lossless | P::Irn => CreditRule::Bdp,
                P::Pause | P::Lossy => CreditRule::LossyMultiple,
            },
            retransmit: match selective {
                true => Retransmit::Selective,
                false => Retransmit::GoBackN,
            },
            // IRN resends at the first NACK.
            sack_rule: selective.then_some(SackRule::FirstNack),
            cc: CcKind::None,
            // A RoCE NIC on a lossy path NAKs the first gap; IRN answers
            // gaps with Sacks; the real-link-only modes leave it to
            // `transport.nak`.
            nak: self == P::Lossy,
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
            assert!(p.on_real_links());
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
        assert!(!TransportPreset::Lossless.endpoint().nak);
    }
}
