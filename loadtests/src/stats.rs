//! Medians, ratios, UTC timestamps, and the Markdown and JSON reports of a
//! `run`. Pure functions: the binary decides where the text goes.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// Which server a measurement is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Server {
    /// The floor reference server.
    Reference,
    /// The planshare server under test.
    Planshare,
}

impl Server {
    /// Lower-case name for tables and file contents.
    pub fn name(self) -> &'static str {
        match self {
            Self::Reference => "reference",
            Self::Planshare => "planshare",
        }
    }
}

/// One measured phase: one server, one scenario, one round.
#[derive(Debug, Clone)]
pub struct Record {
    /// Round number, from 1.
    pub round: usize,
    /// `"create"` or `"fetch"`.
    pub scenario: &'static str,
    /// Payload size (characters of `data`).
    pub size: usize,
    /// The server measured.
    pub server: Server,
    /// Successful requests per second.
    pub requests_per_second: f64,
    /// Latency quantiles of successful requests, in milliseconds.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Slowest successful request, ms.
    pub max_ms: f64,
    /// Server CPU time per successful request, µs (`None` if not sampled).
    pub cpu_us_per_request: Option<f64>,
    /// Successful requests in the window.
    pub ok: u64,
    /// Failed requests in the window.
    pub errors: u64,
    /// Failed requests by kind.
    pub error_kinds: BTreeMap<String, u64>,
}

impl Record {
    fn to_json(&self) -> Value {
        json!({
            "round": self.round,
            "scenario": self.scenario,
            "size": self.size,
            "server": self.server.name(),
            "requests_per_second": self.requests_per_second,
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p99_ms": self.p99_ms,
            "p999_ms": self.p999_ms,
            "max_ms": self.max_ms,
            "cpu_us_per_request": self.cpu_us_per_request,
            "ok": self.ok,
            "errors": self.errors,
            "error_kinds": self.error_kinds,
        })
    }
}

/// The median of `values` (mean of the middle two for an even count).
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

/// Medians across rounds for one server in one scenario.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    /// Rounds measured.
    pub rounds: usize,
    /// Median requests/s.
    pub requests_per_second: Option<f64>,
    /// Median p50, ms.
    pub p50_ms: Option<f64>,
    /// Median p99, ms.
    pub p99_ms: Option<f64>,
    /// Median CPU µs per request.
    pub cpu_us_per_request: Option<f64>,
    /// Median of the per-round error counts.
    pub errors_median: Option<f64>,
    /// Errors summed over all rounds (so that no error hides in a median).
    pub errors_total: u64,
}

impl Aggregate {
    fn of<'a>(records: impl Iterator<Item = &'a Record>) -> Self {
        let records: Vec<&Record> = records.collect();
        let med = |f: &dyn Fn(&Record) -> Option<f64>| {
            median(&records.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
        };
        Self {
            rounds: records.len(),
            requests_per_second: med(&|r| Some(r.requests_per_second)),
            p50_ms: med(&|r| Some(r.p50_ms)),
            p99_ms: med(&|r| Some(r.p99_ms)),
            cpu_us_per_request: med(&|r| r.cpu_us_per_request),
            errors_median: med(&|r| Some(r.errors as f64)),
            errors_total: records.iter().map(|r| r.errors).sum(),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "rounds": self.rounds,
            "requests_per_second": self.requests_per_second,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "cpu_us_per_request": self.cpu_us_per_request,
            "errors_median": self.errors_median,
            "errors_total": self.errors_total,
        })
    }
}

/// One scenario (kind × size): both servers and their ratios.
#[derive(Debug, Clone)]
pub struct Row {
    /// `"create"` or `"fetch"`.
    pub scenario: &'static str,
    /// Payload size.
    pub size: usize,
    /// planshare's medians.
    pub planshare: Aggregate,
    /// The reference server's medians.
    pub reference: Aggregate,
}

impl Row {
    /// planshare req/s ÷ reference req/s (higher is better, 1 = the floor).
    pub fn throughput_ratio(&self) -> Option<f64> {
        ratio(
            self.planshare.requests_per_second,
            self.reference.requests_per_second,
        )
    }

    /// planshare p99 ÷ reference p99 (lower is better).
    pub fn p99_ratio(&self) -> Option<f64> {
        ratio(self.planshare.p99_ms, self.reference.p99_ms)
    }

    /// planshare CPU/request ÷ reference CPU/request (lower is better).
    pub fn cpu_ratio(&self) -> Option<f64> {
        ratio(
            self.planshare.cpu_us_per_request,
            self.reference.cpu_us_per_request,
        )
    }
}

/// Groups records by scenario and size, in first-seen order.
pub fn summarize(records: &[Record]) -> Vec<Row> {
    let mut keys: Vec<(&'static str, usize)> = Vec::new();
    for r in records {
        if !keys.contains(&(r.scenario, r.size)) {
            keys.push((r.scenario, r.size));
        }
    }
    keys.into_iter()
        .map(|(scenario, size)| {
            let of = |server| {
                Aggregate::of(
                    records
                        .iter()
                        .filter(|r| r.scenario == scenario && r.size == size && r.server == server),
                )
            };
            Row {
                scenario,
                size,
                planshare: of(Server::Planshare),
                reference: of(Server::Reference),
            }
        })
        .collect()
}

/// What a run was, for the report's header and the JSON file.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// When it started (UTC).
    pub started: UtcTime,
    /// Path of the planshare binary (or a note when it was replaced).
    pub server_bin: String,
    /// Connections per phase.
    pub concurrency: usize,
    /// Measured seconds per phase.
    pub duration_s: f64,
    /// Warm-up seconds per phase.
    pub warmup_s: f64,
    /// Rounds.
    pub rounds: usize,
    /// Payload sizes.
    pub sizes: Vec<usize>,
    /// CPUs available to this process.
    pub cpus: usize,
    /// Clock ticks per second used for CPU figures.
    pub clock_ticks: u64,
    /// Whether this runner (and so the reference server) is a debug build.
    pub debug_build: bool,
    /// Free-form notes (warnings) to print under the header.
    pub notes: Vec<String>,
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.decimals$}"))
}

/// The Markdown report: ratios first, then the medians, then any errors.
pub fn markdown(info: &RunInfo, rows: &[Row], records: &[Record]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# planshare load test — {}\n", info.started.iso());
    let _ = writeln!(
        md,
        "planshare `{}` vs the floor reference server (hyper, same payloads), loopback, \
         {} CPUs, {} connections, {} s measured after {} s warm-up per phase, \
         median of {} rounds run A/B interleaved.\n",
        info.server_bin, info.cpus, info.concurrency, info.duration_s, info.warmup_s, info.rounds
    );
    for note in &info.notes {
        let _ = writeln!(md, "> **Note:** {note}\n");
    }
    let _ = writeln!(md, "## planshare / reference\n");
    let _ = writeln!(
        md,
        "Throughput: higher is better, 1.00 = as fast as the floor. \
         p99 and CPU per request: lower is better, 1.00 = the floor.\n"
    );
    let _ = writeln!(
        md,
        "| scenario | size (B) | throughput | p99 latency | CPU / request |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|");
    for row in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            row.scenario,
            row.size,
            opt(row.throughput_ratio(), 2),
            opt(row.p99_ratio(), 2),
            opt(row.cpu_ratio(), 2),
        );
    }
    let _ = writeln!(md, "\n## Medians across rounds\n");
    let _ = writeln!(
        md,
        "| scenario | size (B) | server | req/s | p50 ms | p99 ms | CPU µs/req | errors (all rounds) |"
    );
    let _ = writeln!(md, "|---|---:|---|---:|---:|---:|---:|---:|");
    for row in rows {
        for (server, agg) in [
            (Server::Planshare, &row.planshare),
            (Server::Reference, &row.reference),
        ] {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                row.scenario,
                row.size,
                server.name(),
                opt(agg.requests_per_second, 0),
                opt(agg.p50_ms, 2),
                opt(agg.p99_ms, 2),
                opt(agg.cpu_us_per_request, 0),
                agg.errors_total,
            );
        }
    }
    let failing: Vec<&Record> = records.iter().filter(|r| r.errors > 0).collect();
    if !failing.is_empty() {
        let _ = writeln!(md, "\n## Errors\n");
        for r in failing {
            let kinds = r
                .error_kinds
                .iter()
                .map(|(kind, n)| format!("{n} × {}", kind.replace('|', "\\|").replace('\n', " ")))
                .collect::<Vec<_>>()
                .join("; ");
            let _ = writeln!(
                md,
                "- round {} {} {} B {}: {} errors — {kinds}",
                r.round,
                r.scenario,
                r.size,
                r.server.name(),
                r.errors
            );
        }
    }
    md
}

/// The JSON report: settings, every phase, and the per-scenario summary.
pub fn json_report(info: &RunInfo, rows: &[Row], records: &[Record]) -> Value {
    json!({
        "started_utc": info.started.iso(),
        "server_bin": info.server_bin,
        "settings": {
            "concurrency": info.concurrency,
            "duration_s": info.duration_s,
            "warmup_s": info.warmup_s,
            "rounds": info.rounds,
            "sizes": info.sizes,
        },
        "machine": {
            "cpus": info.cpus,
            "clock_ticks_per_second": info.clock_ticks,
            "runner_debug_build": info.debug_build,
        },
        "notes": info.notes,
        "summary": rows.iter().map(|row| json!({
            "scenario": row.scenario,
            "size": row.size,
            "planshare": row.planshare.to_json(),
            "reference": row.reference.to_json(),
            "ratio": {
                "throughput": row.throughput_ratio(),
                "p99": row.p99_ratio(),
                "cpu_per_request": row.cpu_ratio(),
            },
        })).collect::<Vec<_>>(),
        "phases": records.iter().map(Record::to_json).collect::<Vec<_>>(),
    })
}

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
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(Some(1.0), Some(4.0)), Some(0.25));
    }

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

    fn record(server: Server, round: usize, rps: f64, errors: u64) -> Record {
        Record {
            round,
            scenario: "fetch",
            size: 8192,
            server,
            requests_per_second: rps,
            p50_ms: 1.0,
            p90_ms: 1.5,
            p99_ms: 2.0,
            p999_ms: 3.0,
            max_ms: 4.0,
            cpu_us_per_request: Some(100.0),
            ok: 10,
            errors,
            error_kinds: BTreeMap::new(),
        }
    }

    #[test]
    fn summary_takes_medians_and_sums_errors() {
        let records = [
            record(Server::Reference, 1, 1000.0, 0),
            record(Server::Planshare, 1, 400.0, 2),
            record(Server::Reference, 2, 1200.0, 0),
            record(Server::Planshare, 2, 600.0, 0),
        ];
        let rows = summarize(&records);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].throughput_ratio(), Some(500.0 / 1100.0));
        assert_eq!(rows[0].planshare.errors_total, 2);
        assert_eq!(rows[0].p99_ratio(), Some(1.0));
    }
}
