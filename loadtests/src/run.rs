//! `run`: planshare against the floor reference server, scenario by scenario,
//! A/B interleaved, and the report with medians and ratios.
//!
//! Order: start planshare (fs store in a fresh temporary data directory) and
//! one reference server per payload size; seed 200 pastes of each size into
//! both; then for each round, for each scenario (create/fetch × size): the
//! reference, then planshare, each with an unrecorded warm-up first.

use crate::DEFAULT_SERVER_BIN;
use anyhow::{Context as _, bail};
use clap::Args;
use loadtests::generator::{self, Phase, Workload};
use loadtests::process::{ServerProcess, free_port};
use loadtests::procstat;
use loadtests::stats::{self, Record, RunInfo, Server, UtcTime};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Pastes created per size and server before the `fetch` scenarios.
const SEEDED_PASTES: usize = 200;

/// How long a server may take to answer `/readyz` with 200 in `run`.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How often `/readyz` is polled while waiting in `run`.
pub(crate) const READY_POLL: Duration = Duration::from_millis(20);

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The planshare server binary.
    #[arg(long, default_value = DEFAULT_SERVER_BIN)]
    server_bin: PathBuf,
    /// Measured seconds per phase.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Unrecorded warm-up seconds before each measured phase.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Connections (each with one request in flight) per phase.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Payload sizes: characters of base64url `data`, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8192,102400")]
    sizes: Vec<usize>,
    /// Rounds; each figure is the median across rounds.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Folder for `<UTC timestamp>.json` and `.md` (created if missing).
    #[arg(long, default_value = "loadtests/results")]
    out: PathBuf,
    /// Self-check of the runner: measure a second reference server where
    /// planshare would be (no planshare binary needed; ratios should be ≈ 1).
    #[arg(long, hide = true)]
    reference_only: bool,
}

/// Checks that the planshare binary exists, with a hint how to build it.
pub(crate) fn check_server_bin(path: &Path) -> anyhow::Result<()> {
    if !path.is_file() {
        bail!(
            "planshare server binary `{}` not found. Build it first, from the workspace root:\n    \
             cargo build --release -p planshare-server -p loadtests\n\
             or pass --server-bin PATH.",
            path.display()
        );
    }
    Ok(())
}

/// The command that starts planshare on 127.0.0.1:`port` with the fs store in
/// `<work_dir>/data` (created here). Inherited `PLANSHARE_*` and upstream
/// `PASTE_*` variables are removed, and the XDG config and data homes point
/// into `work_dir`, so neither the caller's shell nor their user config (nor a
/// default catalog under `~/.local/share`) can change or receive what is
/// measured.
pub(crate) fn planshare_command(bin: &Path, port: u16, work_dir: &Path) -> anyhow::Result<Command> {
    let data_dir = work_dir.join("data");
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let mut command = Command::new(bin);
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("PLANSHARE_") || key_text.starts_with("PASTE_") {
            command.env_remove(&key);
        }
    }
    command
        .env("PLANSHARE_HOST", "127.0.0.1")
        .env("PLANSHARE_PORT", port.to_string())
        .env("PLANSHARE_STORE", "fs")
        .env("PLANSHARE_DATA_DIR", &data_dir)
        .env("XDG_CONFIG_HOME", work_dir.join("xdg-config"))
        .env("XDG_DATA_HOME", work_dir.join("xdg-data"))
        .env("RUST_LOG", "warn");
    Ok(command)
}

/// A fresh temporary directory (removed when dropped; honours `TMPDIR`).
pub(crate) fn temp_dir() -> anyhow::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("planshare-loadtest-")
        .tempdir()
        .context("creating a temporary data directory")
}

fn seconds(name: &str, value: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value).with_context(|| format!("--{name} {value}: not a duration"))
}

async fn start_reference(exe: &Path, size: usize, name: &str) -> anyhow::Result<ServerProcess> {
    let port = free_port()?;
    let mut command = Command::new(exe);
    command.args([
        "reference",
        "--port",
        &port.to_string(),
        "--size",
        &size.to_string(),
    ]);
    let mut server = ServerProcess::spawn(name, command, port)?;
    server.wait_ready(READY_TIMEOUT, READY_POLL).await?;
    Ok(server)
}

/// One server and the workloads prepared for it, per payload size.
struct Target {
    server: Server,
    process_index: usize,
    fetch: Workload,
}

impl Target {
    /// Seeds [`SEEDED_PASTES`] pastes of `size` into `processes[index]`.
    async fn seeded(
        server: Server,
        index: usize,
        processes: &[ServerProcess],
        size: usize,
        concurrency: usize,
    ) -> anyhow::Result<Self> {
        let addr = processes
            .get(index)
            .context("internal: no such server process")?
            .addr();
        eprintln!(
            "seeding {SEEDED_PASTES} pastes of {size} B into {}",
            server.name()
        );
        let ids = generator::seed(addr, size, SEEDED_PASTES, concurrency, |_, _| {})
            .await
            .with_context(|| format!("seeding {}", server.name()))?;
        Ok(Self {
            server,
            process_index: index,
            fetch: Workload::fetch(&ids)?,
        })
    }
}

pub(crate) async fn run(args: RunArgs) -> anyhow::Result<()> {
    let duration = seconds("duration", args.duration)?;
    let warmup = seconds("warmup", args.warmup)?;
    if duration.is_zero() || args.rounds == 0 || args.concurrency == 0 || args.sizes.is_empty() {
        bail!("--duration, --rounds, --concurrency and --sizes must all be positive");
    }
    if !args.reference_only {
        check_server_bin(&args.server_bin)?;
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let exe = std::env::current_exe().context("locating this executable")?;

    let mut info = RunInfo {
        started: UtcTime::now(),
        server_bin: if args.reference_only {
            "(self-check: a second reference server)".to_owned()
        } else {
            args.server_bin.display().to_string()
        },
        concurrency: args.concurrency,
        duration_s: duration.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        rounds: args.rounds,
        sizes: args.sizes.clone(),
        cpus: std::thread::available_parallelism().map_or(1, usize::from),
        clock_ticks: procstat::clock_ticks_per_second(),
        debug_build: cfg!(debug_assertions),
        notes: Vec::new(),
    };
    if info.debug_build {
        info.notes.push(
            "this runner is a debug build, and so is the reference server it starts: \
             use `cargo build --release -p loadtests` for meaningful figures"
                .to_owned(),
        );
    }
    if args.reference_only {
        info.notes
            .push("self-check run: the `planshare` rows are a second reference server".to_owned());
    }
    for note in &info.notes {
        eprintln!("warning: {note}");
    }

    // Declared before the servers, so it is removed only after they are killed.
    let data_dir = temp_dir()?;
    let mut processes: Vec<ServerProcess> = Vec::new();
    let mut planshare_of_size = Vec::new();
    if args.reference_only {
        for &size in &args.sizes {
            planshare_of_size.push(processes.len());
            processes.push(start_reference(&exe, size, "planshare (reference stand-in)").await?);
        }
    } else {
        let port = free_port()?;
        let command = planshare_command(&args.server_bin, port, data_dir.path())?;
        let mut server = ServerProcess::spawn("planshare-server", command, port)?;
        let waited = server.wait_ready(READY_TIMEOUT, READY_POLL).await?;
        eprintln!(
            "planshare-server ready on {} after {waited:.2?}",
            server.addr()
        );
        planshare_of_size = vec![processes.len(); args.sizes.len()];
        processes.push(server);
    }
    let mut reference_of_size = Vec::new();
    for &size in &args.sizes {
        reference_of_size.push(processes.len());
        processes.push(start_reference(&exe, size, "reference server").await?);
    }

    // Seed the pastes the `fetch` scenarios read.
    let mut targets: Vec<[Target; 2]> = Vec::new();
    for (i, &size) in args.sizes.iter().enumerate() {
        let reference = Target::seeded(
            Server::Reference,
            reference_of_size[i],
            &processes,
            size,
            args.concurrency,
        )
        .await?;
        let planshare = Target::seeded(
            Server::Planshare,
            planshare_of_size[i],
            &processes,
            size,
            args.concurrency,
        )
        .await?;
        targets.push([reference, planshare]);
    }

    let total = args.rounds * args.sizes.len() * 2 * 2;
    let mut done = 0;
    let mut records = Vec::new();
    for round in 1..=args.rounds {
        for (i, &size) in args.sizes.iter().enumerate() {
            for scenario in ["create", "fetch"] {
                for target in &targets[i] {
                    done += 1;
                    let process = &mut processes[target.process_index];
                    process.ensure_running()?;
                    eprint!(
                        "[{done}/{total}] {scenario} {size} B {} ... ",
                        target.server.name()
                    );
                    let workload = match scenario {
                        "create" => Workload::Create { size },
                        _ => target.fetch.clone(),
                    };
                    let phase = Phase {
                        addr: process.addr(),
                        concurrency: args.concurrency,
                        warmup,
                        duration,
                        pid: Some(process.pid()),
                    };
                    let result = generator::run_phase(&phase, &workload)
                        .await
                        .with_context(|| format!("{scenario} {size} B on {}", process.name()))?;
                    let record = Record {
                        round,
                        scenario,
                        size,
                        server: target.server,
                        requests_per_second: result.requests_per_second(),
                        p50_ms: result.latency_ms(0.5),
                        p90_ms: result.latency_ms(0.9),
                        p99_ms: result.latency_ms(0.99),
                        p999_ms: result.latency_ms(0.999),
                        max_ms: result.latency_ms(1.0),
                        cpu_us_per_request: result.cpu_us_per_request(),
                        ok: result.ok,
                        errors: result.errors,
                        error_kinds: result.error_kinds,
                    };
                    eprintln!(
                        "{:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, CPU {} µs/req, {} errors",
                        record.requests_per_second,
                        record.p50_ms,
                        record.p99_ms,
                        record
                            .cpu_us_per_request
                            .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}")),
                        record.errors
                    );
                    records.push(record);
                }
            }
        }
    }
    // Stop the servers before writing (and before the data directory goes).
    drop(processes);

    let rows = stats::summarize(&records);
    let markdown = stats::markdown(&info, &rows, &records);
    let json = stats::json_report(&info, &rows, &records);
    let stem = args.out.join(info.started.compact());
    let md_path = stem.with_extension("md");
    let json_path = stem.with_extension("json");
    std::fs::write(&md_path, &markdown)
        .with_context(|| format!("writing {}", md_path.display()))?;
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    print!("{markdown}");
    eprintln!("wrote {} and {}", md_path.display(), json_path.display());
    drop(data_dir);
    Ok(())
}
