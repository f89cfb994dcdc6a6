//! One keep-alive HTTP/1.1 client connection over loopback TCP, built directly
//! on `hyper::client::conn::http1` (no pool, no redirects, no retries): the load
//! generator gives each of its tasks exactly one of these.

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;

/// A response as the generator needs it: status and the whole body.
#[derive(Debug)]
pub struct Reply {
    /// The response status.
    pub status: StatusCode,
    /// The full response body (always read to the end, so the connection can
    /// be reused).
    pub body: Bytes,
}

/// A single HTTP/1.1 connection to one server.
#[derive(Debug)]
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    host: HeaderValue,
}

impl Conn {
    /// Connects to `addr` (with `TCP_NODELAY`) and performs the HTTP/1.1
    /// handshake; the connection is driven by a spawned task.
    pub async fn connect(addr: SocketAddr) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .context("HTTP/1.1 handshake")?;
        tokio::spawn(async move {
            // The error, if any, surfaces on the next `send` as well.
            let _ = connection.await;
        });
        let host = HeaderValue::from_str(&addr.to_string())?;
        Ok(Self { sender, host })
    }

    /// Connects with an upper bound on the time it may take.
    pub async fn connect_timeout(addr: SocketAddr, timeout: Duration) -> anyhow::Result<Self> {
        tokio::time::timeout(timeout, Self::connect(addr))
            .await
            .with_context(|| format!("connecting to {addr}: timed out after {timeout:?}"))?
    }

    /// `GET uri`, reading the whole response.
    pub async fn get(&mut self, uri: Uri) -> anyhow::Result<Reply> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(uri)
            .header(HOST, self.host.clone())
            .body(Full::new(Bytes::new()))?;
        self.send(request).await
    }

    /// `POST uri` with a JSON body, reading the whole response.
    pub async fn post_json(&mut self, uri: Uri, body: Bytes) -> anyhow::Result<Reply> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(HOST, self.host.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(Full::new(body))?;
        self.send(request).await
    }

    /// Any request: `method uri` with `headers` (besides `Host`) and `body`,
    /// reading the whole response.
    pub async fn request(
        &mut self,
        method: Method,
        uri: Uri,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> anyhow::Result<Reply> {
        let mut builder = Request::builder()
            .method(method)
            .uri(uri)
            .header(HOST, self.host.clone());
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        self.send(builder.body(Full::new(body))?).await
    }

    async fn send(&mut self, request: Request<Full<Bytes>>) -> anyhow::Result<Reply> {
        self.sender.ready().await.context("connection closed")?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Reply { status, body })
    }
}

/// `GET /readyz` once on a fresh connection; `Ok(true)` when it answers 200.
pub async fn probe_ready(addr: SocketAddr, timeout: Duration) -> anyhow::Result<bool> {
    let attempt = async {
        let mut conn = Conn::connect(addr).await?;
        let reply = conn.get(Uri::from_static("/readyz")).await?;
        anyhow::Ok(reply.status == StatusCode::OK)
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or_else(|_| Ok(false))
}
