//! `planshare-portal`: the share portal on its own origin, without the
//! paste API — static hosting in the style of share.plannotator.ai (the
//! app at `/`, `/p/<id>` and any other page path; content-hashed assets;
//! `/config.json`; the raw-HTML frame document), configured by flags or
//! the same `PLANSHARE_*` variables `planshare-server` reads.
//!
//! `planshare-portal sizes` prints what the app weighs: every embedded
//! file raw, gzip and brotli, and the JS + CSS a browser downloads.

mod config;
mod serve;
mod sizes;

use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::EnvFilter;

/// planshare share portal: opens Plannotator share links in the browser
/// (the paste API runs elsewhere).
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Address to listen on.
    #[arg(
        long,
        global = true,
        env = "PLANSHARE_PORTAL_ADDR",
        default_value = config::DEFAULT_ADDR
    )]
    addr: String,
    /// The paste API short links are created with and read from when a
    /// link names none (`&paste=`). Default: upstream's hosted service, as
    /// on share.plannotator.ai.
    #[arg(
        long,
        global = true,
        env = "PLANSHARE_PORTAL_PASTE_API_URL",
        default_value = config::UPSTREAM_PASTE_API
    )]
    paste_api_url: String,
    /// Other paste APIs a link may name with `&paste=` (comma-separated
    /// http(s) origins).
    #[arg(
        long,
        global = true,
        env = "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
        default_value = ""
    )]
    allowed_paste_apis: String,
    /// Origins bot callback links (`cb=`) may POST to (comma-separated
    /// http(s) origins); a link naming another is told so.
    #[arg(
        long,
        global = true,
        env = "PLANSHARE_PORTAL_CALLBACK_ORIGINS",
        default_value = ""
    )]
    callback_origins: String,
    /// Base of the share links the portal makes. Default: its own origin.
    #[arg(
        long,
        global = true,
        env = "PLANSHARE_SHARE_BASE_URL",
        default_value = ""
    )]
    share_base_url: String,
    /// Log format (the filter is `RUST_LOG`, default `info`).
    #[arg(
        long,
        global = true,
        env = "PLANSHARE_LOG_FORMAT",
        value_enum,
        default_value = "pretty"
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the portal (the default).
    Serve,
    /// Print the embedded assets' sizes (raw, gzip, brotli) and the total
    /// JS + CSS a browser downloads.
    Sizes,
    /// Health check for container runtimes: GET a path of the portal on
    /// `--addr` (on loopback when it listens on every address); exit 0 on
    /// a 2xx answer, 1 otherwise.
    Probe {
        /// The path to ask.
        #[arg(long, default_value = "/config.json")]
        path: String,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 2)]
        timeout_secs: u64,
    },
}

/// Log output format.
#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line.
    Json,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Sizes) => write_stdout(&sizes::table(&portal::standalone::asset_sizes())),
        Some(Command::Probe { path, timeout_secs }) => {
            return match cli.addr.trim().parse::<std::net::SocketAddr>() {
                Ok(addr) => service_kit::probe_command(
                    "planshare-portal",
                    service_kit::local_target(addr),
                    &path,
                    std::time::Duration::from_secs(timeout_secs),
                ),
                Err(_) => fail(&anyhow::anyhow!(
                    "invalid --addr / PLANSHARE_PORTAL_ADDR {:?}: expected ip:port",
                    cli.addr
                )),
            };
        }
        Some(Command::Serve) | None => config::Options {
            addr: cli.addr,
            paste_api_url: cli.paste_api_url,
            allowed_paste_apis: cli.allowed_paste_apis,
            callback_origins: cli.callback_origins,
            share_base_url: cli.share_base_url,
        }
        .validate()
        .and_then(|settings| {
            init_logging(cli.log_format);
            serve::run(settings)
        }),
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
        eprintln!("planshare-portal: {error:#}");
    }
    std::process::ExitCode::FAILURE
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Pretty => builder.init(),
    }
}
