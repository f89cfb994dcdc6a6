//! The statistics every report is made of: the median of a set of figures,
//! a quantile of many samples and the ratio of two. Pure functions on plain
//! numbers.

/// The median of `values` (mean of the middle two for an even count); NaNs
/// are left out, and `None` when nothing is left.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// `a / b`, or `None` when either is missing or `b` is not positive.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// Quantile `q` (0..=1, clamped) of `values` by the nearest-rank method:
/// the smallest sample with at least `q` of all samples at or below it
/// (`q = 0` is the minimum, `1` the maximum). NaNs are left out; `None`
/// when nothing is left.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    quantile_of_sorted(&sorted, q)
}

/// [`quantile`] of samples already sorted ascending, without NaNs (to take
/// several quantiles of one large set with a single sort).
pub fn quantile_of_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
    let rank = (q * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
    }

    #[test]
    fn medians_leave_out_nans() {
        assert_eq!(median(&[f64::NAN]), None);
        assert_eq!(median(&[f64::NAN, 2.0, 8.0]), Some(5.0));
        assert_eq!(median(&[-1.0, f64::NAN, 7.0, 3.0]), Some(3.0));
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[f64::NAN], 0.5), None);
        assert_eq!(quantile(&[7.0], 0.99), Some(7.0));
        let hundred: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(quantile(&hundred, 0.0), Some(1.0));
        assert_eq!(quantile(&hundred, 0.5), Some(50.0));
        assert_eq!(quantile(&hundred, 0.99), Some(99.0));
        assert_eq!(quantile(&hundred, 1.0), Some(100.0));
        assert_eq!(quantile(&hundred, 2.0), Some(100.0));
        // 1 000 samples: p99 is the 990th.
        let thousand: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(quantile_of_sorted(&thousand, 0.99), Some(990.0));
        assert_eq!(quantile_of_sorted(&thousand, 0.999), Some(999.0));
        // Negative samples sort below zero.
        assert_eq!(quantile(&[-2.0, 3.0, -1.0], 0.0), Some(-2.0));
        assert_eq!(quantile(&[-2.0, 3.0, -1.0, f64::NAN], 0.5), Some(-1.0));
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(Some(1.0), Some(-2.0)), None);
        assert_eq!(ratio(None, Some(4.0)), None);
        assert_eq!(ratio(Some(1.0), None), None);
        assert_eq!(ratio(Some(1.0), Some(4.0)), Some(0.25));
    }
}
