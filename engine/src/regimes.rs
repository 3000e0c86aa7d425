//! The table of named regimes that real links run: each a named set of
//! transport settings, the regimes of `rpc-bench compare`, `sweep` and
//! `incast` (`--regimes`, `bench/src/compare/regimes.rs`), each name once,
//! with what it sets on an endpoint. The fabric lab runs two of them,
//! `lossy` and `irn`, as the same endpoints (its `--regimes`), and states
//! its fabric-only regimes (`ib`, `roce`, `roce-nocc`, `srd`, `erpc`) in
//! its own table with this module's types
//! ([`RegimeSettings`](crate::regimes::RegimeSettings),
//! [`CreditRule`](crate::regimes::CreditRule),
//! the flow mode, [`FlowMode`](crate::proto::FlowMode);
//! `lab/src/fabric/fabric_regime.rs`, which also adds every regime's fabric
//! side: PFC, link credits, spraying). A name never means two things.
//!
//! | regime     | flow     | credits        | retransmit            | cc   | NAK | timers (fabric)  |
//! |------------|----------|----------------|-----------------------|------|-----|------------------|
//! | `lossless` | lossless | BDP (reserved) | go-back-N             | -    | no  | -                |
//! | `pause`    | pause    | lossy multiple | go-back-N             | -    | -   | -                |
//! | `lossy`    | lossy    | lossy multiple | go-back-N             | none | yes | -                |
//! | `irn`      | lossy    | BDP            | selective, first NACK | none | no  | RTO 320, low 100 |
//!
//! "flow" is the flow mode a regime sets (`transport.mode`); "lossy
//! multiple" is [`LOSSY_CREDIT_MULTIPLE`](crate::regimes::LOSSY_CREDIT_MULTIPLE) x BDP in the fabric; on
//! real links `transport.lossy_credit_multiple` (default the same 4).
//! On real links a regime sets the flow mode, the retransmission and the
//! credit rule only: congestion control, NAKs and timers stay the run
//! config's (`transport.cc`, `transport.nak` and the timeouts; a 100 us
//! timeout needs the fabric's 5 us timer grain, not a run loop's 500 us).
//! The fabric applies every column
//! ([`RegimeSettings::apply_to`](crate::regimes::RegimeSettings::apply_to)).

use crate::config::TransportConfig;
use crate::proto::{CcKind, FlowMode, LossPolicy, Retransmit, SackRule};
use crate::time::Duration;

/// Session credits as a multiple of the bandwidth-delay product where the
/// regime says "lossy multiple" (the run config's default
/// `transport.lossy_credit_multiple`, and the fabric's `4 x BDP`).
pub const LOSSY_CREDIT_MULTIPLE: u16 = 4;

/// One named regime of real links. Declaration order is the table's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Regime {
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
    /// One and a half BDPs (rounded up): UEC's NSCC window
    /// (uet-htsim `UecSrc::initNscc`: `setMaxWnd(1.5*_bdp)`, the window
    /// starting at its maximum), so that a session keeps the link busy
    /// through the round trip's jitter on sprayed paths.
    BdpAndHalf,
}

impl CreditRule {
    /// The credits for a BDP of `bdp` packets, the multiple at its default.
    pub fn credits(self, bdp: u16) -> u16 {
        match self {
            CreditRule::Bdp => bdp,
            CreditRule::LossyMultiple => bdp.saturating_mul(LOSSY_CREDIT_MULTIPLE),
            CreditRule::Fixed(n) => n,
            CreditRule::BdpAndHalf => bdp.saturating_add(bdp.div_ceil(2)),
        }
    }
}

/// What a regime sets on an endpoint (see the module's table for which of
/// these real links take).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegimeSettings {
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
    /// The regime's own timeouts (RTO, short RTO), if it fixes them.
    pub timers: Option<(Duration, Duration)>,
}

impl RegimeSettings {
    /// Sets every column of the regime on `t` (the fabric's regimes): the
    /// flow mode, loss repair on retransmission, the rate control, the NAK,
    /// the regime's timeouts if it fixes them, and its credits for a BDP of
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

impl Regime {
    /// Every regime, in the table's order.
    pub const ALL: [Regime; 4] = [Regime::Lossless, Regime::Pause, Regime::Lossy, Regime::Irn];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Regime::Lossless => "lossless",
            Regime::Pause => "pause",
            Regime::Lossy => "lossy",
            Regime::Irn => "irn",
        }
    }

    /// The regime called `name`.
    pub fn from_name(name: &str) -> Option<Regime> {
        Regime::ALL.into_iter().find(|r| r.name() == name)
    }

    /// One line on what the regime is.
    pub fn about(self) -> &'static str {
        match self {
            Regime::Lossless => "credits = BDP backed by reserved receive-ring entries; go-back-N",
            Regime::Pause => {
                "nothing reserved; the receiver pauses its senders above XOFF; go-back-N"
            }
            Regime::Lossy => {
                "no PFC, a large window (4 BDP), go-back-N with NAKs (a RoCE NIC on a lossy path)"
            }
            Regime::Irn => {
                "IRN: no PFC, a BDP in flight, selective retransmission at the first NACK"
            }
        }
    }

    /// Whether `rpc-bench compare/sweep/incast --regimes` runs it: every
    /// regime of this table does (the fabric-only regimes are the lab's).
    pub fn on_real_links(self) -> bool {
        true
    }

    /// What the regime sets on an endpoint.
    pub fn settings(self) -> RegimeSettings {
        use Regime as R;
        let selective = self == R::Irn;
        RegimeSettings {
            flow: match self {
                R::Lossless => FlowMode::Lossless,
                R::Pause => FlowMode::Pause,
                R::Lossy | R::Irn => FlowMode::Lossy,
            },
            credits: match self {
                R::Lossless | R::Irn => CreditRule::Bdp,
                R::Pause | R::Lossy => CreditRule::LossyMultiple,
            },
            retransmit: match selective {
                true => Retransmit::Selective,
                false => Retransmit::GoBackN,
            },
            // IRN resends at the first NACK.
            sack_rule: selective.then_some(SackRule::FirstNack),
            cc: CcKind::None,
            // A RoCE NIC on a lossy path NAKs the first gap; IRN answers
            // gaps with Sacks; the real-link-only regimes leave it to
            // `transport.nak`.
            nak: self == R::Lossy,
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
        for r in Regime::ALL {
            assert_eq!(Regime::from_name(r.name()), Some(r));
            assert_eq!(
                Regime::ALL.iter().filter(|q| q.name() == r.name()).count(),
                1
            );
            assert!(r.on_real_links());
        }
        assert_eq!(Regime::from_name("pfc"), None);
    }

    #[test]
    fn credit_rules() {
        assert_eq!(CreditRule::Bdp.credits(9), 9);
        assert_eq!(CreditRule::LossyMultiple.credits(9), 36);
        assert_eq!(CreditRule::Fixed(32).credits(9), 32);
        assert_eq!(CreditRule::BdpAndHalf.credits(9), 14);
        let irn = Regime::Irn.settings();
        assert_eq!(
            (irn.retransmit, irn.credits, irn.nak),
            (Retransmit::Selective, CreditRule::Bdp, false)
        );
        assert!(Regime::Lossy.settings().nak);
        assert!(!Regime::Lossless.settings().nak);
    }
}
