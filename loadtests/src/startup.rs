//! `startup`: how long planshare takes from spawn to a 200 on `/readyz` with N
//! stored pastes, compared with an empty data directory.
//!
//! For each data directory (empty, then seeded) the server is started once
//! (and, for the seeded one, N pastes of 8 KiB are created through the API),
//! stopped with SIGTERM, then restarted and stopped again `--restarts` times;
//! each restart is timed from just before the spawn until `/readyz` first
//! answers 200, polled every 2 ms. The median of the restarts is reported.
//! The page cache is warm (the files were just written): this measures the
//! server's own start-up work, not cold-disk reads.

use crate::DEFAULT_SERVER_BIN;
use crate::run::{READY_POLL, READY_TIMEOUT, check_server_bin, planshare_command, temp_dir};
use anyhow::{Context as _, bail};
use clap::Args;
use loadtests::backend::StoreConfig;
use loadtests::generator;
use loadtests::process::{ServerProcess, free_port};
use loadtests::stats::{self, UtcTime};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
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
    /// Timed restarts per data directory; the median is reported.
    #[arg(long, default_value_t = 3)]
    restarts: usize,
    /// Folder for `startup-<UTC timestamp>.json` and `.md` (created if missing).
    #[arg(long, default_value = "loadtests/results")]
    out: PathBuf,
}

pub(crate) async fn startup(args: StartupArgs) -> anyhow::Result<()> {
    check_server_bin(&args.server_bin)?;
    if args.restarts == 0 {
        bail!("--restarts must be at least 1");
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let started = UtcTime::now();

    eprintln!("empty data directory:");
    let empty = measure(&args.server_bin, 0, args.restarts).await?;
    eprintln!(
        "data directory with {} pastes of {PASTE_SIZE} B:",
        args.pastes
    );
    let seeded = measure(&args.server_bin, args.pastes, args.restarts).await?;

    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    let median_ms = |runs: &[Duration]| stats::median(&runs.iter().map(ms).collect::<Vec<_>>());
    let (empty_ms, seeded_ms) = (median_ms(&empty), median_ms(&seeded));
    let ratio = stats::ratio(seeded_ms, empty_ms);
    let fmt = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"));
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
        "`{}`, fs store, spawn → first 200 on `/readyz` (polled every {} ms), \
         median of {} restarts, warm page cache.\n",
        args.server_bin.display(),
        TIMED_POLL.as_millis(),
        args.restarts
    );
    let _ = writeln!(
        md,
        "| data directory | pastes | start-up ms (median) | each restart ms |"
    );
    let _ = writeln!(md, "|---|---:|---:|---|");
    let _ = writeln!(md, "| empty | 0 | {} | {} |", fmt(empty_ms), runs(&empty));
    let _ = writeln!(
        md,
        "| seeded | {} | {} | {} |",
        args.pastes,
        fmt(seeded_ms),
        runs(&seeded)
    );
    let _ = writeln!(
        md,
        "\nseeded / empty: {}",
        ratio.map_or_else(|| "–".to_owned(), |r| format!("{r:.2}"))
    );

    let report = json!({
        "started_utc": started.iso(),
        "server_bin": args.server_bin.display().to_string(),
        "paste_size": PASTE_SIZE,
        "poll_ms": TIMED_POLL.as_secs_f64() * 1000.0,
        "empty": { "pastes": 0, "median_ms": empty_ms, "runs_ms": empty.iter().map(ms).collect::<Vec<_>>() },
        "seeded": { "pastes": args.pastes, "median_ms": seeded_ms, "runs_ms": seeded.iter().map(ms).collect::<Vec<_>>() },
        "ratio_seeded_to_empty": ratio,
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

/// Prepares a fresh data directory with `pastes` pastes, then times
/// `restarts` restarts on it.
async fn measure(bin: &Path, pastes: usize, restarts: usize) -> anyhow::Result<Vec<Duration>> {
    let work_dir = temp_dir()?;
    let port = free_port()?;
    let mut server = ServerProcess::spawn(
        "planshare-server",
        planshare_command(bin, port, work_dir.path(), &StoreConfig::Fs)?,
        port,
    )?;
    server.wait_ready(READY_TIMEOUT, READY_POLL).await?;
    if pastes > 0 {
        let began = Instant::now();
        generator::seed(
            server.addr(),
            PASTE_SIZE,
            pastes,
            SEED_CONCURRENCY,
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
        let port = free_port()?;
        let command = planshare_command(bin, port, work_dir.path(), &StoreConfig::Fs)?;
        let spawned = Instant::now();
        let mut server = ServerProcess::spawn("planshare-server", command, port)?;
        server.wait_ready(TIMED_READY_TIMEOUT, TIMED_POLL).await?;
        let took = spawned.elapsed();
        eprintln!(
            "  restart {i}/{restarts}: ready after {:.1} ms",
            took.as_secs_f64() * 1000.0
        );
        times.push(took);
        stop(server).await?;
    }
    Ok(times)
}

async fn stop(server: ServerProcess) -> anyhow::Result<()> {
    let (status, took) = server.terminate(STOP_TIMEOUT).await?;
    if !status.success() {
        eprintln!("  warning: planshare-server exited with {status} after SIGTERM ({took:.1?})");
    }
    Ok(())
}
