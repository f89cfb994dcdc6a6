//! Medians, ratios, UTC timestamps, and the Markdown and JSON reports of a
//! `run`. Pure functions: the binary decides where the text goes.

use crate::backend::Store;
use crate::disk::DiskUsage;
use crate::procstat::kib_to_mib;
use crate::targets::Evaluation;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// Which server a measurement is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Server {
    /// The floor reference server.
    Reference,
    /// The planshare server under test, with this store.
    Planshare(Store),
}

impl Server {
    /// `"reference"` or `"planshare"` (the store is [`Server::store`]).
    pub fn name(self) -> &'static str {
        match self {
            Self::Reference => "reference",
            Self::Planshare(_) => "planshare",
        }
    }

    /// The store of a planshare server.
    pub fn store(self) -> Option<Store> {
        match self {
            Self::Reference => None,
            Self::Planshare(store) => Some(store),
        }
    }

    /// `"reference"` or `"planshare/<store>"`.
    pub fn label(self) -> String {
        match self {
            Self::Reference => "reference".to_owned(),
            Self::Planshare(store) => format!("planshare/{store}"),
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
    /// Connections, each with one request in flight.
    pub concurrency: usize,
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
    /// The highest resident set size of the server process sampled during
    /// the phase (warm-up and window), KiB (`None` if not sampled).
    pub rss_peak_kib: Option<u64>,
}

impl Record {
    fn to_json(&self) -> Value {
        json!({
            "round": self.round,
            "scenario": self.scenario,
            "size": self.size,
            "concurrency": self.concurrency,
            "server": self.server.name(),
            "store": self.server.store().map(Store::name),
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
            "rss_peak_kib": self.rss_peak_kib,
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

/// One scenario (kind × size × concurrency): the reference, each store, and
/// their ratios.
#[derive(Debug, Clone)]
pub struct Row {
    /// `"create"` or `"fetch"`.
    pub scenario: &'static str,
    /// Payload size.
    pub size: usize,
    /// Connections.
    pub concurrency: usize,
    /// The reference server's medians.
    pub reference: Aggregate,
    /// planshare's medians with each store, in the order they were measured.
    pub stores: Vec<(Store, Aggregate)>,
}

impl Row {
    /// planshare's medians with `store`, if it was measured.
    pub fn store(&self, store: Store) -> Option<&Aggregate> {
        self.stores
            .iter()
            .find(|(s, _)| *s == store)
            .map(|(_, agg)| agg)
    }

    fn store_figure(&self, store: Store, f: fn(&Aggregate) -> Option<f64>) -> Option<f64> {
        self.store(store).and_then(f)
    }

    /// planshare (`store`) req/s ÷ reference req/s (higher is better, 1 = the floor).
    pub fn throughput_ratio(&self, store: Store) -> Option<f64> {
        ratio(
            self.store_figure(store, |a| a.requests_per_second),
            self.reference.requests_per_second,
        )
    }

    /// planshare (`store`) p99 ÷ reference p99 (lower is better).
    pub fn p99_ratio(&self, store: Store) -> Option<f64> {
        ratio(
            self.store_figure(store, |a| a.p99_ms),
            self.reference.p99_ms,
        )
    }

    /// planshare (`store`) CPU/request ÷ reference CPU/request (lower is better).
    pub fn cpu_ratio(&self, store: Store) -> Option<f64> {
        ratio(
            self.store_figure(store, |a| a.cpu_us_per_request),
            self.reference.cpu_us_per_request,
        )
    }

    /// planshare req/s with `store` ÷ with `fs` (higher is better, 1 = as fast as fs).
    pub fn throughput_vs_fs(&self, store: Store) -> Option<f64> {
        ratio(
            self.store_figure(store, |a| a.requests_per_second),
            self.store_figure(Store::Fs, |a| a.requests_per_second),
        )
    }

    /// planshare p99 with `store` ÷ with `fs` (lower is better).
    pub fn p99_vs_fs(&self, store: Store) -> Option<f64> {
        ratio(
            self.store_figure(store, |a| a.p99_ms),
            self.store_figure(Store::Fs, |a| a.p99_ms),
        )
    }
}

/// Groups records by scenario, size and concurrency, in first-seen order;
/// within a row, the stores are in the order they were first measured.
pub fn summarize(records: &[Record]) -> Vec<Row> {
    let mut keys: Vec<(&'static str, usize, usize)> = Vec::new();
    let mut stores: Vec<Store> = Vec::new();
    for r in records {
        let key = (r.scenario, r.size, r.concurrency);
        if !keys.contains(&key) {
            keys.push(key);
        }
        if let Some(store) = r.server.store()
            && !stores.contains(&store)
        {
            stores.push(store);
        }
    }
    keys.into_iter()
        .map(|(scenario, size, concurrency)| {
            let of_key = |server: Server| {
                records.iter().filter(move |r| {
                    r.scenario == scenario
                        && r.size == size
                        && r.concurrency == concurrency
                        && r.server == server
                })
            };
            Row {
                scenario,
                size,
                concurrency,
                reference: Aggregate::of(of_key(Server::Reference)),
                stores: stores
                    .iter()
                    .filter(|&&store| of_key(Server::Planshare(store)).next().is_some())
                    .map(|&store| (store, Aggregate::of(of_key(Server::Planshare(store)))))
                    .collect(),
            }
        })
        .collect()
}

/// Resident memory of one server process during a run, in KiB.
#[derive(Debug, Clone)]
pub struct MemoryFigures {
    /// The server.
    pub server: Server,
    /// The payload size this process alone serves (a reference server, or a
    /// reference stand-in), `None` for a planshare server (every size).
    pub size: Option<usize>,
    /// `VmRSS` right after the process first answered `/readyz`.
    pub idle_kib: Option<u64>,
    /// `VmRSS` after every paste for the `fetch` scenarios was seeded.
    pub seeded_kib: Option<u64>,
    /// Highest `VmRSS` sampled during the phases, per concurrency.
    pub peak_kib: BTreeMap<usize, u64>,
    /// `VmHWM` at the end of the run: the peak since the process started.
    pub high_water_kib: Option<u64>,
}

impl MemoryFigures {
    /// How the process is named in the report: the server's label, and the
    /// payload size when the process serves one size only.
    pub fn label(&self, info: &RunInfo) -> String {
        match self.size {
            Some(size) => format!("{} ({size} B)", info.label(self.server)),
            None => info.label(self.server),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "server": self.server.name(),
            "store": self.server.store().map(Store::name),
            "size": self.size,
            "idle_kib": self.idle_kib,
            "after_seeding_kib": self.seeded_kib,
            "peak_kib": self.peak_kib.iter().map(|(c, kib)| json!({
                "concurrency": c,
                "kib": kib,
            })).collect::<Vec<_>>(),
            "high_water_mark_kib": self.high_water_kib,
        })
    }
}

/// The highest `rss_peak_kib` among the phases of `server` at `concurrency`
/// (only those of payload `size`, when given).
pub fn peak_rss_kib(
    records: &[Record],
    server: Server,
    size: Option<usize>,
    concurrency: usize,
) -> Option<u64> {
    records
        .iter()
        .filter(|r| {
            r.server == server && r.concurrency == concurrency && size.is_none_or(|s| s == r.size)
        })
        .filter_map(|r| r.rss_peak_kib)
        .max()
}

/// Bytes on disk of a fresh fs store holding `pastes` pastes of `size`
/// base64 characters each.
#[derive(Debug, Clone)]
pub struct DiskFigures {
    /// Characters of `data` per paste.
    pub size: usize,
    /// Pastes created.
    pub pastes: usize,
    /// What the files under the data directory add up to.
    pub usage: DiskUsage,
}

impl DiskFigures {
    /// Base64 characters stored: `pastes × size`.
    pub fn base64_chars(&self) -> u64 {
        self.pastes as u64 * self.size as u64
    }

    /// File lengths ÷ base64 characters (1.00 = the text as sent; 0.75 = the
    /// bytes it decodes to).
    pub fn apparent_per_char(&self) -> Option<f64> {
        ratio(
            Some(self.usage.apparent_bytes as f64),
            Some(self.base64_chars() as f64),
        )
    }

    /// Allocated blocks ÷ base64 characters.
    pub fn allocated_per_char(&self) -> Option<f64> {
        ratio(
            Some(self.usage.allocated_bytes as f64),
            Some(self.base64_chars() as f64),
        )
    }

    fn to_json(&self) -> Value {
        json!({
            "size": self.size,
            "pastes": self.pastes,
            "files": self.usage.files,
            "base64_chars": self.base64_chars(),
            "apparent_bytes": self.usage.apparent_bytes,
            "allocated_bytes": self.usage.allocated_bytes,
            "apparent_per_base64_char": self.apparent_per_char(),
            "allocated_per_base64_char": self.allocated_per_char(),
        })
    }
}

/// What a run measured besides the phases: memory and bytes on disk.
#[derive(Debug, Clone, Default)]
pub struct Footprint {
    /// One entry per server process, in start order.
    pub memory: Vec<MemoryFigures>,
    /// One entry per payload size (empty when the fs store was not measured).
    pub disk: Vec<DiskFigures>,
}

/// A measured store and the settings its server ran with.
#[derive(Debug, Clone)]
pub struct StoreInfo {
    /// The store.
    pub store: Store,
    /// Its settings, for the report (no secrets).
    pub settings: String,
}

/// What a run was, for the report's header and the JSON file.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// When it started (UTC).
    pub started: UtcTime,
    /// Path of the planshare binary (or a note when it was replaced).
    pub server_bin: String,
    /// The stores measured, in order.
    pub stores: Vec<StoreInfo>,
    /// Connections per phase: every scenario is measured at each.
    pub concurrency: Vec<usize>,
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

impl RunInfo {
    /// Whether only the fs store is measured: the reports then keep the
    /// single-store layout (planshare against the reference).
    pub fn single_fs(&self) -> bool {
        matches!(self.stores.as_slice(), [only] if only.store == Store::Fs)
    }

    /// How `server` is named in progress lines and reports: `planshare` in a
    /// single-fs run, `planshare/<store>` otherwise.
    pub fn label(&self, server: Server) -> String {
        if self.single_fs() {
            server.name().to_owned()
        } else {
            server.label()
        }
    }
}

/// A duration for progress lines, to the second: `45s`, `3m10s`, `1h02m`.
pub fn duration_text(d: std::time::Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_millis() >= 500);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.decimals$}"))
}

/// A ratio with two decimals, or two significant digits below 0.1 (so that a
/// store at 0.4 % of the floor does not read `0.00`).
fn ratio_text(v: Option<f64>) -> String {
    match v {
        Some(v) if v > 0.0 && v < 0.095 => {
            let decimals = (-v.log10()).ceil() as usize + 1;
            format!("{v:.decimals$}")
        }
        _ => opt(v, 2),
    }
}

/// `32`, `32 and 128`, `8, 32 and 128`.
fn and_list(values: &[usize]) -> String {
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

/// KiB as MiB with one decimal, or `–`.
fn mib_text(kib: Option<u64>) -> String {
    opt(kib.map(kib_to_mib), 1)
}

/// The Markdown report: the header, the targets (when a targets file was
/// read), the figures of the phases, memory, bytes on disk, then any errors.
///
/// With the fs store alone the phases are two tables: ratios, then the
/// medians. With several stores (or one other than fs): one table with a row
/// for the reference and each store per scenario — medians, ratios against
/// the reference and against fs.
pub fn markdown(
    info: &RunInfo,
    rows: &[Row],
    records: &[Record],
    footprint: &Footprint,
    targets: Option<&Evaluation>,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# planshare load test — {}\n", info.started.iso());
    header(&mut md, info);
    if let Some(targets) = targets {
        targets.markdown(&mut md);
    }
    if info.single_fs() {
        single_store_tables(&mut md, rows);
    } else {
        per_store_table(&mut md, rows);
    }
    memory_table(&mut md, info, footprint);
    disk_table(&mut md, footprint);
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
                "- round {} {} {} B c={} {}: {} errors — {kinds}",
                r.round,
                r.scenario,
                r.size,
                r.concurrency,
                info.label(r.server),
                r.errors
            );
        }
    }
    md
}

/// What was measured, how, and the run's notes.
fn header(md: &mut String, info: &RunInfo) {
    let connections = and_list(&info.concurrency);
    if info.single_fs() {
        let _ = writeln!(
            md,
            "planshare `{}` vs the floor reference server (hyper, same payloads), loopback, \
             {} CPUs, {connections} connections, {} s measured after {} s warm-up per phase, \
             median of {} rounds run A/B interleaved.\n",
            info.server_bin, info.cpus, info.duration_s, info.warmup_s, info.rounds
        );
    } else {
        let names = info
            .stores
            .iter()
            .map(|s| format!("`{}`", s.store))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            md,
            "planshare `{}` with the stores {names} vs the floor reference server (hyper, same \
             payloads), loopback, {} CPUs, {connections} connections, {} s measured after {} s \
             warm-up per phase, median of {} rounds run interleaved (reference, then each \
             store, per scenario).\n",
            info.server_bin, info.cpus, info.duration_s, info.warmup_s, info.rounds
        );
        for store in &info.stores {
            let _ = writeln!(md, "- `{}`: {}", store.store, store.settings);
        }
        let _ = writeln!(md);
    }
    for note in &info.notes {
        let _ = writeln!(md, "> **Note:** {note}\n");
    }
}

/// The phases of a run with the fs store alone.
fn single_store_tables(md: &mut String, rows: &[Row]) {
    let _ = writeln!(md, "## planshare / reference\n");
    let _ = writeln!(
        md,
        "Throughput: higher is better, 1.00 = as fast as the floor. \
         p99 and CPU per request: lower is better, 1.00 = the floor.\n"
    );
    let _ = writeln!(
        md,
        "| scenario | size (B) | connections | throughput | p99 latency | CPU / request |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
    for row in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            row.scenario,
            row.size,
            row.concurrency,
            opt(row.throughput_ratio(Store::Fs), 2),
            opt(row.p99_ratio(Store::Fs), 2),
            opt(row.cpu_ratio(Store::Fs), 2),
        );
    }
    let _ = writeln!(md, "\n## Medians across rounds\n");
    let _ = writeln!(
        md,
        "| scenario | size (B) | connections | server | req/s | p50 ms | p99 ms | CPU µs/req | \
         errors (all rounds) |"
    );
    let _ = writeln!(md, "|---|---:|---:|---|---:|---:|---:|---:|---:|");
    let empty = Aggregate::default();
    for row in rows {
        for (server, agg) in [
            (
                Server::Planshare(Store::Fs),
                row.store(Store::Fs).unwrap_or(&empty),
            ),
            (Server::Reference, &row.reference),
        ] {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.scenario,
                row.size,
                row.concurrency,
                server.name(),
                opt(agg.requests_per_second, 0),
                opt(agg.p50_ms, 2),
                opt(agg.p99_ms, 2),
                opt(agg.cpu_us_per_request, 0),
                agg.errors_total,
            );
        }
    }
}

/// The phases of a run with several stores.
fn per_store_table(md: &mut String, rows: &[Row]) {
    let _ = writeln!(md, "## Per store\n");
    let _ = writeln!(
        md,
        "req/s, p50, p99, CPU µs/req (planshare's process only, not Redis's or the S3 \
         server's): medians across rounds; errors: all rounds. Ratios: throughput higher is \
         better, p99 and CPU lower is better; `/ ref` = against the floor reference server \
         (1.00 = the floor), `/ fs` = against planshare with the fs store in the same run.\n"
    );
    let _ = writeln!(
        md,
        "| scenario | size (B) | connections | server | req/s | p50 ms | p99 ms | CPU µs/req | \
         errors | throughput / ref | p99 / ref | CPU / ref | throughput / fs | p99 / fs |"
    );
    let _ = writeln!(
        md,
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in rows {
        let medians = |agg: &Aggregate| {
            format!(
                "{} | {} | {} | {} | {}",
                opt(agg.requests_per_second, 0),
                opt(agg.p50_ms, 2),
                opt(agg.p99_ms, 2),
                opt(agg.cpu_us_per_request, 0),
                agg.errors_total,
            )
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | reference | {} | – | – | – | – | – |",
            row.scenario,
            row.size,
            row.concurrency,
            medians(&row.reference),
        );
        for (store, agg) in &row.stores {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.scenario,
                row.size,
                row.concurrency,
                Server::Planshare(*store).label(),
                medians(agg),
                ratio_text(row.throughput_ratio(*store)),
                ratio_text(row.p99_ratio(*store)),
                ratio_text(row.cpu_ratio(*store)),
                ratio_text(row.throughput_vs_fs(*store)),
                ratio_text(row.p99_vs_fs(*store)),
            );
        }
    }
}

/// Resident memory per server process.
fn memory_table(md: &mut String, info: &RunInfo, footprint: &Footprint) {
    if footprint.memory.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## Memory (resident set size, MiB)\n");
    let _ = writeln!(
        md,
        "`VmRSS` of each server process: right after it first answered `/readyz` (idle), \
         after the pastes for the fetch scenarios were seeded, and the highest value sampled \
         every 100 ms during the phases (warm-up included) at each number of connections; \
         high-water mark: `VmHWM` at the end of the run (the peak since start, seeding \
         included). 1 MiB = 1024 KiB.\n"
    );
    let mut header = "| server | idle | after seeding |".to_owned();
    let mut rule = "|---|---:|---:|".to_owned();
    for c in &info.concurrency {
        let _ = write!(header, " peak, {c} connections |");
        rule.push_str("---:|");
    }
    let _ = writeln!(md, "{header} high-water mark |\n{rule}---:|");
    for process in &footprint.memory {
        let mut line = format!(
            "| {} | {} | {} |",
            process.label(info),
            mib_text(process.idle_kib),
            mib_text(process.seeded_kib)
        );
        for c in &info.concurrency {
            let _ = write!(line, " {} |", mib_text(process.peak_kib.get(c).copied()));
        }
        let _ = writeln!(md, "{line} {} |", mib_text(process.high_water_kib));
    }
}

/// Bytes on disk per base64 character of the fs store.
fn disk_table(md: &mut String, footprint: &Footprint) {
    if footprint.disk.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## Bytes on disk (fs store)\n");
    let _ = writeln!(
        md,
        "A fresh planshare server with the fs store per size, the pastes created through \
         `POST /api/paste`; every file under its data directory except the SQLite catalog \
         and temporary files. Per base64 character stored: 1.00 = the text as sent, 0.75 = \
         the bytes it decodes to. Apparent = file lengths, allocated = blocks × 512.\n"
    );
    let _ = writeln!(
        md,
        "| size (B) | pastes | files | base64 chars | apparent bytes | apparent / char | \
         allocated bytes | allocated / char |"
    );
    let _ = writeln!(md, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    for d in &footprint.disk {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            d.size,
            d.pastes,
            d.usage.files,
            d.base64_chars(),
            d.usage.apparent_bytes,
            opt(d.apparent_per_char(), 3),
            d.usage.allocated_bytes,
            opt(d.allocated_per_char(), 3),
        );
    }
}

/// The JSON report: settings, every phase, the per-scenario summary, memory,
/// bytes on disk and the targets (`null` without a targets file).
///
/// Each summary entry has the reference's medians and, under `stores`, each
/// store's medians with its ratios to the reference and to fs. When the fs
/// store was measured, the entry also keeps the single-store keys
/// `planshare` (fs's medians) and `ratio` (fs against the reference).
pub fn json_report(
    info: &RunInfo,
    rows: &[Row],
    records: &[Record],
    footprint: &Footprint,
    targets: Option<&Evaluation>,
) -> Value {
    let summary = rows
        .iter()
        .map(|row| {
            let mut entry = json!({
                "scenario": row.scenario,
                "size": row.size,
                "concurrency": row.concurrency,
                "reference": row.reference.to_json(),
                "stores": row.stores.iter().map(|(store, agg)| json!({
                    "store": store.name(),
                    "medians": agg.to_json(),
                    "ratio_to_reference": {
                        "throughput": row.throughput_ratio(*store),
                        "p99": row.p99_ratio(*store),
                        "cpu_per_request": row.cpu_ratio(*store),
                    },
                    "ratio_to_fs": {
                        "throughput": row.throughput_vs_fs(*store),
                        "p99": row.p99_vs_fs(*store),
                    },
                })).collect::<Vec<_>>(),
            });
            if let (Some(fs), Some(object)) = (row.store(Store::Fs), entry.as_object_mut()) {
                object.insert("planshare".to_owned(), fs.to_json());
                object.insert(
                    "ratio".to_owned(),
                    json!({
                        "throughput": row.throughput_ratio(Store::Fs),
                        "p99": row.p99_ratio(Store::Fs),
                        "cpu_per_request": row.cpu_ratio(Store::Fs),
                    }),
                );
            }
            entry
        })
        .collect::<Vec<_>>();
    json!({
        "started_utc": info.started.iso(),
        "server_bin": info.server_bin,
        "stores": info.stores.iter().map(|s| json!({
            "store": s.store.name(),
            "settings": s.settings,
        })).collect::<Vec<_>>(),
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
        "targets": targets.map(Evaluation::to_json),
        "summary": summary,
        "memory": footprint.memory.iter().map(MemoryFigures::to_json).collect::<Vec<_>>(),
        "disk": footprint.disk.iter().map(DiskFigures::to_json).collect::<Vec<_>>(),
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
    fn durations_for_progress() {
        use std::time::Duration;
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
            concurrency: 32,
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
            rss_peak_kib: Some(10_240),
        }
    }

    fn with_p99(mut record: Record, p99_ms: f64) -> Record {
        record.p99_ms = p99_ms;
        record
    }

    fn info(stores: &[Store]) -> RunInfo {
        RunInfo {
            started: UtcTime::from_unix(0),
            server_bin: "target/release/planshare-server".to_owned(),
            stores: stores
                .iter()
                .map(|&store| StoreInfo {
                    store,
                    settings: format!("settings of {store}"),
                })
                .collect(),
            concurrency: vec![32],
            duration_s: 5.0,
            warmup_s: 2.0,
            rounds: 2,
            sizes: vec![8192],
            cpus: 2,
            clock_ticks: 100,
            debug_build: false,
            notes: Vec::new(),
        }
    }

    const FS: Server = Server::Planshare(Store::Fs);
    const REDIS: Server = Server::Planshare(Store::Redis);
    const S3: Server = Server::Planshare(Store::S3);

    #[test]
    fn summary_takes_medians_and_sums_errors() {
        let records = [
            record(Server::Reference, 1, 1000.0, 0),
            record(FS, 1, 400.0, 2),
            record(Server::Reference, 2, 1200.0, 0),
            record(FS, 2, 600.0, 0),
        ];
        let rows = summarize(&records);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].throughput_ratio(Store::Fs), Some(500.0 / 1100.0));
        assert_eq!(rows[0].store(Store::Fs).map(|a| a.errors_total), Some(2));
        assert_eq!(rows[0].p99_ratio(Store::Fs), Some(1.0));
        assert_eq!(rows[0].throughput_vs_fs(Store::Fs), Some(1.0));
        assert_eq!(rows[0].throughput_ratio(Store::Redis), None);
    }

    /// Two rounds of the reference, fs, redis and s3, interleaved as `run`
    /// measures them, in two scenarios.
    fn three_stores() -> Vec<Record> {
        let mut records = Vec::new();
        for round in 1..=2 {
            let r = round as f64;
            for scenario in ["create", "fetch"] {
                let base = if scenario == "create" { 1.0 } else { 2.0 };
                for (server, rps, p99, errors) in [
                    (Server::Reference, 1000.0, 1.0, 0),
                    (FS, 400.0, 4.0, 0),
                    (REDIS, 200.0 * r, 8.0, 1),
                    (S3, 60.0, 40.0 * r, 3),
                ] {
                    let mut rec = with_p99(record(server, round, rps * base, errors), p99);
                    rec.scenario = scenario;
                    records.push(rec);
                }
            }
        }
        records
    }

    #[test]
    fn summary_of_several_stores() {
        let records = three_stores();
        let rows = summarize(&records);
        assert_eq!(rows.len(), 2);
        let create = &rows[0];
        assert_eq!(create.scenario, "create");
        let order: Vec<Store> = create.stores.iter().map(|(s, _)| *s).collect();
        assert_eq!(order, [Store::Fs, Store::Redis, Store::S3]);
        assert_eq!(create.reference.rounds, 2);
        for (_, agg) in &create.stores {
            assert_eq!(agg.rounds, 2);
        }
        // Medians per store: redis 200 and 400 req/s, s3 p99 40 and 80 ms.
        assert_eq!(
            create
                .store(Store::Redis)
                .and_then(|a| a.requests_per_second),
            Some(300.0)
        );
        assert_eq!(create.store(Store::S3).and_then(|a| a.p99_ms), Some(60.0));
        // Errors are summed per store, not mixed across stores.
        assert_eq!(create.store(Store::Fs).map(|a| a.errors_total), Some(0));
        assert_eq!(create.store(Store::Redis).map(|a| a.errors_total), Some(2));
        assert_eq!(create.store(Store::S3).map(|a| a.errors_total), Some(6));
        // Against the reference…
        assert_eq!(create.throughput_ratio(Store::Fs), Some(0.4));
        assert_eq!(create.throughput_ratio(Store::Redis), Some(0.3));
        assert_eq!(create.p99_ratio(Store::S3), Some(60.0));
        assert_eq!(create.cpu_ratio(Store::Redis), Some(1.0));
        // …and against fs.
        assert_eq!(create.throughput_vs_fs(Store::Fs), Some(1.0));
        assert_eq!(create.throughput_vs_fs(Store::Redis), Some(0.75));
        assert_eq!(create.throughput_vs_fs(Store::S3), Some(0.15));
        assert_eq!(create.p99_vs_fs(Store::Redis), Some(2.0));
        assert_eq!(create.p99_vs_fs(Store::S3), Some(15.0));
        // The fetch row has its own figures.
        assert_eq!(
            rows[1].store(Store::Fs).and_then(|a| a.requests_per_second),
            Some(800.0)
        );
        assert_eq!(rows[1].throughput_vs_fs(Store::Redis), Some(0.75));
    }

    #[test]
    fn ratios_to_fs_need_fs() {
        let records: Vec<Record> = three_stores()
            .into_iter()
            .filter(|r| r.server != FS)
            .collect();
        let rows = summarize(&records);
        assert!(rows[0].store(Store::Fs).is_none());
        assert_eq!(rows[0].throughput_vs_fs(Store::Redis), None);
        assert_eq!(rows[0].p99_vs_fs(Store::S3), None);
        assert_eq!(rows[0].throughput_ratio(Store::Redis), Some(0.3));
    }

    #[test]
    fn single_fs_report_keeps_its_layout() {
        let records = [
            record(Server::Reference, 1, 1000.0, 0),
            record(FS, 1, 500.0, 1),
        ];
        let info = info(&[Store::Fs]);
        assert!(info.single_fs());
        assert_eq!(info.label(FS), "planshare");
        let rows = summarize(&records);
        let md = markdown(&info, &rows, &records, &Footprint::default(), None);
        assert!(md.contains("## planshare / reference"), "{md}");
        assert!(
            md.contains("| fetch | 8192 | 32 | 0.50 | 1.00 | 1.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| fetch | 8192 | 32 | planshare | 500 | 1.00 | 2.00 | 100 | 1 |"),
            "{md}"
        );
        assert!(
            md.contains("| fetch | 8192 | 32 | reference | 1000 | 1.00 | 2.00 | 100 | 0 |"),
            "{md}"
        );
        assert!(
            md.contains("- round 1 fetch 8192 B c=32 planshare: 1 errors"),
            "{md}"
        );
        assert!(!md.contains("planshare/fs"), "{md}");

        let json = json_report(&info, &rows, &records, &Footprint::default(), None);
        let entry = &json["summary"][0];
        assert_eq!(entry["ratio"]["throughput"], 0.5);
        assert_eq!(entry["planshare"]["requests_per_second"], 500.0);
        assert_eq!(entry["stores"][0]["store"], "fs");
        assert_eq!(json["phases"][1]["server"], "planshare");
        assert_eq!(json["phases"][1]["store"], "fs");
    }

    #[test]
    fn multi_store_report_has_a_row_per_store() {
        let records = three_stores();
        let info = info(&[Store::Fs, Store::Redis, Store::S3]);
        assert!(!info.single_fs());
        assert_eq!(info.label(REDIS), "planshare/redis");
        let rows = summarize(&records);
        let md = markdown(&info, &rows, &records, &Footprint::default(), None);
        assert!(md.contains("- `redis`: settings of redis"), "{md}");
        assert!(
            md.contains(
                "| create | 8192 | 32 | reference | 1000 | 1.00 | 1.00 | 100 | 0 | – | – | – | – | – |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| create | 8192 | 32 | planshare/fs | 400 | 1.00 | 4.00 | 100 | 0 | 0.40 | 4.00 | 1.00 | 1.00 | 1.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| create | 8192 | 32 | planshare/redis | 300 | 1.00 | 8.00 | 100 | 2 | 0.30 | 8.00 | 1.00 | 0.75 | 2.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| fetch | 8192 | 32 | planshare/s3 | 120 | 1.00 | 60.00 | 100 | 6 | 0.060 | 60.00 | 1.00 | 0.15 | 15.00 |"),
            "{md}"
        );
        assert!(
            md.contains("- round 2 create 8192 B c=32 planshare/s3: 3 errors"),
            "{md}"
        );
        assert!(!md.contains("## planshare / reference"), "{md}");

        let json = json_report(&info, &rows, &records, &Footprint::default(), None);
        let stores = &json["summary"][0]["stores"];
        assert_eq!(stores[1]["store"], "redis");
        assert_eq!(stores[1]["medians"]["requests_per_second"], 300.0);
        assert_eq!(stores[1]["ratio_to_reference"]["throughput"], 0.3);
        assert_eq!(stores[1]["ratio_to_fs"]["throughput"], 0.75);
        assert_eq!(stores[2]["ratio_to_fs"]["p99"], 15.0);
        // The single-store keys still describe fs.
        assert_eq!(json["summary"][0]["ratio"]["throughput"], 0.4);
        assert_eq!(json["stores"][2]["store"], "s3");
        assert_eq!(json["phases"][2]["store"], "redis");
        assert_eq!(json["phases"][0]["store"], Value::Null);
    }

    #[test]
    fn each_concurrency_is_a_scenario_of_its_own() {
        let mut records = Vec::new();
        for (c, rps, rss) in [(32, 600.0, 20_480), (128, 400.0, 51_200)] {
            for (server, factor) in [(Server::Reference, 2.0), (FS, 1.0)] {
                let mut r = record(server, 1, rps * factor, 0);
                r.concurrency = c;
                r.rss_peak_kib = Some(rss);
                records.push(r);
            }
        }
        let rows = summarize(&records);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].concurrency, rows[1].concurrency), (32, 128));
        assert_eq!(
            rows[1].store(Store::Fs).and_then(|a| a.requests_per_second),
            Some(400.0)
        );
        assert_eq!(peak_rss_kib(&records, FS, None, 128), Some(51_200));
        assert_eq!(peak_rss_kib(&records, FS, Some(8192), 32), Some(20_480));
        assert_eq!(peak_rss_kib(&records, FS, Some(100), 32), None);
        assert_eq!(peak_rss_kib(&records, REDIS, None, 32), None);

        let mut info = info(&[Store::Fs]);
        info.concurrency = vec![32, 128];
        let footprint = Footprint {
            memory: vec![
                MemoryFigures {
                    server: FS,
                    size: None,
                    idle_kib: Some(8 * 1024),
                    seeded_kib: Some(10 * 1024),
                    peak_kib: [(32, 20_480), (128, 51_200)].into_iter().collect(),
                    high_water_kib: Some(52_000),
                },
                MemoryFigures {
                    server: Server::Reference,
                    size: Some(8192),
                    idle_kib: Some(3 * 1024),
                    seeded_kib: None,
                    peak_kib: BTreeMap::new(),
                    high_water_kib: None,
                },
            ],
            disk: vec![DiskFigures {
                size: 8192,
                pastes: 200,
                usage: DiskUsage {
                    files: 200,
                    apparent_bytes: 200 * 6208,
                    allocated_bytes: 200 * 8192,
                },
            }],
        };
        let md = markdown(&info, &rows, &records, &footprint, None);
        assert!(md.contains("32 and 128 connections"), "{md}");
        assert!(
            md.contains("| fetch | 8192 | 128 | 0.50 | 1.00 | 1.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| server | idle | after seeding | peak, 32 connections | peak, 128 connections | high-water mark |"),
            "{md}"
        );
        assert!(
            md.contains("| planshare | 8.0 | 10.0 | 20.0 | 50.0 | 50.8 |"),
            "{md}"
        );
        assert!(
            md.contains("| reference (8192 B) | 3.0 | – | – | – | – |"),
            "{md}"
        );
        assert!(
            md.contains("| 8192 | 200 | 200 | 1638400 | 1241600 | 0.758 | 1638400 | 1.000 |"),
            "{md}"
        );
        assert!(!md.contains("## Targets"), "{md}");

        let json = json_report(&info, &rows, &records, &footprint, None);
        assert_eq!(json["settings"]["concurrency"], json!([32, 128]));
        assert_eq!(json["summary"][1]["concurrency"], 128);
        assert_eq!(json["phases"][3]["concurrency"], 128);
        assert_eq!(json["phases"][3]["rss_peak_kib"], 51_200);
        assert_eq!(json["memory"][0]["peak_kib"][1]["concurrency"], 128);
        assert_eq!(json["memory"][1]["size"], 8192);
        assert_eq!(json["disk"][0]["apparent_per_base64_char"], 0.7578125);
        assert_eq!(json["targets"], Value::Null);
    }
}
