//! Wall-clock time as Unix milliseconds, the catalog's only timestamp type.

/// Milliseconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
