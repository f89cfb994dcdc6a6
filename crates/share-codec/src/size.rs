//! Human-readable sizes as upstream prints them: the UI's share-URL label
//! (`formatUrlSize`) and the hook/CLI's remote-share line (`formatSize`).
//! Sizes are UTF-8 byte counts.

/// The UI's `formatUrlSize`: `"N B"` below 1024, else `"x.y KB"` (one decimal).
///
/// ```
/// assert_eq!(share_codec::format_url_size(1023), "1023 B");
/// assert_eq!(share_codec::format_url_size(150_000), "146.5 KB");
/// ```
pub fn format_url_size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{} KB", to_fixed_1(bytes))
    }
}

/// The hook/CLI's `formatSize`: `"N B"` below 1024, `"x.y KB"` below
/// 100 KB, else whole kilobytes rounded half up (`"146 KB"`).
///
/// ```
/// assert_eq!(share_codec::format_size(1536), "1.5 KB");
/// assert_eq!(share_codec::format_size(102_400), "100 KB");
/// ```
pub fn format_size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 100 * 1024 {
        format!("{} KB", to_fixed_1(bytes))
    } else {
        // Math.round(bytes / 1024), computed exactly in integers.
        format!("{} KB", (bytes + 512) / 1024)
    }
}

/// `(bytes / 1024).toFixed(1)`.
///
/// `toFixed` rounds the exact binary value of the quotient, and `bytes / 1024`
/// is exact in binary, so the result is `bytes*10/1024` rounded half up,
/// which integer arithmetic gives exactly.
fn to_fixed_1(bytes: u64) -> String {
    let tenths = (u128::from(bytes) * 10 + 512) / 1024;
    format!("{}.{}", tenths / 10, tenths % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_round_up_like_to_fixed() {
        // 1280 B = 1.25 KB exactly: toFixed(1) picks the larger candidate.
        assert_eq!(to_fixed_1(1280), "1.3");
        assert_eq!(to_fixed_1(1075), "1.0");
        assert_eq!(to_fixed_1(1076), "1.1");
        assert_eq!(format_size(102_911), "100 KB");
        assert_eq!(format_size(102_912), "101 KB");
    }
}
