//! Process plumbing shared by the two serving binaries, `planshare-server`
//! and `planshare-portal`:
//!
//! - [`shutdown_signal`]: resolves on SIGTERM or Ctrl-C, the cue to drain;
//! - [`probe`]: the `probe` subcommand's one HTTP GET, so a container image
//!   needs no shell, curl or wget for its `HEALTHCHECK`;
//! - [`serve`]: the accept loop — accept, a place under the connection
//!   limit, a task per connection, the drain at shutdown — with each
//!   server's own part (how a connection is served, what happens past the
//!   limit) behind [`serve::Serve`].

pub mod serve;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// Resolves when the process is asked to stop: SIGTERM (orchestrators,
/// systemd, `docker stop`) or Ctrl-C. A signal that cannot be listened for
/// never resolves, so the other one still works.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

/// The address a probe inside the same host or container connects to for a
/// server listening on `listen`: loopback when it listens on every address
/// (`0.0.0.0` / `::`), else that address.
pub fn local_target(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// Why a probe failed.
#[derive(Debug, PartialEq, Eq)]
pub enum ProbeError {
    /// The server answered, with a status outside 2xx.
    Status(u16),
    /// No answer: refused, reset, timed out or not HTTP.
    Unreachable(String),
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeError::Status(status) => write!(f, "answered HTTP {status}"),
            ProbeError::Unreachable(why) => write!(f, "no answer: {why}"),
        }
    }
}

/// How a probe speaks to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTPS, for a server that terminates TLS itself. The certificate is
    /// not checked: the probe asks a listener on this machine (or in this
    /// container) by address, which the certificate (issued for a host
    /// name) does not name, and it sends nothing secret and trusts nothing
    /// but the status. Needs the `https` feature (else the probe fails
    /// with a message saying so).
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// One `GET http://<target><path>` within `timeout`, without proxies or
/// redirects: `Ok(status)` for a 2xx answer.
pub async fn probe(target: SocketAddr, path: &str, timeout: Duration) -> Result<u16, ProbeError> {
    probe_over(Scheme::Http, target, path, timeout).await
}

/// [`probe`] over `scheme`.
pub async fn probe_over(
    scheme: Scheme,
    target: SocketAddr,
    path: &str,
    timeout: Duration,
) -> Result<u16, ProbeError> {
    let builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout);
    let builder = match scheme {
        Scheme::Http => builder,
        #[cfg(feature = "https")]
        Scheme::Https => builder.tls_danger_accept_invalid_certs(true),
        #[cfg(not(feature = "https"))]
        Scheme::Https => {
            return Err(ProbeError::Unreachable(
                "this build cannot speak HTTPS (service-kit without its `https` feature)".into(),
            ));
        }
    };
    let client = builder
        .build()
        .map_err(|e| ProbeError::Unreachable(e.to_string()))?;
    let url = format!("{}://{target}{path}", scheme.as_str());
    let response = client
        .get(&url)
        .send()
        .await
        .map_err(|e| ProbeError::Unreachable(without_url(&e)))?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        Ok(status)
    } else {
        Err(ProbeError::Status(status))
    }
}

/// reqwest's message with the URL left out (the caller prints it once).
fn without_url(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    match std::error::Error::source(error) {
        Some(source) => format!("{kind} ({source})"),
        None => kind.to_owned(),
    }
}

/// Runs [`probe`] on a small runtime of its own and reports like a
/// health-check command: one line, exit status 0 (healthy) or 1.
pub fn probe_command(
    program: &str,
    target: SocketAddr,
    path: &str,
    timeout: Duration,
) -> std::process::ExitCode {
    probe_command_over(program, Scheme::Http, target, path, timeout)
}

/// [`probe_command`] over `scheme`.
pub fn probe_command_over(
    program: &str,
    scheme: Scheme,
    target: SocketAddr,
    path: &str,
    timeout: Duration,
) -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return report(program, Err(format!("cannot start a runtime: {error}"))),
    };
    let result = runtime.block_on(probe_over(scheme, target, path, timeout));
    let scheme = scheme.as_str();
    report(
        program,
        result
            .map(|status| format!("{scheme}://{target}{path}: HTTP {status}"))
            .map_err(|error| format!("{scheme}://{target}{path}: {error}")),
    )
}

#[expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a health-check command reports on its streams"
)]
fn report(program: &str, outcome: Result<String, String>) -> std::process::ExitCode {
    match outcome {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(line) => {
            eprintln!("{program} probe: {line}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_listeners_are_probed_on_loopback() {
        let t = |s: &str| local_target(s.parse().unwrap_or_else(|e| panic!("{s}: {e}")));
        assert_eq!(
            t("0.0.0.0:19433"),
            "127.0.0.1:19433".parse().unwrap_or_else(|e| panic!("{e}"))
        );
        assert_eq!(
            t("[::]:19434"),
            "[::1]:19434".parse().unwrap_or_else(|e| panic!("{e}"))
        );
        assert_eq!(
            t("10.1.2.3:80"),
            "10.1.2.3:80".parse().unwrap_or_else(|e| panic!("{e}"))
        );
    }

    #[tokio::test]
    async fn a_2xx_is_healthy_and_anything_else_is_not() {
        use axum::Router;
        use axum::http::StatusCode;
        use axum::routing::get;

        let app = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/readyz", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
            .route(
                "/moved",
                get(|| async { (StatusCode::FOUND, [("location", "/healthz")]) }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let second = Duration::from_secs(2);

        assert_eq!(probe(addr, "/healthz", second).await, Ok(200));
        assert_eq!(
            probe(addr, "/readyz", second).await,
            Err(ProbeError::Status(503))
        );
        assert_eq!(
            probe(addr, "/nope", second).await,
            Err(ProbeError::Status(404))
        );
        // Redirects are not followed: a health endpoint answers itself.
        assert_eq!(
            probe(addr, "/moved", second).await,
            Err(ProbeError::Status(302))
        );

        // Nothing listening.
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let closed_addr = closed.local_addr().unwrap_or_else(|e| panic!("{e}"));
        drop(closed);
        let refused = probe(closed_addr, "/healthz", second).await;
        assert!(
            matches!(refused, Err(ProbeError::Unreachable(_))),
            "{refused:?}"
        );

        // A peer that accepts and never answers: the timeout ends it.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let silent_addr = silent.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let hold = tokio::spawn(async move {
            let (_socket, _) = silent.accept().await.unwrap_or_else(|e| panic!("{e}"));
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        let timed_out = probe(silent_addr, "/healthz", Duration::from_millis(200)).await;
        assert!(
            matches!(&timed_out, Err(ProbeError::Unreachable(why)) if why.starts_with("timed out")),
            "{timed_out:?}"
        );
        hold.abort();
    }
}
