//! The flow-control keys: pause mode's thresholds and headroom, selective
//! retransmission's short timeout, congestion control's kind and link
//! rate, and the injected ECN marking probability. What each resolves
//! to when unset, and their validation (called from `validate_transport`),
//! naming the key and the rule with numbers.

use super::schema::*;
use super::validate::{at_most, range};
use engine::proto::PauseConfig;
use engine::time::Duration;

impl Config {
    /// Pause mode's headroom in receive-ring entries: `transport.pause_headroom`,
    /// else 2 x the BDP in packets + [`PAUSE_BURST_ENTRIES`]. Like a PFC
    /// port's headroom, it absorbs what is still on the way once the
    /// receiver decides to pause: the XOFF takes half a round trip to reach
    /// the sender and what the sender sent meanwhile another half, so about
    /// one BDP (rate x RTT) arrives after the decision; as much again covers
    /// a sender that sees the XOFF only at its next poll, with frames
    /// already queued in its TX ring; and one receive burst covers frames
    /// the receiving poller already holds. The BDP is the link's
    /// (`bdp_credits`), not a multiple: headroom is per port, not per session.
    pub fn pause_headroom(&self) -> u32 {
        self.transport
            .pause_headroom
            .unwrap_or(2 * self.bdp_credits() as u32 + PAUSE_BURST_ENTRIES)
    }

    /// Pause mode's thresholds for `link.rx_desc`: `transport.pause_xoff`
    /// else `rx_desc - headroom` (`PauseConfig::for_ring`), and
    /// `transport.pause_xon` else half of XOFF.
    pub fn pause_config(&self) -> PauseConfig {
        let t = &self.transport;
        let derived = PauseConfig::for_ring(
            self.link.rx_desc as usize,
            self.pause_headroom() as usize,
            Duration::from_micros(t.pause_time_us),
        );
        let xoff = t.pause_xoff.map_or(derived.xoff, |x| x as usize);
        PauseConfig {
            xoff,
            xon: t.pause_xon.map_or(xoff / 2, |x| x as usize),
            ..derived
        }
    }

    /// Selective mode's short timeout: `transport.rto_low_us`, else
    /// [`DEFAULT_RTO_LOW_US`] capped at `transport.rto_us`.
    pub fn rto_low_us(&self) -> u64 {
        let t = &self.transport;
        t.rto_low_us.unwrap_or(DEFAULT_RTO_LOW_US.min(t.rto_us))
    }

    /// The rate congestion control starts at and never exceeds, bits/s:
    /// `transport.link_gbps`, which `rpc-bench run` replaces with the
    /// floor's measured rate when `transport.bdp = "measured"` (see
    /// `bdp::apply`), so the CC rate and the credits' BDP agree.
    pub fn link_bps(&self) -> u64 {
        (self.transport.link_gbps.max(0.0) * 1e9).min(u64::MAX as f64) as u64
    }

    /// Probability that the injected marker sets ECN CE on a received
    /// ECN-capable frame (`faults.ecn_p`, 0 when unset). The marker draws
    /// from the fault injector's seed (`faults.seed`) and sits where the
    /// drops do (`faults.direction`). The DPDK run loop does not take it
    /// yet: nothing in `engine::runtime` has a field for it, so no binary
    /// passes it on.
    pub fn ecn_mark_p(&self) -> f64 {
        self.faults.ecn_p.unwrap_or(0.0)
    }

    /// The flow-control keys the engine never sees or sees converted: the short
    /// timeout's microseconds, a finite positive rate cap, and the pause
    /// duration in every mode (the engine checks it, and XOFF/XON, only in
    /// pause mode; `explain_pause` words its refusals there). `rto_low_us`
    /// within `rto_us` and `nak`'s combinations are the engine's rules.
    pub(super) fn validate_flow_control(&self) -> Result<(), ConfigError> {
        let t = &self.transport;
        if let Some(low) = t.rto_low_us {
            at_most("transport.rto_low_us", low, u64::MAX / 1000)?;
        }
        if let Some(cap) = t.rate_cap_gbps {
            if !(cap > 0.0 && cap.is_finite()) {
                return Err(ConfigError::invalid(
                    "transport.rate_cap_gbps",
                    format!("transport.rate_cap_gbps = {cap} must be a rate above 0 Gb/s"),
                ));
            }
        }
        range(
            "transport.pause_time_us",
            t.pause_time_us,
            1,
            u64::MAX / 1000,
        )
    }

    /// `transport.rate_cap_gbps` at most the line rate, `transport.link_gbps`.
    /// Checked where the line rate is final: by the binaries, and by
    /// `rpc-bench` once the floor has measured it (`bdp::apply`), not when
    /// `rpc-bench` first reads its config.
    pub fn check_rate_cap(&self) -> Result<(), ConfigError> {
        let t = &self.transport;
        match t.rate_cap_gbps {
            Some(cap) if cap > t.link_gbps => Err(ConfigError::invalid(
                "transport.rate_cap_gbps",
                format!(
                    "transport.rate_cap_gbps = {cap} is above the line rate, transport.link_gbps = {:.2} (rpc-bench sets link_gbps to the floor's measured rate); lower the cap or drop it",
                    t.link_gbps
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Why the engine refused pause mode's thresholds (`PauseConfig::validate`:
    /// XON below XOFF, and the headroom rule `link.rx_desc - pause_xoff >=
    /// pause_headroom`), in the config's terms: the key at fault, the
    /// numbers, and where a derived headroom or XOFF comes from. `Ok` when
    /// the config sees no fault (the engine's refusal is then given as is).
    pub(super) fn explain_pause(&self) -> Result<(), ConfigError> {
        let t = &self.transport;
        if t.mode != Mode::Pause {
            return Ok(());
        }
        let rx = self.link.rx_desc as u64;
        let h = self.pause_headroom() as u64;
        let origin = match t.pause_headroom {
            Some(_) => String::new(),
            None => format!(
                " (2 x the BDP of {} packets + {PAUSE_BURST_ENTRIES})",
                self.bdp_credits()
            ),
        };
        let rule = "link.rx_desc - transport.pause_xoff >= transport.pause_headroom, with pause_xon < pause_xoff";
        match t.pause_xoff.map(u64::from) {
            None if h + 2 > rx => {
                return Err(ConfigError::invalid(
                    "transport.pause_headroom",
                    format!(
                        "transport.pause_headroom = {h}{origin} does not fit link.rx_desc = {rx}: the headroom rule ({rule}) needs link.rx_desc >= {}; raise link.rx_desc or lower transport.pause_headroom",
                        h + 2
                    ),
                ));
            }
            Some(x) if x == 0 || x + h > rx => {
                return Err(ConfigError::invalid(
                    "transport.pause_xoff",
                    format!(
                        "transport.pause_xoff = {x} must be in 1..={} for link.rx_desc = {rx} and transport.pause_headroom = {h}{origin} (the headroom rule: {rule})",
                        rx.saturating_sub(h)
                    ),
                ));
            }
            _ => {}
        }
        let p = self.pause_config();
        if p.xon >= p.xoff {
            return Err(ConfigError::invalid(
                "transport.pause_xon",
                format!(
                    "transport.pause_xon = {} must be below transport.pause_xoff = {}",
                    p.xon, p.xoff
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::link::Role;
    use crate::config::testutil::*;
    use engine::proto::{FlowMode, Retransmit};
    use engine::wire::MacAddr;

    const MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);

    #[test]
    fn defaults() {
        let c = Config::default();
        let t = &c.transport;
        assert_eq!(t.mode, Mode::Lossless);
        assert_eq!(t.retransmit, RetransmitKind::GoBackN);
        assert_eq!(t.cc, CongestionControl::None);
        assert_eq!((t.pause_time_us, c.rto_low_us()), (200, 500));
        assert_eq!(c.ecn_mark_p(), 0.0);
        assert_eq!(c.link_bps(), 10_000_000_000);
        let e = endpoint(&c, Role::Client, 0, MAC);
        assert_eq!(e.retransmit, Retransmit::GoBackN);
        assert_eq!(e.rto_low, Duration::from_micros(500));
        assert_eq!(e.link_bps, 10_000_000_000);
        // A short RTO caps the default short timeout instead of failing.
        let c = with(&["transport.scan_us=100", "transport.rto_us=200"]).unwrap();
        c.validate(&ENV).unwrap();
        assert_eq!(c.rto_low_us(), 200);
    }

    #[test]
    fn flow_control_keys_parse_and_map() {
        let c = with(&[
            "transport.mode=pause",
            "transport.pause_headroom=100",
            "transport.pause_xoff=800",
            "transport.pause_xon=400",
            "transport.pause_time_us=50",
            "transport.retransmit=selective",
            "transport.rto_low_us=300",
            "transport.cc=none",
            "transport.link_gbps=25",
            "faults.ecn_p=0.25",
        ])
        .unwrap();
        c.validate(&ENV).unwrap();
        assert_eq!(c.ecn_mark_p(), 0.25);
        let e = endpoint(&c, Role::Server, 0, MAC);
        e.validate().unwrap();
        let pause = PauseConfig {
            xoff: 800,
            xon: 400,
            pause_time: Duration::from_micros(50),
            headroom: 100,
        };
        assert_eq!(e.mode, FlowMode::Pause(pause));
        assert_eq!(e.retransmit, Retransmit::Selective);
        assert_eq!(e.rto_low, Duration::from_micros(300));
        assert_eq!(e.link_bps, 25_000_000_000);
        // Pause mode reserves nothing: credits as in lossy mode, 4 x the
        // BDP of 25 Gb/s x 10 us at 1500 B (21 packets).
        assert_eq!(c.effective_credits(), 84);
        for (o, key) in [
            ("transport.mode=paused", "transport.mode"),
            ("transport.retransmit=sack", "transport.retransmit"),
            ("transport.cc=bbr", "transport.cc"),
            ("transport.pause_xoff=-1", "transport.pause_xoff"),
            ("faults.ecn_p=often", "faults.ecn_p"),
        ] {
            let e = with(&[o]).expect_err(o);
            assert_eq!(e.key(), Some(key), "{o}: {e}");
        }
    }

    #[test]
    fn pause_thresholds_default_from_the_bdp_and_the_ring() {
        // BDP 9 packets (10 Gb/s x 10 us at 1500 B): 2 x 9 + 32 = 50.
        let c = with(&["transport.mode=pause"]).unwrap();
        c.validate(&ENV).unwrap();
        assert_eq!(c.pause_headroom(), 50);
        let p = c.pause_config();
        assert_eq!((p.xoff, p.xon, p.headroom), (1024 - 50, 487, 50));
        assert_eq!(p.pause_time, Duration::from_micros(200));
        // The smallest ring the default headroom fits: 50 + 2 entries.
        let c = with(&["transport.mode=pause", "link.rx_desc=64"]).unwrap();
        c.validate(&ENV).unwrap();
        assert_eq!((c.pause_config().xoff, c.pause_config().xon), (14, 7));
        // An explicit XOFF halves into the default XON.
        let c = with(&["transport.mode=pause", "transport.pause_xoff=600"]).unwrap();
        assert_eq!(c.pause_config().xon, 300);
        // Outside pause mode the pause keys are not checked.
        let mut c = with(&["link.rx_desc=32"]).unwrap();
        c.trust_own_client();
        c.validate(&ENV).unwrap();
    }

    /// The message of the rejection of `overrides`, which must name `key`.
    fn rejection(overrides: &[&str], key: &str) -> String {
        assert_eq!(rejected_key(overrides), key, "{overrides:?}");
        let c = with(overrides).unwrap();
        c.validate(&ENV).unwrap_err().to_string()
    }

    #[test]
    fn pause_rejections_state_the_headroom_rule_with_numbers() {
        let e = rejection(
            &["transport.mode=pause", "link.rx_desc=32"],
            "transport.pause_headroom",
        );
        assert!(
            e.contains("transport.pause_headroom = 50 (2 x the BDP of 9 packets + 32)")
                && e.contains("link.rx_desc >= 52"),
            "{e}"
        );
        let e = rejection(
            &["transport.mode=pause", "transport.pause_xoff=1000"],
            "transport.pause_xoff",
        );
        assert!(
            e.contains("transport.pause_xoff = 1000 must be in 1..=974")
                && e.contains("link.rx_desc - transport.pause_xoff >= transport.pause_headroom"),
            "{e}"
        );
        let e = rejection(
            &[
                "transport.mode=pause",
                "transport.pause_headroom=500",
                "transport.pause_xoff=600",
            ],
            "transport.pause_xoff",
        );
        assert!(e.contains("1..=524") && !e.contains("BDP"), "{e}");
        let e = rejection(
            &["transport.mode=pause", "transport.pause_xon=974"],
            "transport.pause_xon",
        );
        assert!(
            e.contains("transport.pause_xon = 974 must be below transport.pause_xoff = 974"),
            "{e}"
        );
    }

    #[test]
    fn each_flow_control_rejection_names_its_key() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["transport.mode=pause", "transport.pause_xoff=0"],
                "transport.pause_xoff",
            ),
            (
                &["transport.mode=pause", "transport.pause_headroom=1023"],
                "transport.pause_headroom",
            ),
            (&["transport.pause_time_us=0"], "transport.pause_time_us"),
            (&["transport.rto_low_us=0"], "transport.rto_low_us"),
            (&["transport.rto_low_us=5001"], "transport.rto_low_us"),
            (
                &["transport.mode=pause", "transport.on_loss=reset"],
                "transport.on_loss",
            ),
            (&["faults.ecn_p=1.5"], "faults.ecn_p"),
            (&["faults.ecn_p=-0.5"], "faults.ecn_p"),
            (&["transport.rate_cap_gbps=0"], "transport.rate_cap_gbps"),
            (&["transport.rate_cap_gbps=-3"], "transport.rate_cap_gbps"),
            (
                &["transport.nak=true", "transport.mode=lossless"],
                "transport.nak",
            ),
            (
                &[
                    "transport.nak=true",
                    "transport.mode=lossy",
                    "transport.retransmit=selective",
                ],
                "transport.nak",
            ),
        ];
        for (overrides, key) in cases {
            assert_eq!(&rejected_key(overrides), key, "{overrides:?}");
        }
        let e = rejection(&["transport.rto_low_us=5001"], "transport.rto_low_us");
        assert!(e.contains("1..=transport.rto_us = 5000"), "{e}");
    }

    #[test]
    fn rate_control_keys_map_and_their_bad_values_name_the_key() {
        let c = with(&[
            "transport.rate_cap_gbps=2.5",
            "transport.dcqcn=hpcc100g",
            "transport.nak=true",
            "transport.mode=lossy",
            "transport.rtt_us=12",
        ])
        .unwrap();
        c.validate_for(&ENV, Role::Client).unwrap();
        let e = endpoint(&c, Role::Client, 0, MAC);
        e.validate().unwrap();
        assert_eq!(e.rate_cap_bps, Some(2_500_000_000));
        assert_eq!(e.dcqcn, engine::proto::DcqcnParams::hpcc100g());
        assert!(e.nak);
        assert_eq!(e.base_rtt, Duration::from_micros(12));
        // Without a named set, the one that fits the link.
        let slow = with(&["transport.link_gbps=25"]).unwrap();
        let fast = with(&["transport.link_gbps=100"]).unwrap();
        let set = |c: &Config| endpoint(c, Role::Client, 0, MAC).dcqcn;
        assert_eq!(set(&slow), engine::proto::DcqcnParams::paper40g());
        assert_eq!(set(&fast), engine::proto::DcqcnParams::hpcc100g());
        // An unknown set is a parse error naming the key.
        let e = with(&["transport.dcqcn=paper100g"]).expect_err("unknown set");
        assert_eq!(e.key(), Some("transport.dcqcn"), "{e}");
        // Above the line rate: refused where the rate is final (a binary,
        // or rpc-bench after its floor), naming both keys.
        let c = with(&["transport.rate_cap_gbps=11"]).unwrap();
        c.validate(&ENV).unwrap();
        let e = c.validate_for(&ENV, Role::Client).unwrap_err();
        assert_eq!(e.key(), Some("transport.rate_cap_gbps"), "{e}");
        assert!(e.to_string().contains("transport.link_gbps = 10.00"), "{e}");
    }
}
