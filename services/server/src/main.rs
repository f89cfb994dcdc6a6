//! `planshare-server`: parses arguments, loads settings, starts logging and
//! serves. Everything else is in the library.

/// jemalloc rather than the system allocator: about a third less CPU per
/// 8 KB read than glibc's malloc at no more memory under load, with the
/// options in `.cargo/config.toml` (measured in `loadtests/JOURNAL.md`,
/// "Allocator").
#[cfg(unix)]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use planshare_server::Settings;

/// planshare paste service: a Plannotator-compatible share backend.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// TOML configuration file (see planshare.default.toml for every setting).
    #[arg(long, global = true, env = "PLANSHARE_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API and the portal (the default).
    Serve,
    /// Print the effective configuration (defaults, file and environment
    /// merged) as TOML and exit; with `server.tls_cert` / `tls_key` set, the
    /// two files are loaded and checked too.
    CheckConfig,
    /// Print the embedded defaults, a commented reference of every setting.
    DefaultConfig,
    /// Print the OpenAPI 3.1 document of the API (the committed
    /// `openapi/openapi.json`: regenerate it with
    /// `cargo run -q -p planshare-server -- openapi > openapi/openapi.json`).
    Openapi,
    /// Apply the S3 bucket lifecycle rule that deletes expired pastes
    /// (rule `planshare-expire-pastes`, objects under `store.s3.prefix`).
    S3Lifecycle {
        /// Delete objects this many days after they were written
        /// [default: the paste TTL in whole days, plus one].
        #[arg(long)]
        days: Option<u32>,
    },
    /// Check every stored entry and the catalog against the store; with
    /// --repair, fix what is safe to fix while the server serves. Exit 0:
    /// healthy; 1: findings (after --repair: findings that remain); 2: the
    /// doctor could not run.
    Doctor {
        /// Repair what is safe to repair (see the README, "Doctor").
        #[arg(long)]
        repair: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Only this tenant (its id, e.g. tnt_default).
        #[arg(long)]
        tenant: Option<String>,
        /// Leave alone (and do not report as missing) what is younger than
        /// this many seconds: a create writes its file and its catalog row
        /// side by side.
        #[arg(long, default_value_t = 900)]
        min_age_secs: u64,
    },
    /// Copy the self-hosted default (fs store, SQLite catalog) into DIR, a
    /// new or empty directory, while the server serves: the catalog first
    /// (SQLite's online copy), then the paste files. DIR is a data
    /// directory: restore by pointing PASTE_DATA_DIR at it (see the README).
    /// Symbolic links in the paste directory are not followed: they are
    /// listed, and the exit status is 1.
    Backup {
        /// Where the copy goes.
        dir: PathBuf,
    },
    /// Health check for container runtimes: GET a path of the server this
    /// configuration describes (on loopback when it listens on every
    /// address); exit 0 on a 2xx answer, 1 otherwise.
    Probe {
        /// The path to ask (`/readyz` for readiness).
        #[arg(long, default_value = "/healthz")]
        path: String,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 2)]
        timeout_secs: u64,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let env = |name: &str| std::env::var(name).ok();
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::DefaultConfig => write_stdout(planshare_server::settings::DEFAULT_TOML),
        Command::Openapi => write_stdout(&paste_api::openapi_json()),
        Command::CheckConfig => Settings::load(cli.config.as_deref(), &env)
            .map_err(anyhow::Error::from)
            .and_then(|s| {
                check_tls_files(&s)?;
                write_stdout(&s.to_toml())
            }),
        Command::Serve => Settings::load(cli.config.as_deref(), &env)
            .map_err(anyhow::Error::from)
            .and_then(run),
        Command::S3Lifecycle { days } => Settings::load(cli.config.as_deref(), &env)
            .map_err(anyhow::Error::from)
            .and_then(|settings| s3_lifecycle(&settings, days)),
        Command::Doctor {
            repair,
            json,
            tenant,
            min_age_secs,
        } => {
            return doctor(
                cli.config.as_deref(),
                &env,
                repair,
                json,
                tenant,
                min_age_secs,
            );
        }
        Command::Backup { dir } => {
            return match Settings::load(cli.config.as_deref(), &env)
                .map_err(anyhow::Error::from)
                .and_then(|settings| backup(&settings, &dir))
            {
                Ok(code) => code,
                Err(error) => fail(&error),
            };
        }
        Command::Probe { path, timeout_secs } => {
            return match probe_target(cli.config.as_deref(), &env) {
                Ok((target, https)) => service_kit::probe_command_over(
                    "planshare-server",
                    if https {
                        service_kit::Scheme::Https
                    } else {
                        service_kit::Scheme::Http
                    },
                    target,
                    &path,
                    std::time::Duration::from_secs(timeout_secs),
                ),
                Err(error) => fail(&error),
            };
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

fn fail(error: &anyhow::Error) -> std::process::ExitCode {
    // Logging may not be set up yet; this is the one place that reports to stderr.
    #[expect(clippy::print_stderr, reason = "fatal start-up errors go to stderr")]
    {
        eprintln!("planshare-server: {error:#}");
    }
    std::process::ExitCode::FAILURE
}

/// `planshare-server backup`: exit 0 when everything was copied, 1 when
/// symbolic links were skipped (what they point to is not in the copy).
fn backup(settings: &Settings, dir: &std::path::Path) -> anyhow::Result<std::process::ExitCode> {
    let report = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(planshare_server::backup::run(settings, dir))?;
    write_stdout(&format!(
        "backed up the catalog to {} and {} paste files ({} bytes) to {} in {:.2} s{}\nrestore: stop the server, point the data directory setting it runs with (PLANSHARE_DATA_DIR, PASTE_DATA_DIR or server.data_dir) at {}, start it, then run `planshare-server doctor`\n",
        report.catalog.display(),
        report.files,
        report.bytes,
        report.pastes.display(),
        report.elapsed_secs,
        if report.vanished > 0 {
            format!("; {} were deleted or expired while it ran", report.vanished)
        } else {
            String::new()
        },
        dir.display()
    ))?;
    if report.symlinks.is_empty() {
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let mut skipped = format!(
        "skipped {} symbolic links (the store writes none; not followed, so what they point to is not in the copy — an operator must look at each):\n",
        report.symlinks.len()
    );
    for link in &report.symlinks {
        skipped.push_str(&format!(
            "  {}\n",
            link.display().to_string().escape_debug()
        ));
    }
    write_stdout(&skipped)?;
    Ok(std::process::ExitCode::FAILURE)
}

/// `planshare-server doctor`: exit 0 healthy, 1 findings remain, 2 could not run.
fn doctor(
    config: Option<&std::path::Path>,
    env: &dyn Fn(&str) -> Option<String>,
    repair: bool,
    json: bool,
    tenant: Option<String>,
    min_age_secs: u64,
) -> std::process::ExitCode {
    use planshare_server::doctor::{DoctorOptions, run};
    let outcome = (|| -> anyhow::Result<planshare_server::doctor::Report> {
        let settings = Settings::load(config, env)?;
        // Repairs are logged (to stderr, like the server's log).
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new("warn,planshare_server=info,upkeep=info")
                }),
            )
            .try_init();
        let tenant = tenant
            .map(|t| tenancy::TenantId::parse(&t))
            .transpose()
            .map_err(|e| anyhow::anyhow!("--tenant: {e}"))?;
        // A create's file and row may stand apart for up to its store
        // timeouts: repairing younger entries could undo a create in flight.
        let floor = settings.http.store_timeout_secs.saturating_mul(4);
        if repair && min_age_secs < floor {
            anyhow::bail!(
                "--min-age-secs {min_age_secs} is below {floor} (4 × http.store_timeout_secs): with --repair it could undo a create in flight"
            );
        }
        let options = DoctorOptions {
            repair,
            tenant,
            min_age: std::time::Duration::from_secs(min_age_secs),
            progress: !json,
        };
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?
            .block_on(run(&settings, &options))
    })();
    match outcome {
        Ok(report) => {
            let text = if json {
                serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
            } else {
                report.to_text()
            };
            if write_stdout(&text).is_err() {
                return std::process::ExitCode::from(2);
            }
            std::process::ExitCode::from(report.exit_code())
        }
        Err(error) => {
            let _ = fail(&error);
            std::process::ExitCode::from(2)
        }
    }
}

/// `check-config` with HTTPS configured: the certificate and key must load
/// as start-up would load them (the error names the file and the problem).
fn check_tls_files(settings: &Settings) -> anyhow::Result<()> {
    if let Some(files) = planshare_server::tls::TlsFiles::from_config(&settings.server) {
        planshare_server::tls::load(&files).context("cannot serve HTTPS")?;
    }
    Ok(())
}

/// Where `probe` connects: the main listener of the configured server, and
/// whether it speaks HTTPS.
fn probe_target(
    config: Option<&std::path::Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<(SocketAddr, bool)> {
    let settings = Settings::load(config, env)?;
    let host: std::net::IpAddr = settings.server.host.parse().with_context(|| {
        format!(
            "server.host {:?} is not an IP address",
            settings.server.host
        )
    })?;
    let target = service_kit::local_target(SocketAddr::new(host, settings.server.port));
    Ok((target, settings.server.tls_enabled()))
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

fn run(settings: Settings) -> anyhow::Result<()> {
    let telemetry = planshare_server::telemetry::Telemetry::init(&settings)?;
    let result = serve_until_signal(&settings);
    // Outside the runtime: flushing the trace exporter blocks.
    telemetry.shutdown();
    result
}

fn serve_until_signal(settings: &Settings) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let host: std::net::IpAddr = settings.server.host.parse()?;
        let addr = SocketAddr::new(host, settings.server.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let server = planshare_server::Server::build(settings).await?;
        let listen = listener.local_addr()?;
        let https = server.serves_https();
        let urls = planshare_server::serve::open_urls(listen, https, host_name().as_deref());
        let what = if settings.portal.enabled {
            "portal and API"
        } else {
            "API"
        };
        tracing::info!(
            %listen,
            https,
            store = ?settings.store.kind,
            storage = %settings.store.fs.path.display(),
            ttl_secs = settings.paste.ttl_secs,
            max_size = settings.paste.max_size,
            "planshare paste service running: {what} at {}",
            urls.join(" or ")
        );
        if !https && !listen.ip().is_loopback() {
            tracing::info!(
                "plain HTTP: browsers on other machines cannot open encrypted shares (WebCrypto needs an HTTPS or localhost page); set server.tls_cert and server.tls_key, or put an HTTPS proxy in front (README, \"Team instance over HTTPS\")"
            );
        }
        server.run(listener, service_kit::shutdown_signal()).await
    })
}

/// This machine's host name, when it is cheap to know (Linux: the kernel
/// says; elsewhere `HOSTNAME` if exported).
fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty() && name != "localhost")
}

fn s3_lifecycle(settings: &Settings, days: Option<u32>) -> anyhow::Result<()> {
    let ttl_days = settings.paste.ttl_secs.div_ceil(86_400);
    let days = match days {
        Some(days) => days,
        None => u32::try_from(ttl_days.saturating_add(1)).context("the paste TTL is too long")?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime
        .block_on(paste_store::apply_lifecycle_rule(&settings.store.s3, days))
        .context("cannot apply the lifecycle rule")?;
    write_stdout(&format!(
        "applied lifecycle rule {} on bucket {}: objects under {:?} are deleted {days} days after they were written\n",
        paste_store::LIFECYCLE_RULE_ID,
        settings.store.s3.bucket,
        settings.store.s3.prefix
    ))
}
