//! The live progress line of `rpc-bench fabric` / `rpc-lab` on stderr: each
//! running regime's simulated time, packets and finished flows (one part
//! per thread with `--jobs N`), at most once a second, rewritten in place,
//! and only on a terminal (`--quiet` and a log get none), and the closing
//! line of each run, which every stderr gets.

use crate::fabric::Progress;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the progress line may change.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The progress line of the runs under way, shared by the threads that run
/// them (one row each), and their closing lines.
#[derive(Debug)]
pub struct Board {
    /// Draw the live line (stderr is a terminal, and not `--quiet`).
    live: bool,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    last: Instant,
    /// Length of the line on screen, to blank it.
    shown: usize,
    /// Each thread's run: its label and where it is.
    rows: Vec<Option<(String, Progress)>>,
}

impl Board {
    /// A board for `threads` threads; `live`: draw the line (a terminal
    /// that asked for it), else only the closing lines.
    pub fn new(threads: usize, live: bool) -> Board {
        Board {
            live,
            state: Mutex::new(State {
                last: Instant::now(),
                shown: 0,
                rows: vec![None; threads.max(1)],
            }),
        }
    }

    /// Thread `t`'s run `label` is at `p`; redraws the line if a second
    /// has passed since the last time.
    pub fn update(&self, t: usize, label: &str, p: Progress) {
        if !self.live {
            return;
        }
        let mut s = self.lock();
        match &mut s.rows[t] {
            Some((l, q)) if l == label => *q = p,
            row => *row = Some((label.to_string(), p)),
        }
        if s.last.elapsed() < PROGRESS_EVERY {
            return;
        }
        s.last = Instant::now();
        let text: Vec<String> = s
            .rows
            .iter()
            .flatten()
            .map(|(label, p)| {
                format!(
                    "[{label}] {:.1} ms simulated, {:.1} M packets, {}/{} flows",
                    p.sim_us / 1e3,
                    p.sim_pkts as f64 / 1e6,
                    p.flows_done,
                    p.flows
                )
            })
            .collect();
        let text = format!("  {}", text.join("  "));
        // Padding covers the end of a longer previous line.
        eprint!("\r{text:<width$}", width = s.shown);
        s.shown = s.shown.max(text.len());
    }

    /// Thread `t`'s run ended: its row leaves the line, and `line` is
    /// printed on a clean line of its own.
    pub fn done(&self, t: usize, line: &str) {
        let mut s = self.lock();
        s.rows[t] = None;
        if s.shown > 0 {
            eprint!("\r{:width$}\r", "", width = s.shown);
            s.shown = 0;
        }
        eprintln!("{line}");
    }

    /// The state, even if a thread panicked holding it (a progress line
    /// is not worth a second panic).
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
