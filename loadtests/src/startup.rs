//! `startup`: start-up time and fetch speed with many stored pastes (issue 8:
//! "1 000 000 stored pastes: start-up to ready < 1 s; fetch within 10 % of
//! the 1 000-paste figure").
//!
//! Three data directories — empty, a baseline of `--baseline-pastes` (1 000)
//! and `--pastes` N — are prepared (the pastes, 8 KiB each, created through
//! the API) and the server restarted on each `--restarts` times; each restart
//! is timed from just before the spawn until `/readyz` first answers 200,
//! polled every 2 ms, and the median reported. Then one server on the
//! baseline directory and one on the large one serve `GET`s of *all* their
//! pastes round-robin (so the large one reads from across its N files), in
//! alternating phases, `--fetch-rounds` each; medians of req/s, p99 and
//! server CPU per request, and the large / baseline ratios. The page cache is
//! warm (the files were just written): this measures the server's own work,
//! not cold-disk reads.

use crate::DEFAULT_SERVER_BIN;
use crate::run::{READY_POLL, READY_TIMEOUT, check_server_bin, planshare_command, temp_dir};
use anyhow::{Context as _, bail};
use clap::Args;
use loadtests::backend::StoreConfig;
use loadtests::clock::UtcTime;
use loadtests::generator::{self, Phase, Workload};
use loadtests::process::{ServerProcess, free_port};
use loadtests::stats;
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Size of each seeded paste (characters of `data`).
const PASTE_SIZE: usize = 8192;

/// Connections used for seeding.
const SEED_CONCURRENCY: usize = 32;

/// Poll interval while timing a restart (the measurement's resolution).
const TIMED_POLL: Duration = Duration::from_millis(2);

/// How long a timed restart may take before it counts as a failure.
const TIMED_READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How long the server may take to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
pub(crate) struct StartupArgs {
    /// Number of 8 KiB pastes to store before timing the restarts.
    #[arg(long)]
    pastes: usize,
    /// The planshare server binary.
    #[arg(long, default_value = DEFAULT_SERVER_BIN)]
    server_bin: PathBuf,
    /// Pastes of the baseline data directory the large one is compared with.
    #[arg(long, default_value_t = 1000)]
    baseline_pastes: usize,
    /// Timed restarts per data directory; the median is reported.
    #[arg(long, default_value_t = 3)]
    restarts: usize,
    /// Measured seconds of each fetch phase (0: no fetch comparison).
    #[arg(long, default_value_t = 5.0)]
    fetch_duration: f64,
    /// Fetch phases per data directory, alternating baseline / large.
    #[arg(long, default_value_t = 3)]
    fetch_rounds: usize,
    /// Connections of the fetch phases.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seed through `/api/v1/pastes`, so every paste is also a row of the
    /// default tenant's catalog index (the doctor then reads a million rows
    /// beside the million files); without it, upstream's `/api/paste`.
    #[arg(long)]
    indexed: bool,
    /// Folder for `startup-<UTC timestamp>.json` and `.md` (created if missing).
    #[arg(long, default_value = "loadtests/results")]
    out: PathBuf,
}

pub(crate) async fn startup(args: StartupArgs) -> anyhow::Result<()> {
    check_server_bin(&args.server_bin)?;
    if args.restarts == 0 {
        bail!("--restarts must be at least 1");
    }
    let fetch_window = Duration::try_from_secs_f64(args.fetch_duration)
        .with_context(|| format!("--fetch-duration {}: not a duration", args.fetch_duration))?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let started = UtcTime::now();

    let mut dirs = Vec::new();
    for (label, pastes) in [
        ("empty", 0),
        ("baseline", args.baseline_pastes),
        ("large", args.pastes),
    ] {
        eprintln!("{label} data directory ({pastes} pastes of {PASTE_SIZE} B):");
        dirs.push(prepare(&args, label, pastes).await?);
    }

    let fetch = if fetch_window.is_zero() || args.fetch_rounds == 0 {
        None
    } else {
        Some(compare_fetches(&args, fetch_window, &dirs[1], &dirs[2]).await?)
    };

    let mut doctor = Vec::new();
    for dir in &dirs[1..] {
        eprintln!("doctor over the {} data directory:", dir.label);
        let figures = time_doctor(&args.server_bin, dir.dir.path()).await?;
        eprintln!(
            "  {} entries, {} catalog rows in {:.2} s, {:.2} CPU s, peak RSS {} KiB",
            figures.entries, figures.rows, figures.secs, figures.cpu_secs, figures.peak_rss_kib
        );
        doctor.push((dir.label, figures));
    }

    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    let median_ms = |runs: &[Duration]| stats::median(&runs.iter().map(ms).collect::<Vec<_>>());
    let fmt = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
    };
    let runs = |runs: &[Duration]| {
        runs.iter()
            .map(|d| format!("{:.1}", ms(d)))
            .collect::<Vec<_>>()
            .join(", ")
    };

    let mut md = String::new();
    let _ = writeln!(md, "# planshare start-up — {}\n", started.iso());
    let _ = writeln!(
        md,
        "`{}`, fs store, pastes created through `{}`, spawn → first 200 on `/readyz` \
         (polled every {} ms), median of {} restarts, warm page cache.\n",
        args.server_bin.display(),
        if args.indexed {
            "/api/v1/pastes (indexed)"
        } else {
            "/api/paste"
        },
        TIMED_POLL.as_millis(),
        args.restarts
    );
    let _ = writeln!(
        md,
        "| data directory | pastes | start-up ms (median) | each restart ms |"
    );
    let _ = writeln!(md, "|---|---:|---:|---|");
    for dir in &dirs {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            dir.label,
            dir.ids.len(),
            fmt(median_ms(&dir.restarts), 1),
            runs(&dir.restarts)
        );
    }
    let startup_ratio = stats::ratio(median_ms(&dirs[2].restarts), median_ms(&dirs[1].restarts));
    let _ = writeln!(md, "\nlarge / baseline start-up: {}", fmt(startup_ratio, 2));

    let mut fetch_json = serde_json::Value::Null;
    if let Some(fetch) = &fetch {
        let _ = writeln!(
            md,
            "\n## Fetch\n\n`GET /api/paste/<id>` of every stored paste round-robin, {} connections, \
             {} phases of {:.0} s per directory (after 1 s of warm-up), alternating; medians.\n",
            args.concurrency, args.fetch_rounds, args.fetch_duration
        );
        let _ = writeln!(
            md,
            "| data directory | pastes | req/s | p99 ms | CPU µs/req |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|");
        for (dir, figures) in [(&dirs[1], &fetch.baseline), (&dirs[2], &fetch.large)] {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                dir.label,
                dir.ids.len(),
                fmt(figures.rps, 0),
                fmt(figures.p99_ms, 2),
                fmt(figures.cpu_us, 1)
            );
        }
        let _ = writeln!(
            md,
            "\nlarge / baseline: throughput {}, p99 {}, CPU per request {}",
            fmt(stats::ratio(fetch.large.rps, fetch.baseline.rps), 3),
            fmt(stats::ratio(fetch.large.p99_ms, fetch.baseline.p99_ms), 3),
            fmt(stats::ratio(fetch.large.cpu_us, fetch.baseline.cpu_us), 3)
        );
        fetch_json = json!({
            "concurrency": args.concurrency,
            "duration_s": args.fetch_duration,
            "rounds": args.fetch_rounds,
            "baseline": fetch.baseline.to_json(),
            "large": fetch.large.to_json(),
            "ratio_throughput": stats::ratio(fetch.large.rps, fetch.baseline.rps),
            "ratio_cpu_per_request": stats::ratio(fetch.large.cpu_us, fetch.baseline.cpu_us),
        });
    }

    let _ = writeln!(
        md,
        "\n## Doctor\n\n`planshare-server doctor --json` over each data directory (server stopped, \
         warm page cache): every file's header and length checked, the catalog's rows beside them.\n"
    );
    let _ = writeln!(
        md,
        "| data directory | entries | catalog rows | seconds | entries/s | CPU s | peak RSS KiB | findings |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (label, f) in &doctor {
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {:.2} | {:.0} | {:.2} | {} | {} |",
            f.entries,
            f.rows,
            f.secs,
            f.entries as f64 / f.secs.max(1e-9),
            f.cpu_secs,
            f.peak_rss_kib,
            f.findings
        );
    }
    let doctor_json: Vec<serde_json::Value> = doctor
        .iter()
        .map(|(label, f)| {
            json!({
                "dir": label,
                "entries": f.entries,
                "rows": f.rows,
                "secs": f.secs,
                "entries_per_sec": f.entries as f64 / f.secs.max(1e-9),
                "cpu_secs": f.cpu_secs,
                "peak_rss_kib": f.peak_rss_kib,
                "findings": f.findings,
            })
        })
        .collect();

    let dir_json = |dir: &Prepared| {
        json!({
            "pastes": dir.ids.len(),
            "median_ms": median_ms(&dir.restarts),
            "runs_ms": dir.restarts.iter().map(ms).collect::<Vec<_>>(),
        })
    };
    let report = json!({
        "started_utc": started.iso(),
        "server_bin": args.server_bin.display().to_string(),
        "paste_size": PASTE_SIZE,
        "indexed": args.indexed,
        "poll_ms": TIMED_POLL.as_secs_f64() * 1000.0,
        "empty": dir_json(&dirs[0]),
        "baseline": dir_json(&dirs[1]),
        "seeded": dir_json(&dirs[2]),
        "ratio_seeded_to_baseline": startup_ratio,
        "fetch": fetch_json,
        "doctor": doctor_json,
    });
    let stem = args.out.join(format!("startup-{}", started.compact()));
    let (md_path, json_path) = (stem.with_extension("md"), stem.with_extension("json"));
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    print!("{md}");
    eprintln!("wrote {} and {}", md_path.display(), json_path.display());
    Ok(())
}

/// What one `doctor` run over a data directory reported.
struct DoctorFigures {
    entries: u64,
    rows: u64,
    secs: f64,
    cpu_secs: f64,
    peak_rss_kib: u64,
    findings: usize,
}

/// Runs `planshare-server doctor --json` over the data directory in
/// `work_dir` and reads its report (exit 0 or 1; 2 is a failure).
async fn time_doctor(bin: &Path, work_dir: &Path) -> anyhow::Result<DoctorFigures> {
    let mut command = planshare_command(bin, free_port()?, work_dir, &StoreConfig::Fs)?;
    command.args(["doctor", "--json"]);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await?
        .context("running planshare-server doctor")?;
    if !matches!(output.status.code(), Some(0 | 1)) {
        bail!(
            "doctor failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("reading the doctor's JSON report")?;
    let number = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    Ok(DoctorFigures {
        entries: report["checked"]["entries"].as_u64().unwrap_or(0),
        rows: report["checked"]["rows"].as_u64().unwrap_or(0),
        secs: number(&report["elapsed_secs"]),
        cpu_secs: number(&report["resources"]["cpu_secs"]),
        peak_rss_kib: report["resources"]["peak_rss_kib"].as_u64().unwrap_or(0),
        findings: report["findings"].as_array().map_or(0, Vec::len),
    })
}

/// A data directory with its pastes and the timed restarts on it.
struct Prepared {
    label: &'static str,
    dir: tempfile::TempDir,
    ids: Vec<String>,
    restarts: Vec<Duration>,
}

/// Prepares a fresh data directory with `pastes` pastes, then times
/// `restarts` restarts on it.
async fn prepare(
    args: &StartupArgs,
    label: &'static str,
    pastes: usize,
) -> anyhow::Result<Prepared> {
    let (bin, restarts) = (args.server_bin.as_path(), args.restarts);
    let path = if args.indexed {
        "/api/v1/pastes"
    } else {
        "/api/paste"
    };
    let dir = temp_dir()?;
    let port = free_port()?;
    let mut server = ServerProcess::spawn(
        "planshare-server",
        planshare_command(bin, port, dir.path(), &StoreConfig::Fs)?,
        port,
    )?;
    server.wait_ready(READY_TIMEOUT, READY_POLL).await?;
    let mut ids = Vec::new();
    if pastes > 0 {
        let began = Instant::now();
        ids = generator::seed_at(
            server.addr(),
            path,
            PASTE_SIZE,
            pastes,
            SEED_CONCURRENCY,
            Arc::new(Vec::new()),
            |done, total| {
                eprintln!("  seeding: {done}/{total} ({}%)", done * 100 / total);
            },
        )
        .await
        .context("seeding pastes")?;
        eprintln!("  seeded {pastes} pastes in {:.1?}", began.elapsed());
    }
    stop(server).await?;

    let mut times = Vec::with_capacity(restarts);
    for i in 1..=restarts {
        let (server, took) = start(bin, dir.path()).await?;
        eprintln!(
            "  restart {i}/{restarts}: ready after {:.1} ms",
            took.as_secs_f64() * 1000.0
        );
        times.push(took);
        stop(server).await?;
    }
    Ok(Prepared {
        label,
        dir,
        ids,
        restarts: times,
    })
}

/// Starts planshare on `dir`; returns it once ready, with how long that took.
async fn start(bin: &Path, dir: &Path) -> anyhow::Result<(ServerProcess, Duration)> {
    let port = free_port()?;
    let command = planshare_command(bin, port, dir, &StoreConfig::Fs)?;
    let spawned = Instant::now();
    let mut server = ServerProcess::spawn("planshare-server", command, port)?;
    server.wait_ready(TIMED_READY_TIMEOUT, TIMED_POLL).await?;
    Ok((server, spawned.elapsed()))
}

/// Medians of one directory's fetch phases.
struct FetchFigures {
    rps: Option<f64>,
    p99_ms: Option<f64>,
    cpu_us: Option<f64>,
}

impl FetchFigures {
    fn to_json(&self) -> serde_json::Value {
        json!({ "rps": self.rps, "p99_ms": self.p99_ms, "cpu_us_per_request": self.cpu_us })
    }
}

struct FetchComparison {
    baseline: FetchFigures,
    large: FetchFigures,
}

/// Alternating fetch phases on the baseline and the large directory.
async fn compare_fetches(
    args: &StartupArgs,
    window: Duration,
    baseline: &Prepared,
    large: &Prepared,
) -> anyhow::Result<FetchComparison> {
    let mut servers = Vec::new();
    for dir in [baseline, large] {
        let (server, _) = start(&args.server_bin, dir.dir.path()).await?;
        servers.push((server, Workload::fetch(&dir.ids)?, dir.label));
    }
    let mut results: [Vec<generator::PhaseResult>; 2] = [Vec::new(), Vec::new()];
    for round in 1..=args.fetch_rounds {
        for (i, (server, workload, label)) in servers.iter().enumerate() {
            let phase = Phase {
                addr: server.addr(),
                concurrency: args.concurrency,
                warmup: Duration::from_secs(1),
                duration: window,
                pid: Some(server.pid()),
                headers: Arc::new(Vec::new()),
            };
            let result = generator::run_phase(&phase, workload).await?;
            if result.errors > 0 {
                bail!(
                    "fetch from the {label} directory: {} errors: {:?}",
                    result.errors,
                    result.error_kinds
                );
            }
            eprintln!(
                "  fetch round {round}/{}, {label}: {:.0} req/s, p99 {:.2} ms, {:.1} µs CPU/req",
                args.fetch_rounds,
                result.requests_per_second(),
                result.latency_ms(0.99),
                result.cpu_us_per_request().unwrap_or(f64::NAN)
            );
            results[i].push(result);
        }
    }
    for (server, _, _) in servers {
        stop(server).await?;
    }
    let figures = |phases: &[generator::PhaseResult]| FetchFigures {
        rps: stats::median(
            &phases
                .iter()
                .map(generator::PhaseResult::requests_per_second)
                .collect::<Vec<_>>(),
        ),
        p99_ms: stats::median(
            &phases
                .iter()
                .map(|r| r.latency_ms(0.99))
                .collect::<Vec<_>>(),
        ),
        cpu_us: stats::median(
            &phases
                .iter()
                .filter_map(generator::PhaseResult::cpu_us_per_request)
                .collect::<Vec<_>>(),
        ),
    };
    Ok(FetchComparison {
        baseline: figures(&results[0]),
        large: figures(&results[1]),
    })
}

async fn stop(server: ServerProcess) -> anyhow::Result<()> {
    let (status, took) = server.terminate(STOP_TIMEOUT).await?;
    if !status.success() {
        eprintln!("  warning: planshare-server exited with {status} after SIGTERM ({took:.1?})");
    }
    Ok(())
}
