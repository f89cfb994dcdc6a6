//! The Markdown report of a `run`: the header, the targets, the phases,
//! memory, bytes on disk and the errors.

use super::info::RunInfo;
use crate::backend::Store;
use crate::footprint::{Footprint, MemoryFigures};
use crate::phases::{Aggregate, Record, Row, Server};
use crate::targets::Evaluation;
use crate::text::{and_list, fixed, mib_text, ratio_text};
use std::fmt::Write as _;

/// The Markdown report: the header, the targets (when a targets file was
/// read), the figures of the phases, memory, bytes on disk, then any errors.
///
/// With the fs store alone the phases are two tables: ratios, then the
/// medians. With several stores (or one other than fs, or a baseline build):
/// one table with a row for the reference and each store per scenario —
/// medians, ratios against the reference and against fs — the baseline
/// build's row under each store's, then a table of the ratios of the build
/// under test to the baseline.
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
        baseline_table(&mut md, info, rows);
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
        match &info.baseline_bin {
            None => {
                let _ = writeln!(
                    md,
                    "planshare `{}` with the stores {names} vs the floor reference server \
                     (hyper, same payloads), loopback, {} CPUs, {connections} connections, {} s \
                     measured after {} s warm-up per phase, median of {} rounds run \
                     interleaved (reference, then each store, per scenario).\n",
                    info.server_bin, info.cpus, info.duration_s, info.warmup_s, info.rounds
                );
            }
            Some(baseline_bin) => {
                let _ = writeln!(
                    md,
                    "planshare `{}` (`planshare/…`) and the baseline build `{baseline_bin}` \
                     (`baseline/…`) with the stores {names} vs the floor reference server \
                     (hyper, same payloads), loopback, {} CPUs, {connections} connections, {} s \
                     measured after {} s warm-up per phase, median of {} rounds run \
                     interleaved (per scenario the reference, then for each store both builds, \
                     the baseline first in even rounds). Targets are checked for the build \
                     under test only.\n",
                    info.server_bin, info.cpus, info.duration_s, info.warmup_s, info.rounds
                );
            }
        }
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
            fixed(row.throughput_ratio(Store::Fs), 2),
            fixed(row.p99_ratio(Store::Fs), 2),
            fixed(row.cpu_ratio(Store::Fs), 2),
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
                fixed(agg.requests_per_second, 0),
                fixed(agg.p50_ms, 2),
                fixed(agg.p99_ms, 2),
                fixed(agg.cpu_us_per_request, 0),
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
                fixed(agg.requests_per_second, 0),
                fixed(agg.p50_ms, 2),
                fixed(agg.p99_ms, 2),
                fixed(agg.cpu_us_per_request, 0),
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
            if let Some(baseline) = row.baseline(*store) {
                let to_reference = row.baseline_to_reference(*store);
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | – | – |",
                    row.scenario,
                    row.size,
                    row.concurrency,
                    Server::Baseline(*store).label(),
                    medians(baseline),
                    ratio_text(to_reference.throughput),
                    ratio_text(to_reference.p99),
                    ratio_text(to_reference.cpu_per_request),
                );
            }
        }
    }
}

/// The build under test against the baseline build, per store and scenario
/// (nothing without a baseline build).
fn baseline_table(md: &mut String, info: &RunInfo, rows: &[Row]) {
    let Some(baseline_bin) = &info.baseline_bin else {
        return;
    };
    let _ = writeln!(md, "\n## planshare / baseline\n");
    let _ = writeln!(
        md,
        "`{}` ÷ `{baseline_bin}`, same store, same rounds, medians across rounds. \
         Throughput above 1.00: the build under test is faster; p99 and CPU per request below \
         1.00: it is quicker and cheaper.\n",
        info.server_bin
    );
    let _ = writeln!(
        md,
        "| scenario | size (B) | connections | store | throughput | p99 latency | CPU / request \
         | CPU µs/req, planshare | CPU µs/req, baseline |"
    );
    let _ = writeln!(md, "|---|---:|---:|---|---:|---:|---:|---:|---:|");
    for row in rows {
        for (store, agg) in &row.stores {
            let Some(baseline) = row.baseline(*store) else {
                continue;
            };
            let ratios = row.baseline_ratios(*store);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {store} | {} | {} | {} | {} | {} |",
                row.scenario,
                row.size,
                row.concurrency,
                ratio_text(ratios.throughput),
                ratio_text(ratios.p99),
                ratio_text(ratios.cpu_per_request),
                fixed(agg.cpu_us_per_request, 1),
                fixed(baseline.cpu_us_per_request, 1),
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
            process_label(info, process),
            mib_text(process.idle_kib),
            mib_text(process.seeded_kib)
        );
        for c in &info.concurrency {
            let _ = write!(line, " {} |", mib_text(process.peak_kib.get(c).copied()));
        }
        let _ = writeln!(md, "{line} {} |", mib_text(process.high_water_kib));
    }
}

/// How a server process is named in the memory table: the server's label,
/// and the payload size when the process serves one size only.
fn process_label(info: &RunInfo, process: &MemoryFigures) -> String {
    match process.size {
        Some(size) => format!("{} ({size} B)", info.label(process.server)),
        None => info.label(process.server),
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
            fixed(d.apparent_per_char(), 3),
            d.usage.allocated_bytes,
            fixed(d.allocated_per_char(), 3),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footprint;
    use crate::phases::fixtures::{
        BASELINE_FS, FS, record, three_stores, two_concurrencies, with_baseline,
    };
    use crate::phases::summarize;
    use crate::report::info::fixtures::info;
    use crate::targets::Targets;

    #[test]
    fn single_fs_report_keeps_its_layout() {
        let records = [
            record(Server::Reference, 1, 1000.0, 0),
            record(FS, 1, 500.0, 1),
        ];
        let info = info(&[Store::Fs]);
        let rows = summarize(&records);
        let md = markdown(&info, &rows, &records, &Footprint::default(), None);
        assert!(
            md.starts_with("# planshare load test — 1970-01-01T00:00:00Z\n"),
            "{md}"
        );
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
        assert!(!md.contains("baseline"), "{md}");
        assert!(!md.contains("## Memory"), "{md}");
        assert!(!md.contains("## Bytes on disk"), "{md}");
    }

    #[test]
    fn multi_store_report_has_a_row_per_store() {
        let records = three_stores();
        let info = info(&[Store::Fs, Store::Redis, Store::S3]);
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
        assert!(!md.contains("baseline"), "{md}");
    }

    #[test]
    fn a_baseline_build_has_rows_and_a_ratio_table() {
        let records = with_baseline();
        let mut info = info(&[Store::Fs, Store::Memory]);
        info.baseline_bin = Some("old/planshare-server".to_owned());
        let rows = summarize(&records);
        let mut footprint = Footprint::default();
        footprint.memory.push(footprint::MemoryFigures {
            server: BASELINE_FS,
            size: None,
            idle_kib: Some(9 * 1024),
            seeded_kib: None,
            peak_kib: std::collections::BTreeMap::new(),
            high_water_kib: None,
        });
        let md = markdown(&info, &rows, &records, &footprint, None);
        assert!(
            md.contains("and the baseline build `old/planshare-server`"),
            "{md}"
        );
        // Each store's baseline row right under the build under test's.
        assert!(
            md.contains(
                "| fetch | 8192 | 32 | planshare/fs | 500 | 1.00 | 2.00 | 80 | 0 | 0.50 | 2.00 | 4.00 | 1.00 | 1.00 |\n\
                 | fetch | 8192 | 32 | baseline/fs | 400 | 1.00 | 4.00 | 100 | 0 | 0.40 | 4.00 | 5.00 | – | – |\n"
            ),
            "{md}"
        );
        assert!(
            md.contains("| fetch | 8192 | 32 | baseline/memory | 800 | 1.00 | 1.00 | 50 | 2 | 0.80 | 1.00 | 2.50 | – | – |"),
            "{md}"
        );
        assert!(md.contains("## planshare / baseline"), "{md}");
        assert!(
            md.contains("| fetch | 8192 | 32 | fs | 1.25 | 0.50 | 0.80 | 80.0 | 100.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| fetch | 8192 | 32 | memory | 1.00 | 1.00 | 0.80 | 40.0 | 50.0 |"),
            "{md}"
        );
        assert!(md.contains("| baseline/fs | 9.0 |"), "{md}");
        assert!(
            md.contains("- round 1 fetch 8192 B c=32 baseline/memory: 1 errors"),
            "{md}"
        );
    }

    #[test]
    fn fs_alone_with_a_baseline_takes_the_per_store_layout() {
        let records: Vec<Record> = with_baseline()
            .into_iter()
            .filter(|r| r.server.store() != Some(Store::Memory))
            .collect();
        let mut info = info(&[Store::Fs]);
        info.baseline_bin = Some("old/planshare-server".to_owned());
        let rows = summarize(&records);
        let md = markdown(&info, &rows, &records, &Footprint::default(), None);
        assert!(!md.contains("## planshare / reference"), "{md}");
        assert!(md.contains("## Per store"), "{md}");
        assert!(
            md.contains("| fetch | 8192 | 32 | baseline/fs | 400 |"),
            "{md}"
        );
        assert!(
            md.contains("| fetch | 8192 | 32 | fs | 1.25 | 0.50 | 0.80 | 80.0 | 100.0 |"),
            "{md}"
        );
    }

    #[test]
    fn memory_and_disk_tables_have_a_column_per_concurrency() {
        let records = two_concurrencies();
        let rows = summarize(&records);
        let mut info = info(&[Store::Fs]);
        info.concurrency = vec![32, 128];
        let footprint = footprint::fixtures::two_concurrencies();
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
        assert!(!md.contains("## Errors"), "{md}");
    }

    #[test]
    fn notes_targets_and_error_kinds() -> anyhow::Result<()> {
        let mut failing = record(FS, 1, 500.0, 3);
        failing
            .error_kinds
            .insert("HTTP 500 | body\nsecond line".to_owned(), 2);
        failing.error_kinds.insert("timeout".to_owned(), 1);
        let records = [record(Server::Reference, 1, 1000.0, 0), failing];
        let mut info = info(&[Store::Fs]);
        info.notes.push("debug build".to_owned());
        let rows = summarize(&records);
        let targets = Targets::parse(
            "[[target]]\nmetric = \"throughput\"\nscenario = \"fetch\"\nmin = 0.8\n",
        )?;
        let measured = crate::targets::Measured {
            stores: &[Store::Fs],
            sizes: &[8192],
            concurrency: &[32],
            rows: &rows,
            memory: &[],
            disk: &[],
        };
        let evaluation = Evaluation::new("t.toml", &targets, &measured);
        let md = markdown(
            &info,
            &rows,
            &records,
            &Footprint::default(),
            Some(&evaluation),
        );
        assert!(md.contains("> **Note:** debug build\n"), "{md}");
        // The targets come before the phases.
        let targets_at = md.find("## Targets").unwrap_or(usize::MAX);
        let phases_at = md.find("## planshare / reference").unwrap_or(0);
        assert!(targets_at < phases_at, "{md}");
        assert!(md.contains("0 met, 1 missed, 0 not measured"), "{md}");
        assert!(
            md.contains(
                "- round 1 fetch 8192 B c=32 planshare: 3 errors — \
                 2 × HTTP 500 \\| body second line; 1 × timeout\n"
            ),
            "{md}"
        );
        Ok(())
    }
}
