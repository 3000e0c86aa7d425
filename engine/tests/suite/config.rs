//! The engine's configuration: one default per key, validation by key, and
//! the one resolution step (credits per flow mode from one measurement, the
//! ring fit and RTO raise of a pair a tool starts itself, pause thresholds,
//! where every derived value came from), and its contract: what resolves,
//! the protocol core accepts.

use engine::config::{
    resolve, CreditMultiple, Facts, KeyError, Load, Measured, Origins, Source, TransportConfig,
};
use engine::proto::{CcKind, EndpointAddr, EndpointConfig, FlowMode, Retransmit};
use engine::time::Duration;
use engine::wire::MacAddr;
use proptest::prelude::*;
use std::net::Ipv4Addr;

fn facts(sessions: usize) -> Facts {
    Facts {
        mtu: 1500,
        rx_ring: 1024,
        largest_ring: 16384,
        load: Load {
            client_sessions: sessions,
            server_sessions: sessions,
            window: 1,
            req_size: 32,
        },
        measured: None,
        measurement_pending: false,
        own_pair: false,
    }
}

fn site() -> engine::config::Site {
    engine::config::Site {
        local: EndpointAddr {
            mac: MacAddr([2, 0, 0, 0, 0, 1]),
            ip: Ipv4Addr::new(10, 0, 0, 1),
            port: 31850,
        },
        rx_ring_entries: 1024,
        sessions: 1,
        verify_ipv4_checksum: true,
        seed: 7,
        secret: None,
    }
}

const MEMIF: Measured = Measured {
    line_gbps: 91.6,
    bdp_gbps: 52.87,
    rtt_us: 16.6,
    rate_from: "train_gbps_mtu",
};

fn with(f: impl FnOnce(&mut TransportConfig)) -> TransportConfig {
    let mut t = TransportConfig::default();
    f(&mut t);
    t
}

fn refused(t: &TransportConfig, f: &Facts) -> KeyError {
    resolve(t, f, &Origins::default()).expect_err("must be refused")
}

#[test]
fn one_default_per_key_the_library_and_the_file_agree() {
    let r = resolve(&TransportConfig::default(), &facts(1), &Origins::default()).unwrap();
    let e = r.endpoint(&site());
    let d = EndpointConfig::default();
    assert_eq!(
        (e.rto, e.scan_interval, e.session_timeout, e.connect_retry),
        (d.rto, d.scan_interval, d.session_timeout, d.connect_retry)
    );
    assert_eq!(
        (
            e.connect_timeout,
            e.idle_timeout,
            e.half_open_timeout,
            e.keepalive_interval
        ),
        (
            d.connect_timeout,
            d.idle_timeout,
            d.half_open_timeout,
            d.keepalive_interval
        )
    );
    assert_eq!(
        (e.req_window, e.max_sessions_per_peer),
        (d.req_window, d.max_sessions_per_peer)
    );
    assert_eq!((e.admission, e.mem), (d.admission, d.mem));
    assert_eq!(
        (e.rto_low, e.link_bps, e.base_rtt),
        (d.rto_low, d.link_bps, d.base_rtt)
    );
    assert_eq!(
        (e.mode, e.on_loss, e.retransmit, e.cc),
        (d.mode, d.on_loss, d.retransmit, d.cc)
    );
    e.validate().unwrap();
}

#[test]
fn credits_per_flow_mode_come_from_one_bdp() {
    let o = Origins::default();
    // Nothing measured: 10 Gb/s x 10 us / 1500 B = 8.3 -> 9.
    let lossless = resolve(&TransportConfig::default(), &facts(1), &o).unwrap();
    assert_eq!((lossless.bdp.packets, lossless.credits()), (9, 9));
    assert_eq!(lossless.bdp.source, Source::Default);
    assert_eq!(lossless.bdp.why, "nothing measured in this run");
    // The same measurement for every mode: lossless = BDP, lossy = 4 x BDP.
    let m = Facts {
        measured: Some(MEMIF),
        ..facts(1)
    };
    let lossless = resolve(&TransportConfig::default(), &m, &o).unwrap();
    let lossy = resolve(&with(|t| t.mode = FlowMode::Lossy), &m, &o).unwrap();
    let pause = resolve(&with(|t| t.mode = FlowMode::Pause), &m, &o).unwrap();
    assert_eq!(lossless.bdp.packets, 74, "52.87 Gb/s x 16.6 us / 1500 B");
    assert_eq!(lossless.credits(), 74);
    assert_eq!(lossy.credits(), 4 * 74);
    assert_eq!(pause.credits(), 4 * 74);
    assert_eq!(lossless.bdp.source, Source::Measured);
    let s = lossless.setting("transport.credits").unwrap();
    assert_eq!(s.source, Source::Derived);
    assert!(
        s.why.contains("1 x BDP") && s.why.contains("measured"),
        "{}",
        s.why
    );
    // The line rate is the stream's, the BDP's rate the trains'.
    assert_eq!(lossless.transport.link_gbps, 91.6);
    assert_eq!(
        lossless.setting("transport.rtt_us").unwrap().source,
        Source::Measured
    );
    // Asked to ignore the measurement: the config's.
    let cfg = resolve(&with(|t| t.bdp = engine::config::BdpSource::Config), &m, &o).unwrap();
    assert_eq!(cfg.credits(), 9);
    // Unbounded and explicit credits.
    let unb = with(|t| {
        t.mode = FlowMode::Lossy;
        t.lossy_credit_multiple = CreditMultiple::Unbounded;
    });
    assert_eq!(resolve(&unb, &m, &o).unwrap().credits(), u16::MAX);
    let given = resolve(&with(|t| t.credits = Some(5)), &m, &o).unwrap();
    assert_eq!(given.credits(), 5);
    assert!(
        given.setting("transport.credits").is_none(),
        "given, not derived"
    );
}

#[test]
fn a_pair_of_our_own_grows_its_ring_lowers_credits_and_raises_its_rto() {
    let t = with(|t| t.req_window = 8);
    let f = Facts {
        own_pair: true,
        measured: Some(MEMIF),
        load: Load {
            client_sessions: 1000,
            server_sessions: 1000,
            window: 8,
            req_size: 32,
        },
        ..facts(1000)
    };
    let r = resolve(&t, &f, &Origins::default()).unwrap();
    // 74 credits x 1000 sessions cannot fit 16384 entries: 16 - 1 = 15.
    assert_eq!((r.rx_ring, r.credits()), (16384, 15));
    assert!(r.credits_clamped);
    assert_eq!(r.setting("link.rx_desc").unwrap().source, Source::Derived);
    // 8 requests x 1000 sessions queue 8000 packets: twice 8 ms.
    assert_eq!(r.transport.rto_us, 16_000);
    assert_eq!(r.transport.session_ring_share_pct, Some(100));
    assert_eq!(r.transport.max_sessions_per_peer, 1000);
    // A given RTO stays.
    let mut o = Origins::default();
    o.set("transport.rto_us", Source::Flag);
    assert_eq!(resolve(&t, &f, &o).unwrap().transport.rto_us, 5000);
    // Not a pair of ours: refused, naming the key.
    let e = refused(
        &t,
        &Facts {
            own_pair: false,
            ..f.clone()
        },
    );
    assert_eq!(e.key, "transport.credits", "{e}");
    // More lossless sessions than the largest ring has entries for two.
    let f9 = Facts {
        load: Load {
            client_sessions: 9000,
            server_sessions: 9000,
            ..f.load
        },
        ..f
    };
    let e = refused(&t, &f9);
    assert_eq!(e.key, "link.rx_desc");
    assert!(e.msg.contains("transport.mode = \"lossy\""), "{e}");
}

#[test]
fn resolution_again_on_its_own_output_is_the_same() {
    // A tool hands its children the resolved config; they resolve it again.
    let f = Facts {
        own_pair: true,
        measured: Some(MEMIF),
        ..facts(4)
    };
    for mode in [FlowMode::Lossless, FlowMode::Lossy, FlowMode::Pause] {
        let r = resolve(&with(|t| t.mode = mode), &f, &Origins::default()).unwrap();
        let child = Facts {
            own_pair: false,
            measured: None,
            rx_ring: r.rx_ring,
            ..f.clone()
        };
        let again = resolve(&r.transport, &child, &Origins::default()).unwrap();
        assert_eq!(again.transport, r.transport, "{mode:?}");
        assert_eq!(again.endpoint(&site()), r.endpoint(&site()), "{mode:?}");
    }
}

#[test]
fn pause_thresholds_follow_the_bdp_and_the_ring() {
    let o = Origins::default();
    let r = resolve(&with(|t| t.mode = FlowMode::Pause), &facts(1), &o).unwrap();
    // 2 x 9 + 32 = 50 entries of headroom; XOFF below it, XON at half.
    let p = r.pause_config();
    assert_eq!((p.headroom, p.xoff, p.xon), (50, 974, 487));
    assert_eq!(p.pause_time, Duration::from_micros(200));
    let small = Facts {
        rx_ring: 32,
        ..facts(1)
    };
    let e = refused(&with(|t| t.mode = FlowMode::Pause), &small);
    assert_eq!(e.key, "transport.pause_headroom");
    assert!(
        e.msg.contains("(2 x the BDP of 9 packets + 32)") && e.msg.contains(">= 52"),
        "{e}"
    );
    let e = refused(
        &with(|t| {
            t.mode = FlowMode::Pause;
            t.pause_xoff = Some(1000);
        }),
        &facts(1),
    );
    assert!(
        e.msg
            .contains("transport.pause_xoff = 1000 must be in 1..=974"),
        "{e}"
    );
}

#[test]
fn every_refusal_names_its_key() {
    let cases: Vec<(TransportConfig, &str)> = vec![
        (with(|t| t.credits = Some(0)), "transport.credits"),
        (with(|t| t.credits = Some(4096)), "transport.credits"),
        (with(|t| t.link_gbps = 0.0), "transport.link_gbps"),
        (with(|t| t.rtt_us = -1.0), "transport.rtt_us"),
        (with(|t| t.req_window = 65), "transport.req_window"),
        (with(|t| t.rto_us = 100), "transport.rto_us"),
        (with(|t| t.scan_us = 0), "transport.scan_us"),
        (
            with(|t| t.session_timeout_ms = 1),
            "transport.session_timeout_ms",
        ),
        (
            with(|t| t.connect_timeout_ms = 0),
            "transport.connect_timeout_ms",
        ),
        (with(|t| t.max_msg_size = 0), "transport.max_msg_size"),
        (
            with(|t| t.max_msg_size = 200_000_000),
            "transport.max_msg_size",
        ),
        (
            with(|t| t.lossy_credit_multiple = CreditMultiple::Factor(0.0)),
            "transport.lossy_credit_multiple",
        ),
        (
            with(|t| {
                t.mode = FlowMode::Lossy;
                t.on_loss = engine::proto::LossPolicy::ResetSession;
            }),
            "transport.on_loss",
        ),
        (with(|t| t.nak = true), "transport.nak"),
        (
            with(|t| {
                t.nak = true;
                t.mode = FlowMode::Lossy;
                t.retransmit = Retransmit::Selective;
            }),
            "transport.nak",
        ),
        (with(|t| t.rto_low_us = Some(5001)), "transport.rto_low_us"),
        (with(|t| t.pause_time_us = 0), "transport.pause_time_us"),
        (
            with(|t| t.rate_cap_gbps = Some(11.0)),
            "transport.rate_cap_gbps",
        ),
        (
            with(|t| t.mem_per_peer_mib = 4),
            "transport.mem_per_peer_mib",
        ),
        (
            with(|t| t.mem_per_worker_mib = 64),
            "transport.mem_per_worker_mib",
        ),
        (
            with(|t| t.reassembly_timeout_ms = 0),
            "transport.reassembly_timeout_ms",
        ),
        (
            with(|t| t.peer_ring_share_pct = Some(0)),
            "transport.peer_ring_share_pct",
        ),
        (
            with(|t| t.cookie_above_pct = 101),
            "transport.cookie_above_pct",
        ),
        (
            with(|t| t.mac_ring_share_pct = Some(0)),
            "transport.mac_ring_share_pct",
        ),
        (
            with(|t| t.ring_reserve_pct = Some(100)),
            "transport.ring_reserve_pct",
        ),
        (
            with(|t| t.max_sessions_per_mac = Some(0)),
            "transport.max_sessions_per_mac",
        ),
        (
            with(|t| t.half_open_timeout_ms = 1000),
            "transport.half_open_timeout_ms",
        ),
    ];
    for (t, key) in cases {
        let e = refused(&t, &facts(1));
        assert_eq!(e.key, key, "{e}");
        assert!(e.msg.contains(key), "{e} does not name {key}");
    }
    // The rate cap waits for a measurement still to come.
    let pending = Facts {
        measurement_pending: true,
        ..facts(1)
    };
    resolve(
        &with(|t| t.rate_cap_gbps = Some(11.0)),
        &pending,
        &Origins::default(),
    )
    .unwrap();
}

fn any_transport() -> impl Strategy<Value = TransportConfig> {
    (
        (0u16..300, any::<bool>()),
        prop_oneof![
            Just(FlowMode::Lossless),
            Just(FlowMode::Lossy),
            Just(FlowMode::Pause)
        ],
        (1u32..=64, 1u64..20_000, 1u64..2_000),
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![
                Just(CcKind::None),
                Just(CcKind::Timely),
                Just(CcKind::Dcqcn),
                Just(CcKind::Nscc)
            ],
        ),
        (0.5f64..400.0, 0.5f64..200.0),
    )
        .prop_map(
            |((c, set), mode, (win, rto, scan), (sel, nak, cc), (gbps, rtt))| {
                with(|t| {
                    t.credits = set.then_some(c);
                    t.mode = mode;
                    t.req_window = win;
                    t.rto_us = rto;
                    t.scan_us = scan;
                    t.retransmit = if sel {
                        Retransmit::Selective
                    } else {
                        Retransmit::GoBackN
                    };
                    t.nak = nak;
                    t.cc = cc;
                    t.link_gbps = gbps;
                    t.rtt_us = rtt;
                })
            },
        )
}

proptest! {
    /// The contract: whatever resolves, the protocol core accepts; whatever
    /// is refused names a key.
    #[test]
    fn what_resolves_the_endpoint_accepts(t in any_transport(), sessions in 1usize..64, own in any::<bool>()) {
        let f = Facts { own_pair: own, ..facts(sessions) };
        match resolve(&t, &f, &Origins::default()) {
            Ok(r) => {
                let s = engine::config::Site { rx_ring_entries: r.rx_ring, ..site() };
                let e = r.endpoint(&s);
                prop_assert!(e.validate().is_ok(), "{:?}", e.validate());
            }
            Err(e) => prop_assert!(e.msg.contains(&e.key), "{e}"),
        }
    }
}

/// The `[transport]` defaults and the protocol core's are one set: a
/// default config builds the engine's default endpoint, but for what the
/// site gives and the BDP the config's rate and round trip give.
#[test]
fn the_configs_defaults_build_the_engines_default_endpoint() {
    let s = site();
    let e = TransportConfig::default().endpoint(1500, &s);
    // 10 Gb/s x 10 us of 1500-byte frames.
    assert_eq!(e.session_credits, 9);
    let want = EndpointConfig {
        local: s.local,
        rx_ring_entries: s.rx_ring_entries,
        verify_ipv4_checksum: s.verify_ipv4_checksum,
        seed: s.seed,
        session_credits: 9,
        ..EndpointConfig::default()
    };
    assert_eq!(e, want);
    // The short RTO as resolution derives it: the engine's, at most the RTO.
    let t = TransportConfig {
        rto_us: 300,
        scan_us: 100,
        ..TransportConfig::default()
    };
    assert_eq!(t.rto_low(), Duration::from_micros(300));
    assert_eq!(
        TransportConfig::default().rto_low(),
        Duration::from_micros(500)
    );
}

/// The per-MAC limits and the newcomers' reserve: the engine's defaults
/// when unset, at least one address's limits and never cutting one
/// address below its share, and what a file sets when set.
#[test]
fn mac_limits_and_the_reserve_follow_the_address_limits_unless_set() {
    let a = TransportConfig::default().admission();
    assert_eq!(
        (
            a.mac_ring_share_pct,
            a.ring_reserve_pct,
            a.max_sessions_per_mac
        ),
        (25, 25, 256)
    );
    let trusted = with(|t| {
        t.peer_ring_share_pct = Some(100);
        t.max_sessions_per_peer = 20_000;
    })
    .admission();
    assert_eq!(
        (
            trusted.mac_ring_share_pct,
            trusted.ring_reserve_pct,
            trusted.max_sessions_per_mac
        ),
        (100, 0, 20_000)
    );
    let set = with(|t| {
        t.peer_ring_share_pct = Some(60);
        t.mac_ring_share_pct = Some(50);
        t.ring_reserve_pct = Some(10);
        t.max_sessions_per_mac = Some(64);
    })
    .admission();
    assert_eq!(
        (
            set.mac_ring_share_pct,
            set.ring_reserve_pct,
            set.max_sessions_per_mac
        ),
        (50, 10, 64)
    );
    // Unset, the reserve leaves a 60 % address its share.
    assert_eq!(
        with(|t| t.peer_ring_share_pct = Some(60))
            .admission()
            .ring_reserve_pct,
        25
    );
    assert_eq!(
        with(|t| t.peer_ring_share_pct = Some(80))
            .admission()
            .ring_reserve_pct,
        20
    );
}
