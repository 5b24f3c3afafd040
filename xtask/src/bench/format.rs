//! How the benchmark writes numbers: milliseconds, MiB, KiB, thousands.

use std::time::Duration;

/// A duration in whole milliseconds.
pub(super) fn ms(duration: Duration) -> String {
    format!("{:.0}", duration.as_secs_f64() * 1e3)
}

/// Bytes in MiB, one decimal.
pub(super) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Bytes in MiB from 1 MiB up, else in KiB.
pub(super) fn human_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        mib(bytes)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// `1234567` as `1,234,567`.
pub(super) fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
