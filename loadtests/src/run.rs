//! `run`: planshare against the floor reference server, scenario by scenario,
//! interleaved, and the report with medians and ratios.
//!
//! Order: read the targets file; prepare the stores asked for (`--stores`; an
//! S3 bucket of the run's own); when fs is measured, measure its bytes on
//! disk per paste (a fresh fs server per size, 200 pastes, stopped, its files
//! summed); start one planshare server per store (the fs store in a fresh
//! temporary data directory) and one reference server per payload size,
//! reading each one's resident memory once it is ready; seed 200 pastes of
//! each size into every server and read the memory again; then for each
//! round, for each scenario (create/fetch × size × concurrency): the
//! reference, then planshare with each store in turn, each with an unrecorded
//! warm-up first, its memory sampled throughout. The report is checked
//! against the targets.
//!
//! With `--baseline-bin`, a second planshare build is started beside the
//! first for every store (same settings, its own data directory), seeded
//! alike and measured right next to it in every scenario, the baseline
//! first in even rounds ([`phases::round_order`]); its figures are reported
//! beside the first build's, and the targets are checked for the first only.

use crate::DEFAULT_SERVER_BIN;
use anyhow::{Context as _, bail};
use clap::Args;
use loadtests::backend::{self, DEFAULT_REDIS_URL, MOTO_HINT, Store, StoreConfig};
use loadtests::clock::UtcTime;
use loadtests::footprint::{DiskFigures, Footprint, MemoryFigures};
use loadtests::generator::{self, Phase, Workload};
use loadtests::payload::Rng;
use loadtests::phases::{self, Record, Server};
use loadtests::process::{ServerProcess, free_port};
use loadtests::procstat::{self, MemoryField, RssSampler};
use loadtests::report::{self, RunInfo, StoreInfo};
use loadtests::s3;
use loadtests::targets::{Evaluation, Measured, Targets};
use loadtests::text;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Pastes created per size and server before the `fetch` scenarios.
const SEEDED_PASTES: usize = 200;

/// How long a server may take to answer `/readyz` with 200 in `run`.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How often `/readyz` is polled while waiting in `run`.
pub(crate) const READY_POLL: Duration = Duration::from_millis(20);

/// Added to twice the run's planned length for the TTL of Redis pastes: long
/// enough for every phase, short enough that a run's pastes leave Redis soon.
const REDIS_TTL_MARGIN_SECS: u64 = 600;

/// How long removing a run's S3 bucket (and its objects) may take.
const BUCKET_REMOVAL_TIMEOUT: Duration = Duration::from_secs(180);

/// How often a server's resident memory is sampled during a phase.
const RSS_SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// How long a server may take to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The planshare server binary.
    #[arg(long, default_value = DEFAULT_SERVER_BIN)]
    server_bin: PathBuf,
    /// A second planshare build to compare with, e.g. an older commit's
    /// release binary: started beside `--server-bin` for every store with
    /// the same settings and `--server-env`, seeded alike, and measured in
    /// the same rounds next to it, scenario by scenario. The report adds its
    /// figures and the ratios `--server-bin` ÷ baseline.
    #[arg(long, value_name = "PATH")]
    baseline_bin: Option<PathBuf>,
    /// Store backends to measure, comma-separated: fs, redis, s3, memory. Each
    /// gets a planshare server of its own; fs is also the baseline of the
    /// `/ fs` ratios.
    #[arg(long, value_delimiter = ',', default_value = "fs")]
    stores: Vec<Store>,
    /// Redis for the `redis` store. Nothing is flushed: use a database index of
    /// the run's own; the pastes expire by themselves an hour after the run.
    #[arg(
        long,
        env = "PLANSHARE_TEST_REDIS_URL",
        hide_env_values = true,
        default_value = DEFAULT_REDIS_URL
    )]
    redis_url: String,
    /// S3-compatible server for the `s3` store, e.g. http://127.0.0.1:5055
    /// (moto). Required when `s3` is measured.
    #[arg(long, env = "PLANSHARE_TEST_S3_ENDPOINT", hide_env_values = true)]
    s3_endpoint: Option<String>,
    /// An existing bucket for the `s3` store (each run writes under a prefix of
    /// its own). Default: a fresh bucket per run, created before it and
    /// emptied and removed after it.
    #[arg(long)]
    s3_bucket: Option<String>,
    /// Measured seconds per phase.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Unrecorded warm-up seconds before each measured phase.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Connections (each with one request in flight) per phase,
    /// comma-separated: every scenario is measured at each.
    #[arg(long, value_delimiter = ',', default_value = "32,128")]
    concurrency: Vec<usize>,
    /// Payload sizes: characters of base64url `data`, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8192,102400")]
    sizes: Vec<usize>,
    /// Rounds; each figure is the median across rounds.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Folder for `<UTC timestamp>.json` and `.md` (created if missing).
    #[arg(long, default_value = "loadtests/results")]
    out: PathBuf,
    /// Performance targets to check the figures against. When the file does
    /// not exist, the report has no targets.
    #[arg(long, default_value = "loadtests/targets.toml")]
    targets: PathBuf,
    /// A setting for every planshare server of the run, as `NAME=VALUE` of a
    /// server variable (e.g. `PLANSHARE_FS_SYNC=file`); repeatable. Noted in
    /// the report. The servers log at `warn` unless `PLANSHARE_LOG=…` is
    /// given here (their log goes to this command's stderr).
    #[arg(long = "server-env", value_name = "NAME=VALUE", value_parser = parse_server_env)]
    server_env: Vec<(String, String)>,
    /// Self-check of the runner: measure a second reference server where
    /// planshare would be (no planshare binary needed; ratios should be ≈ 1).
    #[arg(long, hide = true)]
    reference_only: bool,
}

fn parse_server_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if name.starts_with("PLANSHARE_") || name.starts_with("PASTE_") => {
            Ok((name.to_owned(), value.to_owned()))
        }
        _ => Err(format!(
            "expected NAME=VALUE with a PLANSHARE_* or PASTE_* name, got {text:?}"
        )),
    }
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

/// Checks that the baseline binary exists, with a hint how to build one.
fn check_baseline_bin(path: &Path) -> anyhow::Result<()> {
    if !path.is_file() {
        bail!(
            "baseline server binary `{}` not found. To build one from an older commit, from \
             the workspace root:\n    \
             git worktree add /tmp/planshare-before <commit>\n    \
             (cd /tmp/planshare-before && cargo build --release -p planshare-server)\n\
             then pass --baseline-bin /tmp/planshare-before/target/release/planshare-server.",
            path.display()
        );
    }
    Ok(())
}

/// The command that starts planshare on 127.0.0.1:`port` with `store`, its
/// data directory in `<work_dir>/data` (created here; the fs store keeps its
/// pastes there). Inherited `PLANSHARE_*` and upstream `PASTE_*` variables are
/// removed, and the XDG config and data homes point into `work_dir`, so
/// neither the caller's shell nor their user config (nor a default catalog
/// under `~/.local/share`) can change or receive what is measured; the store's
/// settings are passed explicitly.
pub(crate) fn planshare_command(
    bin: &Path,
    port: u16,
    work_dir: &Path,
    store: &StoreConfig,
) -> anyhow::Result<Command> {
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
        .env("PLANSHARE_DATA_DIR", &data_dir)
        .env("XDG_CONFIG_HOME", work_dir.join("xdg-config"))
        .env("XDG_DATA_HOME", work_dir.join("xdg-data"))
        // Warnings and errors only, unless `--server-env PLANSHARE_LOG=…`
        // asks for more (`RUST_LOG` would override that, so it is removed).
        .env_remove("RUST_LOG")
        .env("PLANSHARE_LOG", "warn")
        // One client address at full speed: the limiters would measure themselves.
        .env("PLANSHARE_RATE_LIMITS", "off");
    for (key, value) in store.env() {
        command.env(key, value);
    }
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

/// The S3 endpoint to use: `--s3-endpoint` (or its variable), else an error
/// that says how to start moto.
fn s3_endpoint(args: &RunArgs) -> anyhow::Result<String> {
    match args.s3_endpoint.as_deref().map(str::trim) {
        Some(endpoint) if !endpoint.is_empty() => Ok(endpoint.to_owned()),
        _ => bail!(
            "--stores includes s3, but no S3 server is known: pass --s3-endpoint URL or set \
             PLANSHARE_TEST_S3_ENDPOINT. To start a local one (moto, installed by scripts/test):\n    \
             {MOTO_HINT} &\n\
             then add --s3-endpoint http://127.0.0.1:5055"
        ),
    }
}

/// The settings of each store, preparing what needs it: the S3 bucket is
/// created here (unless `--s3-bucket` names an existing one), and Redis pastes
/// get a TTL of twice the run's planned length plus ten minutes.
async fn store_configs(
    args: &RunArgs,
    started: &UtcTime,
    planned: Duration,
) -> anyhow::Result<Vec<StoreConfig>> {
    let mut configs = Vec::new();
    for &store in &args.stores {
        configs.push(match store {
            Store::Fs => StoreConfig::Fs,
            Store::Memory => StoreConfig::Memory,
            Store::Redis => StoreConfig::Redis {
                url: args.redis_url.trim().to_owned(),
                ttl_secs: planned.as_secs().saturating_mul(2) + REDIS_TTL_MARGIN_SECS,
            },
            Store::S3 => {
                let endpoint = s3_endpoint(args)?;
                let has = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
                let dummy_credentials = !has("AWS_ACCESS_KEY_ID") && !has("AWS_PROFILE");
                let (bucket, prefix) = match &args.s3_bucket {
                    Some(bucket) => (
                        bucket.clone(),
                        format!("planshare-loadtest-{}/", started.compact()),
                    ),
                    None => {
                        let salt = Rng::from_entropy(0x5_3b0c).next_u64() as u16;
                        let bucket = s3::run_bucket_name(&started.compact(), salt);
                        eprintln!(
                            "creating bucket `{bucket}` on {}",
                            backend::redacted(&endpoint)
                        );
                        let client = s3::client(&endpoint, dummy_credentials).await;
                        s3::create_bucket(&client, &endpoint, &bucket).await?;
                        (bucket, "pastes/".to_owned())
                    }
                };
                StoreConfig::S3 {
                    endpoint,
                    bucket,
                    prefix,
                    dummy_credentials,
                }
            }
        });
    }
    Ok(configs)
}

/// Starts planshare with `config` in `dir` (its data directory `dir/data`)
/// and waits until it is ready.
async fn start_planshare(
    bin: &Path,
    dir: &Path,
    config: &StoreConfig,
    server_env: &[(String, String)],
    name: &str,
) -> anyhow::Result<ServerProcess> {
    let store = config.store();
    let port = free_port()?;
    let mut command = planshare_command(bin, port, dir, config)?;
    command.envs(server_env.iter().map(|(k, v)| (k, v)));
    let mut server = ServerProcess::spawn(name, command, port)?;
    let hint = match store {
        Store::Redis => "; is Redis running there?",
        Store::S3 => "; is the S3 server running there, with the bucket?",
        Store::Fs | Store::Memory => "",
    };
    let waited = server
        .wait_ready(READY_TIMEOUT, READY_POLL)
        .await
        .with_context(|| format!("the {store} store: {}{hint}", config.describe()))?;
    eprintln!("{name} ready on {} after {waited:.2?}", server.addr());
    Ok(server)
}

/// `VmRSS` of a process now, KiB; `None` (with a warning) when it cannot be
/// read, e.g. off Linux.
fn rss_now(process: &ServerProcess) -> Option<u64> {
    read_memory(process, MemoryField::Rss)
}

fn read_memory(process: &ServerProcess, field: MemoryField) -> Option<u64> {
    match procstat::memory_kib(process.pid(), field) {
        Ok(kib) => Some(kib),
        Err(e) => {
            eprintln!("warning: no memory figure for {}: {e:#}", process.name());
            None
        }
    }
}

/// Bytes on disk per paste of the fs store: for each size, a fresh fs server
/// in `work_dir/disk-<size>`, [`SEEDED_PASTES`] pastes created, the server
/// stopped (SIGTERM), then the files under its data directory summed (without
/// the catalog); the directory is left for the end of the run.
async fn measure_disk(
    bin: &Path,
    server_env: &[(String, String)],
    work_dir: &Path,
    sizes: &[usize],
    concurrency: usize,
) -> anyhow::Result<Vec<DiskFigures>> {
    let mut figures = Vec::new();
    for &size in sizes {
        let dir = work_dir.join(format!("disk-{size}"));
        let name = format!("planshare-server (fs store, bytes on disk of {size} B pastes)");
        let server = start_planshare(bin, &dir, &StoreConfig::Fs, server_env, &name).await?;
        let ids = generator::seed(server.addr(), size, SEEDED_PASTES, concurrency, |_, _| {})
            .await
            .with_context(|| format!("creating the pastes for {name}"))?;
        let (status, _) = server.terminate(STOP_TIMEOUT).await?;
        if !status.success() {
            eprintln!("warning: {name} exited with {status} after SIGTERM");
        }
        let usage = loadtests::disk::usage(&dir.join("data"))?;
        let disk = DiskFigures {
            size,
            pastes: ids.len(),
            usage,
        };
        eprintln!(
            "bytes on disk, {} pastes of {size} B (fs store): {} files, {} B ({} per base64 \
             char), {} B allocated",
            disk.pastes,
            usage.files,
            usage.apparent_bytes,
            disk.apparent_per_char()
                .map_or_else(|| "–".to_owned(), |v| format!("{v:.3}")),
            usage.allocated_bytes,
        );
        figures.push(disk);
        // The directory stays until the run's work directory is removed at
        // its end: on an ext4 without a journal, deleting many files slows
        // the creates that follow for minutes (README, "Deleted files slow
        // later creates"). For these few hundred no difference was
        // measurable; keeping them is a precaution that costs nothing.
    }
    Ok(figures)
}

/// One server and the workloads prepared for it, per payload size.
struct Served {
    server: Server,
    process_index: usize,
    fetch: Workload,
}

impl Served {
    /// Seeds [`SEEDED_PASTES`] pastes of `size` into `processes[index]`.
    async fn seeded(
        server: Server,
        info: &RunInfo,
        index: usize,
        processes: &[ServerProcess],
        size: usize,
        concurrency: usize,
    ) -> anyhow::Result<Self> {
        let addr = processes
            .get(index)
            .context("internal: no such server process")?
            .addr();
        let label = info.label(server);
        eprintln!("seeding {SEEDED_PASTES} pastes of {size} B into {label}");
        let ids = generator::seed(addr, size, SEEDED_PASTES, concurrency, |_, _| {})
            .await
            .with_context(|| format!("seeding {label}"))?;
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
    if duration.is_zero()
        || args.rounds == 0
        || args.concurrency.is_empty()
        || args.concurrency.contains(&0)
        || args.sizes.is_empty()
    {
        bail!("--duration, --rounds, --concurrency and --sizes must all be positive");
    }
    for (i, c) in args.concurrency.iter().enumerate() {
        if args.concurrency[..i].contains(c) {
            bail!("--concurrency names {c} twice");
        }
    }
    backend::check_stores(&args.stores)?;
    if !args.reference_only {
        check_server_bin(&args.server_bin)?;
        if let Some(baseline_bin) = &args.baseline_bin {
            check_baseline_bin(baseline_bin)?;
        }
        if args.stores.contains(&Store::S3) {
            s3_endpoint(&args)?;
        }
    }
    // A broken targets file stops the run before anything is measured.
    let targets = Targets::load(&args.targets)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let exe = std::env::current_exe().context("locating this executable")?;

    // Every phase: the reference and each store (of each build), per round,
    // size, scenario and concurrency.
    let servers = 1 + args.stores.len() * builds(&args).len();
    let total = args.rounds * args.sizes.len() * 2 * args.concurrency.len() * servers;
    let planned = (warmup + duration).saturating_mul(u32::try_from(total).unwrap_or(u32::MAX));

    let started = UtcTime::now();
    let configs = if args.reference_only {
        Vec::new()
    } else {
        store_configs(&args, &started, planned).await?
    };
    let mut info = RunInfo {
        started,
        server_bin: if args.reference_only {
            "(self-check: a second reference server)".to_owned()
        } else {
            args.server_bin.display().to_string()
        },
        baseline_bin: args.baseline_bin.as_ref().map(|bin| {
            if args.reference_only {
                "(self-check: a third reference server)".to_owned()
            } else {
                bin.display().to_string()
            }
        }),
        stores: args
            .stores
            .iter()
            .enumerate()
            .map(|(i, &store)| StoreInfo {
                store,
                settings: configs.get(i).map_or_else(
                    || "(self-check: a reference server stands in)".to_owned(),
                    StoreConfig::describe,
                ),
            })
            .collect(),
        concurrency: args.concurrency.clone(),
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
    for (name, value) in &args.server_env {
        info.notes.push(format!(
            "every planshare server of this run had {name}={value}"
        ));
    }
    if args.reference_only {
        info.notes
            .push("self-check run: the `planshare` rows are a second reference server".to_owned());
    }
    if targets.is_none() {
        info.notes.push(format!(
            "no targets file at `{}`: the figures are not checked against targets",
            args.targets.display()
        ));
    }
    for note in &info.notes {
        eprintln!("warning: {note}");
    }
    eprintln!(
        "{total} phases of {:.1} s: about {} plus start-up and seeding",
        (warmup + duration).as_secs_f64(),
        text::duration_text(planned)
    );

    let plan = Plan {
        exe,
        warmup,
        duration,
        total,
        targets,
    };
    let outcome = measure(&args, &info, &configs, &plan).await;

    // A bucket created for this run is removed again, also after a failure.
    for config in &configs {
        if let StoreConfig::S3 {
            endpoint,
            bucket,
            dummy_credentials,
            ..
        } = config
            && args.s3_bucket.is_none()
        {
            let client = s3::client(endpoint, *dummy_credentials).await;
            let removed = s3::remove_bucket(&client, bucket, BUCKET_REMOVAL_TIMEOUT).await;
            match removed {
                Ok(deleted) => {
                    eprintln!("removed bucket `{bucket}` ({deleted} objects)");
                }
                Err(e) => eprintln!("warning: bucket `{bucket}` was left behind: {e:#}"),
            }
        }
    }
    outcome
}

/// A planshare build of a run: what its servers are, and its binary.
struct Build<'a> {
    /// `Server::Planshare` or `Server::Baseline`.
    server: fn(Store) -> Server,
    bin: &'a Path,
}

/// The planshare builds of a run: the one under test, then the baseline
/// when `--baseline-bin` names one.
fn builds(args: &RunArgs) -> Vec<Build<'_>> {
    let mut builds = vec![Build {
        server: Server::Planshare,
        bin: &args.server_bin,
    }];
    if let Some(baseline_bin) = &args.baseline_bin {
        builds.push(Build {
            server: Server::Baseline,
            bin: baseline_bin,
        });
    }
    builds
}

/// What `measure` needs besides the arguments.
struct Plan {
    /// This executable (it serves the reference servers).
    exe: PathBuf,
    warmup: Duration,
    duration: Duration,
    /// Number of phases.
    total: usize,
    /// The targets to check, if a targets file was found.
    targets: Option<Targets>,
}

/// Progress of the phases: `[12/48, ETA 3m10s]`, the ETA from the average
/// length of the phases done so far (the planned length before the first).
struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    planned_per_phase: Duration,
}

impl Progress {
    /// Counts the phase that starts now and returns its progress prefix.
    fn next(&mut self) -> String {
        let per_phase = if self.done == 0 {
            self.planned_per_phase
        } else {
            self.started.elapsed() / u32::try_from(self.done).unwrap_or(u32::MAX)
        };
        let left = self.total.saturating_sub(self.done);
        self.done += 1;
        let eta = per_phase.saturating_mul(u32::try_from(left).unwrap_or(u32::MAX));
        format!(
            "[{}/{}, ETA {}]",
            self.done,
            self.total,
            text::duration_text(eta)
        )
    }
}

/// Starts the servers, seeds them, runs every phase and writes the reports.
async fn measure(
    args: &RunArgs,
    info: &RunInfo,
    configs: &[StoreConfig],
    plan: &Plan,
) -> anyhow::Result<()> {
    let (exe, warmup, duration) = (&plan.exe, plan.warmup, plan.duration);
    let builds = builds(args);
    let servers = 1 + args.stores.len() * builds.len();
    let seed_concurrency = args.concurrency.iter().copied().min().unwrap_or(1);
    // Declared before the servers, so it is removed only after they are killed.
    let work_dir = temp_dir()?;

    let mut footprint = Footprint::default();
    if let Some(i) = args.stores.iter().position(|&s| s == Store::Fs)
        && configs.get(i).is_some()
    {
        footprint.disk = measure_disk(
            &args.server_bin,
            &args.server_env,
            work_dir.path(),
            &args.sizes,
            seed_concurrency,
        )
        .await?;
    }

    let mut processes: Vec<ServerProcess> = Vec::new();
    // Per process: its server and the one size it serves (reference servers).
    let mut served_by: Vec<(Server, Option<usize>)> = Vec::new();
    // For each store (and build: the one under test, then the baseline),
    // the process serving each size.
    let mut store_processes: Vec<(Server, Vec<usize>)> = Vec::new();
    for (i, &store) in args.stores.iter().enumerate() {
        for build in &builds {
            let server = (build.server)(store);
            let mut of_size = Vec::new();
            if let Some(config) = configs.get(i) {
                of_size = vec![processes.len(); args.sizes.len()];
                let (name, dir) = match server {
                    Server::Baseline(_) => (
                        format!("baseline planshare-server ({store} store)"),
                        work_dir.path().join(format!("baseline-{store}")),
                    ),
                    _ => (
                        format!("planshare-server ({store} store)"),
                        work_dir.path().join(store.name()),
                    ),
                };
                processes
                    .push(start_planshare(build.bin, &dir, config, &args.server_env, &name).await?);
                served_by.push((server, None));
            } else {
                let name = format!("{} (reference stand-in)", info.label(server));
                for &size in &args.sizes {
                    of_size.push(processes.len());
                    processes.push(start_reference(exe, size, &name).await?);
                    served_by.push((server, Some(size)));
                }
            }
            store_processes.push((server, of_size));
        }
    }
    let mut reference_of_size = Vec::new();
    for &size in &args.sizes {
        reference_of_size.push(processes.len());
        processes.push(start_reference(exe, size, "reference server").await?);
        served_by.push((Server::Reference, Some(size)));
    }
    // Idle: right after start-up, before any paste.
    let mut memory: Vec<MemoryFigures> = processes
        .iter()
        .zip(&served_by)
        .map(|(process, &(server, size))| MemoryFigures {
            server,
            size,
            idle_kib: rss_now(process),
            seeded_kib: None,
            peak_kib: BTreeMap::new(),
            high_water_kib: None,
        })
        .collect();

    // Seed the pastes the `fetch` scenarios read: per size, the reference
    // first, then each store in order (the order the phases of odd rounds
    // run in).
    let mut served: Vec<Vec<Served>> = Vec::new();
    for (i, &size) in args.sizes.iter().enumerate() {
        let mut of_size = Vec::with_capacity(servers);
        let servers_of_size = std::iter::once((Server::Reference, reference_of_size[i]))
            .chain(store_processes.iter().map(|(server, of)| (*server, of[i])));
        for (server, index) in servers_of_size {
            of_size.push(
                Served::seeded(server, info, index, &processes, size, seed_concurrency).await?,
            );
        }
        served.push(of_size);
    }
    for (figures, process) in memory.iter_mut().zip(&processes) {
        figures.seeded_kib = rss_now(process);
    }

    let mut progress = Progress {
        total: plan.total,
        done: 0,
        started: Instant::now(),
        planned_per_phase: warmup + duration,
    };
    let mut records = Vec::new();
    for round in 1..=args.rounds {
        for (i, &size) in args.sizes.iter().enumerate() {
            let listed: Vec<Server> = served[i].iter().map(|s| s.server).collect();
            let order = phases::round_order(&listed, round);
            for scenario in ["create", "fetch"] {
                for &concurrency in &args.concurrency {
                    for target in order.iter().map(|&k| &served[i][k]) {
                        let prefix = progress.next();
                        let process = &mut processes[target.process_index];
                        process.ensure_running()?;
                        let label = info.label(target.server);
                        eprint!("{prefix} {scenario} {size} B c={concurrency} {label} ... ");
                        let workload = match scenario {
                            "create" => Workload::Create { size },
                            _ => target.fetch.clone(),
                        };
                        let phase = Phase {
                            addr: process.addr(),
                            concurrency,
                            warmup,
                            duration,
                            pid: Some(process.pid()),
                            headers: std::sync::Arc::new(Vec::new()),
                        };
                        let sampler = RssSampler::start(process.pid(), RSS_SAMPLE_EVERY);
                        let result = generator::run_phase(&phase, &workload).await;
                        let rss_peak_kib = sampler.finish().await;
                        let result = result.with_context(|| {
                            format!("{scenario} {size} B c={concurrency} on {}", process.name())
                        })?;
                        let record = Record {
                            round,
                            scenario,
                            size,
                            concurrency,
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
                            rss_peak_kib,
                        };
                        eprintln!(
                            "{:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, CPU {} µs/req, RSS {} MiB, \
                             {} errors",
                            record.requests_per_second,
                            record.p50_ms,
                            record.p99_ms,
                            record
                                .cpu_us_per_request
                                .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}")),
                            record.rss_peak_kib.map_or_else(
                                || "–".to_owned(),
                                |v| format!("{:.1}", procstat::kib_to_mib(v))
                            ),
                            record.errors
                        );
                        records.push(record);
                    }
                }
            }
        }
    }
    for (figures, process) in memory.iter_mut().zip(&processes) {
        figures.high_water_kib = read_memory(process, MemoryField::HighWaterMark);
        for &c in &args.concurrency {
            if let Some(peak) = phases::peak_rss_kib(&records, figures.server, figures.size, c) {
                figures.peak_kib.insert(c, peak);
            }
        }
    }
    footprint.memory = memory;
    // Stop the servers before writing (and before the data directory goes).
    drop(processes);

    let rows = phases::summarize(&records);
    let evaluation = plan.targets.as_ref().map(|targets| {
        let measured = Measured {
            stores: &args.stores,
            sizes: &args.sizes,
            concurrency: &args.concurrency,
            rows: &rows,
            memory: &footprint.memory,
            disk: &footprint.disk,
        };
        Evaluation::new(&args.targets.display().to_string(), targets, &measured)
    });
    let markdown = report::markdown(info, &rows, &records, &footprint, evaluation.as_ref());
    let json = report::json_report(info, &rows, &records, &footprint, evaluation.as_ref());
    let stem = args.out.join(info.started.compact());
    let md_path = stem.with_extension("md");
    let json_path = stem.with_extension("json");
    std::fs::write(&md_path, &markdown)
        .with_context(|| format!("writing {}", md_path.display()))?;
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    print!("{markdown}");
    if let Some(evaluation) = &evaluation {
        let (met, missed, unmeasured) = evaluation.counts();
        eprintln!("targets: {met} met, {missed} missed, {unmeasured} not measured");
    }
    eprintln!("wrote {} and {}", md_path.display(), json_path.display());
    for advice in configs.iter().filter_map(StoreConfig::leftovers) {
        eprintln!("note: {advice}");
    }
    drop(work_dir);
    Ok(())
}
