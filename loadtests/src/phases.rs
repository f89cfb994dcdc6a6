//! What a `run` measures, phase by phase, and its summary across rounds: the
//! server a phase is of ([`Server`]) and the order they take in a round
//! ([`round_order`]), one phase's figures ([`Record`]), the medians per
//! server ([`Aggregate`]) and per scenario with their ratios ([`Row`], made
//! by [`summarize`]; three at once: [`Ratios`]).

use crate::backend::Store;
use crate::stats::{median, ratio};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Which server a measurement is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Server {
    /// The floor reference server.
    Reference,
    /// The planshare server under test, with this store.
    Planshare(Store),
    /// The baseline build of planshare (`--baseline-bin`), with this store,
    /// measured beside the one under test.
    Baseline(Store),
}

impl Server {
    /// `"reference"`, `"planshare"` or `"baseline"` (the store is
    /// [`Server::store`]).
    pub fn name(self) -> &'static str {
        match self {
            Self::Reference => "reference",
            Self::Planshare(_) => "planshare",
            Self::Baseline(_) => "baseline",
        }
    }

    /// The store of a planshare server (either build).
    pub fn store(self) -> Option<Store> {
        match self {
            Self::Reference => None,
            Self::Planshare(store) | Self::Baseline(store) => Some(store),
        }
    }

    /// `"reference"`, `"planshare/<store>"` or `"baseline/<store>"`.
    pub fn label(self) -> String {
        match self {
            Self::Reference => "reference".to_owned(),
            Self::Planshare(store) => format!("planshare/{store}"),
            Self::Baseline(store) => format!("baseline/{store}"),
        }
    }
}

/// The order in which `servers` (as listed for one scenario: the reference,
/// then each store's build under test, each followed by its baseline build
/// when there is one) are measured in round `round` (from 1), as indices
/// into `servers`. Odd rounds keep the list; even rounds swap each baseline
/// with the build under test of its store just before it, so that neither
/// build always runs right after the same server.
pub fn round_order(servers: &[Server], round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..servers.len()).collect();
    if round.is_multiple_of(2) {
        for i in 1..servers.len() {
            if let (Server::Planshare(main), Server::Baseline(baseline)) =
                (servers[i - 1], servers[i])
                && main == baseline
            {
                order.swap(i - 1, i);
            }
        }
    }
    order
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
    /// The JSON form, as in the report's `phases`.
    pub fn to_json(&self) -> Value {
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
    /// The medians of `records` (those of one server in one scenario).
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

    /// The JSON form: the medians of a summary entry.
    pub fn to_json(&self) -> Value {
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

/// Throughput, p99 and CPU per request of one server's medians ÷ another's
/// (`None` where either figure is missing).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Ratios {
    /// req/s ÷ req/s (higher is better).
    pub throughput: Option<f64>,
    /// p99 ÷ p99 (lower is better).
    pub p99: Option<f64>,
    /// CPU µs per request ÷ CPU µs per request (lower is better).
    pub cpu_per_request: Option<f64>,
}

impl Ratios {
    /// `a` ÷ `b`, figure by figure; all `None` when either is missing.
    pub fn of(a: Option<&Aggregate>, b: Option<&Aggregate>) -> Self {
        let (Some(a), Some(b)) = (a, b) else {
            return Self::default();
        };
        Self {
            throughput: ratio(a.requests_per_second, b.requests_per_second),
            p99: ratio(a.p99_ms, b.p99_ms),
            cpu_per_request: ratio(a.cpu_us_per_request, b.cpu_us_per_request),
        }
    }

    /// The JSON form: `{throughput, p99, cpu_per_request}`.
    pub fn to_json(&self) -> Value {
        json!({
            "throughput": self.throughput,
            "p99": self.p99,
            "cpu_per_request": self.cpu_per_request,
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
    /// The baseline build's medians with each store (empty without one).
    pub baselines: Vec<(Store, Aggregate)>,
}

impl Row {
    /// planshare's medians with `store`, if it was measured.
    pub fn store(&self, store: Store) -> Option<&Aggregate> {
        self.stores
            .iter()
            .find(|(s, _)| *s == store)
            .map(|(_, agg)| agg)
    }

    /// The baseline build's medians with `store`, if it was measured.
    pub fn baseline(&self, store: Store) -> Option<&Aggregate> {
        self.baselines
            .iter()
            .find(|(s, _)| *s == store)
            .map(|(_, agg)| agg)
    }

    /// planshare (`store`) ÷ the baseline build (`store`): above 1 the build
    /// under test is faster (throughput) or slower (p99, CPU).
    pub fn baseline_ratios(&self, store: Store) -> Ratios {
        Ratios::of(self.store(store), self.baseline(store))
    }

    /// The baseline build (`store`) ÷ the reference.
    pub fn baseline_to_reference(&self, store: Store) -> Ratios {
        Ratios::of(self.baseline(store), Some(&self.reference))
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
/// within a row, the stores are in the order they were first measured (those
/// of the baseline build apart, in the same way).
pub fn summarize(records: &[Record]) -> Vec<Row> {
    let mut keys: Vec<(&'static str, usize, usize)> = Vec::new();
    let mut stores: Vec<Store> = Vec::new();
    let mut baseline_stores: Vec<Store> = Vec::new();
    for r in records {
        let key = (r.scenario, r.size, r.concurrency);
        if !keys.contains(&key) {
            keys.push(key);
        }
        let (list, store) = match r.server {
            Server::Reference => continue,
            Server::Planshare(store) => (&mut stores, store),
            Server::Baseline(store) => (&mut baseline_stores, store),
        };
        if !list.contains(&store) {
            list.push(store);
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
            let measured = |list: &[Store], server: fn(Store) -> Server| {
                list.iter()
                    .filter(|&&store| of_key(server(store)).next().is_some())
                    .map(|&store| (store, Aggregate::of(of_key(server(store)))))
                    .collect()
            };
            Row {
                scenario,
                size,
                concurrency,
                reference: Aggregate::of(of_key(Server::Reference)),
                stores: measured(&stores, Server::Planshare),
                baselines: measured(&baseline_stores, Server::Baseline),
            }
        })
        .collect()
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

/// Records for tests here and in the reports.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// planshare with the fs store.
    pub const FS: Server = Server::Planshare(Store::Fs);
    /// planshare with the redis store.
    pub const REDIS: Server = Server::Planshare(Store::Redis);
    /// planshare with the s3 store.
    pub const S3: Server = Server::Planshare(Store::S3);
    /// planshare with the memory store.
    pub const MEMORY: Server = Server::Planshare(Store::Memory);
    /// The baseline build with the fs store.
    pub const BASELINE_FS: Server = Server::Baseline(Store::Fs);
    /// The baseline build with the memory store.
    pub const BASELINE_MEMORY: Server = Server::Baseline(Store::Memory);

    /// A `fetch` phase of 8192 B at 32 connections.
    pub fn record(server: Server, round: usize, rps: f64, errors: u64) -> Record {
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

    /// Two rounds of the reference, fs, redis and s3, interleaved as `run`
    /// measures them, in two scenarios.
    pub fn three_stores() -> Vec<Record> {
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
                    let mut rec = record(server, round, rps * base, errors);
                    rec.p99_ms = p99;
                    rec.scenario = scenario;
                    records.push(rec);
                }
            }
        }
        records
    }

    /// Two rounds of `fetch` on the reference and both builds with fs and
    /// memory, in the order `run` measures them ([`round_order`]). Medians
    /// (req/s, p99 ms, CPU µs): reference 1000, 1, 20; planshare/fs 500, 2,
    /// 80; baseline/fs 400 (300 and 500), 4, 100; planshare/memory 800, 1,
    /// 40; baseline/memory 800, 1, 50, with one error per round.
    pub fn with_baseline() -> Vec<Record> {
        let servers = [Server::Reference, FS, BASELINE_FS, MEMORY, BASELINE_MEMORY];
        let mut records = Vec::new();
        for round in 1..=2 {
            for i in round_order(&servers, round) {
                let server = servers[i];
                let (rps, p99, cpu, errors) = match server {
                    Server::Reference => (1000.0, 1.0, 20.0, 0),
                    FS => (500.0, 2.0, 80.0, 0),
                    BASELINE_FS => (if round == 1 { 300.0 } else { 500.0 }, 4.0, 100.0, 0),
                    MEMORY => (800.0, 1.0, 40.0, 0),
                    _ => (800.0, 1.0, 50.0, 1),
                };
                let mut r = record(server, round, rps, errors);
                r.p99_ms = p99;
                r.cpu_us_per_request = Some(cpu);
                records.push(r);
            }
        }
        records
    }

    /// One round of the reference and fs at 32 and 128 connections, the
    /// reference twice as fast, fs peaking at 20 and 50 MiB.
    pub fn two_concurrencies() -> Vec<Record> {
        let mut records = Vec::new();
        for (c, rps, rss) in [(32, 600.0, 20_480), (128, 400.0, 51_200)] {
            for (server, factor) in [(Server::Reference, 2.0), (FS, 1.0)] {
                let mut r = record(server, 1, rps * factor, 0);
                r.concurrency = c;
                r.rss_peak_kib = Some(rss);
                records.push(r);
            }
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{
        BASELINE_FS, BASELINE_MEMORY, FS, MEMORY, REDIS, S3, record, three_stores,
        two_concurrencies, with_baseline,
    };
    use super::*;

    #[test]
    fn servers_are_named() {
        assert_eq!(Server::Reference.name(), "reference");
        assert_eq!(Server::Reference.label(), "reference");
        assert_eq!(Server::Reference.store(), None);
        assert_eq!(REDIS.name(), "planshare");
        assert_eq!(REDIS.label(), "planshare/redis");
        assert_eq!(S3.store(), Some(Store::S3));
        assert_eq!(BASELINE_FS.name(), "baseline");
        assert_eq!(BASELINE_FS.label(), "baseline/fs");
        assert_eq!(BASELINE_MEMORY.store(), Some(Store::Memory));
    }

    #[test]
    fn even_rounds_put_each_baseline_before_its_build_under_test() {
        let servers = [Server::Reference, FS, BASELINE_FS, MEMORY, BASELINE_MEMORY];
        assert_eq!(round_order(&servers, 1), [0, 1, 2, 3, 4]);
        assert_eq!(round_order(&servers, 2), [0, 2, 1, 4, 3]);
        assert_eq!(round_order(&servers, 3), [0, 1, 2, 3, 4]);
        // Without a baseline every round keeps the list.
        let plain = [Server::Reference, FS, REDIS];
        assert_eq!(round_order(&plain, 2), [0, 1, 2]);
        // A baseline is swapped with its own store's build only.
        let odd = [Server::Reference, FS, BASELINE_MEMORY];
        assert_eq!(round_order(&odd, 2), [0, 1, 2]);
    }

    #[test]
    fn the_baseline_build_is_summarised_apart_with_its_ratios() {
        let records = with_baseline();
        let rows = summarize(&records);
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        // The build under test keeps the `stores` (and so the targets and
        // the ratios to the reference) to itself.
        let stores: Vec<Store> = row.stores.iter().map(|(s, _)| *s).collect();
        assert_eq!(stores, [Store::Fs, Store::Memory]);
        let baselines: Vec<Store> = row.baselines.iter().map(|(s, _)| *s).collect();
        assert_eq!(baselines, [Store::Fs, Store::Memory]);
        assert_eq!(row.throughput_ratio(Store::Fs), Some(0.5));
        assert_eq!(row.cpu_ratio(Store::Memory), Some(2.0));
        assert_eq!(row.throughput_vs_fs(Store::Memory), Some(1.6));
        // The baseline's medians: 300 and 500 req/s give 400.
        let base_fs = row.baseline(Store::Fs);
        assert_eq!(base_fs.map(|a| a.rounds), Some(2));
        assert_eq!(base_fs.and_then(|a| a.requests_per_second), Some(400.0));
        assert_eq!(row.baseline(Store::Memory).map(|a| a.errors_total), Some(2));
        assert_eq!(row.store(Store::Memory).map(|a| a.errors_total), Some(0));
        // Build under test ÷ baseline.
        assert_eq!(
            row.baseline_ratios(Store::Fs),
            Ratios {
                throughput: Some(1.25),
                p99: Some(0.5),
                cpu_per_request: Some(0.8),
            }
        );
        assert_eq!(
            row.baseline_ratios(Store::Memory),
            Ratios {
                throughput: Some(1.0),
                p99: Some(1.0),
                cpu_per_request: Some(0.8),
            }
        );
        // Baseline ÷ reference.
        assert_eq!(
            row.baseline_to_reference(Store::Fs),
            Ratios {
                throughput: Some(0.4),
                p99: Some(4.0),
                cpu_per_request: Some(5.0),
            }
        );
        // A store without a baseline has no ratios to it.
        assert_eq!(row.baseline_ratios(Store::Redis), Ratios::default());
    }

    #[test]
    fn without_a_baseline_there_are_no_baseline_figures() {
        let rows = summarize(&three_stores());
        assert!(rows.iter().all(|row| row.baselines.is_empty()));
        assert_eq!(rows[0].baseline_ratios(Store::Fs), Ratios::default());
        assert_eq!(rows[0].baseline_to_reference(Store::Fs), Ratios::default());
    }

    #[test]
    fn ratios_need_both_figures() {
        let records = [record(Server::Reference, 1, 1000.0, 0), {
            let mut r = record(FS, 1, 250.0, 0);
            r.cpu_us_per_request = None;
            r
        }];
        let rows = summarize(&records);
        let ratios = Ratios::of(rows[0].store(Store::Fs), Some(&rows[0].reference));
        assert_eq!(ratios.throughput, Some(0.25));
        assert_eq!(ratios.p99, Some(1.0));
        assert_eq!(ratios.cpu_per_request, None);
        assert_eq!(
            ratios.to_json(),
            json!({"throughput": 0.25, "p99": 1.0, "cpu_per_request": null})
        );
        assert_eq!(
            Ratios::of(None, Some(&rows[0].reference)),
            Ratios::default()
        );
    }

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
        assert_eq!(
            rows[0].store(Store::Fs).and_then(|a| a.errors_median),
            Some(1.0)
        );
        assert_eq!(rows[0].p99_ratio(Store::Fs), Some(1.0));
        assert_eq!(rows[0].throughput_vs_fs(Store::Fs), Some(1.0));
        assert_eq!(rows[0].throughput_ratio(Store::Redis), None);
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
    fn each_concurrency_is_a_scenario_of_its_own() {
        let records = two_concurrencies();
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
    }

    #[test]
    fn records_and_medians_as_json() {
        let mut r = record(S3, 2, 50.0, 1);
        r.error_kinds.insert("timeout".to_owned(), 1);
        let json = r.to_json();
        assert_eq!(json["server"], "planshare");
        assert_eq!(json["store"], "s3");
        assert_eq!(json["round"], 2);
        assert_eq!(json["error_kinds"]["timeout"], 1);
        let json = record(BASELINE_FS, 1, 1.0, 0).to_json();
        assert_eq!(json["server"], "baseline");
        assert_eq!(json["store"], "fs");
        assert_eq!(
            record(Server::Reference, 1, 1.0, 0).to_json()["store"],
            Value::Null
        );

        let rows = summarize(&three_stores());
        let json = rows[0].reference.to_json();
        assert_eq!(json["rounds"], 2);
        assert_eq!(json["requests_per_second"], 1000.0);
        assert_eq!(json["errors_total"], 0);
    }
}
