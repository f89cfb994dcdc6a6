//! When a run started, in UTC, as the reports and file names write it. The
//! calendar is the `time` crate's; this module only picks the two formats.

use time::OffsetDateTime;

/// A UTC date and time, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime(OffsetDateTime);

impl UtcTime {
    /// The current time (the fraction of the second dropped).
    pub fn now() -> Self {
        let now = OffsetDateTime::now_utc();
        Self(now.replace_nanosecond(0).unwrap_or(now))
    }

    /// The time `secs` seconds after 1970-01-01T00:00:00Z, if it falls in
    /// the years 1 to 9999 (`time`'s range without `large-dates`).
    pub fn from_unix(secs: i64) -> Option<Self> {
        OffsetDateTime::from_unix_timestamp(secs).ok().map(Self)
    }

    /// `2026-01-31T23:59:07Z`.
    pub fn iso(&self) -> String {
        let t = self.0;
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    }

    /// `20260131T235907Z`, for file names.
    pub fn compact(&self) -> String {
        let t = self.0;
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> UtcTime {
        match UtcTime::from_unix(secs) {
            Some(t) => t,
            None => panic!("{secs} is out of range"),
        }
    }

    #[test]
    fn utc_dates() {
        assert_eq!(at(0).iso(), "1970-01-01T00:00:00Z");
        assert_eq!(at(0).compact(), "19700101T000000Z");
        // 2000 is a leap year (divisible by 400), 2100 is not.
        assert_eq!(at(951_782_400).iso(), "2000-02-29T00:00:00Z");
        assert_eq!(at(4_107_542_400).iso(), "2100-03-01T00:00:00Z");
        assert_eq!(at(1_767_225_599).compact(), "20251231T235959Z");
        assert_eq!(at(1_767_225_600).iso(), "2026-01-01T00:00:00Z");
        assert_eq!(at(-1).iso(), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn out_of_range_is_none() {
        assert_eq!(UtcTime::from_unix(i64::MAX), None);
        assert_eq!(UtcTime::from_unix(i64::MIN), None);
    }

    #[test]
    fn now_is_to_the_second() {
        let now = UtcTime::now();
        assert_eq!(now.0.nanosecond(), 0);
        let iso = now.iso();
        assert_eq!(iso.len(), "2026-01-31T23:59:07Z".len(), "{iso}");
        assert!(iso.ends_with('Z'), "{iso}");
        assert_eq!(now.compact().len(), "20260131T235907Z".len());
    }
}
