//! Logs, traces and metrics.
//!
//! - Logs: `tracing` with `log.format` (pretty or JSON) on stderr, filtered by
//!   `log.filter` (`RUST_LOG` takes its place when set). `paste-api` logs
//!   one line per request (route template, method, tenant id, status,
//!   duration; a span around the request too when traces are exported) and
//!   logs failures once. Lines are formatted where they are
//!   logged and written by a thread of their own ([`LOG_WRITER_THREAD`],
//!   `log_writer.rs`), in batches every few milliseconds: a request never
//!   waits on stderr, and a log reader that stops reading costs log lines
//!   (counted in `planshare_log_lines_dropped_total`), not the service.
//! - Traces: when `telemetry.otlp_endpoint` is set, the same spans are
//!   exported over OTLP/HTTP (JSON) to `<endpoint>/v1/traces` by a batch
//!   processor; without it no exporter and no thread exists. Credentials in
//!   the endpoint (`http://user:password@host`) are sent as an
//!   `Authorization: Basic` header, never as part of the URL (which the HTTP
//!   client logs), and the endpoint is printed with its password redacted.
//! - Metrics: one process-wide Prometheus recorder ([`metrics_handle`]),
//!   rendered by the `/metrics` route (`serve.rs`).

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context as _;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

use crate::log_writer::{DroppedLines, LogWriter};
use crate::settings::{LogFormat, Settings};

/// Histogram buckets (seconds) for request and store latencies.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The process-wide Prometheus recorder, installed on first use. `None` when
/// another `metrics` recorder was installed first (then nothing is rendered).
pub fn metrics_handle() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let installed = PrometheusBuilder::new()
                .set_buckets(LATENCY_BUCKETS)
                .and_then(|builder| builder.install_recorder());
            match installed {
                Ok(handle) => {
                    spawn_upkeep(handle.clone());
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics recorder not installed; /metrics stays empty");
                    None
                }
            }
        })
        .clone()
}

/// How often histogram samples are folded into their buckets.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

pub use crate::log_writer::LOG_WRITER_THREAD;

/// Lines dropped because [`LOG_WRITER_THREAD`] fell behind, once logging is
/// set up.
static DROPPED_LOG_LINES: OnceLock<DroppedLines> = OnceLock::new();

/// `planshare_log_lines_dropped_total`, brought up to date (by the upkeep
/// thread, and before each `/metrics` answer).
pub(crate) fn count_dropped_log_lines() {
    if let Some(dropped) = DROPPED_LOG_LINES.get() {
        metrics::counter!("planshare_log_lines_dropped_total").absolute(dropped.get());
    }
}

/// The recorder keeps every histogram sample until they are folded into the
/// buckets — on a scrape, or by this upkeep. Without it an unscraped server
/// grew by ~40 bytes per request, without bound (about 1 MB per second under
/// load). A thread of its own rather than a task, so that it does not depend
/// on the runtime that happened to install the recorder.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name(UPKEEP_THREAD.to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_INTERVAL);
                count_dropped_log_lines();
                handle.run_upkeep();
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the metrics upkeep; /metrics scrapes still fold histograms");
    }
}

/// The name of the upkeep thread (as `/proc/<pid>/task/*/comm` shows it).
pub const UPKEEP_THREAD: &str = "metrics-upkeep";

/// What must outlive serving: the trace exporter and the log writer, both
/// flushed by [`Telemetry::shutdown`].
#[must_use = "call shutdown() before exiting, or buffered spans and log lines are lost"]
pub struct Telemetry {
    tracer_provider: Option<SdkTracerProvider>,
    /// Finished last: writes out the log lines still buffered.
    log_writer: LogWriter,
}

impl Telemetry {
    /// Installs the global `tracing` subscriber (log output, and the OTLP
    /// exporter when `telemetry.otlp_endpoint` is set). Call once, before
    /// the async runtime starts (the exporter's blocking HTTP client must
    /// not be built inside it).
    pub fn init(settings: &Settings) -> anyhow::Result<Telemetry> {
        let filter = EnvFilter::try_from_default_env()
            .or_else(|_| EnvFilter::try_new(&settings.log.filter))
            .unwrap_or_else(|_| EnvFilter::new("info"));
        // Formatting stays on the thread that logs; the write moves to the
        // writer thread, which writes what has gathered every few
        // milliseconds (`log_writer.rs`).
        let log_writer =
            LogWriter::start(std::io::stderr()).context("cannot start the log writer thread")?;
        let dropped = log_writer.dropped_lines();
        let fmt = tracing_subscriber::fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(log_writer.sinks());
        let fmt: Box<dyn Layer<_> + Send + Sync> = match settings.log.format {
            LogFormat::Json => fmt.json().flatten_event(true).boxed(),
            LogFormat::Pretty => fmt.boxed(),
        };
        let tracer_provider = match settings.telemetry.otlp_endpoint.trim() {
            "" => None,
            endpoint => Some(tracer_provider(endpoint)?),
        };
        let otel = tracer_provider.as_ref().map(|provider| {
            tracing_opentelemetry::layer().with_tracer(provider.tracer("planshare-server"))
        });
        tracing_subscriber::registry()
            .with(fmt)
            .with(otel)
            .with(filter)
            .try_init()
            .context("cannot install the tracing subscriber")?;
        // Only the first installed subscriber (the one that logs) counts.
        let _ = DROPPED_LOG_LINES.set(dropped);
        if let Some(endpoint) = tracer_provider
            .as_ref()
            .map(|_| paste_store::redacted(&traces_url(&settings.telemetry.otlp_endpoint)))
        {
            tracing::info!(%endpoint, "exporting traces over OTLP/HTTP");
        }
        Ok(Telemetry {
            tracer_provider,
            log_writer,
        })
    }

    /// Flushes and stops the trace exporter, then writes out the queued log
    /// lines (blocking; call outside the async runtime).
    pub fn shutdown(self) {
        if let Some(provider) = self.tracer_provider
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(%error, "trace exporter did not shut down cleanly");
        }
        // Waits for the writer thread to write every line buffered before
        // this point.
        self.log_writer.finish();
    }
}

/// `<base>/v1/traces`, as `OTEL_EXPORTER_OTLP_ENDPOINT` is meant.
fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim().trim_end_matches('/'))
}

/// The endpoint without its userinfo, and the `Authorization: Basic` value
/// the userinfo makes (percent-decoded, as URL userinfo is written).
fn split_credentials(endpoint: &str) -> (String, Option<String>) {
    use base64::Engine as _;

    let endpoint = endpoint.trim();
    let Some(scheme_end) = endpoint.find("://").map(|i| i + 3) else {
        return (endpoint.to_owned(), None);
    };
    let rest = &endpoint[scheme_end..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let Some(at) = authority.rfind('@') else {
        return (endpoint.to_owned(), None);
    };
    let (user, password) = authority[..at]
        .split_once(':')
        .unwrap_or((&authority[..at], ""));
    let mut credentials = percent_decode(user);
    credentials.push(b':');
    credentials.extend(percent_decode(password));
    let header = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    );
    (
        format!("{}{}", &endpoint[..scheme_end], &rest[at + 1..]),
        Some(header),
    )
}

/// `%XX` escapes decoded; anything else (a stray `%` too) kept as it is.
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

fn tracer_provider(endpoint: &str) -> anyhow::Result<SdkTracerProvider> {
    let (endpoint, authorization) = split_credentials(endpoint);
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpJson)
        .with_endpoint(traces_url(&endpoint));
    if let Some(authorization) = authorization {
        exporter = exporter.with_headers(
            [("authorization".to_owned(), authorization)]
                .into_iter()
                .collect(),
        );
    }
    let exporter = exporter
        .build()
        .context("cannot build the OTLP trace exporter")?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name("planshare-server")
                .build(),
        )
        .build())
}

#[cfg(test)]
mod tests {
    use super::{UPKEEP_THREAD, metrics_handle, split_credentials, traces_url};

    /// The recorder comes with its upkeep: without it, histogram samples
    /// pile up until someone scrapes `/metrics`.
    #[cfg(target_os = "linux")]
    #[test]
    fn installing_the_recorder_starts_its_upkeep() {
        assert!(metrics_handle().is_some());
        let threads = || -> Vec<String> {
            std::fs::read_dir("/proc/self/task")
                .expect("task list")
                .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
                .map(|name| name.trim().to_owned())
                .collect()
        };
        // A new thread names itself once it runs: until then it shows its
        // parent's name. Wait for it (bounded), not for any speed.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut names = threads();
        while !names.iter().any(|name| name == UPKEEP_THREAD)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
            names = threads();
        }
        assert!(
            names.iter().any(|name| name == UPKEEP_THREAD),
            "no {UPKEEP_THREAD} thread among {names:?}"
        );
    }

    #[test]
    fn traces_url_appends_the_signal_path() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://c.example/otlp/ "),
            "https://c.example/otlp/v1/traces"
        );
    }

    #[test]
    fn credentials_leave_the_url_for_a_basic_header() {
        assert_eq!(
            split_credentials("http://127.0.0.1:4318"),
            ("http://127.0.0.1:4318".to_owned(), None)
        );
        // "user:secret" and "us@r:p%3As" in base64.
        assert_eq!(
            split_credentials(" http://user:secret@127.0.0.1:4318/otlp "),
            (
                "http://127.0.0.1:4318/otlp".to_owned(),
                Some("Basic dXNlcjpzZWNyZXQ=".to_owned())
            )
        );
        assert_eq!(
            split_credentials("https://us%40r:p%3As@c.example"),
            (
                "https://c.example".to_owned(),
                Some("Basic dXNAcjpwOnM=".to_owned())
            )
        );
        // An `@` past the authority is the path's, not userinfo.
        assert_eq!(
            split_credentials("http://c.example/a@b"),
            ("http://c.example/a@b".to_owned(), None)
        );
    }
}
