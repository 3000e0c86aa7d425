//! The regimes `uec` and `uec-rccc`: a 16-to-1 incast of 1 MB flows.
//! RCCC's receiver paces the credits it returns, so its senders together
//! keep about 1.5 windows in the network instead of 16: the receiver's
//! switch port queues less (a quarter of the ECN marks, which `uec` sets
//! from 0.2 to 0.8 BDP of queue: 2,356 against 9,712 on this seed, and
//! about half the trims above one BDP: 3,118 against 5,985), every flow
//! completes, and one seed gives one result. Not (yet) sooner: the last
//! flow ends at 1,814 us against `uec`'s 1,435, as the first windows'
//! trimmed packets wait on the credit pacer (docs/fabric.md).

use lab::fabric::scenario::{build, Scenario, ScenarioSpec};
use lab::fabric::{run_regime, FabricConfig, FabricRegime, RegimeResult};

fn incast(r: FabricRegime) -> RegimeResult {
    let mut spec = ScenarioSpec::new(Scenario::Incast, 7);
    spec.hosts = Some(16);
    spec.flow_size = Some(1_000_000);
    let w = build(&spec).unwrap();
    let mut res = run_regime(&w, r, &FabricConfig::default(), 7, &mut |_| {}).unwrap();
    res.wall_secs = 0.0; // the one field that is not a function of the inputs
    res
}

#[test]
fn rccc_keeps_the_incast_queue_short_at_the_same_goodput() {
    let uec = incast(FabricRegime::Uec);
    let rccc = incast(FabricRegime::UecRccc);
    for r in [&uec, &rccc] {
        assert_eq!((r.completed, r.failed, r.unfinished), (16, 0, 0), "{r:?}");
        assert_eq!(r.drops_switch, 0, "{r:?}");
    }
    assert!(
        rccc.ecn_marks * 3 < uec.ecn_marks,
        "marks: uec-rccc {} vs uec {}",
        rccc.ecn_marks,
        uec.ecn_marks
    );
    assert!(
        rccc.trims * 3 < uec.trims * 2,
        "trims: uec-rccc {} vs uec {}",
        rccc.trims,
        uec.trims
    );
    assert_eq!(
        rccc,
        incast(FabricRegime::UecRccc),
        "same seed, same result"
    );
}
