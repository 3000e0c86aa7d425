//! Scenarios: each named experiment turns a [`ScenarioSpec`] (its name, a
//! few optional overrides and a seed) into a [`Workload`]: the topology,
//! link rates, and the list of flows to run, in start order. Everything is
//! derived from the spec alone, so a seed fixes the workload.

use super::cdf::{self, SizeCdf};
use super::matrix;
use super::topology::{Topology, TopologyKind};

use engine::rng::Rng;
use engine::time::{Duration, Instant};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;

/// 100 Gb/s, the default host link rate.
const G100: u64 = 100_000_000_000;
/// 400 Gb/s, the leaf-spine link rate where the fabric is faster than hosts.
const G400: u64 = 400_000_000_000;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
/// Largest `flow_size` accepted: 1 TiB, far beyond any useful run, but keeps
/// bit counts (`size * 8`) and byte totals well inside `u64`.
const MAX_FLOW_SIZE: u64 = 1 << 40;
/// Largest `flows` accepted for the Poisson workloads, so a typo cannot
/// allocate gigabytes of flows.
const MAX_FLOWS: usize = 10_000_000;

/// A named experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// N synchronized senders, one receiver, on one switch.
    Incast,
    /// An incast on a leaf-spine fabric plus one flow that shares its
    /// uplinks but not its congested port.
    Victim,
    /// One receiver that drains slower than line rate, and background flows
    /// that never touch it (do pauses spread to them?).
    SlowReceiver,
    /// Poisson arrivals with web-search flow sizes on a leaf-spine fabric.
    WebSearch,
    /// Poisson arrivals with Facebook Hadoop flow sizes on a leaf-spine
    /// fabric.
    Hadoop,
    /// Every host sends one flow to another, by a random derangement.
    Permutation,
    /// Every host sends one flow to every other host, on one switch.
    AllToAll,
    /// The connections of a uet-htsim connection matrix file
    /// ([`ScenarioSpec::matrix`], `matrix.rs`).
    Matrix,
}

impl Scenario {
    /// Every scenario, in the order they are listed to users.
    pub const ALL: [Scenario; 8] = [
        Scenario::Incast,
        Scenario::Victim,
        Scenario::SlowReceiver,
        Scenario::WebSearch,
        Scenario::Hadoop,
        Scenario::Permutation,
        Scenario::AllToAll,
        Scenario::Matrix,
    ];

    /// The scenario's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Incast => "incast",
            Scenario::Victim => "victim",
            Scenario::SlowReceiver => "slow-receiver",
            Scenario::WebSearch => "websearch",
            Scenario::Hadoop => "hadoop",
            Scenario::Permutation => "permutation",
            Scenario::AllToAll => "alltoall",
            Scenario::Matrix => "matrix",
        }
    }

    /// The scenario named `s` (as [`Scenario::name`] spells it); the error
    /// lists the valid names.
    pub fn from_name(s: &str) -> Result<Scenario, String> {
        Scenario::ALL
            .into_iter()
            .find(|sc| sc.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Scenario::ALL.iter().map(|sc| sc.name()).collect();
                format!("unknown scenario {s:?}; valid: {}", names.join(", "))
            })
    }
}

/// What to build: a scenario, overrides of its defaults (`None` keeps the
/// default; an override the scenario has no use for is an error), and the
/// seed every random choice derives from.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioSpec {
    /// The experiment.
    pub scenario: Scenario,
    /// Host count: senders for incast, all hosts otherwise.
    pub hosts: Option<usize>,
    /// Offered load per host link, in (0, 1] (Poisson workloads).
    pub load: Option<f64>,
    /// Bytes per flow (scenarios with fixed-size flows).
    pub flow_size: Option<u64>,
    /// Total flows (Poisson workloads).
    pub flows: Option<usize>,
    /// Per-frame service time of the receiver (incast's host 0, the slow
    /// host of slow-receiver): one frame taken from its ring per this time.
    pub service: Option<Duration>,
    /// The kind of fabric to run on instead of the scenario's own
    /// (`--topology`): the smallest of that kind holding the scenario's
    /// hosts (extra hosts stay idle).
    pub topology: Option<TopologyKind>,
    /// A leaf-spine's hosts per leaf and spines (`--topology
    /// leaf-spine:HxS`; uet-htsim's 2-tier `-topo` files).
    pub leaf_shape: Option<(usize, usize)>,
    /// The connection matrix file (scenario `matrix` only).
    pub matrix: Option<PathBuf>,
    /// Seed for every random choice.
    pub seed: u64,
}

impl ScenarioSpec {
    /// `scenario` with all defaults and `seed`.
    pub fn new(scenario: Scenario, seed: u64) -> ScenarioSpec {
        ScenarioSpec {
            scenario,
            hosts: None,
            load: None,
            flow_size: None,
            flows: None,
            service: None,
            topology: None,
            leaf_shape: None,
            matrix: None,
            seed,
        }
    }
}

/// One flow to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    /// Sending host.
    pub src: usize,
    /// Receiving host (never `src`).
    pub dst: usize,
    /// Bytes to move (at least 1; not capped: the core splits large flows).
    pub size: u64,
    /// When the sender starts.
    pub start: Instant,
    /// Whether the scenario watches this flow for collateral damage.
    pub victim: bool,
}

/// A scenario made concrete: where flows run and what they are.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// The fabric's shape.
    pub topology: Topology,
    /// Rate of host-to-switch links, in bits per second.
    pub host_link_bps: u64,
    /// Rate of switch-to-switch links, in bits per second (equal to
    /// `host_link_bps` on a star, which has none).
    pub fabric_link_bps: u64,
    /// The flows, sorted by start time (ties keep a fixed order).
    pub flows: Vec<Flow>,
    /// A host whose receive ring drains one packet per the given service
    /// time, slower than its link.
    pub slow_host: Option<(usize, Duration)>,
    /// Whether some flows are background traffic, there to show whether
    /// congestion elsewhere spreads to them.
    pub background: bool,
}

/// Builds the workload of `spec`: validates the overrides and returns a
/// clear error for any out of range or not used by the scenario.
pub fn build(spec: &ScenarioSpec) -> Result<Workload, String> {
    let mut w = match spec.scenario {
        Scenario::Incast => incast(spec)?,
        Scenario::Victim => victim(spec)?,
        Scenario::SlowReceiver => slow_receiver(spec)?,
        Scenario::WebSearch => poisson(spec, &cdf::websearch(), 2000)?,
        Scenario::Hadoop => poisson(spec, &cdf::hadoop(), 4000)?,
        Scenario::Permutation => permutation(spec)?,
        Scenario::AllToAll => all_to_all(spec)?,
        Scenario::Matrix => from_matrix(spec)?,
    };
    w.topology = placed(spec, w.topology)?;
    Ok(w)
}

/// The scenario's topology `own`, or one of the kind `spec.topology`
/// names with at least as many hosts: a star; leaf-spine with 8 hosts per
/// leaf and 4 spines; a fat tree as uet-htsim sizes one. Victim and
/// slow-receiver are about their own shape and keep it.
fn placed(spec: &ScenarioSpec, own: Topology) -> Result<Topology, String> {
    let hosts = own.hosts();
    let own_shape = matches!(spec.scenario, Scenario::Victim | Scenario::SlowReceiver);
    let t = match spec.topology {
        Some(TopologyKind::LeafSpine) if spec.leaf_shape.is_some() && !own_shape => {
            let (per_leaf, spines) = spec.leaf_shape.unwrap_or_default();
            Topology::LeafSpine {
                leaves: hosts.div_ceil(per_leaf.max(1)),
                hosts_per_leaf: per_leaf,
                spines,
            }
        }
        None => own,
        Some(k) if own_shape && (k != own.kind() || spec.leaf_shape.is_some()) => {
            return Err(format!(
                "{}: --topology {} cannot be set: the scenario runs on its own {}",
                spec.scenario.name(),
                k.name(),
                own.kind().name()
            ))
        }
        Some(k) if k == own.kind() => own,
        Some(TopologyKind::Star) => Topology::Star { hosts },
        Some(TopologyKind::LeafSpine) => Topology::LeafSpine {
            leaves: hosts.div_ceil(8),
            hosts_per_leaf: 8,
            spines: 4,
        },
        Some(TopologyKind::FatTree) => Topology::fat_tree_for(hosts),
    };
    validated(spec, t)
}

/// `t` if it passes [`Topology::validate`], whose error is prefixed with the
/// scenario's name like every other error here.
fn validated(spec: &ScenarioSpec, t: Topology) -> Result<Topology, String> {
    t.validate()
        .map_err(|e| format!("{}: {e}", spec.scenario.name()))?;
    Ok(t)
}

/// Rejects the overrides `spec.scenario` does not use, named in `used`.
fn only(spec: &ScenarioSpec, used: &[&str]) -> Result<(), String> {
    let given = [
        ("hosts", spec.hosts.is_some()),
        ("load", spec.load.is_some()),
        ("flow_size", spec.flow_size.is_some()),
        ("flows", spec.flows.is_some()),
        ("service", spec.service.is_some()),
        ("matrix", spec.matrix.is_some()),
    ];
    for (name, set) in given {
        if set && !used.contains(&name) {
            return Err(format!(
                "{}: `{name}` cannot be set for this scenario",
                spec.scenario.name()
            ));
        }
    }
    Ok(())
}

/// `spec.flow_size` or `default`, checked to lie in `1..=MAX_FLOW_SIZE`.
fn flow_size(spec: &ScenarioSpec, default: u64) -> Result<u64, String> {
    let size = spec.flow_size.unwrap_or(default);
    if !(1..=MAX_FLOW_SIZE).contains(&size) {
        return Err(format!(
            "{}: flow_size must be 1..={MAX_FLOW_SIZE} bytes, got {size}",
            spec.scenario.name()
        ));
    }
    Ok(size)
}

/// The receiver's service time, if set: more than zero, at most 1 s.
fn service(spec: &ScenarioSpec) -> Result<Option<Duration>, String> {
    match spec.service {
        Some(d) if d.as_nanos() == 0 || d.as_nanos() > 1_000_000_000 => Err(format!(
            "{}: service must be 1 ns..=1 s per frame, got {} ns",
            spec.scenario.name(),
            d.as_nanos()
        )),
        other => Ok(other),
    }
}

/// A seed for the random stream `stream` of a run seeded `seed`, so that
/// streams (e.g. one per host) are independent of each other and of how
/// many values the others draw.
fn sub_seed(seed: u64, stream: u64) -> u64 {
    Rng::new(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93)).next_u64()
}

/// A flow starting at time zero.
fn at_zero(src: usize, dst: usize, size: u64) -> Flow {
    Flow {
        src,
        dst,
        size,
        start: Instant::ZERO,
        victim: false,
    }
}

/// N senders (hosts 1..=N) to host 0 on one switch, all at time zero;
/// `flows` of them per sender (default 1), queued on one session, so one
/// sender with many flows is a window-limited stream (the calibration pair).
fn incast(spec: &ScenarioSpec) -> Result<Workload, String> {
    only(spec, &["hosts", "flow_size", "flows", "service"])?;
    let senders = spec.hosts.unwrap_or(32);
    if !(1..=256).contains(&senders) {
        return Err(format!(
            "incast: hosts (senders) must be 1..=256, got {senders}"
        ));
    }
    // 32 x 256 KiB = 8 MiB at once: twice what a lossy switch's dynamic
    // threshold lets one port queue (about half of 33 x 256 KiB), so
    // the regimes that do not hold senders back must drop.
    let size = flow_size(spec, 256 * KIB)?;
    let per_sender = spec.flows.unwrap_or(1);
    if !(1..=100_000).contains(&per_sender) {
        return Err(format!(
            "incast: flows (per sender) must be 1..=100000, got {per_sender}"
        ));
    }
    Ok(Workload {
        topology: Topology::Star { hosts: senders + 1 },
        host_link_bps: G100,
        fabric_link_bps: G100,
        flows: (0..per_sender)
            .flat_map(|_| (1..=senders).map(move |src| at_zero(src, 0, size)))
            .collect(),
        slow_host: service(spec)?.map(|d| (0, d)),
        background: false,
    })
}

/// Hosts 0-2 to host 4 across a one-spine fabric, plus victim 3 to 5.
fn victim(spec: &ScenarioSpec) -> Result<Workload, String> {
    only(spec, &["flow_size"])?;
    let size = flow_size(spec, 4 * MIB)?;
    // Hosts 0-3 on leaf 0, 4-7 on leaf 1, one spine: every leaf-0 to leaf-1
    // flow shares leaf 0's uplink and the spine's port to leaf 1.
    let mut flows: Vec<Flow> = (0..3).map(|src| at_zero(src, 4, size)).collect();
    flows.push(Flow {
        victim: true,
        ..at_zero(3, 5, MIB)
    });
    Ok(Workload {
        topology: Topology::LeafSpine {
            leaves: 2,
            hosts_per_leaf: 4,
            spines: 1,
        },
        host_link_bps: G100,
        fabric_link_bps: G400,
        flows,
        slow_host: None,
        background: false,
    })
}

/// Two senders into slow host 4, and background flows around it.
fn slow_receiver(spec: &ScenarioSpec) -> Result<Workload, String> {
    only(spec, &["flow_size", "service"])?;
    let size = flow_size(spec, MIB)?;
    // Hosts 0 and 1 (leaf 0) overrun host 4 (leaf 1). The background flows
    // avoid host 4 and each other's NICs, and cover every place a pause
    // could reach: leaf 0 to leaf 1 (through the spines, like the slow
    // traffic), within leaf 0 (where the slow senders sit), within leaf 1
    // (where the slow receiver sits), and leaf 1 to leaf 0 (the reverse
    // direction).
    let flows = vec![
        at_zero(0, 4, size),
        at_zero(1, 4, size),
        at_zero(2, 5, size),
        at_zero(3, 0, size),
        at_zero(6, 7, size),
        at_zero(5, 1, size),
    ];
    Ok(Workload {
        topology: Topology::LeafSpine {
            leaves: 2,
            hosts_per_leaf: 4,
            spines: 2,
        },
        host_link_bps: G100,
        fabric_link_bps: G100,
        flows,
        // One packet per microsecond: about 12 Gb/s at 1.5 kB, an eighth of
        // the link.
        slow_host: Some((4, service(spec)?.unwrap_or(Duration::from_nanos(1000)))),
        background: true,
    })
}

/// Web search or Hadoop: each host starts flows as a Poisson process whose
/// rate offers `load` of its link on average, to a uniformly random other
/// host, with sizes from `sizes`; `default_flows` flows in all.
fn poisson(spec: &ScenarioSpec, sizes: &SizeCdf, default_flows: usize) -> Result<Workload, String> {
    only(spec, &["hosts", "load", "flows"])?;
    let name = spec.scenario.name();
    let hosts = spec.hosts.unwrap_or(64);
    if hosts < 16 || !hosts.is_multiple_of(16) {
        return Err(format!(
            "{name}: hosts must be a positive multiple of 16 (16 per leaf), got {hosts}"
        ));
    }
    let load = spec.load.unwrap_or(0.5);
    // Written so that NaN fails too.
    if !(load > 0.0 && load <= 1.0) {
        return Err(format!("{name}: load must be in (0, 1], got {load}"));
    }
    let total = spec.flows.unwrap_or(default_flows);
    if !(1..=MAX_FLOWS).contains(&total) {
        return Err(format!(
            "{name}: flows must be 1..={MAX_FLOWS}, got {total}"
        ));
    }
    // Validated before allocating per-host state, so a huge `hosts` is an
    // error rather than an allocation failure.
    let topology = validated(
        spec,
        Topology::LeafSpine {
            leaves: hosts / 16,
            hosts_per_leaf: 16,
            spines: 4,
        },
    )?;

    // Flows per nanosecond per host: load * link bytes/ns / mean bytes.
    let rate_per_ns = load * (G100 as f64 / 8.0 / 1e9) / sizes.mean();
    if !(rate_per_ns.is_finite() && rate_per_ns > 0.0) {
        return Err(format!(
            "{name}: the size distribution has no positive mean"
        ));
    }
    // One random stream per host, so a host's flows depend only on the seed
    // and the host, and the streams are merged in time order by a heap
    // keyed by (next start, host): ties go to the lower host.
    let mut rngs: Vec<Rng> = (0..hosts)
        .map(|h| Rng::new(sub_seed(spec.seed, h as u64)))
        .collect();
    let mut clocks: Vec<f64> = rngs
        .iter_mut()
        .map(|r| exponential(r, rate_per_ns))
        .collect();
    let mut next: BinaryHeap<_> = clocks
        .iter()
        .enumerate()
        .map(|(h, &t)| Reverse((t.round() as u64, h)))
        .collect();
    let mut flows = Vec::with_capacity(total);
    while flows.len() < total {
        let Some(Reverse((start, src))) = next.pop() else {
            break;
        };
        let rng = &mut rngs[src];
        // Uniform among the other hosts: draw from hosts - 1 and skip `src`.
        let mut dst = rng.below(hosts as u64 - 1) as usize;
        if dst >= src {
            dst += 1;
        }
        let size = sizes.sample(rng);
        flows.push(Flow {
            src,
            dst,
            size,
            start: Instant(start),
            victim: false,
        });
        // Each host keeps its own clock in float nanoseconds so rounding to
        // whole nanoseconds does not accumulate.
        clocks[src] += exponential(rng, rate_per_ns);
        next.push(Reverse((clocks[src].round() as u64, src)));
    }
    Ok(Workload {
        topology,
        host_link_bps: G100,
        fabric_link_bps: G400,
        flows,
        slow_host: None,
        background: false,
    })
}

/// An exponentially distributed gap with mean `1 / rate`.
fn exponential(rng: &mut Rng, rate: f64) -> f64 {
    // 1 - u lies in (0, 1], so the logarithm is finite.
    -(1.0 - rng.next_f64()).ln() / rate
}

/// Each host sends one flow to its image under a random derangement.
fn permutation(spec: &ScenarioSpec) -> Result<Workload, String> {
    only(spec, &["hosts", "flow_size"])?;
    let hosts = spec.hosts.unwrap_or(32);
    if hosts < 8 || !hosts.is_multiple_of(8) {
        return Err(format!(
            "permutation: hosts must be a positive multiple of 8 (8 per leaf), got {hosts}"
        ));
    }
    let size = flow_size(spec, MIB)?;
    let topology = validated(
        spec,
        Topology::LeafSpine {
            leaves: hosts / 8,
            hosts_per_leaf: 8,
            spines: 4,
        },
    )?;
    let mut rng = Rng::new(sub_seed(spec.seed, u64::MAX));
    let dsts = derangement(hosts, &mut rng);
    Ok(Workload {
        topology,
        host_link_bps: G100,
        fabric_link_bps: G100,
        flows: dsts
            .iter()
            .enumerate()
            .map(|(src, &dst)| at_zero(src, dst, size))
            .collect(),
        slow_host: None,
        background: false,
    })
}

/// A uniformly random permutation of `0..n` with no fixed point (`n >= 2`):
/// Fisher-Yates shuffles until one has none (about e tries on average).
/// After 64 failures, which happens with probability below 1e-12, a random
/// single cycle (Sattolo's algorithm) keeps the loop bounded.
fn derangement(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for _ in 0..64 {
        for i in (1..n).rev() {
            p.swap(i, rng.below(i as u64 + 1) as usize);
        }
        if p.iter().enumerate().all(|(i, &d)| i != d) {
            return p;
        }
    }
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i as u64) as usize);
    }
    p
}

/// Every ordered pair of distinct hosts, one flow each, at time zero.
fn all_to_all(spec: &ScenarioSpec) -> Result<Workload, String> {
    only(spec, &["hosts", "flow_size"])?;
    let hosts = spec.hosts.unwrap_or(16);
    if !(2..=64).contains(&hosts) {
        return Err(format!("alltoall: hosts must be 2..=64, got {hosts}"));
    }
    let size = flow_size(spec, 64 * KIB)?;
    let flows = (0..hosts)
        .flat_map(|src| {
            (0..hosts)
                .filter(move |&dst| dst != src)
                .map(move |dst| at_zero(src, dst, size))
        })
        .collect();
    Ok(Workload {
        topology: Topology::Star { hosts },
        host_link_bps: G100,
        fabric_link_bps: G100,
        flows,
        slow_host: None,
        background: false,
    })
}

/// The flows of the connection matrix file `spec.matrix`, one flow per
/// connection at its start time (sorted by start; ties keep the file's
/// order), on [`matrix::topology`] of the file's `Nodes`.
fn from_matrix(spec: &ScenarioSpec) -> Result<Workload, String> {
    only(spec, &["matrix"])?;
    let Some(path) = &spec.matrix else {
        return Err("matrix: give the connection matrix file (--matrix FILE)".into());
    };
    let m = matrix::read(path).map_err(|e| format!("matrix: {e}"))?;
    let mut flows: Vec<Flow> = m
        .connections
        .iter()
        .map(|c| Flow {
            start: Instant::ZERO + Duration::from_micros(c.start_us),
            ..at_zero(c.src, c.dst, c.size)
        })
        .collect();
    // Stable: equal starts keep the file's order.
    flows.sort_by_key(|f| f.start);
    Ok(Workload {
        topology: matrix::topology(m.nodes),
        host_link_bps: G100,
        fabric_link_bps: G100,
        flows,
        slow_host: None,
        background: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: Scenario) -> ScenarioSpec {
        ScenarioSpec::new(s, 1)
    }

    fn check_flows(w: &Workload) {
        let n = w.topology.hosts();
        assert!(!w.flows.is_empty());
        for f in &w.flows {
            assert!(
                f.src < n && f.dst < n && f.src != f.dst && f.size >= 1,
                "{f:?}"
            );
        }
        assert!(w.flows.windows(2).all(|p| p[0].start <= p[1].start));
    }

    #[test]
    fn names_round_trip() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::from_name(s.name()), Ok(s));
        }
        let e = Scenario::from_name("incats").unwrap_err();
        assert!(
            e.contains("incats") && e.contains("slow-receiver") && e.contains("alltoall"),
            "{e}"
        );
    }

    #[test]
    fn every_scenario_builds_with_defaults() {
        // All but `matrix`, which has no default file.
        for s in Scenario::ALL.into_iter().filter(|&s| s != Scenario::Matrix) {
            let w = build(&spec(s)).unwrap_or_else(|e| panic!("{}: {e}", s.name()));
            check_flows(&w);
            w.topology.validate().unwrap();
        }
        assert_eq!(build(&spec(Scenario::WebSearch)).unwrap().flows.len(), 2000);
        assert_eq!(build(&spec(Scenario::Hadoop)).unwrap().flows.len(), 4000);
        assert_eq!(
            build(&spec(Scenario::AllToAll)).unwrap().flows.len(),
            16 * 15
        );
    }

    #[test]
    fn builds_are_deterministic() {
        for s in Scenario::ALL.into_iter().filter(|&s| s != Scenario::Matrix) {
            assert_eq!(build(&spec(s)), build(&spec(s)));
        }
        for s in [Scenario::WebSearch, Scenario::Hadoop, Scenario::Permutation] {
            let other = ScenarioSpec::new(s, 2);
            assert_ne!(
                build(&spec(s)).unwrap().flows,
                build(&other).unwrap().flows,
                "{}",
                s.name()
            );
        }
    }

    #[test]
    fn incast_of_256_senders() {
        let w = build(&ScenarioSpec {
            hosts: Some(256),
            flow_size: Some(1000),
            ..spec(Scenario::Incast)
        })
        .unwrap();
        assert_eq!(w.topology, Topology::Star { hosts: 257 });
        assert_eq!(w.flows.len(), 256);
        assert!(w
            .flows
            .iter()
            .all(|f| f.dst == 0 && f.size == 1000 && f.start == Instant::ZERO));
        let srcs: Vec<usize> = w.flows.iter().map(|f| f.src).collect();
        assert_eq!(srcs, (1..=256).collect::<Vec<_>>());
        assert_eq!(build(&spec(Scenario::Incast)).unwrap().topology.hosts(), 33);
    }

    #[test]
    fn topology_asked_for_holds_the_scenarios_hosts() {
        let on = |sc, hosts, kind| {
            let mut s = spec(sc);
            s.hosts = Some(hosts);
            s.topology = Some(kind);
            build(&s).unwrap()
        };
        // uet-htsim's sizes: 16, 128 and 1,024 hosts are k = 4, 8, 16.
        for (hosts, k) in [(16, 4), (128, 8), (1024, 16)] {
            let w = on(Scenario::Permutation, hosts, TopologyKind::FatTree);
            assert_eq!(w.topology, Topology::FatTree { k });
            assert_eq!(w.flows.len(), hosts);
        }
        // An incast of 16 senders needs 17 hosts: k = 6 (54), idle ones.
        let w = on(Scenario::Incast, 16, TopologyKind::FatTree);
        assert_eq!(w.topology, Topology::FatTree { k: 6 });
        let w = on(Scenario::Incast, 16, TopologyKind::LeafSpine);
        assert_eq!(w.topology.hosts(), 24);
        // The scenario's own kind changes nothing.
        let own = on(Scenario::WebSearch, 32, TopologyKind::LeafSpine);
        let mut s = spec(Scenario::WebSearch);
        s.hosts = Some(32);
        assert_eq!(own, build(&s).unwrap());
    }

    #[test]
    fn permutation_is_a_derangement() {
        for seed in 0..50 {
            for hosts in [8, 32, 64] {
                let w = build(&ScenarioSpec {
                    hosts: Some(hosts),
                    ..ScenarioSpec::new(Scenario::Permutation, seed)
                })
                .unwrap();
                let mut dsts: Vec<usize> = w.flows.iter().map(|f| f.dst).collect();
                assert!(w
                    .flows
                    .iter()
                    .enumerate()
                    .all(|(i, f)| f.src == i && f.dst != i));
                dsts.sort_unstable();
                assert_eq!(dsts, (0..hosts).collect::<Vec<_>>());
            }
        }
        // The fallback alone is a derangement too.
        let mut rng = Rng::new(5);
        for n in 2..20 {
            let p = derangement(n, &mut rng);
            assert!(p.iter().enumerate().all(|(i, &d)| i != d));
        }
    }

    #[test]
    fn poisson_offers_the_requested_load() {
        for (flows, tolerance) in [(None, 0.15), (Some(20_000), 0.05)] {
            let w = build(&ScenarioSpec {
                flows,
                ..spec(Scenario::WebSearch)
            })
            .unwrap();
            let bytes: u64 = w.flows.iter().map(|f| f.size).sum();
            let last = w.flows.last().unwrap().start.as_nanos() as f64 / 1e9;
            let capacity = last * w.topology.hosts() as f64 * w.host_link_bps as f64 / 8.0;
            let load = bytes as f64 / capacity;
            assert!(
                (load / 0.5 - 1.0).abs() < tolerance,
                "load {load} with {flows:?} flows"
            );
        }
    }

    #[test]
    fn poisson_spreads_sources_and_destinations() {
        let w = build(&ScenarioSpec {
            hosts: Some(32),
            ..spec(Scenario::Hadoop)
        })
        .unwrap();
        assert_eq!(
            w.topology,
            Topology::LeafSpine {
                leaves: 2,
                hosts_per_leaf: 16,
                spines: 4
            }
        );
        let mut src = [0u32; 32];
        let mut dst = [0u32; 32];
        for f in &w.flows {
            src[f.src] += 1;
            dst[f.dst] += 1;
        }
        // 4000 flows over 32 hosts: 125 each on average.
        assert!(
            src.iter().chain(&dst).all(|&n| (70..190).contains(&n)),
            "{src:?} {dst:?}"
        );
    }

    #[test]
    fn victim_shares_the_uplink_not_the_port() {
        let w = build(&spec(Scenario::Victim)).unwrap();
        let t = w.topology;
        let victims: Vec<&Flow> = w.flows.iter().filter(|f| f.victim).collect();
        assert_eq!(victims.len(), 1);
        let v = victims[0];
        for f in &w.flows {
            assert_eq!((t.leaf_of(f.src), t.leaf_of(f.dst)), (0, 1), "{f:?}");
            if !f.victim {
                assert_ne!(f.dst, v.dst);
                assert_eq!(f.size, 4 * MIB);
            }
        }
        assert_eq!(v.size, MIB);
        assert_eq!(w.fabric_link_bps, G400);
    }

    #[test]
    fn slow_receiver_background_avoids_the_slow_host() {
        let w = build(&spec(Scenario::SlowReceiver)).unwrap();
        let (slow, service) = w.slow_host.unwrap();
        assert_eq!((slow, service), (4, Duration::from_nanos(1000)));
        assert!(w.background);
        let into_slow = w.flows.iter().filter(|f| f.dst == slow).count();
        assert_eq!(into_slow, 2);
        assert!(w.flows.iter().all(|f| f.src != slow));
        // Some background crosses leaves, some stays within one.
        let t = w.topology;
        let bg = w.flows.iter().filter(|f| f.dst != slow);
        let cross = bg
            .clone()
            .filter(|f| t.leaf_of(f.src) != t.leaf_of(f.dst))
            .count();
        assert!(cross >= 1 && cross < bg.count());
    }

    #[test]
    fn bad_inputs_are_errors() {
        use Scenario::*;
        let with = |s, f: fn(&mut ScenarioSpec)| {
            let mut x = spec(s);
            f(&mut x);
            x
        };
        let bad = [
            with(Incast, |s| s.hosts = Some(0)),
            with(Incast, |s| s.hosts = Some(257)),
            with(Incast, |s| s.flow_size = Some(0)),
            with(AllToAll, |s| s.flow_size = Some(u64::MAX)),
            with(Incast, |s| s.load = Some(0.5)),
            with(Victim, |s| s.hosts = Some(8)),
            with(SlowReceiver, |s| s.flows = Some(3)),
            with(WebSearch, |s| s.hosts = Some(24)),
            with(WebSearch, |s| s.hosts = Some(0)),
            with(Hadoop, |s| s.hosts = Some(usize::MAX & !15)),
            with(WebSearch, |s| s.load = Some(0.0)),
            with(WebSearch, |s| s.load = Some(1.5)),
            with(Hadoop, |s| s.load = Some(f64::NAN)),
            with(Hadoop, |s| s.flows = Some(0)),
            with(Hadoop, |s| s.flow_size = Some(1)),
            with(Permutation, |s| s.hosts = Some(12)),
            with(Permutation, |s| s.hosts = Some(1 << 20)),
            with(AllToAll, |s| s.hosts = Some(1)),
            with(AllToAll, |s| s.hosts = Some(65)),
            with(Incast, |s| s.service = Some(Duration::ZERO)),
            with(SlowReceiver, |s| s.service = Some(Duration::from_secs(2))),
            with(WebSearch, |s| s.service = Some(Duration::from_micros(1))),
            with(Victim, |s| s.topology = Some(TopologyKind::FatTree)),
            with(SlowReceiver, |s| s.topology = Some(TopologyKind::Star)),
            with(Matrix, |_| {}),
            with(Matrix, |s| s.matrix = Some("/nonexistent/x.cm".into())),
            with(Permutation, |s| s.matrix = Some("/nonexistent/x.cm".into())),
        ];
        for s in bad {
            let e = build(&s).expect_err(&format!("{s:?} should fail"));
            assert!(e.starts_with(s.scenario.name()), "{e}");
        }
    }

    /// A matrix file in a fresh temporary folder (removed when dropped).
    struct TempMatrix(PathBuf);
    impl TempMatrix {
        fn new(name: &str, text: &str) -> TempMatrix {
            let dir =
                std::env::temp_dir().join(format!("lab-matrix-{}-{name}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("m.cm");
            std::fs::write(&path, text).unwrap();
            TempMatrix(path)
        }
    }
    impl Drop for TempMatrix {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
        }
    }

    #[test]
    fn a_matrix_becomes_its_flows_in_start_order() {
        let f = TempMatrix::new(
            "flows",
            "Nodes 16\nConnections 3\n1->0 id 1 start 40 size 250000\n\
             15->0 id 2 start 0 size 2000000\n2->0 id 3 start 40 size 7\n",
        );
        let w = build(&ScenarioSpec {
            matrix: Some(f.0.clone()),
            ..spec(Scenario::Matrix)
        })
        .unwrap();
        check_flows(&w);
        let got: Vec<(usize, usize, u64, u64)> = w
            .flows
            .iter()
            .map(|f| (f.src, f.dst, f.size, f.start.as_nanos()))
            .collect();
        assert_eq!(
            got,
            [
                (15, 0, 2_000_000, 0),
                (1, 0, 250_000, 40_000),
                (2, 0, 7, 40_000)
            ]
        );
        // 16 nodes: uet-htsim's K = 4 fat tree, two hosts per rack.
        assert_eq!(w.topology, Topology::FatTree { k: 4 });
        // The seed changes nothing: the file is the workload.
        assert_eq!(
            w,
            build(&ScenarioSpec {
                matrix: Some(f.0.clone()),
                ..ScenarioSpec::new(Scenario::Matrix, 9)
            })
            .unwrap()
        );
        // An override the matrix does not use is refused.
        let e = build(&ScenarioSpec {
            matrix: Some(f.0.clone()),
            hosts: Some(16),
            ..spec(Scenario::Matrix)
        })
        .unwrap_err();
        assert!(e.contains("hosts"), "{e}");
    }

    #[test]
    fn a_matrix_node_outside_the_topology_names_file_node_and_line() {
        let f = TempMatrix::new("outside", "Nodes 16\nConnections 1\n0->16 start 0 size 1\n");
        let e = build(&ScenarioSpec {
            matrix: Some(f.0.clone()),
            ..spec(Scenario::Matrix)
        })
        .unwrap_err();
        let file = f.0.display().to_string();
        for w in [
            "matrix",
            file.as_str(),
            "line 3",
            "node 16",
            "outside the topology",
        ] {
            assert!(e.contains(w), "{e:?} lacks {w:?}");
        }
    }

    #[test]
    fn matrix_topologies_follow_uet_htsims_racks() {
        let t = matrix::topology;
        assert_eq!(t(16), Topology::FatTree { k: 4 });
        assert_eq!(t(128), Topology::FatTree { k: 8 });
        assert_eq!(t(1024), Topology::FatTree { k: 16 });
        assert_eq!(
            t(32),
            Topology::LeafSpine {
                leaves: 2,
                hosts_per_leaf: 16,
                spines: 16
            }
        );
        assert_eq!(t(5).hosts(), 5);
        for n in [2, 5, 16, 32, 128, 1024] {
            t(n).validate().unwrap();
        }
    }
}
