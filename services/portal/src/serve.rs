//! How the portal serves: HTTP/1.1 with a first-byte and a header-read
//! deadline and bounded request heads (stock `axum::serve` has none of
//! these), on `service_kit::serve`'s accept loop (the connection cap; on
//! SIGTERM or Ctrl-C it stops accepting and lets in-flight requests finish
//! within a grace period).

use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use service_kit::serve::{Connection, Connections, Serve};
use tokio::net::TcpListener;
use tower::ServiceExt as _;

use crate::config::Settings;

/// Seconds a new connection may stay silent, and a client has to send a
/// request's head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head in bytes.
const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Most header fields in one request.
const MAX_HEADERS: usize = 64;
/// Connections served at once; more wait in the kernel's backlog.
const MAX_CONNECTIONS: usize = 4096;
/// How long in-flight requests get after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Binds, serves until a shutdown signal, drains.
pub fn run(settings: Settings) -> anyhow::Result<()> {
    let router = portal::standalone::router(&settings.portal).map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = TcpListener::bind(settings.addr)
            .await
            .with_context(|| format!("cannot listen on {}", settings.addr))?;
        let local = listener.local_addr()?;
        tracing::info!(
            listen = %local,
            paste_api_url = %settings.portal.paste_api_url,
            allowed_paste_apis = ?settings.portal.allowed_paste_apis,
            share_base_url = %settings.portal.share_base_url,
            "planshare portal running on http://{local}"
        );
        serve(listener, router, service_kit::shutdown_signal()).await;
        Ok(())
    })
}

/// The portal's part of the accept loop: every connection served the same
/// way, and past the limit a connection waits for a place.
#[derive(Clone)]
struct Portal {
    router: Router,
}

impl Serve for Portal {
    type Mode = ();

    fn placed(&self) {}

    async fn serve(self, connection: Connection, (): ()) {
        serve_connection(connection, self.router).await;
    }
}

async fn serve(listener: TcpListener, router: Router, shutdown: impl Future<Output = ()>) {
    let connections = Connections::new(MAX_CONNECTIONS);
    connections
        .accept_until(&listener, shutdown, &Portal { router })
        .await;
    drop(listener);
    tracing::info!("shutdown signal received: no new connections, draining");
    if connections.drain(SHUTDOWN_GRACE).await {
        tracing::info!("all connections drained");
    } else {
        tracing::warn!(
            grace_secs = SHUTDOWN_GRACE.as_secs(),
            "shutdown grace period over, closing remaining connections"
        );
    }
}

async fn serve_connection(connection: Connection, router: Router) {
    let Connection {
        stream,
        peer,
        watcher,
    } = connection;
    // hyper's header timer starts only once bytes arrive: close silent sockets here.
    let deadline = tokio::time::Instant::now() + HEADER_TIMEOUT;
    if service_kit::serve::first_byte(&stream, deadline)
        .await
        .is_none()
    {
        return;
    }
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        router.clone().oneshot(request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_header_size(MAX_HEADER_BYTES)
        .max_headers(MAX_HEADERS)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    if let Err(error) = watcher.watch(connection).await {
        tracing::debug!(%peer, %error, "connection ended with an error");
    }
}
