//! How figures are written in the reports and progress lines: fixed
//! decimals with `–` for a missing figure, ratios that keep two significant
//! digits when small, MiB, lists and durations.

use crate::procstat::kib_to_mib;
use std::time::Duration;

/// `v` with `decimals` decimals, or `–` when missing.
pub fn fixed(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.decimals$}"))
}

/// A ratio with two decimals, or two significant digits below 0.1 (so that a
/// store at 0.4 % of the floor does not read `0.00`); `–` when missing.
pub fn ratio_text(v: Option<f64>) -> String {
    match v {
        Some(v) if v > 0.0 && v < 0.095 => {
            let decimals = (-v.log10()).ceil() as usize + 1;
            format!("{v:.decimals$}")
        }
        _ => fixed(v, 2),
    }
}

/// KiB as MiB with one decimal, or `–`.
pub fn mib_text(kib: Option<u64>) -> String {
    fixed(kib.map(kib_to_mib), 1)
}

/// `32`, `32 and 128`, `8, 32 and 128`.
pub fn and_list(values: &[usize]) -> String {
    match values {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!(
            "{} and {last}",
            init.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A duration for progress lines, to the second: `45s`, `3m10s`, `1h02m`.
pub fn duration_text(d: Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_millis() >= 500);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_decimals() {
        assert_eq!(fixed(None, 2), "–");
        assert_eq!(fixed(Some(1.0), 2), "1.00");
        assert_eq!(fixed(Some(1234.5), 0), "1234");
        assert_eq!(fixed(Some(0.7578125), 3), "0.758");
    }

    #[test]
    fn small_ratios_keep_two_significant_digits() {
        assert_eq!(ratio_text(None), "–");
        assert_eq!(ratio_text(Some(0.0)), "0.00");
        assert_eq!(ratio_text(Some(0.4)), "0.40");
        assert_eq!(ratio_text(Some(0.1)), "0.10");
        assert_eq!(ratio_text(Some(0.06)), "0.060");
        assert_eq!(ratio_text(Some(0.0035)), "0.0035");
        assert_eq!(ratio_text(Some(12.345)), "12.35");
    }

    #[test]
    fn mebibytes() {
        assert_eq!(mib_text(None), "–");
        assert_eq!(mib_text(Some(8 * 1024)), "8.0");
        assert_eq!(mib_text(Some(52_000)), "50.8");
    }

    #[test]
    fn durations_for_progress() {
        assert_eq!(duration_text(Duration::ZERO), "0s");
        assert_eq!(duration_text(Duration::from_millis(44_600)), "45s");
        assert_eq!(duration_text(Duration::from_secs(190)), "3m10s");
        assert_eq!(duration_text(Duration::from_secs(3600 + 125)), "1h02m");
    }

    #[test]
    fn and_lists() {
        assert_eq!(and_list(&[]), "");
        assert_eq!(and_list(&[32]), "32");
        assert_eq!(and_list(&[32, 128]), "32 and 128");
        assert_eq!(and_list(&[8, 32, 128]), "8, 32 and 128");
    }
}
