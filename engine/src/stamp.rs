//! The build stamp: which build produced a result and where it ran. Every
//! JSON summary of the workspace's tools carries the same keys
//! ([`STAMP_KEYS`]): the binaries of `apps` and `bench` stamp them with
//! the DPDK they link, the fabric lab (`lab`, no DPDK) says so instead.
//! This module holds the facts once; each tool adds its own `config`.
//!
//! [`COMMIT`] comes from this crate's build script (`git rev-parse` at
//! build time); the time and the machine are read when asked.

/// The workspace version (every crate shares it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `git rev-parse --short=12 HEAD` when this workspace was built (the
/// engine's build script), or "unknown" outside a git checkout.
pub const COMMIT: &str = env!("RPC_GIT_COMMIT");

/// The DPDK the engine was built against (e.g. "22.11.4"; feature `dpdk`).
#[cfg(feature = "dpdk")]
pub const DPDK_VERSION: &str = crate::dpdk::DPDK_VERSION;

/// The keys a stamped summary carries, whichever tool stamped it. A parent
/// reading a child's summary back drops them: its own summary is stamped
/// with its own build and config.
pub const STAMP_KEYS: [&str; 7] = [
    "version",
    "commit",
    "dpdk_version",
    "timestamp",
    "host",
    "cpu",
    "config",
];

/// Now, as [`rfc3339_utc`] writes it.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339_utc(secs)
}

/// Seconds since the Unix epoch as "YYYY-MM-DDTHH:MM:SSZ" (proleptic
/// Gregorian calendar; Howard Hinnant's days-to-civil algorithm).
pub fn rfc3339_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// This machine's host name, or "unknown".
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The CPU model and the online core count ("AMD EPYC 7B13, 2 cores online").
pub fn cpu_description() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| cpu_model(&t))
        .unwrap_or_else(|| "unknown cpu".into());
    // The machine's count, not this thread's: a pinned benchmark process
    // is allowed one core, which `available_parallelism` would report.
    let cores = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| count_cpu_list(&t))
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(0);
    format!("{model}, {cores} cores online")
}

/// The number of CPUs in a kernel CPU list ("0-3,8,10-11" is 7).
pub fn count_cpu_list(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.trim().split(',') {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => part.parse::<usize>().map(|_| 1).ok()?,
        };
    }
    (n > 0).then_some(n)
}

/// The first `model name` of a /proc/cpuinfo text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day of a century leap year) 12:34:56.
        assert_eq!(rfc3339_utc(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(rfc3339_utc(1_795_996_800), "2026-11-30T00:00:00Z");
        assert!(now_utc().ends_with('Z'));
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_cpu_list("0-1\n"), Some(2));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list("5"), Some(1));
        for bad in ["", "x", "3-1", "0-"] {
            assert_eq!(count_cpu_list(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cpu_model_is_the_first_model_name() {
        let t =
            "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpu_model(t).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn this_build_knows_its_commit() {
        assert!(!COMMIT.is_empty());
        assert!(!VERSION.is_empty());
        #[cfg(feature = "dpdk")]
        assert!(DPDK_VERSION.starts_with('2'), "{DPDK_VERSION}");
    }
}
