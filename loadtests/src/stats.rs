//! The statistics every report is made of: the median of a set of figures
//! and the ratio of two. Pure functions on plain numbers.

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
    fn ratios() {
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(Some(1.0), Some(-2.0)), None);
        assert_eq!(ratio(None, Some(4.0)), None);
        assert_eq!(ratio(Some(1.0), None), None);
        assert_eq!(ratio(Some(1.0), Some(4.0)), Some(0.25));
    }
}
