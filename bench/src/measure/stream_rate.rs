//! The floor's rates robust to this VM's stalls and speed states: the
//! median of one stream's fixed windows (a vCPU stall in one window moves
//! the mean over the whole stream, not the median), and the marginal rate
//! of echoed burst trains, which the measured BDP takes (`bdp.rs`).
//!
//! Why trains: the one-way MTU stream reads 87-94 Gb/s in some runs of this
//! VM and 15-33 Gb/s in others (whole runs, so no median inside a run sees
//! it), while the round trip of a 32-frame burst stays within a few per
//! cent. A train of `TRAIN_LONG` bursts sent back to back and echoed takes
//! longer than one of `TRAIN_SHORT` by what the extra frames cost to cross
//! the path and come back; both medians come from the same short, cached
//! exchanges as the burst round trip, and their difference cancels the
//! fixed costs (wake-up, first-frame latency) that a single burst carries.

/// Length of one window of a stream, for its median rate.
pub const STREAM_WINDOW_NS: u64 = 20_000_000;

/// Bursts per train in the short and the long train (32 frames a burst;
/// the long one, 256 MTU frames, fits a 1024-entry ring each way).
pub const TRAIN_SHORT: u64 = 2;
pub const TRAIN_LONG: u64 = 8;

/// The rate in Gb/s of `len`-byte frames that `frames_between` more frames
/// in a train add to its round trip: `frames x len x 8 / (long - short)`,
/// from the two trains' median round trips in us. `None` when the long
/// train was not slower (a stall in the short one's median, or no data).
pub fn train_gbps(
    p50_short_us: f64,
    p50_long_us: f64,
    frames_between: u64,
    len: usize,
) -> Option<f64> {
    let extra_ns = (p50_long_us - p50_short_us) * 1e3;
    (extra_ns.is_finite() && extra_ns > 0.0 && p50_short_us > 0.0)
        .then(|| (frames_between * len as u64 * 8) as f64 / extra_ns)
}

/// What one stream did: frames handed to the driver, seconds, and the
/// frames sent in each whole `STREAM_WINDOW_NS` window.
#[derive(Debug)]
pub struct Streamed {
    pub sent: u64,
    pub secs: f64,
    pub windows: Vec<u64>,
}

/// The median of the windows' send rates, scaled by the share of frames
/// that arrived (`got / sent`), in Gb/s of `len`-byte frames: a stall of
/// this VM in one window (vCPU preemption) moves the mean over the whole
/// stream, not the median. `None` with fewer than 3 windows.
pub fn median_window_gbps(s: &Streamed, got: u64, len: usize) -> Option<f64> {
    if s.windows.len() < 3 || s.sent == 0 {
        return None;
    }
    let mut w = s.windows.clone();
    w.sort_unstable();
    let mid = w.len() / 2;
    let median = if w.len() % 2 == 1 {
        w[mid] as f64
    } else {
        (w[mid - 1] + w[mid]) as f64 / 2.0
    };
    let arrived = got.min(s.sent) as f64 / s.sent as f64;
    Some(median * arrived * (len * 8) as f64 / STREAM_WINDOW_NS as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(windows: &[u64]) -> Streamed {
        Streamed {
            sent: windows.iter().sum(),
            secs: windows.len() as f64 * STREAM_WINDOW_NS as f64 / 1e9,
            windows: windows.to_vec(),
        }
    }

    #[test]
    fn a_stalled_window_does_not_move_the_median() {
        // 100,000 frames of 1,250 B per 20 ms window is 50 Gb/s; one window
        // stalled to 1,000 frames.
        let s = streamed(&[100_000, 100_000, 1_000, 100_000, 100_000]);
        let g = median_window_gbps(&s, s.sent, 1250).unwrap();
        assert!((g - 50.0).abs() < 1e-9, "{g}");
        // Half the frames lost on the way: half the rate.
        let g = median_window_gbps(&s, s.sent / 2, 1250).unwrap();
        assert!((g - 25.0).abs() < 0.1, "{g}");
        // An even count takes the middle pair's mean.
        let s = streamed(&[100_000, 80_000, 60_000, 40_000]);
        let g = median_window_gbps(&s, s.sent, 1250).unwrap();
        assert!((g - 35.0).abs() < 1e-9, "{g}");
    }

    #[test]
    fn a_train_rate_is_what_the_extra_frames_cost() {
        // 192 more frames of 1,514 B adding 44 us: 52.8 Gb/s (this VM's
        // memif, 2026-11-24).
        let g = train_gbps(23.95, 68.03, 192, 1514).unwrap();
        assert!((g - 52.76).abs() < 0.01, "{g}");
        // A long train no slower than the short one measures nothing.
        assert_eq!(train_gbps(30.0, 30.0, 192, 1514), None);
        assert_eq!(train_gbps(30.0, 20.0, 192, 1514), None);
        assert_eq!(train_gbps(0.0, 20.0, 192, 1514), None);
        assert_eq!(train_gbps(f64::NAN, 20.0, 192, 1514), None);
    }

    #[test]
    fn too_few_windows_or_nothing_sent_gives_none() {
        assert_eq!(median_window_gbps(&streamed(&[5, 5]), 10, 1514), None);
        assert_eq!(median_window_gbps(&streamed(&[0, 0, 0]), 0, 1514), None);
    }
}
