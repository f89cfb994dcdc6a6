//! The JSON report of a `run`: the same figures as the Markdown report,
//! with every phase, for tools.

use super::info::RunInfo;
use crate::backend::Store;
use crate::footprint::{DiskFigures, Footprint, MemoryFigures};
use crate::phases::{Record, Row};
use crate::targets::Evaluation;
use serde_json::{Value, json};

/// The JSON report: settings, every phase, the per-scenario summary, memory,
/// bytes on disk and the targets (`null` without a targets file).
///
/// Each summary entry has the reference's medians and, under `stores`, each
/// store's medians with its ratios to the reference and to fs. When the fs
/// store was measured, the entry also keeps the single-store keys
/// `planshare` (fs's medians) and `ratio` (fs against the reference).
///
/// With a baseline build (`--baseline-bin`), the report names it under
/// `baseline_bin`, and each store entry gains `baseline` (its medians and
/// ratios to the reference) and `ratio_to_baseline` (the build under test
/// ÷ the baseline). Without one, neither key appears.
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
                "stores": row.stores.iter().map(|(store, agg)| {
                    let mut entry = json!({
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
                    });
                    if let (Some(baseline), Some(object)) =
                        (row.baseline(*store), entry.as_object_mut())
                    {
                        object.insert(
                            "baseline".to_owned(),
                            json!({
                                "medians": baseline.to_json(),
                                "ratio_to_reference": row.baseline_to_reference(*store).to_json(),
                            }),
                        );
                        object.insert(
                            "ratio_to_baseline".to_owned(),
                            row.baseline_ratios(*store).to_json(),
                        );
                    }
                    entry
                }).collect::<Vec<_>>(),
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
    let mut report = json!({
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
    });
    if let (Some(baseline_bin), Some(object)) = (&info.baseline_bin, report.as_object_mut()) {
        object.insert("baseline_bin".to_owned(), json!(baseline_bin));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footprint;
    use crate::phases::fixtures::{FS, record, three_stores, two_concurrencies, with_baseline};
    use crate::phases::{Server, summarize};
    use crate::report::info::fixtures::info;

    #[test]
    fn single_fs_report_keeps_its_keys() {
        let records = [
            record(Server::Reference, 1, 1000.0, 0),
            record(FS, 1, 500.0, 1),
        ];
        let info = info(&[Store::Fs]);
        let rows = summarize(&records);
        let json = json_report(&info, &rows, &records, &Footprint::default(), None);
        assert_eq!(json["started_utc"], "1970-01-01T00:00:00Z");
        let entry = &json["summary"][0];
        assert_eq!(entry["ratio"]["throughput"], 0.5);
        assert_eq!(entry["planshare"]["requests_per_second"], 500.0);
        assert_eq!(entry["stores"][0]["store"], "fs");
        assert_eq!(json["phases"][1]["server"], "planshare");
        assert_eq!(json["phases"][1]["store"], "fs");
    }

    #[test]
    fn multi_store_report_has_an_entry_per_store() {
        let records = three_stores();
        let info = info(&[Store::Fs, Store::Redis, Store::S3]);
        let rows = summarize(&records);
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
        assert_eq!(json["stores"][2]["settings"], "settings of s3");
        assert_eq!(json["phases"][2]["store"], "redis");
        assert_eq!(json["phases"][0]["store"], Value::Null);
        // No baseline build, no baseline keys.
        assert_eq!(json.get("baseline_bin"), None);
        assert_eq!(stores[0].get("baseline"), None);
        assert_eq!(stores[0].get("ratio_to_baseline"), None);
    }

    #[test]
    fn a_baseline_build_has_its_medians_and_ratios_beside_each_store() {
        let records = with_baseline();
        let mut info = info(&[Store::Fs, Store::Memory]);
        info.baseline_bin = Some("old/planshare-server".to_owned());
        let rows = summarize(&records);
        let json = json_report(&info, &rows, &records, &Footprint::default(), None);
        assert_eq!(json["server_bin"], "target/release/planshare-server");
        assert_eq!(json["baseline_bin"], "old/planshare-server");
        let stores = &json["summary"][0]["stores"];
        // Only the build under test has entries of its own.
        assert_eq!(stores.as_array().map(Vec::len), Some(2));
        let fs = &stores[0];
        assert_eq!(fs["store"], "fs");
        assert_eq!(fs["medians"]["requests_per_second"], 500.0);
        assert_eq!(fs["baseline"]["medians"]["requests_per_second"], 400.0);
        assert_eq!(fs["baseline"]["ratio_to_reference"]["throughput"], 0.4);
        assert_eq!(fs["baseline"]["ratio_to_reference"]["cpu_per_request"], 5.0);
        assert_eq!(fs["ratio_to_baseline"]["throughput"], 1.25);
        assert_eq!(fs["ratio_to_baseline"]["p99"], 0.5);
        assert_eq!(fs["ratio_to_baseline"]["cpu_per_request"], 0.8);
        let memory = &stores[1];
        assert_eq!(memory["baseline"]["medians"]["errors_total"], 2);
        assert_eq!(memory["ratio_to_baseline"]["cpu_per_request"], 0.8);
        // The single-store keys stay the build under test's.
        assert_eq!(json["summary"][0]["ratio"]["throughput"], 0.5);
        // Round 2 measured the baseline first.
        assert_eq!(json["phases"][1]["server"], "planshare");
        assert_eq!(json["phases"][6]["server"], "baseline");
        assert_eq!(json["phases"][6]["store"], "fs");
        assert_eq!(json["phases"][6]["round"], 2);
    }

    #[test]
    fn without_fs_there_are_no_single_store_keys() {
        let records: Vec<Record> = three_stores()
            .into_iter()
            .filter(|r| r.server != FS)
            .collect();
        let info = info(&[Store::Redis, Store::S3]);
        let rows = summarize(&records);
        let json = json_report(&info, &rows, &records, &Footprint::default(), None);
        let entry = &json["summary"][0];
        assert_eq!(entry.get("planshare"), None);
        assert_eq!(entry.get("ratio"), None);
        assert_eq!(entry["stores"][0]["store"], "redis");
        assert_eq!(entry["stores"][0]["ratio_to_fs"]["throughput"], Value::Null);
    }

    #[test]
    fn settings_memory_and_disk() {
        let records = two_concurrencies();
        let rows = summarize(&records);
        let mut info = info(&[Store::Fs]);
        info.concurrency = vec![32, 128];
        let footprint = footprint::fixtures::two_concurrencies();
        let json = json_report(&info, &rows, &records, &footprint, None);
        assert_eq!(json["settings"]["concurrency"], json!([32, 128]));
        assert_eq!(json["settings"]["rounds"], 2);
        assert_eq!(json["machine"]["cpus"], 2);
        assert_eq!(json["machine"]["runner_debug_build"], false);
        assert_eq!(json["summary"][1]["concurrency"], 128);
        assert_eq!(json["phases"][3]["concurrency"], 128);
        assert_eq!(json["phases"][3]["rss_peak_kib"], 51_200);
        assert_eq!(json["memory"][0]["peak_kib"][1]["concurrency"], 128);
        assert_eq!(json["memory"][1]["size"], 8192);
        assert_eq!(json["disk"][0]["apparent_per_base64_char"], 0.7578125);
        assert_eq!(json["targets"], Value::Null);
    }
}
