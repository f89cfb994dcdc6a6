//! What a `run` measures, phase by phase, and its summary across rounds: the
//! server a phase is of ([`Server`]), one phase's figures ([`Record`]), the
//! medians per server ([`Aggregate`]) and per scenario with their ratios
//! ([`Row`], made by [`summarize`]).

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
    use super::fixtures::{FS, REDIS, S3, record, three_stores, two_concurrencies};
    use super::*;

    #[test]
    fn servers_are_named() {
        assert_eq!(Server::Reference.name(), "reference");
        assert_eq!(Server::Reference.label(), "reference");
        assert_eq!(Server::Reference.store(), None);
        assert_eq!(REDIS.name(), "planshare");
        assert_eq!(REDIS.label(), "planshare/redis");
        assert_eq!(S3.store(), Some(Store::S3));
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
