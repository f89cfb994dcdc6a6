//! When a run started, in UTC, as the reports and file names write it.

use std::time::{SystemTime, UNIX_EPOCH};

/// A UTC date and time, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    /// Year.
    pub year: i64,
    /// Month, 1–12.
    pub month: u32,
    /// Day, 1–31.
    pub day: u32,
    /// Seconds since midnight.
    pub second_of_day: u32,
}

impl UtcTime {
    /// The current time.
    pub fn now() -> Self {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Self::from_unix(secs as i64)
    }

    /// The time `secs` seconds after 1970-01-01T00:00:00Z.
    pub fn from_unix(secs: i64) -> Self {
        // Howard Hinnant's `civil_from_days`.
        let days = secs.div_euclid(86_400);
        let second_of_day = secs.rem_euclid(86_400) as u32;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Self {
            year,
            month,
            day,
            second_of_day,
        }
    }

    fn hms(&self) -> (u32, u32, u32) {
        let s = self.second_of_day;
        (s / 3600, s / 60 % 60, s % 60)
    }

    /// `2026-01-31T23:59:07Z`.
    pub fn iso(&self) -> String {
        let (h, m, s) = self.hms();
        format!(
            "{:04}-{:02}-{:02}T{h:02}:{m:02}:{s:02}Z",
            self.year, self.month, self.day
        )
    }

    /// `20260131T235907Z`, for file names.
    pub fn compact(&self) -> String {
        let (h, m, s) = self.hms();
        format!(
            "{:04}{:02}{:02}T{h:02}{m:02}{s:02}Z",
            self.year, self.month, self.day
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(UtcTime::from_unix(0).iso(), "1970-01-01T00:00:00Z");
        assert_eq!(
            UtcTime::from_unix(951_782_400).iso(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            UtcTime::from_unix(1_767_225_599).compact(),
            "20251231T235959Z"
        );
        assert_eq!(
            UtcTime::from_unix(4_107_542_400).iso(),
            "2100-03-01T00:00:00Z"
        );
    }
}
