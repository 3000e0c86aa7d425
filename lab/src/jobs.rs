//! The runs of a plan, each (seed, regime) pair once, on `--jobs N`
//! threads. Every run is a pure function of its workload, regime, knobs
//! and seed, and owns all of its state (its endpoints, fabric and message
//! pool), so the threads share only what they read and the results come
//! back in plan order (seeds, then regimes), identical to a serial run's.
//! With one job the runs go in order on the calling thread, as before
//! `--jobs` existed.

use crate::fabric::scenario::Workload;
use crate::fabric::{run_regime_in, Buffers, FabricConfig, FabricRegime, RegimeResult};
use crate::progress::Board;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Stack of each extra thread: the simulator's calls are shallow, but a
/// thread's default 2 MiB is less than the main thread's 8 MiB the runs
/// were written on.
const STACK_BYTES: usize = 8 << 20;

/// The runs of a plan: every regime with every seed.
#[derive(Clone, Copy, Debug)]
pub struct Runs<'a> {
    /// The regimes, in report order.
    pub regimes: &'a [FabricRegime],
    /// The fabric's knobs, for every run.
    pub fabric: &'a FabricConfig,
    /// Whether endpoints copy payload bytes (otherwise headers only).
    pub copy_payload: bool,
    /// The seeds, in report order.
    pub seeds: &'a [u64],
    /// `loads[k]`: the workload of `seeds[k]`.
    pub loads: &'a [Workload],
}

/// What every thread reads, and where it writes its results.
struct Shared<'a> {
    plan: Runs<'a>,
    board: &'a Board,
    stop: &'a (dyn Fn() -> bool + Sync),
    /// The next run to take, as an index into seeds x regimes.
    next: AtomicUsize,
    /// A run was refused: take no more (a serial run stops there too).
    refused: AtomicBool,
    /// Each run's result, in plan order; `None`: not run (stopped).
    out: Mutex<Vec<Option<Result<RegimeResult, String>>>>,
}

/// Runs every regime of `plan` with each of its seeds on `jobs` threads,
/// taking no new run once `stop()` says so. Returns, per seed in order, each regime's result in
/// order (`None`: not run), or the first refusal in plan order, named by
/// the run (`regime irn seed 2: ...`; the seed only when there are
/// several). `board` shows the progress and each run's closing line.
pub fn run_grid(
    plan: Runs,
    jobs: usize,
    board: &Board,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<Vec<Option<RegimeResult>>>, String> {
    let seeds = plan.seeds;
    let runs = seeds.len() * plan.regimes.len();
    let sh = Shared {
        plan,
        board,
        stop,
        next: AtomicUsize::new(0),
        refused: AtomicBool::new(false),
        out: Mutex::new((0..runs).map(|_| None).collect()),
    };
    let threads = jobs.clamp(1, runs.max(1));
    if threads == 1 {
        worker(&sh, 0);
    } else {
        std::thread::scope(|s| {
            for t in 0..threads {
                let sh = &sh;
                std::thread::Builder::new()
                    .name(format!("rpc-lab-{t}"))
                    .stack_size(STACK_BYTES)
                    .spawn_scoped(s, move || worker(sh, t))
                    .map_err(|e| format!("cannot start thread {t} of --jobs {jobs}: {e}"))?;
            }
            Ok::<(), String>(())
        })?;
    }
    let out = sh.out.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut grid = Vec::with_capacity(seeds.len());
    let mut it = out.into_iter();
    for _ in seeds {
        let mut row = Vec::with_capacity(plan.regimes.len());
        for r in it.by_ref().take(plan.regimes.len()) {
            row.push(r.transpose()?);
        }
        grid.push(row);
    }
    Ok(grid)
}

/// Thread `t`: takes the next run until none is left, a run was refused,
/// or `stop()`.
fn worker(sh: &Shared, t: usize) {
    let plan = sh.plan;
    // One message pool per thread, for all of its runs (a pool is one
    // thread's; what it holds never reaches a result).
    let bufs = match plan.copy_payload {
        true => Buffers::copying(),
        false => Buffers::headers_only(),
    };
    let per_seed = plan.regimes.len();
    let runs = plan.seeds.len() * per_seed;
    loop {
        if (sh.stop)() || sh.refused.load(Ordering::SeqCst) {
            break;
        }
        let i = sh.next.fetch_add(1, Ordering::SeqCst);
        if i >= runs {
            break;
        }
        let (k, regime) = (i / per_seed, plan.regimes[i % per_seed]);
        let seed = plan.seeds[k];
        let label = match plan.seeds.len() > 1 {
            true => format!("{} seed {seed}", regime.name()),
            false => regime.name().to_string(),
        };
        let r = run_regime_in(
            &bufs,
            &plan.loads[k],
            regime,
            plan.fabric,
            seed,
            &mut |p| sh.board.update(t, &label, p),
            sh.stop,
        );
        if (sh.stop)() {
            break; // stopped in the run, or as it ended: not a result
        }
        let r = match r {
            Ok(r) => {
                sh.board.done(
                    t,
                    &format!(
                        "fabric: {label} done in {:.1} s wall, {:.2} M simulated packets/s",
                        r.wall_secs,
                        per_sec(r.sim_pkts, r.wall_secs) / 1e6
                    ),
                );
                Ok(r)
            }
            // Every refusal of run_regime_in comes before its simulation
            // starts: the regime's settings cannot be set up.
            Err(e) => {
                sh.refused.store(true, Ordering::SeqCst);
                Err(format!("regime {label}: {e}"))
            }
        };
        sh.out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
    }
}

/// `count / secs`, 0 when no time was measured.
pub(crate) fn per_sec(count: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        count as f64 / secs
    } else {
        0.0
    }
}
