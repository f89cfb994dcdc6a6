//! How the server serves, on `service_kit::serve`'s accept loop (the
//! connection cap, a task per connection, the drain of in-flight requests
//! at shutdown): every connection gets a first-byte deadline, a
//! header-read deadline, a write deadline and header size limits (stock
//! `axum::serve` has none of these), and past the cap a few connections
//! are served for the probes only. With `server.tls_cert` / `tls_key` set the main
//! listener speaks HTTPS (`tls.rs`): the handshake counts against the
//! first-byte deadline, and everything else holds as for plain HTTP.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use paste_api::AppState;
use service_kit::serve::{Connection, Connections, Serve, WhenFull};
use tenancy::{CatalogError, LazyCatalog, TenantUpdate};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;

use crate::settings::{ServerConfig, Settings};
use crate::shared_socket::SharedSocket;
use crate::tls::{HANDSHAKE_FAILURES, Tls, TlsFiles, TlsSocket};
use crate::write_timeout::WriteTimeout;

/// A server ready to run: store opened, router built.
pub struct Server {
    router: Router,
    state: AppState,
    config: ServerConfig,
    /// The separate admin listener (`admin.addr`) and its router.
    admin: Option<(TcpListener, Router)>,
    /// HTTPS on the main listener, when configured.
    tls: Option<Tls>,
}

impl Server {
    /// Opens the store and builds the router.
    pub async fn build(settings: &Settings) -> anyhow::Result<Server> {
        // First: a certificate that does not load stops start-up before
        // anything is opened.
        let tls = TlsFiles::from_config(&settings.server)
            .map(Tls::new)
            .transpose()
            .context("cannot serve HTTPS")?;
        let store = paste_store::open(&settings.store)
            .await
            .context("cannot open the paste store")?;
        let catalog = Arc::new(LazyCatalog::new(
            settings.catalog.clone(),
            default_tenant(settings),
        ));
        // A bad setting (e.g. a CORS origin the catalog refuses) stops start-up;
        // a database that is down does not: readiness reports it until it opens.
        match tokio::time::timeout(Duration::from_secs(5), catalog.get()).await {
            Ok(Err(error @ (CatalogError::Invalid(_) | CatalogError::Conflict(_)))) => {
                return Err(error).context("cannot open the tenant catalog");
            }
            Ok(Ok(_)) => {}
            Ok(Err(_)) | Err(_) => open_in_background(catalog.clone()),
        }
        let metrics = if settings.telemetry.metrics {
            crate::telemetry::metrics_handle().map(|handle| -> paste_api::RenderMetrics {
                Arc::new(move || {
                    crate::telemetry::count_dropped_log_lines();
                    handle.render()
                })
            })
        } else {
            None
        };
        let state = AppState::new(
            store,
            catalog.clone(),
            settings.paste.clone(),
            paste_api::HttpConfig {
                // Traces need a span per request; the log alone does not.
                request_spans: !settings.telemetry.otlp_endpoint.trim().is_empty(),
                ..settings.http.clone()
            },
            paste_api::HeadLimits {
                max_bytes: settings.server.max_header_bytes.max(1024),
                max_headers: settings.server.max_headers.max(1),
            },
            settings.admin.clone(),
            settings.limits.clone(),
            settings.reviews.clone(),
            discovery_portal(&settings.portal),
            notify_config(settings),
        );
        state.spawn_maintenance();
        let admin = match settings.admin.addr.trim() {
            "" => None,
            addr => {
                let listener = TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on admin.addr {addr}"))?;
                tracing::info!(listen = %listener.local_addr()?, "admin API on its own listener");
                Some((
                    listener,
                    paste_api::admin_router(state.clone(), metrics.clone()),
                ))
            }
        };
        // `/metrics` is counted per matched route like the API; the portal is not.
        let mut router = paste_api::router(state.clone(), metrics);
        if settings.portal.enabled {
            // Same origin as the API; outside the API's limiters and layers.
            // API clients see the API exactly as before (see `portal::mount`).
            router = portal::mount(&settings.portal, router).map_err(anyhow::Error::msg)?;
        }
        Ok(Server {
            router,
            state,
            config: settings.server.clone(),
            admin,
            tls,
        })
    }

    /// Whether the main listener serves HTTPS.
    pub fn serves_https(&self) -> bool {
        self.tls.is_some()
    }

    /// The API state (readiness switch).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Where the separate admin listener listens, when there is one.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin
            .as_ref()
            .and_then(|(listener, _)| listener.local_addr().ok())
    }

    /// Serves on `listener` until `shutdown` resolves, then drains.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Server {
            router,
            state,
            config,
            admin,
            tls,
        } = self;
        // Renewed certificates are picked up without a restart.
        let reloads = tls.as_ref().map(Tls::watch_files);
        let tls = tls.as_ref().map(Tls::acceptor);
        // Turns true when the drain begins: the admin listener stops and
        // connections that have not sent a byte yet are closed.
        let (draining_tx, draining) = watch::channel(false);
        let admin_task = admin.map(|(listener, router)| {
            tokio::spawn(serve_admin(
                listener,
                router,
                config.clone(),
                draining.clone(),
            ))
        });
        let connections = Connections::new(config.max_connections);
        let main = Listener {
            router,
            config: config.clone(),
            draining: draining.clone(),
            tls,
            past_limit: PastLimit::ProbesOnly(Arc::new(Semaphore::new(OVERFLOW_PLACES))),
        };
        connections.accept_until(&listener, shutdown, &main).await;

        tracing::info!("shutdown signal received: readiness now 503");
        state.readiness().begin_shutdown();
        if config.shutdown_delay_secs > 0 {
            // Still accepting (the load balancer has not yet seen the 503),
            // but no longer past the limit.
            let delay = tokio::time::sleep(Duration::from_secs(config.shutdown_delay_secs));
            let during = Listener {
                past_limit: PastLimit::Refuse,
                ..main.clone()
            };
            connections.accept_until(&listener, delay, &during).await;
        }
        drop(listener);
        let _ = draining_tx.send(true);
        // Event streams would hold the drain up to the grace period.
        state.end_streams();
        let grace = Duration::from_secs(config.shutdown_grace_secs);
        if connections.drain(grace).await {
            tracing::info!("all connections drained");
        } else {
            tracing::warn!(
                grace_secs = grace.as_secs(),
                "shutdown grace period over, closing remaining connections"
            );
        }
        if let Some(task) = admin_task {
            let _ = tokio::time::timeout(grace, task).await;
        }
        if let Some(reloads) = reloads {
            reloads.abort();
        }
        Ok(())
    }
}

/// The separate admin listener: accepts until `stop` turns true, then lets
/// its connections finish within the grace period. Plain HTTP always: it
/// belongs on an internal address.
async fn serve_admin(
    listener: TcpListener,
    router: Router,
    config: ServerConfig,
    draining: watch::Receiver<bool>,
) {
    let connections = Connections::new(config.max_connections);
    let mut stop = draining.clone();
    let stopped = async move {
        let _ = stop.wait_for(|stop| *stop).await;
    };
    let admin = Listener {
        router,
        config: config.clone(),
        draining,
        tls: None,
        past_limit: PastLimit::Refuse,
    };
    connections.accept_until(&listener, stopped, &admin).await;
    drop(listener);
    let grace = Duration::from_secs(config.shutdown_grace_secs);
    let _ = connections.drain(grace).await;
}

/// A listener's part of the accept loop (`service_kit::serve`): how its
/// connections are served, and what happens to one past the limit.
#[derive(Clone)]
struct Listener {
    router: Router,
    config: ServerConfig,
    /// Turns true when the drain begins.
    draining: watch::Receiver<bool>,
    /// HTTPS: the handshake comes first.
    tls: Option<TlsAcceptor>,
    past_limit: PastLimit,
}

/// What a listener does with a connection while every place is taken.
#[derive(Clone)]
enum PastLimit {
    /// Serve it for the probes only, in one of these few places; past
    /// those, wait for a place.
    ProbesOnly(Arc<Semaphore>),
    /// Close it (the admin listener, and the main one during the shutdown
    /// delay).
    Refuse,
}

impl Serve for Listener {
    type Mode = Mode;

    fn placed(&self) -> Mode {
        Mode::Full
    }

    fn when_full(&self) -> WhenFull<Mode> {
        match &self.past_limit {
            PastLimit::ProbesOnly(overflow) => match overflow.clone().try_acquire_owned() {
                Ok(permit) => {
                    metrics::counter!(OVER_LIMIT).increment(1);
                    WhenFull::Serve(permit, Mode::ProbesOnly)
                }
                Err(_) => WhenFull::Wait,
            },
            PastLimit::Refuse => WhenFull::Refuse,
        }
    }

    async fn serve(self, connection: Connection, mode: Mode) {
        let conn = Conn {
            peer: connection.peer,
            watcher: connection.watcher,
            draining: self.draining,
            mode,
            tls: self.tls,
        };
        serve_connection(connection.stream, conn, self.router, &self.config).await;
    }
}

/// Connections served beyond `server.max_connections`, for the probes
/// only: an orchestrator asking whether the process lives must get an
/// answer even when clients hold every place (an instance restarted for
/// being busy drops every stream it holds).
const OVERFLOW_PLACES: usize = 32;

/// Connections accepted while every place was taken (served for the
/// probes only).
const OVER_LIMIT: &str = "planshare_connections_over_limit_total";

/// How a connection is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Every route, with keep-alive.
    Full,
    /// Beyond the connection limit: `/healthz` and `/readyz` are answered,
    /// anything else gets 503 + `Retry-After`; one request, then the
    /// connection is closed.
    ProbesOnly,
}

/// Whether `path` is one of the probes.
fn is_probe(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz")
}

/// What a request on a probes-only connection gets when it is not a probe.
fn at_connection_limit() -> axum::response::Response {
    let body = serde_json::json!({
        "error": "the server is serving as many connections as it may: retry later",
        "code": api_types::ErrorCode::Overloaded.as_str(),
    });
    let mut response = axum::response::Response::new(axum::body::Body::from(body.to_string()));
    *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    response
}

/// What a connection is served with, besides its socket, router and settings.
struct Conn {
    peer: SocketAddr,
    watcher: hyper_util::server::graceful::Watcher,
    /// Turns true when the drain begins.
    draining: watch::Receiver<bool>,
    mode: Mode,
    /// HTTPS: the handshake comes first.
    tls: Option<TlsAcceptor>,
}

/// The first byte of every TLS connection: a handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

async fn serve_connection(stream: TcpStream, conn: Conn, router: Router, config: &ServerConfig) {
    let Conn {
        peer,
        watcher,
        mut draining,
        mode,
        tls,
    } = conn;
    // hyper's header timer starts only once bytes arrive; close silent sockets
    // here, and at once when the drain begins (nothing of theirs is in flight).
    // Under TLS the deadline also covers the handshake and the first byte of
    // the request after it: a client that connects and never completes a
    // handshake is dropped like a silent one.
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs(config.first_byte_timeout_secs.max(1));
    let first = tokio::select! {
        first = service_kit::serve::first_byte(&stream, deadline) => match first {
            Some(first) => first,
            None => return,
        },
        _ = draining.wait_for(|draining| *draining) => return,
    };
    let _ = stream.set_nodelay(true);
    let Some(acceptor) = tls else {
        let socket = SharedSocket::new(stream);
        let gone = socket.client_gone();
        serve_http(socket, gone, peer, router, config, watcher, mode).await;
        return;
    };
    if first != TLS_HANDSHAKE_RECORD {
        refuse_plain_http(stream).await;
        return;
    }
    let handshake = tokio::select! {
        done = tokio::time::timeout_at(deadline, acceptor.accept(stream)) => done,
        _ = draining.wait_for(|draining| *draining) => return,
    };
    let stream = match handshake {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            // A client that does not trust the certificate, a scanner, an
            // old protocol: the client's business, not an error of ours.
            tracing::debug!(%error, %peer, "TLS handshake failed");
            metrics::counter!(HANDSHAKE_FAILURES, "reason" => "failed").increment(1);
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake not complete within the first-byte timeout");
            metrics::counter!(HANDSHAKE_FAILURES, "reason" => "timeout").increment(1);
            return;
        }
    };
    let mut socket = TlsSocket::new(stream);
    // A browser's preconnect may hold a finished handshake unused: closed
    // at the same deadline, like a silent plain connection.
    tokio::select! {
        first = tokio::time::timeout_at(deadline, socket.first_bytes()) => {
            if !matches!(first, Ok(true)) {
                return;
            }
        }
        _ = draining.wait_for(|draining| *draining) => return,
    }
    let gone = socket.client_gone();
    serve_http(socket, gone, peer, router, config, watcher, mode).await;
}

/// A plain HTTP request on the HTTPS port: a short `400` saying to use
/// `https://`, then the connection is closed. What the client sent is read
/// (a little, briefly) after the answer, so that closing with it unread
/// does not reset the connection before the client has read the answer.
async fn refuse_plain_http(mut stream: TcpStream) {
    tracing::debug!("plain HTTP on the HTTPS port: answered 400");
    metrics::counter!(HANDSHAKE_FAILURES, "reason" => "plain_http").increment(1);
    let answer = async {
        stream.write_all(crate::tls::PLAIN_HTTP_ON_HTTPS).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut read = 0;
        while read < 64 * 1024 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => read += n,
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), answer).await;
}

/// Serves HTTP/1.1 on `io`, a plain or a TLS connection.
async fn serve_http<I>(
    io: I,
    gone: paste_api::ClientGone,
    peer: SocketAddr,
    router: Router,
    config: &ServerConfig,
    watcher: hyper_util::server::graceful::Watcher,
    mode: Mode,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        let router = router.clone();
        let probes_only = mode == Mode::ProbesOnly && !is_probe(request.uri().path());
        request.extensions_mut().insert(ConnectInfo(peer));
        request.extensions_mut().insert(gone.clone());
        async move {
            if probes_only {
                return Ok(at_connection_limit());
            }
            router.oneshot(request).await
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(config.header_read_timeout_secs.max(1)))
        // The API answers heads over the configured limits itself (a JSON
        // 431 with CORS headers, `paste_api::HeadLimits`); the parser's own
        // limits, twice those, only stop what no browser sends.
        .max_header_size(parser_head_cap(config.max_header_bytes))
        .max_headers(config.max_headers.max(1).saturating_mul(2))
        .max_buf_size(read_buffer_cap(config.max_header_bytes))
        // A client that shuts down its sending side once its request is
        // out (`nc -N`, a test's dropped write half) is still answered:
        // without this hyper drops the request at that end of input.
        .half_close(true)
        .keep_alive(mode == Mode::Full);
    let write_timeout = Duration::from_secs(config.write_timeout_secs.max(1));
    let io = TokioIo::new(WriteTimeout::new(io, write_timeout));
    let connection = builder.serve_connection(io, service);
    if let Err(error) = watcher.watch(connection).await {
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// The addresses a person can open for a server listening on `listen`:
/// for every address (`0.0.0.0`, `::`) this machine as `localhost` and, when
/// known, by `host_name`; else the address itself.
pub fn open_urls(listen: SocketAddr, https: bool, host_name: Option<&str>) -> Vec<String> {
    let scheme = if https { "https" } else { "http" };
    let port = listen.port();
    if listen.ip().is_unspecified() {
        let mut urls = vec![format!("{scheme}://localhost:{port}")];
        if let Some(name) = host_name {
            urls.push(format!("{scheme}://{name}:{port}"));
        }
        urls
    } else {
        // `SocketAddr`'s display brackets an IPv6 address, as a URL wants.
        vec![format!("{scheme}://{listen}")]
    }
}

/// The largest request head the HTTP parser takes: twice the configured
/// limit, which the API itself answers with a JSON 431.
fn parser_head_cap(max_header_bytes: usize) -> usize {
    max_header_bytes.max(1024).saturating_mul(2)
}

/// The most a connection's read buffer may grow to: the parser's head cap
/// (twice the configured head limit), at least 64 KiB. hyper's default (~400 KB) let each
/// keep-alive connection that once carried a 100 KB upload hold a 256 KB
/// buffer: with 128 such connections that was 33 MB, over half of the
/// server's heap at its peak (massif). Bodies are read in pieces of this size.
fn read_buffer_cap(max_header_bytes: usize) -> usize {
    parser_head_cap(max_header_bytes).max(64 * 1024)
}

/// The default tenant (which anonymous, upstream clients use) follows the
/// `[paste]` settings, and `[reviews]` for its review limits.
/// Where discovery says the portal is: `portal.share_base_url` when set
/// (links open there), else this origin when the portal is served here,
/// else nowhere.
fn discovery_portal(portal: &portal::PortalConfig) -> paste_api::PortalBase {
    let base = portal.share_base_url.trim();
    if !base.is_empty() {
        paste_api::PortalBase::At(base.to_owned())
    } else if portal.enabled {
        paste_api::PortalBase::SameOrigin
    } else {
        paste_api::PortalBase::Off
    }
}

/// How this process sends notifications: its replica name (the setting, or
/// the host name), and where their links point.
fn notify_config(settings: &Settings) -> paste_api::NotifyConfig {
    let n = &settings.notify;
    let replica = if n.replica.trim().is_empty() {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "planshare".to_owned())
    } else {
        n.replica.trim().to_owned()
    };
    let link_base = match (n.link_base.trim(), settings.portal.share_base_url.trim()) {
        ("", base) => base.trim_end_matches('/').to_owned(),
        (base, _) => base.trim_end_matches('/').to_owned(),
    };
    paste_api::NotifyConfig { replica, link_base }
}

fn default_tenant(settings: &Settings) -> TenantUpdate {
    let paste = &settings.paste;
    let ttl = i64::try_from(paste.ttl_secs).unwrap_or(i64::MAX);
    TenantUpdate {
        cors_origins: Some(paste.allowed_origins.clone()),
        max_paste_size: Some(i64::try_from(paste.max_size).unwrap_or(i64::MAX)),
        default_ttl_secs: Some(ttl),
        max_ttl_secs: Some(ttl),
        id_length: i64::try_from(paste.id_length).ok(),
        allow_anonymous: Some(true),
        review_max_links: Some(i64::from(settings.reviews.max_links)),
        review_max_versions: Some(i64::from(settings.reviews.max_versions)),
        notify_private_targets: Some(settings.notify.private_targets),
        ..TenantUpdate::default()
    }
}

/// Opens the catalog right away when it can, and keeps trying every two
/// seconds when it cannot (readiness reports it meanwhile).
fn open_in_background(catalog: Arc<LazyCatalog>) {
    tokio::spawn(async move {
        loop {
            match catalog.get().await {
                Ok(_) => return,
                Err(error) => {
                    // With its cause: "catalog unavailable" alone says nothing.
                    let cause = std::error::Error::source(&error)
                        .map_or_else(String::new, |source| source.to_string());
                    tracing::warn!(%error, cause, "tenant catalog not available yet; retrying");
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
    });
}

/// Builds and runs a server on `listener` until `shutdown` resolves.
pub async fn serve(
    settings: &Settings,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    Server::build(settings).await?.run(listener, shutdown).await
}

#[cfg(test)]
mod tests {
    use super::{open_urls, read_buffer_cap};

    #[test]
    fn start_up_names_addresses_a_person_can_open() {
        let at = |addr: &str| addr.parse().unwrap_or_else(|e| panic!("{addr}: {e}"));
        assert_eq!(
            open_urls(at("0.0.0.0:19433"), true, Some("team-host")),
            ["https://localhost:19433", "https://team-host:19433"]
        );
        assert_eq!(
            open_urls(at("[::]:19433"), false, None),
            ["http://localhost:19433"]
        );
        assert_eq!(
            open_urls(at("10.1.2.3:8443"), true, Some("team-host")),
            ["https://10.1.2.3:8443"]
        );
        assert_eq!(
            open_urls(at("[::1]:19433"), false, None),
            ["http://[::1]:19433"]
        );
    }

    #[test]
    fn read_buffers_hold_two_request_heads_and_at_least_64_kib() {
        assert_eq!(read_buffer_cap(32 * 1024), 64 * 1024);
        assert_eq!(read_buffer_cap(1024), 64 * 1024);
        assert_eq!(read_buffer_cap(100_000), 200_000);
        assert_eq!(read_buffer_cap(usize::MAX), usize::MAX);
    }
}
