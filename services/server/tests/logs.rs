//! How the real `planshare-server` binary writes its log: lines reach stderr
//! while it serves (not only at exit), the per-request lines can be filtered
//! out alone (`planshare::access`), a graceful stop writes out every queued
//! line, and a stderr that nobody reads costs log lines, never requests.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Client;
use testkit::ChildServer;

const ADMIN_TOKEN: &str = "logs-test-admin-token-4Hq8Zr2Lp6Wt";

/// The server as a child process (killed if the test ends early).
struct Running {
    process: ChildServer,
    base: String,
}

impl Running {
    /// Starts the binary with `filter` as its log filter and stderr going to
    /// `stderr`, and waits (20 s at most) for `/readyz`.
    async fn start(data: &Path, filter: &str, stderr: Stdio) -> Running {
        let port = testkit::free_port();
        let process = ChildServer::spawn(
            Command::new(env!("CARGO_BIN_EXE_planshare-server"))
                .env_clear()
                .env("PLANSHARE_HOST", "127.0.0.1")
                .env("PLANSHARE_PORT", port.to_string())
                .env("PLANSHARE_DATA_DIR", data)
                .env("PLANSHARE_LOG", filter)
                .env("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN)
                .env("PLANSHARE_RATE_LIMITS", "off")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr),
        );
        let running = Running {
            process,
            base: format!("http://127.0.0.1:{port}"),
        };
        assert!(
            testkit::wait_ready(&running.base, Duration::from_secs(20)).await,
            "the server did not become ready on {}",
            running.base
        );
        running
    }

    /// The Prometheus text of `/metrics`.
    async fn metrics(&self, client: &Client) -> String {
        client
            .get(format!("{}/metrics", self.base))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// SIGTERM, then waits (10 s at most) for the exit; whether it exited.
    async fn stop(&mut self) -> bool {
        self.process.terminate(Duration::from_secs(10)).await
    }

    /// Creates a small paste and reads it back; its id.
    async fn create_and_read(&self, client: &Client) -> String {
        let created = client
            .post(format!("{}/api/paste", self.base))
            .json(&serde_json::json!({ "data": "bG9ncy10ZXN0LXBheWxvYWQ" }))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
        let id = created.json::<serde_json::Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let read = client
            .get(format!("{}/api/paste/{id}", self.base))
            .send()
            .await
            .unwrap();
        assert_eq!(read.status(), 200);
        id
    }
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// The log file's text once it contains `marker`, or after 10 s whatever it
/// holds.
async fn wait_for(log: &Path, marker: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(marker) || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn request_lines_are_written_while_serving_and_all_are_out_after_a_graceful_stop() {
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("server.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut server = Running::start(data.path(), "info", Stdio::from(file)).await;
    let client = client();
    server.create_and_read(&client).await;

    // Written by the writer thread as soon as it is queued: no exit needed.
    let text = wait_for(&log, "status=201").await;
    assert!(
        text.contains("planshare::access") && text.contains("status=201"),
        "no request line within 10 s while the server runs:\n{text}"
    );
    // One flat line per request names the request itself (no span without
    // trace export): method, route template, tenant.
    let create = text
        .lines()
        .find(|line| line.contains("planshare::access") && line.contains("status=201"))
        .unwrap();
    for field in [
        "http.method=POST",
        "http.route=/api/paste",
        "tenant.id=\"tnt_default\"",
        "duration_ms=",
    ] {
        assert!(create.contains(field), "{field} missing from {create}");
    }
    assert!(!create.contains("request{"), "a span at info: {create}");

    // Nothing was dropped, and the counter is there to say so.
    let metrics = server.metrics(&client).await;
    assert!(
        metrics
            .lines()
            .any(|line| line == "planshare_log_lines_dropped_total 0"),
        "no zero planshare_log_lines_dropped_total in:\n{metrics}"
    );

    assert!(server.stop().await, "no exit within 10 s of SIGTERM");
    // The last lines, logged during shutdown, are written out before exit.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("all connections drained"),
        "the shutdown lines are missing:\n{text}"
    );
}

#[tokio::test]
async fn a_filter_can_turn_off_the_request_lines_alone() {
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("server.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut server = Running::start(
        data.path(),
        "info,planshare::access=warn",
        Stdio::from(file),
    )
    .await;
    let client = client();
    server.create_and_read(&client).await;
    let missing = client
        .get(format!("{}/api/paste/zzzzzzzz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert!(server.stop().await, "no exit within 10 s of SIGTERM");

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("all connections drained"),
        "the other info lines are gone too:\n{text}"
    );
    assert!(
        !text.contains("planshare::access") && !text.contains("request{"),
        "request lines or spans despite the filter:\n{text}"
    );
}

/// A log reader that stops reading (a stuck log pipe) used to stop the
/// server: its workers blocked writing to stderr once the pipe was full
/// (64 KiB, a few hundred request lines). Now lines wait in a bounded
/// buffer (512 KiB, about 3 000 lines), then are dropped and counted, and
/// requests go on.
#[tokio::test]
async fn a_stderr_nobody_reads_costs_log_lines_not_requests() {
    let data = tempfile::tempdir().unwrap();
    // Piped and never read: the pipe fills and stays full.
    let server = Running::start(data.path(), "info", Stdio::piped()).await;
    let client = client();
    let id = server.create_and_read(&client).await;
    let url = format!("{}/api/paste/{id}", server.base);
    // 6 400 request lines: more than the pipe and the buffer hold together.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (client, url) = (client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..800 {
                let response = client.get(&url).send().await.unwrap();
                assert_eq!(response.status(), 200);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let metrics = server.metrics(&client).await;
    let dropped: u64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("planshare_log_lines_dropped_total "))
        .unwrap_or_else(|| panic!("no planshare_log_lines_dropped_total in:\n{metrics}"))
        .parse()
        .unwrap();
    assert!(dropped > 0, "6 400 lines into a full pipe, none dropped");
}

/// A read of a damaged paste file is logged once, as a warning naming the
/// paste's namespace and id and never its bytes, and counted in
/// `planshare_store_errors_total{kind="damaged"}`.
#[tokio::test]
async fn a_damaged_read_is_one_warning_and_one_count() {
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("server.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut server = Running::start(data.path(), "info", Stdio::from(file)).await;
    let client = client();
    let id = server.create_and_read(&client).await;
    let hex: String = id.bytes().map(|b| format!("{b:02x}")).collect();
    let path = data
        .path()
        .join("pastes/default")
        .join(&hex[..4])
        .join(&hex);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 2]).unwrap();
    let damaged = |m: &str| {
        m.lines()
            .filter(|l| {
                l.starts_with("planshare_store_errors_total{")
                    && l.contains("kind=\"damaged\"")
                    && l.contains("operation=\"get\"")
            })
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum::<f64>()
    };
    let before = damaged(&server.metrics(&client).await);
    for _ in 0..2 {
        let read = client
            .get(format!("{}/api/paste/{id}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(read.status(), 410);
    }
    assert_eq!(damaged(&server.metrics(&client).await) - before, 2.0);
    assert!(server.stop().await, "no exit within 10 s of SIGTERM");
    let text = std::fs::read_to_string(&log).unwrap();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("damaged paste"))
        .collect();
    assert_eq!(warnings.len(), 2, "one line per damaged read:\n{text}");
    for line in warnings {
        assert!(line.contains("WARN"), "{line}");
        assert!(line.contains("namespace=default"), "{line}");
        assert!(line.contains(&id), "{line}");
    }
    // The payload ("logs-test-payload" as base64url) is not in the log.
    assert!(!text.contains("bG9ncy10ZXN0LXBheWxvYWQ"), "{text}");
}
