//! Connection-level bounds: silent and slow clients are dropped, oversized
//! heads get 431, ambiguous framing is never answered twice.

use std::time::{Duration, Instant};

use testkit::{TestApp, raw};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn short_timeouts() -> TestApp {
    TestApp::spawn_configured(&[], |s| {
        s.server.first_byte_timeout_secs = 1;
        s.server.header_read_timeout_secs = 1;
    })
    .await
}

/// Waits until the server closes `stream`, up to `limit`; returns how long it took.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            stream.read(&mut buf),
        )
        .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn silent_connections_are_closed_after_the_first_byte_deadline() {
    let app = short_timeouts().await;
    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(TcpStream::connect(app.addr).await.unwrap());
    }
    // A well-behaved client is served meanwhile.
    assert_eq!(app.get_path("/healthz").await.status(), 200);
    for stream in &mut silent {
        let took = closed_within(stream, Duration::from_secs(10)).await;
        assert!(took.is_some(), "a silent connection stayed open");
    }
}

#[tokio::test]
async fn clients_dribbling_headers_are_cut_off() {
    let app = short_timeouts().await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut closed = false;
    while started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        if stream.write_all(b"X-Slow: y\r\n").await.is_err() {
            closed = true;
            break;
        }
        let mut buf = [0u8; 512];
        if let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_millis(10), stream.read(&mut buf)).await
        {
            // 408 or a close.
            closed = n == 0 || buf.starts_with(b"HTTP/1.1 408");
            if closed {
                break;
            }
        }
    }
    assert!(closed, "the dribbling client was not cut off");
}

#[tokio::test]
async fn oversized_request_heads_get_431() {
    let app = TestApp::spawn(&[]).await;
    let big = "a".repeat(33 * 1024);
    let response = raw::send(
        app.addr,
        format!("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: {big}\r\n\r\n")
            .as_bytes(),
    )
    .await;
    assert_eq!(response.status, 431);

    let many: String = (0..70).map(|i| format!("X-H{i}: v\r\n")).collect();
    let response = raw::send(
        app.addr,
        format!("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{many}\r\n").as_bytes(),
    )
    .await;
    assert_eq!(response.status, 431);

    // Within the limits all is well.
    let some: String = (0..30).map(|i| format!("X-H{i}: v\r\n")).collect();
    let response = raw::send(
        app.addr,
        format!("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{some}\r\n").as_bytes(),
    )
    .await;
    assert_eq!(response.status, 200);
}

#[tokio::test]
async fn ambiguous_framing_gets_one_answer_at_most() {
    let app = TestApp::spawn(&[]).await;
    let cases: [&[u8]; 4] = [
        // Content-Length and chunked: chunked wins (RFC 9112) and the connection closes.
        b"POST /api/paste HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\ne\r\n{\"data\":\"abc\"}\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        // Two different lengths.
        b"POST /api/paste HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\nContent-Length: 5\r\n\r\n{\"data\":\"abc\"}",
        // An overflowing chunk size.
        b"POST /api/paste HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
        // Obsolete line folding.
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n",
    ];
    for request in cases {
        let mut stream = TcpStream::connect(app.addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut buf = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buf)).await;
        let text = String::from_utf8_lossy(&buf);
        let answers = text.matches("HTTP/1.1 ").count();
        assert!(
            answers <= 1,
            "{} answers to {:?}:\n{text}",
            answers,
            String::from_utf8_lossy(request)
        );
        if let Some(status) = text.split(' ').nth(1) {
            assert!(
                status.starts_with('2') || status.starts_with('4'),
                "status {status}"
            );
        }
    }
}

/// Clients that go away mid-request — mid-body, right after sending a
/// create, before reading an answer — in their hundreds: the server stays
/// up, and afterwards 64 concurrent creates all succeed and read back (no
/// storage worker is left wedged, no connection slot leaked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_vanish_mid_request_leave_the_server_whole() {
    let app = TestApp::spawn(&[]).await;
    let existing = app.create_ok("q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg").await;
    let id = existing["id"].as_str().unwrap().to_owned();
    let data = "A".repeat(8192);
    let body = format!(r#"{{"data":"{data}"}}"#);
    let mut tasks = Vec::new();
    for i in 0..300 {
        let (addr, body, id) = (app.addr, body.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let request = match i % 3 {
                // Announces the whole body, sends a tenth of it, leaves.
                0 => format!(
                    "POST /api/paste HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{}",
                    body.len(),
                    &body[..body.len() / 10]
                ),
                // A complete create; gone before the answer.
                1 => format!(
                    "POST /api/paste HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                ),
                // A read; gone before the answer.
                _ => format!("GET /api/paste/{id} HTTP/1.1\r\nHost: x\r\n\r\n"),
            };
            let _ = s.write_all(request.as_bytes()).await;
            // Close at once, resetting rather than finishing politely.
            let _ = s.set_zero_linger();
            drop(s);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(app.get(&id).await.status(), 200, "the server is up");
    let mut creates = Vec::new();
    for i in 0..64 {
        let client = app.client.clone();
        let url = app.url("/api/paste");
        creates.push(tokio::spawn(async move {
            let text = format!("after-the-storm-{i}");
            let response = client
                .post(url)
                .body(format!(r#"{{"data":"{text}"}}"#))
                .timeout(Duration::from_secs(30))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 201);
            let created: serde_json::Value = response.json().await.unwrap();
            (created["id"].as_str().unwrap().to_owned(), text)
        }));
    }
    for create in creates {
        let (id, text) = create.await.unwrap();
        let read = app.get(&id).await;
        assert_eq!(read.status(), 200);
        let body: serde_json::Value = read.json().await.unwrap();
        assert_eq!(body["data"], text.as_str());
    }
}
