//! `reviews`: what live reviews cost, per store (`--stores`), each on a
//! planshare server of its own started for it:
//!
//! 1. idle event streams ([`idle`]): server memory per stream and CPU per
//!    stream per minute while only keep-alives flow;
//! 2. fan-out latency ([`fanout`]): PUT's `200` → `comments` event on each
//!    of S subscribers of one review (and, with `--database-url`, across
//!    two replicas sharing Redis and a PostgreSQL catalog);
//! 3. comment PUT throughput as a ratio to paste creates ([`puts`]).
//!
//! The servers get a TOML configuration file of the run's own
//! (`PLANSHARE_CONFIG`): the connection and stream caps raised to what the
//! run opens. The process's open-file limit is raised to its hard limit
//! when the streams need more (the servers inherit it).

pub(crate) mod api;
mod fanout;
mod idle;
mod puts;
mod streams;

use crate::DEFAULT_SERVER_BIN;
use crate::run::{READY_POLL, READY_TIMEOUT, check_server_bin, planshare_command, temp_dir};
use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use loadtests::backend::{self, DEFAULT_REDIS_URL, Store, StoreConfig};
use loadtests::clock::UtcTime;
use loadtests::live::{self, FanoutFigures, IdleFigures, LiveInfo, PutFigures};
use loadtests::process::{ServerProcess, free_port};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Connections each server may serve beyond the streams of the run: the
/// setup and measured requests, with room to spare.
const CONNECTION_HEADROOM: usize = 1024;

/// Open files the runner needs beyond one per stream.
const FD_HEADROOM: u64 = 512;

/// How long a server may take to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// The measurements of a `reviews` run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Measurement {
    /// Idle event streams: memory and CPU per stream.
    Idle,
    /// Fan-out latency of a comment to its subscribers.
    Fanout,
    /// Comment PUTs against paste creates.
    Puts,
}

#[derive(Debug, Args)]
pub(crate) struct ReviewsArgs {
    /// The planshare server binary.
    #[arg(long, default_value = DEFAULT_SERVER_BIN)]
    server_bin: PathBuf,
    /// Store backends, comma-separated (fs, redis, memory); one server each,
    /// one after the other.
    #[arg(long, value_delimiter = ',', default_value = "fs,redis")]
    stores: Vec<Store>,
    /// Redis for the `redis` store (nothing is flushed; reviews expire by
    /// themselves an hour after the run).
    #[arg(
        long,
        env = "PLANSHARE_TEST_REDIS_URL",
        hide_env_values = true,
        default_value = DEFAULT_REDIS_URL
    )]
    redis_url: String,
    /// What to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "idle,fanout,puts")]
    measure: Vec<Measurement>,
    /// Idle: event streams to hold open at once on one server.
    #[arg(long, default_value_t = 10_000)]
    streams: usize,
    /// Idle: streams per review (the server's default cap is 32).
    #[arg(long, default_value_t = 32)]
    per_review: usize,
    /// Idle: seconds of the idle window (keep-alives every 15 s).
    #[arg(long, default_value_t = 30.0)]
    idle_secs: f64,
    /// Fan-out: subscriber counts, comma-separated (one review each).
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    subscribers: Vec<usize>,
    /// Fan-out: comments PUT per subscriber count.
    #[arg(long, default_value_t = 50)]
    comments: usize,
    /// Fan-out: milliseconds between the starts of two PUTs.
    #[arg(long, default_value_t = 50)]
    pace_ms: u64,
    /// Fan-out: characters of `data` per comment set.
    #[arg(long, default_value_t = 1024)]
    fanout_size: usize,
    /// Fan-out across replicas: a PostgreSQL catalog (an empty database of
    /// the run's own, e.g. `postgres://127.0.0.1:5432/planshare_fanout`,
    /// made with `createdb`) for two redis-store servers; the comments are
    /// PUT on one, the subscribers follow on the other. Needs `redis` in
    /// `--stores`.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// PUTs: characters of `data` per request (also of the paste creates).
    #[arg(long, default_value_t = 8192)]
    size: usize,
    /// PUTs: connections, each with one request in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// PUTs: reviews the comment writers belong to.
    #[arg(long, default_value_t = 64)]
    put_reviews: usize,
    /// PUTs: reviewer links per review (each a writer; at most the
    /// server's `reviews.max_links`, raised to this when above 8).
    #[arg(long, default_value_t = 4)]
    links_per_review: usize,
    /// PUTs: measured seconds per phase.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// PUTs: unrecorded warm-up seconds before each phase.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// PUTs: rounds (create and PUT interleaved); figures are medians.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Folder for `<UTC timestamp>-reviews.md` (created if missing).
    #[arg(long, default_value = "loadtests/results")]
    out: PathBuf,
}

/// The caps of a run's servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    pub(crate) max_connections: usize,
    pub(crate) max_streams: usize,
    pub(crate) streams_per_review: usize,
    pub(crate) max_links: usize,
}

impl Caps {
    /// Caps that let the run open what it opens at most at once.
    pub(crate) fn for_run(
        streams: usize,
        per_review: usize,
        subscribers: &[usize],
        links: usize,
    ) -> Self {
        let most_subscribers = subscribers.iter().copied().max().unwrap_or(0);
        let max_streams = streams.max(most_subscribers).max(1) + 64;
        Self {
            // The server takes at most three quarters of its connections
            // for streams.
            max_connections: (max_streams + CONNECTION_HEADROOM).max((max_streams * 4).div_ceil(3)),
            // The streams of one measurement may still be counted while the
            // next opens (they are closed a moment before): the 64 above.
            max_streams,
            streams_per_review: per_review.max(most_subscribers).max(32),
            max_links: links.max(8),
        }
    }

    /// The server's configuration file.
    pub(crate) fn toml(&self) -> String {
        format!(
            "# Written by planshare-loadtest reviews.\n\
             [server]\nmax_connections = {}\n\n\
             [reviews]\nmax_streams = {}\nstreams_per_review = {}\nmax_links = {}\n\
             # One client (this loadtest) opens every stream, many through one link.\n\
             streams_per_client = {}\nstreams_per_link = {}\n",
            self.max_connections,
            self.max_streams,
            self.streams_per_review,
            self.max_links,
            self.max_streams,
            self.streams_per_review
        )
    }
}

/// Raises this process's soft open-file limit to `needed` (up to the hard
/// limit) when it is lower, with `prlimit(1)` (no `libc` or `unsafe`
/// needed); the servers it starts inherit it. Returns the soft and hard
/// limits now in force (`None`: unlimited or unknown).
fn raise_fd_limit(needed: u64) -> (Option<u64>, Option<u64>) {
    let read = || {
        std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|text| open_files_limit(&text))
            .unwrap_or((None, None))
    };
    let (soft, hard) = read();
    if soft.is_some_and(|soft| soft < needed) {
        let raised = hard.map_or(needed, |hard| needed.min(hard));
        let hard_text = hard.map_or_else(|| "unlimited".to_owned(), |h| h.to_string());
        let status = std::process::Command::new("prlimit")
            .args([
                "--pid",
                &std::process::id().to_string(),
                &format!("--nofile={raised}:{hard_text}"),
            ])
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("warning: could not raise the open-file limit to {raised} with prlimit");
        }
        return read();
    }
    (soft, hard)
}

/// The soft and hard `Max open files` of a `/proc/<pid>/limits` text
/// (`None`: `unlimited`).
fn open_files_limit(limits: &str) -> Option<(Option<u64>, Option<u64>)> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut values = line["Max open files".len()..].split_whitespace();
    let mut value = || -> Option<Option<u64>> {
        match values.next()? {
            "unlimited" => Some(None),
            n => n.parse().ok().map(Some),
        }
    };
    Some((value()?, value()?))
}

/// The 1-, 5- and 15-minute load averages.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "?".to_owned())
}

fn seconds(name: &str, value: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value).with_context(|| format!("--{name} {value}: not a duration"))
}

/// Starts planshare with `store`, the run's configuration file and `extra`
/// variables, in `dir`.
async fn start(
    bin: &Path,
    dir: &Path,
    store: &StoreConfig,
    config: &Path,
    extra: &[(&str, &str)],
    name: &str,
) -> anyhow::Result<ServerProcess> {
    let port = free_port()?;
    let mut command = planshare_command(bin, port, dir, store)?;
    command.env("PLANSHARE_CONFIG", config);
    // For `/metrics` (the streams gauge) on the main listener.
    command.env("PLANSHARE_ADMIN_TOKEN", api::ADMIN_TOKEN);
    for (key, value) in extra {
        command.env(key, value);
    }
    let mut server = ServerProcess::spawn(name, command, port)?;
    server
        .wait_ready(READY_TIMEOUT, READY_POLL)
        .await
        .with_context(|| format!("{name}: {}", store.describe()))?;
    eprintln!("{name} ready on {}", server.addr());
    Ok(server)
}

/// Everything a run measured.
#[derive(Default)]
struct Measured {
    idle: Vec<IdleFigures>,
    fanout: Vec<FanoutFigures>,
    puts: Vec<PutFigures>,
}

pub(crate) async fn reviews(args: ReviewsArgs) -> anyhow::Result<()> {
    check_server_bin(&args.server_bin)?;
    backend::check_stores(&args.stores)?;
    if args.stores.contains(&Store::S3) {
        bail!("`reviews` measures fs, redis and memory; s3 is not wired up here");
    }
    if args.database_url.is_some() && !args.stores.contains(&Store::Redis) {
        bail!("--database-url (fan-out across replicas) needs redis in --stores");
    }
    let started = UtcTime::now();
    let idle_window = seconds("idle-secs", args.idle_secs)?;
    let pace = Duration::from_millis(args.pace_ms);
    let warmup = seconds("warmup", args.warmup)?;
    let duration = seconds("duration", args.duration)?;
    let measures = |m: Measurement| args.measure.contains(&m);
    let streams = if measures(Measurement::Idle) {
        args.streams
    } else {
        0
    };
    let subscribers: &[usize] = if measures(Measurement::Fanout) {
        &args.subscribers
    } else {
        &[]
    };
    let caps = Caps::for_run(streams, args.per_review, subscribers, args.links_per_review);
    let most_open = streams.max(subscribers.iter().copied().max().unwrap_or(0)) as u64;
    let (soft, hard) = raise_fd_limit(most_open + FD_HEADROOM);

    let mut info = LiveInfo {
        started: started.iso(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        cpus: std::thread::available_parallelism().map_or(1, usize::from),
        notes: Vec::new(),
    };
    let limit = |v: Option<u64>| v.map_or_else(|| "unlimited".to_owned(), |v| v.to_string());
    info.notes.push(format!(
        "server caps: `[server] max_connections = {}`, `[reviews] max_streams = {}`, \
         `streams_per_review = {}`, `max_links = {}`; open-file limit {} (hard {}) for \
         the runner and its servers",
        caps.max_connections,
        caps.max_streams,
        caps.streams_per_review,
        caps.max_links,
        limit(soft),
        limit(hard)
    ));
    if soft.is_some_and(|soft| soft < most_open + FD_HEADROOM) {
        info.notes.push(format!(
            "the open-file limit is below the {most_open} streams plus headroom: expect \
             failures to connect (raise it with `ulimit -n` or `prlimit`)"
        ));
    }
    info.notes
        .push(format!("load average at the start: {}", load_average()));
    if cfg!(debug_assertions) {
        info.notes
            .push("this runner is a debug build: use --release for meaningful figures".to_owned());
    }
    for note in &info.notes {
        eprintln!("note: {note}");
    }

    let work = temp_dir()?;
    let config_path = work.path().join("planshare.toml");
    std::fs::write(&config_path, caps.toml())
        .with_context(|| format!("writing {}", config_path.display()))?;
    // Long enough for the whole run, short enough to leave Redis soon.
    let ttl_secs = 3600;
    let mut measured = Measured::default();
    for &store in &args.stores {
        let config = match store {
            Store::Fs => StoreConfig::Fs,
            Store::Memory => StoreConfig::Memory,
            Store::Redis => StoreConfig::Redis {
                url: args.redis_url.trim().to_owned(),
                ttl_secs,
            },
            Store::S3 => unreachable!("refused above"),
        };
        // The baseline of the idle streams: as many plain keep-alive
        // connections on a fresh server of the same store.
        let mut connections_kib = None;
        if measures(Measurement::Idle) {
            let dir = work.path().join(format!("{store}-connections"));
            let name = format!("planshare-server ({store} store, connections baseline)");
            let server = start(&args.server_bin, &dir, &config, &config_path, &[], &name).await?;
            eprintln!(
                "idle: {} keep-alive connections (baseline) ...",
                args.streams
            );
            connections_kib = Some(idle::connections(&server, args.streams).await?);
            server.terminate(STOP_TIMEOUT).await?;
        }
        let dir = work.path().join(store.name());
        let name = format!("planshare-server ({store} store)");
        let mut server = start(&args.server_bin, &dir, &config, &config_path, &[], &name).await?;
        if measures(Measurement::Idle) {
            let plan = idle::IdlePlan {
                streams: args.streams,
                per_review: args.per_review,
                window: idle_window,
                version_size: args.fanout_size,
            };
            let mut figures = idle::measure(&mut server, store.name(), &plan).await?;
            figures.connections_kib = connections_kib;
            eprintln!(
                "idle {store}: {} KiB per stream, {} µs CPU per stream per minute, {} still open",
                loadtests::text::fixed(figures.kib_per_stream(), 2),
                loadtests::text::fixed(figures.cpu_us_per_stream_minute(), 1),
                figures.still_open
            );
            measured.idle.push(figures);
        }
        if measures(Measurement::Fanout) {
            for &subscribers in &args.subscribers {
                let plan = fanout::FanoutPlan {
                    subscribers,
                    comments: args.comments,
                    pace,
                    size: args.fanout_size,
                };
                server.ensure_running()?;
                let figures = fanout::measure(
                    server.addr(),
                    server.addr(),
                    store.name(),
                    "one replica",
                    &plan,
                )
                .await?;
                report_fanout(&figures);
                measured.fanout.push(figures);
            }
        }
        if measures(Measurement::Puts) {
            let plan = puts::PutPlan {
                reviews: args.put_reviews,
                links_per_review: args.links_per_review,
                concurrency: args.concurrency,
                size: args.size,
                warmup,
                duration,
                rounds: args.rounds,
            };
            measured
                .puts
                .push(puts::measure(&mut server, store.name(), &plan).await?);
        }
        server.ensure_running()?;
        server.terminate(STOP_TIMEOUT).await?;
    }

    if let Some(url) = &args.database_url
        && measures(Measurement::Fanout)
    {
        let store = StoreConfig::Redis {
            url: args.redis_url.trim().to_owned(),
            ttl_secs,
        };
        let extra = [("PLANSHARE_DATABASE_URL", url.as_str())];
        let a = start(
            &args.server_bin,
            &work.path().join("replica-a"),
            &store,
            &config_path,
            &extra,
            "replica A (redis, postgres)",
        )
        .await?;
        let b = start(
            &args.server_bin,
            &work.path().join("replica-b"),
            &store,
            &config_path,
            &extra,
            "replica B (redis, postgres)",
        )
        .await?;
        info.notes.push(format!(
            "across replicas: two redis-store servers sharing {} and the PostgreSQL catalog {}",
            backend::redacted(args.redis_url.trim()),
            backend::redacted(url)
        ));
        for &subscribers in &args.subscribers {
            let plan = fanout::FanoutPlan {
                subscribers,
                comments: args.comments,
                pace,
                size: args.fanout_size,
            };
            let figures = fanout::measure(
                a.addr(),
                b.addr(),
                "redis + postgres",
                "PUT on A, streams on B",
                &plan,
            )
            .await?;
            report_fanout(&figures);
            measured.fanout.push(figures);
        }
        a.terminate(STOP_TIMEOUT).await?;
        b.terminate(STOP_TIMEOUT).await?;
    }
    info.notes
        .push(format!("load average at the end: {}", load_average()));

    let markdown = live::markdown(&info, &measured.idle, &measured.fanout, &measured.puts);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let path = args.out.join(format!("{}-reviews.md", started.compact()));
    std::fs::write(&path, &markdown).with_context(|| format!("writing {}", path.display()))?;
    print!("{markdown}");
    eprintln!("wrote {}", path.display());
    if args.stores.contains(&Store::Redis) {
        let redis = StoreConfig::Redis {
            url: args.redis_url.trim().to_owned(),
            ttl_secs,
        };
        if let Some(advice) = redis.leftovers() {
            eprintln!("note: {advice} (the paste creates of `puts` are most of it)");
        }
    }
    drop(work);
    Ok(())
}

fn report_fanout(figures: &FanoutFigures) {
    let text = loadtests::text::fixed;
    eprintln!(
        "fan-out {} ({}) {} subscribers × {} comments: p50 {} ms, p99 {} ms, max {} ms, {} missing",
        figures.store,
        figures.topology,
        figures.subscribers,
        figures.comments,
        text(figures.latency.map(|l| l.p50_ms), 2),
        text(figures.latency.map(|l| l.p99_ms), 2),
        text(figures.latency.map(|l| l.max_ms), 2),
        figures.missing
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_open_files_limit() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1024                 524288               files     \n\
                      Max locked memory         8388608              8388608              bytes     \n";
        assert_eq!(open_files_limit(limits), Some((Some(1024), Some(524_288))));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(open_files_limit(unlimited), Some((None, None)));
        assert_eq!(open_files_limit("Max processes 10 10 processes\n"), None);
    }

    #[test]
    fn caps_cover_the_run() {
        let caps = Caps::for_run(10_000, 32, &[1, 100, 1000], 4);
        assert_eq!(
            caps,
            Caps {
                // Three quarters of the connections at most are streams.
                max_connections: 13_419,
                max_streams: 10_064,
                streams_per_review: 1000,
                max_links: 8,
            }
        );
        let small = Caps::for_run(0, 32, &[], 12);
        assert_eq!(small.max_streams, 65);
        assert_eq!(small.streams_per_review, 32);
        assert_eq!(small.max_links, 12);
    }

    #[test]
    fn the_config_file_is_toml_with_the_caps() -> anyhow::Result<()> {
        let caps = Caps::for_run(500, 32, &[100], 4);
        let parsed: toml::Value = toml::from_str(&caps.toml())?;
        assert_eq!(parsed["server"]["max_connections"].as_integer(), Some(1588));
        assert_eq!(parsed["reviews"]["max_streams"].as_integer(), Some(564));
        assert_eq!(
            parsed["reviews"]["streams_per_review"].as_integer(),
            Some(100)
        );
        assert_eq!(parsed["reviews"]["max_links"].as_integer(), Some(8));
        assert_eq!(
            parsed["reviews"]["streams_per_client"].as_integer(),
            Some(564)
        );
        assert_eq!(
            parsed["reviews"]["streams_per_link"].as_integer(),
            Some(100)
        );
        Ok(())
    }
}
