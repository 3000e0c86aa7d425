//! The fabric's regimes: the entries of the shared preset table
//! (`engine::presets`, which names each and says what it sets on an
//! endpoint) that run on the fabric, and the fabric side each adds (PFC,
//! link credits, spraying, ECN marking). See `docs/fabric.md` for what
//! each keeps of the real system and what it simplifies.

use super::config::{FabricConfig, Pfc, Red};
use engine::presets::{PresetFlow, TransportPreset};
use engine::proto::{bdp_credits, DcqcnParams, EndpointConfig, FlowMode, LossPolicy, Retransmit};
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

    /// The entry of the shared table (`engine::presets`) this regime is.
    pub fn preset(self) -> TransportPreset {
        match self {
            Regime::Ib => TransportPreset::Ib,
            Regime::Roce => TransportPreset::Roce,
            Regime::RoceNocc => TransportPreset::RoceNocc,
            Regime::Irn => TransportPreset::Irn,
            Regime::Srd => TransportPreset::Srd,
            Regime::Erpc => TransportPreset::Erpc,
            Regime::Lossy => TransportPreset::Lossy,
        }
    }

    /// The preset's name on the command line and in reports (the table's).
    pub fn name(self) -> &'static str {
        self.preset().name()
    }

    /// The preset called `s`.
    pub fn from_name(s: &str) -> Result<Regime, String> {
        Regime::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Regime::ALL.iter().map(|r| r.name()).collect();
                let real = match TransportPreset::from_name(s) {
                    Some(p) if !p.on_fabric() => {
                        " runs on real links only (rpc-bench compare --modes)".to_string()
                    }
                    _ => String::new(),
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

    /// Whether the regime's endpoints NAK a gap (the table's `nak`: go-back-N
    /// on a lossy fabric, as RoCE and InfiniBand NICs do; eRPC has no NAK,
    /// and IRN and SRD answer gaps with Sacks).
    pub fn naks(self) -> bool {
        self.preset().endpoint().nak
    }

    /// How the regime's endpoints repair loss.
    pub fn retransmit(self) -> Retransmit {
        self.preset().endpoint().retransmit
    }

    /// Sets the endpoint side of the regime on `ep` from the shared table,
    /// for a fabric whose longest unloaded round trip is `rtt` at
    /// `link_bps`.
    pub fn apply_endpoint(self, ep: &mut EndpointConfig, link_bps: u64, rtt: Duration) {
        let p = self.preset().endpoint();
        ep.link_bps = link_bps;
        ep.base_rtt = rtt;
        ep.dcqcn = DcqcnParams::for_link(link_bps);
        ep.cc = p.cc;
        ep.retransmit = p.retransmit;
        ep.mode = match p.flow {
            PresetFlow::Lossless => FlowMode::Lossless,
            // No fabric regime pauses at the host (PFC is the fabric's).
            PresetFlow::Lossy | PresetFlow::Pause => FlowMode::Lossy,
        };
        ep.on_loss = LossPolicy::Retransmit;
        ep.nak = p.nak;
        // Timers on a 5 us grain: IRN's 100 us timeout must not round up to
        // the run loop's 500 us.
        ep.scan_interval = Duration::from_micros(5);
        ep.rto = engine::proto::defaults::RTO;
        if let Some((rto, rto_low)) = p.timers {
            ep.rto = rto;
            ep.rto_low = rto_low;
        }
        if let Some(rule) = p.sack_rule {
            ep.sack_rule = rule;
        }
        ep.session_credits = p.credits.credits(bdp_credits(link_bps, rtt, ep.mtu));
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
    fn the_regimes_are_the_tables_fabric_presets() {
        let mut table: Vec<TransportPreset> = TransportPreset::ALL
            .into_iter()
            .filter(|p| p.on_fabric())
            .collect();
        let mut ours: Vec<TransportPreset> = Regime::ALL.map(Regime::preset).to_vec();
        table.sort();
        ours.sort();
        assert_eq!(table, ours);
        let e = Regime::from_name("pause").unwrap_err();
        assert!(e.contains("real links only"), "{e}");
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
        assert_eq!(ep.mode, FlowMode::Lossless);
        assert_eq!(ep.session_credits, 32);
    }
}
