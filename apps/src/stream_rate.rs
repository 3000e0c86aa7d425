//! A floor stream's rate robust to this VM's stalls: what one stream sent
//! in each fixed window, and the median of the windows' rates (a vCPU
//! stall in one window moves the mean over the whole stream, not the
//! median). The measured BDP takes it (`bdp.rs`).

/// Length of one window of a stream, for its median rate.
pub const STREAM_WINDOW_NS: u64 = 20_000_000;

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
    fn too_few_windows_or_nothing_sent_gives_none() {
        assert_eq!(median_window_gbps(&streamed(&[5, 5]), 10, 1514), None);
        assert_eq!(median_window_gbps(&streamed(&[0, 0, 0]), 0, 1514), None);
    }
}
