//! Paths through the fabric: a fat tree carries a flow on one path under
//! ECMP and on all of them when sprayed; failed links never carry a
//! packet; REPS moves load off degraded links where oblivious spraying
//! does not; larger frames work; the same seed gives the same result; and
//! `rpc-lab` refuses bad topology and path settings naming the flag.

use engine::time::Instant;
use lab::fabric::scenario::{build, Flow, Scenario, ScenarioSpec, Workload};
use lab::fabric::topology::{Topology, TopologyKind};
use lab::fabric::{run_regime, FabricConfig, FabricRegime, PathSelection, RegimeResult};
use std::process::Command;

fn run(w: &Workload, r: FabricRegime, cfg: &FabricConfig, seed: u64) -> RegimeResult {
    let mut res = run_regime(w, r, cfg, seed, &mut |_| {}).unwrap();
    res.wall_secs = 0.0; // the one field that is not a function of the inputs
    assert_eq!(res.completed, res.flows, "{res:?}");
    assert_eq!(res.drops_unroutable, 0);
    res
}

fn with(sel: PathSelection) -> FabricConfig {
    FabricConfig {
        path_selection: Some(sel),
        ..FabricConfig::default()
    }
}

/// A permutation of `bytes` per host on the smallest fat tree of `hosts`.
fn fat_permutation(hosts: usize, bytes: u64, seed: u64) -> Workload {
    let mut s = ScenarioSpec::new(Scenario::Permutation, seed);
    s.hosts = Some(hosts);
    s.flow_size = Some(bytes);
    s.topology = Some(TopologyKind::FatTree);
    build(&s).unwrap()
}

#[test]
fn ecmp_keeps_a_flow_on_one_path_and_spraying_uses_them_all() {
    // One 1 MB flow across a 16-host fat tree (k = 4): its requests go up
    // one of host 0's ToR uplinks, its answers up one of host 15's.
    let w = Workload {
        topology: Topology::FatTree { k: 4 },
        host_link_bps: 100_000_000_000,
        fabric_link_bps: 100_000_000_000,
        flows: vec![Flow {
            src: 0,
            dst: 15,
            size: 1 << 20,
            start: Instant::ZERO,
            victim: false,
        }],
        slow_host: None,
        background: false,
    };
    let ecmp = run(&w, FabricRegime::Irn, &with(PathSelection::Ecmp), 1);
    assert_eq!(ecmp.uplinks_used, 2, "{ecmp:?}");
    assert_eq!(ecmp.sacks, 0, "one path: nothing out of order");
    for sel in [PathSelection::Oblivious, PathSelection::Reps] {
        let r = run(&w, FabricRegime::Srd, &with(sel), 1);
        assert_eq!(r.uplinks_used, 4, "{sel:?}: {r:?}");
    }
    // The regime's own choice (ECMP for irn) is `None`'s.
    assert_eq!(
        run(&w, FabricRegime::Irn, &FabricConfig::default(), 1),
        ecmp
    );
}

#[test]
fn failed_links_never_carry_a_packet() {
    // 32 hosts on 4 leaves x 4 spines: 16 leaf uplinks, of which the first
    // 3 (leaf 0 to spines 0-2) fail; sprayed packets use all the others.
    let mut s = ScenarioSpec::new(Scenario::Permutation, 3);
    s.hosts = Some(32);
    let w = build(&s).unwrap();
    let mut cfg = with(PathSelection::Oblivious);
    let healthy = run(&w, FabricRegime::Srd, &cfg, 3);
    assert_eq!(healthy.uplinks_used, 16);
    cfg.failed_links = 3;
    let r = run(&w, FabricRegime::Srd, &cfg, 3);
    assert_eq!(r.uplinks_used, 13, "{r:?}");
    // A fat tree whose aggregation switch 0 lost its core links still
    // delivers every flow, none unroutable (checked in `run`).
    let w = fat_permutation(16, 256 << 10, 3);
    cfg.failed_links = 2;
    run(&w, FabricRegime::Irn, &cfg, 3);
    // Four failures cut pod 0 off from the core: refused.
    cfg.failed_links = 4;
    let e = run_regime(&w, FabricRegime::Irn, &cfg, 3, &mut |_| {}).unwrap_err();
    assert!(e.contains("--failed-links 4 cuts"), "{e}");
}

#[test]
fn reps_moves_load_off_degraded_links_and_oblivious_spraying_does_not() {
    // 128 hosts (k = 8), 1 MB each; aggregation switch 0 of pod 0 takes
    // its four core links at 10 % (htsim's -failed 4). Oblivious spraying
    // keeps sending a quarter of pod 0's traffic down them; REPS recycles
    // the entropies that came back unmarked, and those of slow paths come
    // back late or not at all.
    let w = fat_permutation(128, 1 << 20, 1);
    let degraded = |sel| FabricConfig {
        degraded_links: 4,
        degraded_fraction: 0.1,
        ..with(sel)
    };
    let obl = run(
        &w,
        FabricRegime::Srd,
        &degraded(PathSelection::Oblivious),
        1,
    );
    let reps = run(&w, FabricRegime::Srd, &degraded(PathSelection::Reps), 1);
    let healthy = run(&w, FabricRegime::Srd, &with(PathSelection::Oblivious), 1);
    assert!(
        obl.fct_us.p99 > 3.0 * healthy.fct_us.p99,
        "the degraded links hurt: {} vs {}",
        obl.fct_us.p99,
        healthy.fct_us.p99
    );
    assert!(
        reps.fct_us.p99 < 0.8 * obl.fct_us.p99,
        "REPS {} vs oblivious {}",
        reps.fct_us.p99,
        obl.fct_us.p99
    );
}

#[test]
fn same_seed_same_result_on_a_fat_tree_with_reps_and_degraded_links() {
    let cfg = FabricConfig {
        degraded_links: 2,
        failed_links: 1,
        ..with(PathSelection::Reps)
    };
    let a = run(
        &fat_permutation(16, 256 << 10, 5),
        FabricRegime::Srd,
        &cfg,
        5,
    );
    let b = run(
        &fat_permutation(16, 256 << 10, 5),
        FabricRegime::Srd,
        &cfg,
        5,
    );
    assert_eq!(a, b);
    let c = run(
        &fat_permutation(16, 256 << 10, 6),
        FabricRegime::Srd,
        &cfg,
        6,
    );
    assert_ne!(a, c);
}

#[test]
fn four_kib_frames_carry_a_flow_in_fewer_packets() {
    let w = fat_permutation(16, 1 << 20, 2);
    let small = run(&w, FabricRegime::Irn, &FabricConfig::default(), 2);
    let big = FabricConfig {
        mtu: 4136, // 4,150-byte frames, uet-htsim's packet size
        ..FabricConfig::default()
    };
    let big = run(&w, FabricRegime::Irn, &big, 2);
    // 2.8 times the payload per frame; answers and credits shrink alike.
    let ratio = small.sim_pkts as f64 / big.sim_pkts as f64;
    assert!((2.3..3.0).contains(&ratio), "{ratio}: {small:?} {big:?}");
}

fn rpc_lab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rpc-lab"))
        .args(args)
        .output()
        .expect("run rpc-lab")
}

#[test]
fn rpc_lab_gives_the_same_bytes_for_the_same_seed_on_a_fat_tree() {
    let args = [
        "--scenario",
        "permutation",
        "--hosts",
        "16",
        "--flow-size",
        "100000",
        "--topology",
        "fat-tree",
        "--path-selection",
        "reps",
        "--degraded-links",
        "2",
        "--failed-links",
        "1",
        "--mtu",
        "4136",
        "--regimes",
        "srd,irn",
        "--json",
        "-q",
    ];
    // The results, without the stamp (time, commit) around them.
    let results = || {
        let out = rpc_lab(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["config"]["path_selection"], "reps");
        v["results"].to_string()
    };
    let a = results();
    assert!(a.contains("\"completed\":16"), "{a}");
    assert_eq!(a, results());
}

#[test]
fn bad_paths_settings_are_errors_naming_the_flag() {
    let base = ["--regimes", "irn"];
    for (extra, want) in [
        (&["--path-selection", "adaptive"][..], "--path-selection"),
        (&["--topology", "torus"][..], "--topology"),
        (
            &["--degraded-fraction", "0"][..],
            "--degraded-fraction 0 outside (0, 1]",
        ),
        (
            &["--degraded-fraction", "1.5"][..],
            "--degraded-fraction 1.5",
        ),
        (&["--failed-links", "100"][..], "--failed-links 100"),
        (&["--mtu", "100"][..], "--mtu 100"),
        (
            &["--topology", "fat-tree:4x2"][..],
            "only leaf-spine takes a shape",
        ),
        (
            &["--topology", "leaf-spine:0x8"][..],
            "leaf-spine:HOSTSxSPINES",
        ),
        (
            &["--topology", "leaf-spine:32"][..],
            "leaf-spine:HOSTSxSPINES",
        ),
        (
            &["--scenario", "victim", "--topology", "leaf-spine:4x2"][..],
            "--topology leaf-spine cannot be set",
        ),
        (
            &["--scenario", "victim", "--topology", "fat-tree"][..],
            "--topology fat-tree",
        ),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        if !extra.contains(&"--scenario") {
            args.extend(["--scenario", "permutation", "--hosts", "16"]);
        }
        args.extend_from_slice(extra);
        let out = rpc_lab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // The -c file's keys are the flags' names in snake case.
    let dir = std::env::temp_dir().join(format!("rpc-lab-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("paths.toml");
    std::fs::write(&file, "path_selection = \"bogus\"\n").unwrap();
    let out = rpc_lab(&["-c", file.to_str().unwrap(), "--scenario", "permutation"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--path-selection"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn uec_takes_no_reordering_for_loss_where_srd_does() {
    // A 16-host fat-tree permutation of 2 MB under REPS: sprayed packets
    // reorder. srd's rule (three later Sacks and a reordering window)
    // resends packets that were only late; uec's takes a hole as lost only
    // when a trim's NACK or a timeout says so (uet-htsim's default).
    let w = fat_permutation(16, 2_000_000, 1);
    let cfg = with(PathSelection::Reps);
    let srd = run(&w, FabricRegime::Srd, &cfg, 1);
    let uec = run(&w, FabricRegime::Uec, &cfg, 1);
    assert!(srd.spurious_retransmits > 0, "{srd:?}");
    assert_eq!(uec.spurious_retransmits, 0, "{uec:?}");
}

#[test]
fn a_leaf_spine_takes_the_shape_asked_for() {
    // uet-htsim's `-topo` leaf-spines, in small: 8 hosts and 2 uplinks
    // per leaf (4:1), in place of the scenario's own shape.
    let mut s = ScenarioSpec::new(Scenario::Permutation, 1);
    s.hosts = Some(32);
    s.topology = Some(TopologyKind::LeafSpine);
    s.leaf_shape = Some((8, 2));
    let w = build(&s).unwrap();
    let want = Topology::LeafSpine {
        leaves: 4,
        hosts_per_leaf: 8,
        spines: 2,
    };
    assert_eq!(w.topology, want);
    // Fewer uplinks per leaf: a cross-leaf permutation takes longer (573
    // against 390 us on this seed).
    s.leaf_shape = Some((8, 8));
    let full = run(
        &build(&s).unwrap(),
        FabricRegime::Irn,
        &FabricConfig::default(),
        1,
    );
    let over = run(&w, FabricRegime::Irn, &FabricConfig::default(), 1);
    assert!(
        over.fct_us.p99 > 1.3 * full.fct_us.p99,
        "{} vs {}",
        over.fct_us.p99,
        full.fct_us.p99
    );
}
