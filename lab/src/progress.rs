//! The live progress line of `rpc-bench fabric` / `rpc-lab` on stderr:
//! one regime's simulated time, packets and finished flows, at most once
//! a second, rewritten in place on a terminal.

use crate::fabric::Progress;
use std::time::{Duration, Instant};

/// How often the progress line may change.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The live progress line of one regime on stderr, at most one per
/// `PROGRESS_EVERY` (one second); rewritten in place on a terminal, plain lines in a
/// log.
#[derive(Debug)]
pub struct ProgressLine<'a> {
    regime: &'a str,
    tty: bool,
    last: Instant,
    /// Length of the line on screen (terminal only), to blank it.
    shown: usize,
}

impl<'a> ProgressLine<'a> {
    /// A line for `regime`; `tty`: rewrite it in place.
    pub fn new(regime: &'a str, tty: bool) -> ProgressLine<'a> {
        ProgressLine {
            regime,
            tty,
            last: Instant::now(),
            shown: 0,
        }
    }

    /// Shows `p` if a second has passed since the last line.
    pub fn update(&mut self, p: Progress) {
        if self.last.elapsed() < PROGRESS_EVERY {
            return;
        }
        self.last = Instant::now();
        let text = format!(
            "  [{}] {:.1} ms simulated, {:.1} M packets, {}/{} flows",
            self.regime,
            p.sim_us / 1e3,
            p.sim_pkts as f64 / 1e6,
            p.flows_done,
            p.flows
        );
        if self.tty {
            // Padding covers the end of a longer previous line.
            eprint!("\r{text:<width$}", width = self.shown);
            self.shown = self.shown.max(text.len());
        } else {
            eprintln!("{text}");
        }
    }

    /// Blanks the line on a terminal so the next line starts clean.
    pub fn clear(&mut self) {
        if self.tty && self.shown > 0 {
            eprint!("\r{:width$}\r", "", width = self.shown);
            self.shown = 0;
        }
    }
}
