//! Performance targets: a TOML file of bounds on the figures of a `run`, and
//! their evaluation against what the run measured (✓, ✗, or not measured).
//!
//! The file (`loadtests/targets.toml`) holds an optional `title` and a list
//! of `[[target]]` tables:
//!
//! ```toml
//! [[target]]
//! name = "fetch 8 KB, fs: throughput"   # optional, for the report
//! metric = "throughput"                 # see `Metric`
//! scenario = "fetch"                    # create | fetch (scenario metrics only)
//! store = "fs"                          # omitted: every planshare store measured
//! sizes = [8192]                        # omitted: every size measured
//! concurrency = [32, 128]               # omitted: every concurrency measured
//! min = 0.8                             # or `max = …`: exactly one of the two
//! ```
//!
//! A target stands for one check per store × size × concurrency it covers.
//! Checks the run has no figure for are reported as not measured; a store a
//! target names that the run did not measure gives a single such check.

use crate::backend::Store;
use crate::footprint::{DiskFigures, MemoryFigures};
use crate::phases::{Row, Server};
use crate::procstat::kib_to_mib;
use crate::text::ratio_text;
use anyhow::{Context as _, bail};
use serde::Deserialize;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// What a target bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// planshare req/s ÷ the reference's, same scenario (higher is better).
    Throughput,
    /// planshare p99 latency ÷ the reference's (lower is better).
    P99,
    /// planshare server CPU per request ÷ the reference's (lower is better).
    CpuPerRequest,
    /// File bytes of a fresh fs store ÷ base64 characters stored (`st_size`).
    DiskPerBase64Char,
    /// `VmRSS` right after start-up (first `/readyz` 200), MiB.
    RssIdleMib,
    /// Highest `VmRSS` sampled during the phases at a concurrency, MiB.
    RssPeakMib,
}

impl Metric {
    /// The name used in the file.
    pub fn name(self) -> &'static str {
        match self {
            Self::Throughput => "throughput",
            Self::P99 => "p99",
            Self::CpuPerRequest => "cpu_per_request",
            Self::DiskPerBase64Char => "disk_per_base64_char",
            Self::RssIdleMib => "rss_idle_mib",
            Self::RssPeakMib => "rss_peak_mib",
        }
    }

    /// What the value is, for the report.
    pub fn description(self) -> &'static str {
        match self {
            Self::Throughput => "throughput / floor",
            Self::P99 => "p99 / floor",
            Self::CpuPerRequest => "CPU per request / floor",
            Self::DiskPerBase64Char => "bytes on disk per base64 char",
            Self::RssIdleMib => "RSS idle after start, MiB",
            Self::RssPeakMib => "RSS peak under load, MiB",
        }
    }

    /// Whether the metric is of a scenario (create/fetch phases).
    fn of_scenario(self) -> bool {
        matches!(self, Self::Throughput | Self::P99 | Self::CpuPerRequest)
    }

    fn value_text(self, value: f64) -> String {
        match self {
            Self::DiskPerBase64Char => format!("{value:.3}"),
            Self::RssIdleMib | Self::RssPeakMib => format!("{value:.1}"),
            Self::Throughput | Self::P99 | Self::CpuPerRequest => ratio_text(Some(value)),
        }
    }
}

/// The bound of a target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// The value must be at least this.
    Min(f64),
    /// The value must be at most this.
    Max(f64),
}

impl Bound {
    /// Whether `value` is within the bound (a NaN never is).
    pub fn holds(self, value: f64) -> bool {
        match self {
            Self::Min(min) => value >= min,
            Self::Max(max) => value <= max,
        }
    }

    fn text(self, metric: Metric) -> String {
        match self {
            Self::Min(v) => format!("≥ {}", metric.value_text(v)),
            Self::Max(v) => format!("≤ {}", metric.value_text(v)),
        }
    }

    fn to_json(self) -> Value {
        match self {
            Self::Min(v) => json!({ "min": v }),
            Self::Max(v) => json!({ "max": v }),
        }
    }
}

/// One `[[target]]` of the file, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Free text for the report (else one is made from the metric).
    pub name: Option<String>,
    /// What is bounded.
    pub metric: Metric,
    /// `"create"` or `"fetch"` for the scenario metrics, else `None`.
    pub scenario: Option<&'static str>,
    /// The store (`None`: every planshare store measured).
    pub store: Option<Store>,
    /// Payload sizes (`None`: every size measured).
    pub sizes: Option<Vec<usize>>,
    /// Concurrencies (`None`: every concurrency measured).
    pub concurrency: Option<Vec<usize>>,
    /// The bound.
    pub bound: Bound,
}

impl Target {
    fn label(&self) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => match self.scenario {
                Some(scenario) => format!("{scenario}: {}", self.metric.description()),
                None => self.metric.description().to_owned(),
            },
        }
    }
}

/// A targets file, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Targets {
    /// The file's `title`, if any.
    pub title: Option<String>,
    /// Its targets, in file order.
    pub targets: Vec<Target>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    title: Option<String>,
    #[serde(default)]
    target: Vec<RawTarget>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    name: Option<String>,
    metric: Metric,
    scenario: Option<String>,
    store: Option<String>,
    sizes: Option<Vec<usize>>,
    concurrency: Option<Vec<usize>>,
    min: Option<f64>,
    max: Option<f64>,
}

impl RawTarget {
    fn check(self) -> anyhow::Result<Target> {
        let metric = self.metric;
        let scenario = match (metric.of_scenario(), self.scenario.as_deref()) {
            (true, Some("create")) => Some("create"),
            (true, Some("fetch")) => Some("fetch"),
            (true, Some(other)) => bail!("scenario `{other}`: expected create or fetch"),
            (true, None) => bail!("metric `{}` needs a scenario", metric.name()),
            (false, None) => None,
            (false, Some(_)) => bail!("metric `{}` takes no scenario", metric.name()),
        };
        let store = self
            .store
            .as_deref()
            .map(str::parse::<Store>)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        if metric == Metric::DiskPerBase64Char && store.is_some_and(|s| s != Store::Fs) {
            bail!("metric `disk_per_base64_char` is measured for the fs store only");
        }
        if matches!(metric, Metric::RssIdleMib | Metric::RssPeakMib) && self.sizes.is_some() {
            bail!(
                "metric `{}` is per server, not per size: remove `sizes`",
                metric.name()
            );
        }
        if matches!(metric, Metric::DiskPerBase64Char | Metric::RssIdleMib)
            && self.concurrency.is_some()
        {
            bail!(
                "metric `{}` is not measured under load: remove `concurrency`",
                metric.name()
            );
        }
        for (key, list) in [("sizes", &self.sizes), ("concurrency", &self.concurrency)] {
            if list.as_ref().is_some_and(Vec::is_empty) {
                bail!("`{key}` is empty: omit it to mean every value measured");
            }
        }
        let bound = match (self.min, self.max) {
            (Some(min), None) if min.is_finite() => Bound::Min(min),
            (None, Some(max)) if max.is_finite() => Bound::Max(max),
            (Some(_), Some(_)) => bail!("both `min` and `max`: give one"),
            (None, None) => bail!("neither `min` nor `max`"),
            _ => bail!("the bound is not a finite number"),
        };
        Ok(Target {
            name: self.name,
            metric,
            scenario,
            store,
            sizes: self.sizes,
            concurrency: self.concurrency,
            bound,
        })
    }
}

impl Targets {
    /// Parses and checks the text of a targets file.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let raw: RawFile = toml::from_str(text).context("not a valid targets file")?;
        let targets = raw
            .target
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let name = t.name.clone();
                t.check().with_context(|| match name {
                    Some(name) => format!("target {} (`{name}`)", i + 1),
                    None => format!("target {}", i + 1),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self {
            title: raw.title,
            targets,
        })
    }

    /// Reads `path`; `Ok(None)` when there is no such file.
    pub fn load(path: &Path) -> anyhow::Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        Self::parse(&text)
            .with_context(|| format!("{}", path.display()))
            .map(Some)
    }
}

/// Everything a run measured that targets can refer to.
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// The planshare stores measured, in order.
    pub stores: &'a [Store],
    /// The payload sizes measured.
    pub sizes: &'a [usize],
    /// The concurrencies measured.
    pub concurrency: &'a [usize],
    /// Medians per scenario.
    pub rows: &'a [Row],
    /// Memory per server process.
    pub memory: &'a [MemoryFigures],
    /// Bytes on disk per size (fs store).
    pub disk: &'a [DiskFigures],
}

impl Measured<'_> {
    fn row(&self, scenario: &str, size: usize, concurrency: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.scenario == scenario && r.size == size && r.concurrency == concurrency)
    }

    /// The highest of `f` over the processes of planshare with `store`, MiB.
    fn memory_mib(&self, store: Store, f: impl Fn(&MemoryFigures) -> Option<u64>) -> Option<f64> {
        self.memory
            .iter()
            .filter(|m| m.server == Server::Planshare(store))
            .filter_map(f)
            .max()
            .map(kib_to_mib)
    }

    fn value(&self, target: &Target, check: &Check) -> Option<f64> {
        let store = check.store?;
        match target.metric {
            Metric::Throughput | Metric::P99 | Metric::CpuPerRequest => {
                let row = self.row(target.scenario?, check.size?, check.concurrency?)?;
                match target.metric {
                    Metric::Throughput => row.throughput_ratio(store),
                    Metric::P99 => row.p99_ratio(store),
                    _ => row.cpu_ratio(store),
                }
            }
            Metric::DiskPerBase64Char => {
                let size = check.size?;
                self.disk
                    .iter()
                    .find(|d| d.size == size)
                    .and_then(DiskFigures::apparent_per_char)
            }
            Metric::RssIdleMib => self.memory_mib(store, |m| m.idle_kib),
            Metric::RssPeakMib => {
                let c = check.concurrency?;
                self.memory_mib(store, |m| m.peak_kib.get(&c).copied())
            }
        }
    }
}

/// Where one check applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Check {
    store: Option<Store>,
    size: Option<usize>,
    concurrency: Option<usize>,
}

/// One check of one target.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Index of the target in the file, from 0.
    pub target: usize,
    /// The target's name (or a description of its metric).
    pub name: String,
    /// What is bounded.
    pub metric: Metric,
    /// The scenario, for the scenario metrics.
    pub scenario: Option<&'static str>,
    /// The store checked.
    pub store: Option<Store>,
    /// The payload size checked, if the metric has one.
    pub size: Option<usize>,
    /// The concurrency checked, if the metric has one.
    pub concurrency: Option<usize>,
    /// The measured value (`None`: not measured in this run).
    pub measured: Option<f64>,
    /// The bound.
    pub bound: Bound,
    /// Whether the bound holds (`None`: not measured).
    pub met: Option<bool>,
}

impl Outcome {
    /// Where the check applies: `fetch 8192 B, 32 connections, fs`.
    pub fn scope(&self) -> String {
        let mut parts = Vec::new();
        if let Some(scenario) = self.scenario {
            parts.push(scenario.to_owned());
        }
        let mut what = parts.join(" ");
        if let Some(size) = self.size {
            if !what.is_empty() {
                what.push(' ');
            }
            let _ = write!(what, "{size} B");
        }
        let mut scope = Vec::new();
        if !what.is_empty() {
            scope.push(what);
        }
        if let Some(c) = self.concurrency {
            scope.push(format!("{c} connections"));
        }
        if let Some(store) = self.store {
            scope.push(store.name().to_owned());
        }
        scope.join(", ")
    }

    fn verdict(&self) -> &'static str {
        match self.met {
            Some(true) => "✓",
            Some(false) => "✗",
            None => "not measured",
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "target": self.target + 1,
            "name": self.name,
            "metric": self.metric.name(),
            "scenario": self.scenario,
            "store": self.store.map(Store::name),
            "size": self.size,
            "concurrency": self.concurrency,
            "measured": self.measured,
            "bound": self.bound.to_json(),
            "met": self.met,
        })
    }
}

/// The checks of one targets file against one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The file the targets came from, for the report.
    pub file: String,
    /// Its title, if any.
    pub title: Option<String>,
    /// Every check, in file order.
    pub outcomes: Vec<Outcome>,
}

/// The checks `target` stands for in a run that measured `measured`.
fn checks(target: &Target, measured: &Measured<'_>) -> Vec<Check> {
    let store = target.store.or(match target.metric {
        Metric::DiskPerBase64Char => Some(Store::Fs),
        _ => None,
    });
    // A store the run did not measure: one check, not measured.
    if let Some(store) = store
        && !measured.stores.contains(&store)
    {
        return vec![Check {
            store: Some(store),
            size: None,
            concurrency: None,
        }];
    }
    let stores: Vec<Store> = match store {
        Some(store) => vec![store],
        None => measured.stores.to_vec(),
    };
    let sizes: Vec<Option<usize>> = match target.metric {
        Metric::RssIdleMib | Metric::RssPeakMib => vec![None],
        _ => target
            .sizes
            .clone()
            .unwrap_or_else(|| measured.sizes.to_vec())
            .into_iter()
            .map(Some)
            .collect(),
    };
    let concurrency: Vec<Option<usize>> = match target.metric {
        Metric::DiskPerBase64Char | Metric::RssIdleMib => vec![None],
        _ => target
            .concurrency
            .clone()
            .unwrap_or_else(|| measured.concurrency.to_vec())
            .into_iter()
            .map(Some)
            .collect(),
    };
    let mut checks = Vec::new();
    for &store in &stores {
        for &size in &sizes {
            for &c in &concurrency {
                checks.push(Check {
                    store: Some(store),
                    size,
                    concurrency: c,
                });
            }
        }
    }
    checks
}

impl Evaluation {
    /// Checks every target of `targets` (read from `file`) against `measured`.
    pub fn new(file: &str, targets: &Targets, measured: &Measured<'_>) -> Self {
        let mut outcomes = Vec::new();
        for (index, target) in targets.targets.iter().enumerate() {
            for check in checks(target, measured) {
                let value = measured.value(target, &check);
                outcomes.push(Outcome {
                    target: index,
                    name: target.label(),
                    metric: target.metric,
                    scenario: target.scenario,
                    store: check.store,
                    size: check.size,
                    concurrency: check.concurrency,
                    measured: value,
                    bound: target.bound,
                    met: value.map(|v| target.bound.holds(v)),
                });
            }
        }
        Self {
            file: file.to_owned(),
            title: targets.title.clone(),
            outcomes,
        }
    }

    /// Checks met, missed and not measured.
    pub fn counts(&self) -> (usize, usize, usize) {
        let count = |met: Option<bool>| self.outcomes.iter().filter(|o| o.met == met).count();
        (count(Some(true)), count(Some(false)), count(None))
    }

    /// The report's `## Targets` section.
    pub fn markdown(&self, md: &mut String) {
        let _ = writeln!(md, "## Targets\n");
        let (met, missed, unmeasured) = self.counts();
        let title = self
            .title
            .as_deref()
            .map_or_else(String::new, |t| format!(" ({t})"));
        let _ = writeln!(
            md,
            "From `{}`{title}: {met} met, {missed} missed, {unmeasured} not measured. Ratios \
             are planshare ÷ the floor reference server in this run (medians across rounds).\n",
            self.file
        );
        let _ = writeln!(md, "| # | target | where | measured | bound | met |");
        let _ = writeln!(md, "|---:|---|---|---:|---:|:---:|");
        for o in &self.outcomes {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                o.target + 1,
                o.name.replace('|', "\\|"),
                o.scope(),
                o.measured
                    .map_or_else(|| "–".to_owned(), |v| o.metric.value_text(v)),
                o.bound.text(o.metric),
                o.verdict(),
            );
        }
        let _ = writeln!(md);
    }

    /// The JSON form: the file, its title, the counts and every check.
    pub fn to_json(&self) -> Value {
        let (met, missed, unmeasured) = self.counts();
        json!({
            "file": self.file,
            "title": self.title,
            "met": met,
            "missed": missed,
            "not_measured": unmeasured,
            "checks": self.outcomes.iter().map(Outcome::to_json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::DiskUsage;
    use crate::phases::Aggregate;
    use std::collections::BTreeMap;

    const FILE: &str = r#"
title = "issue 8"

[[target]]
name = "fetch 8 KB, fs"
metric = "throughput"
scenario = "fetch"
store = "fs"
sizes = [8192]
concurrency = [32, 128]
min = 0.8

[[target]]
metric = "p99"
scenario = "fetch"
store = "fs"
sizes = [8192]
max = 2.0

[[target]]
metric = "throughput"
scenario = "create"
store = "redis"
min = 0.4

[[target]]
metric = "disk_per_base64_char"
max = 0.76

[[target]]
metric = "rss_idle_mib"
max = 20

[[target]]
metric = "rss_peak_mib"
concurrency = [128]
max = 100
"#;

    fn parse_err(text: &str) -> String {
        match Targets::parse(text) {
            Ok(t) => panic!("parsed: {t:?}"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn parses_the_schema() -> anyhow::Result<()> {
        let targets = Targets::parse(FILE)?;
        assert_eq!(targets.title.as_deref(), Some("issue 8"));
        assert_eq!(targets.targets.len(), 6);
        let first = &targets.targets[0];
        assert_eq!(first.name.as_deref(), Some("fetch 8 KB, fs"));
        assert_eq!(first.metric, Metric::Throughput);
        assert_eq!(first.scenario, Some("fetch"));
        assert_eq!(first.store, Some(Store::Fs));
        assert_eq!(first.sizes, Some(vec![8192]));
        assert_eq!(first.concurrency, Some(vec![32, 128]));
        assert_eq!(first.bound, Bound::Min(0.8));
        assert_eq!(targets.targets[1].concurrency, None);
        assert_eq!(targets.targets[1].bound, Bound::Max(2.0));
        assert_eq!(targets.targets[2].store, Some(Store::Redis));
        assert_eq!(targets.targets[3].store, None);
        assert_eq!(targets.targets[4].bound, Bound::Max(20.0));
        assert_eq!(Targets::parse("")?.targets, Vec::new());
        Ok(())
    }

    #[test]
    fn refuses_what_it_cannot_check() {
        let cases = [
            ("[[target]]\nmetric = \"speed\"\nmin = 1", "speed"),
            (
                "[[target]]\nmetric = \"throughput\"\nmin = 1",
                "needs a scenario",
            ),
            (
                "[[target]]\nmetric = \"throughput\"\nscenario = \"delete\"\nmin = 1",
                "expected create or fetch",
            ),
            (
                "[[target]]\nmetric = \"rss_idle_mib\"\nscenario = \"fetch\"\nmax = 1",
                "takes no scenario",
            ),
            (
                "[[target]]\nmetric = \"p99\"\nscenario = \"fetch\"\nmin = 1\nmax = 2",
                "both",
            ),
            (
                "[[target]]\nmetric = \"p99\"\nscenario = \"fetch\"",
                "neither",
            ),
            (
                "[[target]]\nmetric = \"p99\"\nscenario = \"fetch\"\nstore = \"tape\"\nmax = 2",
                "unknown store",
            ),
            (
                "[[target]]\nmetric = \"disk_per_base64_char\"\nstore = \"redis\"\nmax = 1",
                "fs store only",
            ),
            (
                "[[target]]\nmetric = \"rss_peak_mib\"\nsizes = [8192]\nmax = 1",
                "remove `sizes`",
            ),
            (
                "[[target]]\nmetric = \"rss_idle_mib\"\nconcurrency = [32]\nmax = 1",
                "remove `concurrency`",
            ),
            (
                "[[target]]\nmetric = \"p99\"\nscenario = \"fetch\"\nsizes = []\nmax = 1",
                "is empty",
            ),
            (
                "[[target]]\nmetric = \"p99\"\nscenario = \"fetch\"\nmax = 1\nmaximum = 2",
                "unknown field",
            ),
            ("[[targets]]\nmetric = \"p99\"", "unknown field"),
            (
                "[[target]]\nmetric = \"p99\"\nscenario = \"fetch\"\nmax = nan",
                "finite",
            ),
        ];
        for (text, expected) in cases {
            let error = parse_err(text);
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        // Errors name the target.
        let error = parse_err(
            "[[target]]\nmetric = \"p99\"\nscenario = \"fetch\"\nmax = 1\n\
             [[target]]\nname = \"second\"\nmetric = \"p99\"",
        );
        assert!(error.contains("target 2 (`second`)"), "{error}");
    }

    #[test]
    fn a_missing_file_is_no_targets() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        assert_eq!(Targets::load(&dir.path().join("none.toml"))?, None);
        let path = dir.path().join("targets.toml");
        std::fs::write(&path, FILE)?;
        assert_eq!(Targets::load(&path)?.map(|t| t.targets.len()), Some(6));
        std::fs::write(&path, "[[target]]\nmetric = 1\n")?;
        assert!(Targets::load(&path).is_err());
        Ok(())
    }

    #[test]
    fn bounds() {
        assert!(Bound::Min(0.8).holds(0.8));
        assert!(Bound::Min(0.8).holds(0.95));
        assert!(!Bound::Min(0.8).holds(0.79));
        assert!(Bound::Max(2.0).holds(2.0));
        assert!(!Bound::Max(2.0).holds(2.01));
        assert!(!Bound::Max(2.0).holds(f64::NAN));
        assert!(!Bound::Min(0.0).holds(f64::NAN));
    }

    fn agg(rps: f64, p99: f64, cpu: f64) -> Aggregate {
        Aggregate {
            rounds: 1,
            requests_per_second: Some(rps),
            p50_ms: Some(p99 / 2.0),
            p99_ms: Some(p99),
            cpu_us_per_request: Some(cpu),
            errors_median: Some(0.0),
            errors_total: 0,
        }
    }

    /// A row of fs figures, with a far slower baseline build beside them
    /// that no target may look at.
    fn row(scenario: &'static str, concurrency: usize, fs_rps: f64, fs_p99: f64) -> Row {
        Row {
            scenario,
            size: 8192,
            concurrency,
            reference: agg(1000.0, 1.0, 10.0),
            stores: vec![(Store::Fs, agg(fs_rps, fs_p99, 30.0))],
            baselines: vec![(Store::Fs, agg(1.0, 100.0, 1000.0))],
        }
    }

    fn memory(server: Server, idle_kib: u64, peaks: &[(usize, u64)]) -> MemoryFigures {
        MemoryFigures {
            server,
            size: None,
            idle_kib: Some(idle_kib),
            seeded_kib: Some(idle_kib + 100),
            peak_kib: peaks.iter().copied().collect::<BTreeMap<_, _>>(),
            high_water_kib: None,
        }
    }

    #[test]
    fn checks_each_scope_and_marks_what_was_not_measured() -> anyhow::Result<()> {
        let targets = Targets::parse(FILE)?;
        let rows = [
            row("create", 32, 100.0, 5.0),
            row("fetch", 32, 900.0, 1.5),
            row("create", 128, 100.0, 5.0),
            row("fetch", 128, 700.0, 2.5),
        ];
        let memory = [
            memory(Server::Planshare(Store::Fs), 15 * 1024, &[(32, 40 * 1024)]),
            memory(Server::Reference, 90 * 1024, &[(128, 500 * 1024)]),
            memory(Server::Baseline(Store::Fs), 80 * 1024, &[(32, 400 * 1024)]),
        ];
        let disk = [DiskFigures {
            size: 8192,
            pastes: 100,
            usage: DiskUsage {
                files: 100,
                apparent_bytes: 100 * (6144 + 64),
                allocated_bytes: 100 * 8192,
            },
        }];
        let measured = Measured {
            stores: &[Store::Fs],
            sizes: &[8192],
            concurrency: &[32, 128],
            rows: &rows,
            memory: &memory,
            disk: &disk,
        };
        let eval = Evaluation::new("loadtests/targets.toml", &targets, &measured);
        let summary: Vec<(usize, String, Option<bool>)> = eval
            .outcomes
            .iter()
            .map(|o| (o.target, o.scope(), o.met))
            .collect();
        assert_eq!(
            summary,
            [
                (0, "fetch 8192 B, 32 connections, fs".to_owned(), Some(true)),
                (
                    0,
                    "fetch 8192 B, 128 connections, fs".to_owned(),
                    Some(false)
                ),
                (1, "fetch 8192 B, 32 connections, fs".to_owned(), Some(true)),
                (
                    1,
                    "fetch 8192 B, 128 connections, fs".to_owned(),
                    Some(false)
                ),
                (2, "create, redis".to_owned(), None),
                (3, "8192 B, fs".to_owned(), Some(true)),
                (4, "fs".to_owned(), Some(true)),
                (5, "128 connections, fs".to_owned(), None),
            ]
        );
        assert_eq!(eval.outcomes[0].measured, Some(0.9));
        assert_eq!(eval.outcomes[3].measured, Some(2.5));
        let disk_ratio = eval.outcomes[5].measured.unwrap_or_default();
        assert!((disk_ratio - 6208.0 / 8192.0).abs() < 1e-12);
        // Neither the reference's memory nor the baseline build's is
        // planshare's.
        assert_eq!(eval.outcomes[6].measured, Some(15.0));
        assert_eq!(eval.counts(), (4, 2, 2));

        let mut md = String::new();
        eval.markdown(&mut md);
        assert!(md.starts_with("## Targets\n"), "{md}");
        assert!(
            md.contains("(issue 8): 4 met, 2 missed, 2 not measured"),
            "{md}"
        );
        assert!(
            md.contains(
                "| 1 | fetch 8 KB, fs | fetch 8192 B, 128 connections, fs | 0.70 | ≥ 0.80 | ✗ |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| 3 | create: throughput / floor | create, redis | – | ≥ 0.40 | not measured |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| 4 | bytes on disk per base64 char | 8192 B, fs | 0.758 | ≤ 0.760 | ✓ |"),
            "{md}"
        );
        assert!(
            md.contains("| 5 | RSS idle after start, MiB | fs | 15.0 | ≤ 20.0 | ✓ |"),
            "{md}"
        );

        let json = eval.to_json();
        assert_eq!(json["missed"], 2);
        assert_eq!(json["checks"][1]["met"], false);
        assert_eq!(json["checks"][1]["concurrency"], 128);
        assert_eq!(json["checks"][1]["bound"]["min"], 0.8);
        assert_eq!(json["checks"][4]["met"], Value::Null);
        assert_eq!(json["checks"][4]["store"], "redis");
        Ok(())
    }

    #[test]
    fn omitted_scopes_cover_every_store_size_and_concurrency() -> anyhow::Result<()> {
        let targets = Targets::parse(
            "[[target]]\nmetric = \"cpu_per_request\"\nscenario = \"create\"\nmax = 6\n",
        )?;
        let measured = Measured {
            stores: &[Store::Fs, Store::Memory],
            sizes: &[8192, 102_400],
            concurrency: &[32, 128],
            rows: &[row("create", 32, 100.0, 5.0)],
            memory: &[],
            disk: &[],
        };
        let eval = Evaluation::new("t.toml", &targets, &measured);
        assert_eq!(eval.outcomes.len(), 8);
        // Only fs at 8192 B and 32 connections has a figure: 30 µs ÷ 10 µs.
        assert_eq!(eval.outcomes[0].measured, Some(3.0));
        assert_eq!(eval.outcomes[0].met, Some(true));
        assert_eq!(eval.counts(), (1, 0, 7));
        Ok(())
    }
}
