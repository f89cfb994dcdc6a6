//! The accept loop: HTTP/1.1 with a first-byte and a header-read deadline,
//! bounded request heads and a connection cap (stock `axum::serve` has
//! none of these); on SIGTERM or Ctrl-C it stops accepting and lets
//! in-flight requests finish within a grace period.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
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

async fn serve(listener: TcpListener, router: Router, shutdown: impl Future<Output = ()>) {
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let router = router.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            serve_connection(stream, peer, router, watcher).await;
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!("shutdown signal received: no new connections, draining");
    match tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await {
        Ok(()) => tracing::info!("all connections drained"),
        Err(_) => tracing::warn!(
            grace_secs = SHUTDOWN_GRACE.as_secs(),
            "shutdown grace period over, closing remaining connections"
        ),
    }
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    watcher: hyper_util::server::graceful::Watcher,
) {
    // hyper's header timer starts only once bytes arrive: close silent sockets here.
    let mut first = [0u8; 1];
    match tokio::time::timeout(HEADER_TIMEOUT, stream.peek(&mut first)).await {
        Ok(Ok(n)) if n > 0 => {}
        _ => return,
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
