//! Command-line values with units, parsed the way perftest, iperf3 and
//! sockperf users type them: sizes with a binary suffix (`4k`, `64K`,
//! `1M`, `8MiB`, `1g`; k = 1024) and durations in seconds that must be a
//! finite number above zero. Each error says what was typed and what is
//! accepted, so clap prints it under the flag's name.

/// Bytes from `4096`, `4k`, `4K`, `4KiB`, `4kb`, `1M`, `8MiB`, `1G` (k, M,
/// G are powers of 1024: message sizes are buffer sizes).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let bad = || {
        format!("{text:?} is not a size: use bytes (4096) or a suffix k, M, G (4k, 64KiB, 1M, 8MiB; k = 1024)")
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(bad()),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large a size"))
}

/// A size that fits a `u32` (message sizes on the wire).
pub fn parse_size_u32(text: &str) -> Result<u64, String> {
    let n = parse_size(text)?;
    if n > u64::from(u32::MAX) {
        return Err(format!("{text:?} is over 4 GiB, the largest message size"));
    }
    Ok(n)
}

/// Seconds: a finite number above zero (`2`, `0.5`).
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    let s: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds (e.g. 2 or 0.5)"))?;
    if !s.is_finite() || s <= 0.0 {
        return Err(format!("{text:?}: seconds must be a finite number above 0"));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_the_suffixes_users_type() {
        for (text, bytes) in [
            ("4096", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("4KiB", 4096),
            ("4kb", 4096),
            ("64k", 65536),
            ("1M", 1 << 20),
            ("8MiB", 8 << 20),
            ("1g", 1 << 30),
            (" 32 ", 32),
            ("0", 0),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["", "k", "4x", "-1", "1.5k", "4 k", "nan"] {
            let e = parse_size(bad).unwrap_err();
            assert!(
                e.contains("is not a size") && e.contains("4k"),
                "{bad}: {e}"
            );
        }
        assert!(parse_size("99999999999999G")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_size_u32("5G").unwrap_err().contains("over 4 GiB"));
        assert_eq!(parse_size_u32("8M"), Ok(8 << 20));
    }

    #[test]
    fn seconds_are_finite_and_above_zero() {
        assert_eq!(parse_seconds("2"), Ok(2.0));
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        for bad in ["-1", "0", "nan", "inf", "-inf"] {
            let e = parse_seconds(bad).unwrap_err();
            assert!(e.contains("finite number above 0"), "{bad}: {e}");
        }
        assert!(parse_seconds("two")
            .unwrap_err()
            .contains("not a number of seconds"));
    }
}
