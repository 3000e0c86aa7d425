//! Other work on the pinned cores while a pair runs. A poll-mode worker is
//! always runnable, so the time its thread waits on its core's run queue
//! (the second field of `/proc/<pid>/task/<tid>/schedstat`, in ns) is time
//! the core gave to something else: another process, a kernel thread, or
//! a second loop pinned there. A [`Watch`] samples the children's pinned
//! threads every [`SAMPLE_EVERY`] while they run (a process's tasks vanish
//! with it), and each core's vCPU steal from `/proc/stat`; [`Contention`]
//! says per core what share of the run went elsewhere, and warns past
//! [`SIGNIFICANT_PCT`].

use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often the watched threads are read: often enough that a run's last
/// tenth of a second is all a sample can miss, rarely enough that the
/// reads (a few small /proc files) cost the cores nothing measurable.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Share of a core's run, in percent, lost to other work or steal above
/// which the report warns: a quiet core loses well under 1 % (timer ticks,
/// a kworker now and then); a few percent already moves the tail.
pub const SIGNIFICANT_PCT: f64 = 5.0;

/// A process to watch: its PID, its role's name and the cores its workers
/// are pinned to.
#[derive(Clone, Debug)]
pub struct Watched {
    pub pid: u32,
    pub role: &'static str,
    pub cores: Vec<u32>,
}

/// One thread pinned to one core: its schedstat at its first and last
/// sample, as (when, ns run, ns waited).
#[derive(Clone, Copy, Debug)]
struct Track {
    first: (Instant, u64, u64),
    last: (Instant, u64, u64),
}

/// The sampler's state; `sample` it while the processes run, then
/// `finish`.
#[derive(Debug)]
pub struct Watch {
    procs: Vec<Watched>,
    /// (process index, core, tid) -> its track.
    tracks: BTreeMap<(usize, u32, u32), Track>,
    /// Per-CPU (steal, total) ticks at the first sample.
    stat0: Option<BTreeMap<u32, (u64, u64)>>,
}

/// One role's core over the run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CoreShare {
    pub core: u32,
    pub role: &'static str,
    /// Percent of the watched span the worker waited while the core ran
    /// other work.
    pub other_pct: f64,
    /// Percent of the core's time the hypervisor took (vCPU steal).
    pub steal_pct: f64,
    /// The span the worker was watched, in seconds.
    pub seconds: f64,
}

/// What a [`Watch`] saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Contention {
    pub cores: Vec<CoreShare>,
}

impl Watch {
    pub fn new(procs: Vec<Watched>) -> Watch {
        Watch {
            procs,
            tracks: BTreeMap::new(),
            stat0: None,
        }
    }

    /// Reads every watched process's threads pinned to one of its cores.
    pub fn sample(&mut self) {
        let now = Instant::now();
        if self.stat0.is_none() {
            self.stat0 = read_cpu_stat();
        }
        for (i, p) in self.procs.iter().enumerate() {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", p.pid)) else {
                continue;
            };
            for t in tasks.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                let dir = t.path();
                let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
                let Some(core) = read("status").and_then(|s| pinned_core(&s)) else {
                    continue;
                };
                if !p.cores.contains(&core) {
                    continue; // e.g. an EAL control thread on the other role's core
                }
                let Some((run, wait)) = read("schedstat").and_then(|s| parse_schedstat(&s)) else {
                    continue;
                };
                let at = (now, run, wait);
                self.tracks
                    .entry((i, core, tid))
                    .and_modify(|t| t.last = at)
                    .or_insert(Track {
                        first: at,
                        last: at,
                    });
            }
        }
    }

    /// Per role and core, the busiest thread pinned there (the poll loop,
    /// not a sleeping helper) and what it lost; steal over the same span.
    pub fn finish(self) -> Contention {
        let stat1 = read_cpu_stat();
        let mut best: BTreeMap<(usize, u32), Track> = BTreeMap::new();
        for ((i, core, _), t) in self.tracks {
            let ran = |t: &Track| t.last.1.saturating_sub(t.first.1);
            let e = best.entry((i, core)).or_insert(t);
            if ran(&t) > ran(e) {
                *e = t;
            }
        }
        let steal = |core: u32| -> f64 {
            let (Some(a), Some(b)) = (&self.stat0, &stat1) else {
                return 0.0;
            };
            match (a.get(&core), b.get(&core)) {
                (Some(&(s0, t0)), Some(&(s1, t1))) if t1 > t0 => {
                    100.0 * s1.saturating_sub(s0) as f64 / (t1 - t0) as f64
                }
                _ => 0.0,
            }
        };
        let cores = best
            .into_iter()
            .filter_map(|((i, core), t)| {
                let span = t.last.0.duration_since(t.first.0);
                (span > Duration::ZERO).then(|| CoreShare {
                    core,
                    role: self.procs[i].role,
                    other_pct: 100.0 * t.last.2.saturating_sub(t.first.2) as f64
                        / span.as_nanos() as f64,
                    steal_pct: steal(core),
                    seconds: span.as_secs_f64(),
                })
            })
            .collect();
        Contention { cores }
    }
}

impl Contention {
    /// The largest share any watched core lost to other work.
    pub fn worst_other_pct(&self) -> Option<f64> {
        self.cores.iter().map(|c| c.other_pct).reduce(f64::max)
    }

    /// One line per core past [`SIGNIFICANT_PCT`], for the report's
    /// warnings.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.cores {
            if c.other_pct >= SIGNIFICANT_PCT {
                out.push(format!(
                    "core {} ({}): {:.0} % of the run went to other work on that core (other processes, kernel threads, or a loop sharing it); the figures are disturbed",
                    c.core, c.role, c.other_pct
                ));
            }
            if c.steal_pct >= SIGNIFICANT_PCT {
                out.push(format!(
                    "core {} ({}): the hypervisor took {:.0} % of it (vCPU steal); the figures are disturbed",
                    c.core, c.role, c.steal_pct
                ));
            }
        }
        out
    }

    /// Adds the figures to a report: `core_contention` (per core),
    /// `core_other_pct_max`, and the warnings (text and JSON).
    pub fn annotate(&self, rep: &mut apps::report::Report) {
        if self.cores.is_empty() {
            return;
        }
        if let Ok(v) = serde_json::to_value(&self.cores) {
            rep.extra.insert("core_contention".into(), v);
        }
        if let Some(w) = self.worst_other_pct() {
            let rounded = (w * 100.0).round() / 100.0;
            rep.extra
                .insert("core_other_pct_max".into(), rounded.into());
        }
        let warnings = self.warnings();
        if !warnings.is_empty() {
            rep.extra.insert("warnings".into(), warnings.into());
        }
    }
}

/// Runs `f` with a [`Watch`] of `procs` sampling on a thread beside it;
/// returns `f`'s result and what the watch saw.
pub fn watch_while<R>(procs: Vec<Watched>, f: impl FnOnce() -> R) -> (R, Contention) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut w = Watch::new(procs);
            while !stop.load(Ordering::Acquire) {
                w.sample();
                std::thread::park_timeout(SAMPLE_EVERY);
            }
            w.finish()
        });
        let r = f();
        stop.store(true, Ordering::Release);
        sampler.thread().unpark();
        let seen = sampler.join().unwrap_or_default();
        (r, seen)
    })
}

/// The one core a task may run on (`Cpus_allowed_list: 3`), if it is
/// pinned to one.
fn pinned_core(status: &str) -> Option<u32> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    list.parse().ok()
}

/// `/proc/.../schedstat`: ns on the CPU, ns waiting on a run queue, slices.
fn parse_schedstat(s: &str) -> Option<(u64, u64)> {
    let mut f = s.split_whitespace().map(|t| t.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// Per CPU of /proc/stat: (steal, total) ticks.
fn read_cpu_stat() -> Option<BTreeMap<u32, (u64, u64)>> {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .map(|t| parse_cpu_stat(&t))
}

/// The `cpuN` lines: user nice system idle iowait irq softirq steal ...
fn parse_cpu_stat(text: &str) -> BTreeMap<u32, (u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let cpu = f.next()?.strip_prefix("cpu")?.parse::<u32>().ok()?;
            let v: Vec<u64> = f.take(8).filter_map(|t| t.parse().ok()).collect();
            (v.len() == 8).then(|| (cpu, (v[7], v.iter().sum())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse() {
        let status = "Name:\tlcore-worker-1\nCpus_allowed:\t2\nCpus_allowed_list:\t1\n";
        assert_eq!(pinned_core(status), Some(1));
        assert_eq!(pinned_core("Cpus_allowed_list:\t0-1\n"), None);
        assert_eq!(pinned_core("Cpus_allowed_list:\t0,2\n"), None);
        assert_eq!(
            parse_schedstat("155691 3338065 2\n"),
            Some((155691, 3338065))
        );
        assert_eq!(parse_schedstat("12\n"), None);
        let stat = "cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 10 0 0 80 0 0 0 10 0 0\nintr 5\n";
        let m = parse_cpu_stat(stat);
        assert_eq!(m.len(), 2, "the aggregate line is not a CPU: {m:?}");
        assert_eq!(m[&0], (8, 36));
        assert_eq!(m[&1], (10, 100));
    }

    #[test]
    fn a_busy_loop_beside_ours_is_seen_and_a_quiet_core_is_not() {
        // Two spinning threads pinned to one core of this process: each
        // waits about half the time for the other.
        let core = 0u32;
        let spin = |stop: &std::sync::atomic::AtomicBool| {
            apps::run::sys::pin_thread(core).expect("pin to core 0");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let me = Watched {
            pid: std::process::id(),
            role: "test",
            cores: vec![core],
        };
        let (_, seen) = std::thread::scope(|s| {
            s.spawn(|| spin(&stop));
            s.spawn(|| spin(&stop));
            let r = watch_while(vec![me], || std::thread::sleep(Duration::from_millis(600)));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            r
        });
        let c = &seen.cores[0];
        assert_eq!((c.core, c.role), (core, "test"));
        assert!(c.other_pct > 20.0, "two loops on one core: {seen:?}");
        assert!(
            seen.warnings()[0].starts_with("core 0 (test): "),
            "{seen:?}"
        );
        let mut rep = apps::report::Report::default();
        seen.annotate(&mut rep);
        assert!(rep.render_text().contains("warning      core 0 (test)"));
        assert!(
            rep.to_json()["core_contention"][0]["other_pct"]
                .as_f64()
                .unwrap()
                > 20.0
        );
        let quiet = Contention {
            cores: vec![CoreShare {
                core: 1,
                role: "server",
                other_pct: 0.4,
                steal_pct: 0.0,
                seconds: 3.0,
            }],
        };
        assert!(quiet.warnings().is_empty());
    }
}
