//! Graceful shutdown: readiness flips, in-flight requests finish, then the
//! listener closes.

use std::time::Duration;

use testkit::TestApp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn shutdown_lets_an_in_flight_upload_finish() {
    let mut app = TestApp::spawn(&[]).await;
    let addr = app.addr;
    // Start an upload, send half of the body.
    let body = format!("{{\"data\":\"{}\"}}", "a".repeat(64 * 1024));
    let (first, second) = body.as_bytes().split_at(body.len() / 2);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /api/paste HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    stream.write_all(first).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;

    let server = app.begin_shutdown().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The listener is closed to new connections...
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
    // ...while the upload in flight completes and is acknowledged.
    stream.write_all(second).await.unwrap();
    let mut response = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut response))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&response[..n]);
    assert!(text.starts_with("HTTP/1.1 201"), "{text}");
    drop(stream);
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn readiness_reports_503_during_the_shutdown_delay() {
    let mut app = TestApp::spawn_configured(&[], |s| s.server.shutdown_delay_secs = 2).await;
    assert_eq!(app.get_path("/readyz").await.status(), 200);
    let server = app.begin_shutdown().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ready = app.get_path("/readyz").await;
    assert_eq!(ready.status(), 503);
    assert!(ready.text().await.unwrap().contains("shutting-down"));
    // Still serving real requests during the delay.
    app.create_ok("late").await;
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// A connection that has not sent a byte does not hold the drain for the
/// first-byte timeout: it is closed as soon as the drain begins.
#[tokio::test]
async fn a_silent_connection_does_not_delay_shutdown() {
    let mut app = TestApp::spawn_configured(&[], |s| s.server.first_byte_timeout_secs = 30).await;
    let mut silent = TcpStream::connect(app.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let server = app.begin_shutdown().unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap_or_else(|_| panic!("the drain waited for a silent connection"))
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    // The silent socket was closed by the server.
    let mut buf = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(2), silent.read(&mut buf))
        .await
        .unwrap();
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}
