//! Go-back-N with NAKs (`EndpointConfig::nak`) on the in-memory link: a
//! loss is repaired within round trips instead of after the 5 ms timeout,
//! each gap is NAKed once, and the knob is refused where it means nothing.

use crate::proto_common::*;
use engine::fault::DropModel;
use engine::proto::{EndpointConfig, FlowMode, Retransmit};
use engine::sim::ChannelConfig;
use engine::time::Duration;

fn lossy(i: u8, nak: bool) -> EndpointConfig {
    EndpointConfig {
        mode: FlowMode::Lossy,
        session_credits: 32,
        nak,
        ..cfg(i)
    }
}

/// Runs 40 requests of 64 KiB over a link losing 2 % of frames each way;
/// returns the virtual time they took and the pair.
fn run(nak: bool) -> (Duration, Pair) {
    let link = ChannelConfig {
        delay: Duration::from_micros(5),
        drop: DropModel::Uniform { p: 0.02 },
        ..Default::default()
    };
    let mut p = Pair::new(11, link, lossy(1, nak), lossy(2, nak));
    p.app.resp_len = Some(|_| 4096);
    let s = p.session;
    let start = p.sim.now();
    for tag in 0..40 {
        p.app.send(&mut p.sim, CLIENT, s, tag, 64 << 10);
    }
    p.run_idle(Duration::from_secs(30));
    assert_eq!(p.app.completed.len(), 40, "failed: {:?}", p.app.failed);
    p.check_clean();
    (p.sim.now().saturating_since(start), p)
}

#[test]
fn a_nak_repairs_a_loss_in_round_trips_not_a_timeout() {
    let (with, p) = run(true);
    let (without, q) = run(false);
    let (c, s) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert!(s.naks_sent > 0 && c.nak_rollbacks > 0, "{s:?} {c:?}");
    assert_eq!(q.sim.ep(SERVER).stats().naks_sent, 0);
    assert_eq!(q.sim.ep(CLIENT).stats().nak_rollbacks, 0);
    // Without NAKs every hole waits out the 5 ms timeout; with them only
    // the losses no later packet reveals (a window's tail) do.
    assert!(
        with.as_nanos() * 3 < without.as_nanos(),
        "with NAKs {with:?}, without {without:?}"
    );
    assert!(c.nak_rollbacks < c.rollbacks + 1 && c.rollbacks > 0);
}

#[test]
fn each_gap_is_naked_once() {
    let (_, p) = run(true);
    // A gap opens only where a request packet was lost, and a lost resend
    // reopens the same gap, which is not NAKed again: NAKs never outnumber
    // the request-path losses.
    let lost = p.sim.link_stats(CLIENT, SERVER).dropped_loss;
    let naks = p.sim.ep(SERVER).stats().naks_sent;
    assert!(naks > 0 && naks <= lost, "{naks} NAKs for {lost} losses");
}

#[test]
fn nak_is_refused_where_it_means_nothing() {
    let selective = EndpointConfig {
        retransmit: Retransmit::Selective,
        ..lossy(1, true)
    };
    let e = selective.validate().unwrap_err().to_string();
    assert!(e.contains("nak") && e.contains("selective"), "{e}");
    let lossless = EndpointConfig {
        nak: true,
        ..cfg(1)
    };
    let e = lossless.validate().unwrap_err().to_string();
    assert!(e.contains("nak") && e.contains("lossless"), "{e}");
}
