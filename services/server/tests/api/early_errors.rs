//! Error answers made before a handler runs, or while a body is still
//! arriving, carry the same CORS headers as a success, so a browser page
//! on an allowed origin reads them instead of reporting a CORS failure:
//! 413 (declared and streamed, the rest of the body read first), 431, 408,
//! 503 from load shedding, and the head checks' 400 and 501.

use std::time::Duration;

use serde_json::Value;
use testkit::{TestApp, raw};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ORIGIN: &str = "https://plans.example.com";

/// An app that allows [`ORIGIN`], with a 1000-unit paste limit so an
/// oversized body is cheap to send.
async fn app(adjust: impl FnOnce(&mut planshare_server::Settings)) -> TestApp {
    TestApp::spawn_configured(
        &[
            ("PASTE_ALLOWED_ORIGINS", ORIGIN),
            ("PASTE_MAX_SIZE", "1000"),
        ],
        adjust,
    )
    .await
}

/// Asserts that `headers` let a page on [`ORIGIN`] read the answer.
fn assert_cors(what: &str, status: u16, header: impl Fn(&str) -> Option<String>) {
    assert_eq!(
        header("access-control-allow-origin").as_deref(),
        Some(ORIGIN),
        "{what} ({status}) has no CORS headers"
    );
    assert!(
        header("vary").is_some_and(|v| v.contains("Origin")),
        "{what}: Vary"
    );
}

async fn check(what: &str, response: reqwest::Response, status: u16, code: Option<&str>) {
    let got = response.status().as_u16();
    let headers = response.headers().clone();
    let body: Value = response.json().await.unwrap();
    assert_eq!(got, status, "{what}: {body}");
    assert_cors(what, got, |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    assert!(body["error"].is_string(), "{what}: {body}");
    assert_eq!(body["code"].as_str(), code, "{what}: {body}");
}

fn check_raw_compat(what: &str, response: &raw::RawResponse, status: u16) {
    assert_eq!(response.status, status, "{what}: {}", response.body);
    assert_cors(what, status, |name| {
        response.header(name).map(str::to_owned)
    });
    let body: Value = serde_json::from_str(&response.body).unwrap();
    assert!(body["error"].is_string(), "{what}: {body}");
}

/// POSTs `body` to `path` in 64 KiB chunks (no length declared) while
/// reading the answer, as a browser streaming an upload does.
async fn send_chunked(addr: std::net::SocketAddr, path: &str, body: &[u8]) -> raw::RawResponse {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nOrigin: {ORIGIN}\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let body = body.to_vec();
    let sending = tokio::spawn(async move {
        writer.write_all(head.as_bytes()).await?;
        for chunk in body.chunks(64 * 1024) {
            writer
                .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await?;
            writer.write_all(chunk).await?;
            writer.write_all(b"\r\n").await?;
        }
        writer.write_all(b"0\r\n\r\n").await
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), reader.read_to_end(&mut answer)).await;
    assert!(
        matches!(read, Ok(Ok(_))),
        "the answer could not be read (cut off mid-upload?): {read:?}"
    );
    let sent = sending.await.unwrap();
    assert!(sent.is_ok(), "the upload was cut off: {sent:?}");
    raw::parse(&answer)
}

fn check_raw(what: &str, response: &raw::RawResponse, status: u16, code: &str) {
    assert_eq!(response.status, status, "{what}: {}", response.body);
    assert_cors(what, status, |name| {
        response.header(name).map(str::to_owned)
    });
    let body: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(body["code"], code, "{what}");
}

/// An oversized upload gets its 413, with CORS headers, even when it is far
/// larger than the socket buffers: the server reads the rest of the body
/// before answering, so the client is not cut off mid-upload (a browser
/// reports a cut-off upload as a network failure, never the answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_answered_413_with_cors_after_it_is_read() {
    let app = app(|_| {}).await;
    // Declared too large at once (20 MB against a 6 kB bound), and found too
    // large while streaming (a chunked body with no length).
    let big = format!("{{\"data\":\"{}\"}}", "A".repeat(20 * 1024 * 1024));
    let declared = app
        .client
        .post(app.url("/api/paste"))
        .header("origin", ORIGIN)
        .body(big.clone())
        .send()
        .await
        .expect("the 413 arrives; the upload is not cut off");
    check("declared too large", declared, 413, None).await;

    let streamed = send_chunked(app.addr, "/api/paste", big.as_bytes()).await;
    check_raw_compat("streamed too large", &streamed, 413);

    // The new route says the same with its code.
    let v1 = app
        .client
        .post(app.url("/api/v1/pastes"))
        .header("origin", ORIGIN)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .expect("the 413 arrives");
    let status = v1.status().as_u16();
    assert_eq!(status, 413);
    assert_cors("v1 too large", status, |name| {
        v1.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });

    // The connection stays usable after a drained refusal.
    check(
        "a read after",
        app.client
            .get(app.url("/api/paste/AAAAAAAAAAAAAAAA"))
            .header("origin", ORIGIN)
            .send()
            .await
            .unwrap(),
        404,
        None,
    )
    .await;
}

/// Heads over the configured limits get the API's own 431 (JSON, CORS);
/// only heads past twice the limits meet the HTTP parser's bare one.
#[tokio::test]
async fn oversized_heads_get_a_431_with_cors() {
    let app = app(|_| {}).await;
    let pad = "a".repeat(40 * 1024);
    let response = app
        .client
        .get(app.url(&format!("/api/paste/AAAAAAAAAAAAAAAA?pad={pad}")))
        .header("origin", ORIGIN)
        .send()
        .await
        .unwrap();
    check("long target", response, 431, Some("headers-too-large")).await;

    let mut request = app
        .client
        .get(app.url("/api/paste/AAAAAAAAAAAAAAAA"))
        .header("origin", ORIGIN);
    for i in 0..70 {
        request = request.header(format!("x-h{i}"), "v");
    }
    check(
        "many fields",
        request.send().await.unwrap(),
        431,
        Some("headers-too-large"),
    )
    .await;

    let huge = "a".repeat(70 * 1024);
    let response = raw::send(
        app.addr,
        format!("GET /healthz HTTP/1.1\r\nHost: x\r\nOrigin: {ORIGIN}\r\nConnection: close\r\nX-Big: {huge}\r\n\r\n")
            .as_bytes(),
    )
    .await;
    assert_eq!(response.status, 431, "past the parser's own cap");
}

/// A body that trickles is refused 408 `body-too-slow`, readable cross-origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_too_slow_is_answered_408_with_cors() {
    let app = app(|s| {
        s.http.body_rate_grace_secs = 1;
        s.http.body_min_rate_bytes = 1024;
    })
    .await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nOrigin: {ORIGIN}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(15), async {
        let mut buf = [0u8; 4096];
        loop {
            tokio::select! {
                n = stream.read(&mut buf) => match n {
                    Ok(0) | Err(_) => break,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                },
                () = tokio::time::sleep(Duration::from_millis(500)) => {
                    let _ = stream.write_all(b" ").await;
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer to a trickling body");
    let response = raw::parse(&answer);
    check_raw("trickling body", &response, 408, "body-too-slow");
}

/// Load shedding's 503 (here: the body memory budget is spent) and the
/// head checks' 400 and 501 carry CORS headers too.
#[tokio::test]
async fn shed_and_refused_heads_carry_cors() {
    let app = TestApp::spawn_configured(&[("PASTE_ALLOWED_ORIGINS", ORIGIN)], |s| {
        s.http.body_memory_mib = 1;
    })
    .await;
    let big = format!("{{\"data\":\"{}\"}}", "A".repeat(2 * 1024 * 1024));
    let shed = app
        .client
        .post(app.url("/api/paste"))
        .header("origin", ORIGIN)
        .body(big)
        .send()
        .await
        .unwrap();
    assert!(shed.headers().contains_key("retry-after"));
    check("over the body budget", shed, 503, Some("overloaded")).await;

    let two_hosts = raw::send(
        app.addr,
        format!("GET /api/paste/AAAAAAAAAAAAAAAA HTTP/1.1\r\nHost: localhost\r\nHost: other\r\nOrigin: {ORIGIN}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await;
    check_raw("two Host headers", &two_hosts, 400, "bad-request");

    let coding = raw::send(
        app.addr,
        format!("POST /api/paste HTTP/1.1\r\nHost: localhost\r\nOrigin: {ORIGIN}\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n0\r\n\r\n").as_bytes(),
    )
    .await;
    check_raw(
        "unknown transfer coding",
        &coding,
        501,
        "unsupported-transfer-coding",
    );
}
