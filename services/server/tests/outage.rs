//! Backend outages under concurrent load: while Redis or S3 is stopped,
//! black-holed or refusing (also from start-up on), planshare answers
//! only 2xx or 503 + `Retry-After`, no request outlives the backend timeout
//! by more than 100 ms, it recovers by itself within 5 s, and every paste that
//! got a 201 reads back byte for byte afterwards.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed
// test; a skipped one says so on stderr.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use paste_store::StoreKind;
use paste_store::conformance::env;
use testkit::TestApp;
use testkit::proxy::{FaultProxy, Mode};

/// One request of the load loop.
#[derive(Debug)]
struct Sample {
    at: Duration,
    op: &'static str,
    status: u16,
    retry_after: bool,
    latency: Duration,
}

/// What the load loop saw.
#[derive(Default)]
struct Log {
    samples: Vec<Sample>,
    acknowledged: Vec<(String, String)>,
}

/// Creates and reads pastes from `workers` tasks until `stop` is set.
fn start_load(
    app: &Arc<TestApp>,
    workers: usize,
    started: Instant,
    stop: Arc<std::sync::atomic::AtomicBool>,
    log: Arc<Mutex<Log>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..workers)
        .map(|w| {
            let (app, stop, log) = (app.clone(), stop.clone(), log.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    let data = format!("w{w}n{n}{}", "Q".repeat(1024));
                    let begun = Instant::now();
                    let response = app.create(&data).await;
                    let status = response.status().as_u16();
                    let retry_after = response.headers().contains_key("retry-after");
                    let body: serde_json::Value = response.json().await.unwrap_or_default();
                    let latency = begun.elapsed();
                    let read = {
                        let mut log = log.lock().unwrap();
                        log.samples.push(Sample {
                            at: begun - started,
                            op: "create",
                            status,
                            retry_after,
                            latency,
                        });
                        if status == 201 {
                            log.acknowledged
                                .push((body["id"].as_str().unwrap().to_owned(), data));
                        }
                        let count = log.acknowledged.len().max(1);
                        log.acknowledged
                            .get(usize::try_from(n).unwrap() % count)
                            .cloned()
                    };
                    if let Some((id, _)) = read {
                        let begun = Instant::now();
                        let response = app.get(&id).await;
                        let status = response.status().as_u16();
                        let retry_after = response.headers().contains_key("retry-after");
                        let _ = response.bytes().await;
                        log.lock().unwrap().samples.push(Sample {
                            at: begun - started,
                            op: "get",
                            status,
                            retry_after,
                            latency: begun.elapsed(),
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        })
        .collect()
}

/// The pass criteria shared by every outage test.
async fn check(app: &TestApp, log: &Log, bound: Duration, resumed_at: Duration) {
    assert!(!log.samples.is_empty());
    let mut unavailable = 0;
    for s in &log.samples {
        assert!(
            matches!(s.status, 200 | 201 | 503),
            "unexpected status: {s:?}"
        );
        if s.status == 503 {
            unavailable += 1;
            assert!(s.retry_after, "503 without Retry-After: {s:?}");
        }
        assert!(
            s.latency <= bound,
            "request took {:?} > {bound:?}: {s:?}",
            s.latency
        );
    }
    assert!(unavailable > 0, "the outage was not observed");
    // Recovered within 5 s of the backend's return: a create succeeded.
    let recovered = log
        .samples
        .iter()
        .find(|s| s.at >= resumed_at && s.op == "create" && s.status == 201)
        .map(|s| s.at - resumed_at);
    assert!(
        recovered.is_some_and(|t| t <= Duration::from_secs(5)),
        "recovery after resume: {recovered:?}"
    );
    // Nothing acknowledged is lost or changed.
    for (id, data) in &log.acknowledged {
        let response = app.get(id).await;
        assert_eq!(response.status(), 200, "acknowledged paste {id} lost");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["data"].as_str().unwrap(), data, "paste {id} changed");
    }
}

/// A redis-server of this test's own, with an append-only file synced on
/// every write (so a SIGKILL loses nothing acknowledged).
struct OwnRedis {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl OwnRedis {
    fn start_on(port: u16, dir: tempfile::TempDir) -> Option<OwnRedis> {
        let child = spawn_redis(port, &dir)?;
        Some(OwnRedis { child, port, dir })
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// SIGKILL, stay down for `down`, start again on the same port and data.
    async fn kill_and_restart_after(&mut self, down: Duration) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        tokio::time::sleep(down).await;
        self.child = spawn_redis(self.port, &self.dir).unwrap();
    }
}

fn spawn_redis(port: u16, dir: &tempfile::TempDir) -> Option<Child> {
    {
        let spawned = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) if std::env::var_os("CI").is_some() => panic!("cannot run redis-server: {e}"),
            Err(e) => {
                eprintln!("skipping: cannot run redis-server ({e})");
                return None;
            }
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(child)
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn redis_app(port: u16) -> TestApp {
    TestApp::spawn_configured(&[], |s| {
        s.store.kind = StoreKind::Redis;
        s.store.redis.url = format!("redis://127.0.0.1:{port}");
        s.store.redis.connect_timeout_ms = 300;
        s.store.redis.response_timeout_ms = 300;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_stopped_black_holed_and_killed_under_load() {
    let Some(mut redis) = OwnRedis::start_on(testkit::free_port(), tempfile::tempdir().unwrap())
    else {
        return;
    };
    let app = Arc::new(redis_app(redis.port).await);
    let bound = Duration::from_millis(600 + 100);
    let started = Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Log::default()));
    let workers = start_load(&app, 6, started, stop.clone(), log.clone());

    tokio::time::sleep(Duration::from_millis(1_500)).await;
    redis.signal("STOP"); // accepts connections, never answers
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let ready = app.get_path("/readyz").await;
    assert_eq!(
        ready.status(),
        503,
        "readiness reports the black-holed Redis"
    );
    redis.signal("CONT");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    redis
        .kill_and_restart_after(Duration::from_millis(1_500))
        .await;
    let resumed_at = started.elapsed();
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    assert_eq!(app.get_path("/readyz").await.status(), 200);
    let log = std::mem::take(&mut *log.lock().unwrap());
    check(&app, &log, bound, resumed_at).await;
    drop(redis);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn planshare_starts_with_redis_down_and_recovers_when_it_comes() {
    let port = testkit::free_port();
    let app = redis_app(port).await;
    assert_eq!(app.get_path("/healthz").await.status(), 200);
    assert_eq!(app.get_path("/readyz").await.status(), 503);
    let response = app.create("while down").await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));

    let Some(_redis) = OwnRedis::start_on(port, tempfile::tempdir().unwrap()) else {
        return;
    };
    let came_back = Instant::now();
    loop {
        if app.create("after").await.status() == 201 {
            break;
        }
        assert!(
            came_back.elapsed() < Duration::from_secs(5),
            "no recovery within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_100)).await; // readiness cache
    assert_eq!(app.get_path("/readyz").await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_refusing_and_black_holed_under_load() {
    let Some(s3) = env::s3() else { return };
    let endpoint: SocketAddr = s3.endpoint.trim_start_matches("http://").parse().unwrap();
    let proxy = FaultProxy::start(endpoint).await;
    let app = Arc::new(
        TestApp::spawn_configured(&[], |s| {
            s.store.kind = StoreKind::S3;
            s.store.s3 = paste_store::S3Config {
                endpoint: format!("http://{}", proxy.addr),
                attempt_timeout_ms: 400,
                operation_timeout_ms: 1_000,
                ..s3
            };
        })
        .await,
    );
    let bound = Duration::from_millis(1_000 + 100);
    let started = Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Log::default()));
    let workers = start_load(&app, 6, started, stop.clone(), log.clone());

    tokio::time::sleep(Duration::from_millis(1_500)).await;
    proxy.set(Mode::Refuse); // the server is gone
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    proxy.set(Mode::Blackhole); // the server hangs
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    assert_eq!(app.get_path("/readyz").await.status(), 503);
    proxy.set(Mode::Pass);
    let resumed_at = started.elapsed();
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let log = std::mem::take(&mut *log.lock().unwrap());
    check(&app, &log, bound, resumed_at).await;
}

/// The keys under `prefix` in the Redis at `url` (not through the proxy).
async fn redis_keys(url: &str, prefix: &str) -> Vec<String> {
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// A review deleted while the store refuses every connection is gone at
/// once; the answer says that its blobs could not be removed yet (`202`,
/// how many), and the server removes them once the store is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_deleted_during_a_store_outage_says_so_and_its_blobs_go_later() {
    let Some(redis) = env::redis() else { return };
    let upstream: SocketAddr = redis
        .url
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let proxy = FaultProxy::start(upstream).await;
    let config = paste_store::RedisConfig {
        url: format!("redis://{}", proxy.addr),
        connect_timeout_ms: 300,
        response_timeout_ms: 300,
        ..redis.clone()
    };
    let app = TestApp::spawn_configured(&[], |s| {
        s.store.kind = StoreKind::Redis;
        s.store.redis = config;
    })
    .await;
    let client = &app.client;
    let created: serde_json::Value = client
        .post(app.url("/api/v1/reviews"))
        .header("content-type", "application/json")
        .body(serde_json::json!({"version": {"data": "v1", "digest": "d".repeat(43)}}).to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (id, owner) = (
        created["id"].as_str().unwrap(),
        created["ownerToken"].as_str().unwrap(),
    );
    let review = app.url(&format!("/api/v1/reviews/{id}"));
    let put = client
        .put(format!("{review}/comments"))
        .bearer_auth(owner)
        .header("content-type", "application/json")
        .body(serde_json::json!({"name": "owner", "version": 1, "data": "c1"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    assert_eq!(redis_keys(&redis.url, &redis.key_prefix).await.len(), 2);

    proxy.set(Mode::Refuse);
    let deleted = client
        .delete(&review)
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 202, "the blobs could not be removed");
    let body: serde_json::Value = deleted.json().await.unwrap();
    assert_eq!(body["deleted"], true);
    assert_eq!(body["pendingBlobs"], 2, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("in the background"),
        "{body}"
    );
    let read = client.get(&review).bearer_auth(owner).send().await.unwrap();
    assert_eq!(read.status(), 404, "the review is gone at once");
    assert_eq!(redis_keys(&redis.url, &redis.key_prefix).await.len(), 2);

    proxy.set(Mode::Pass);
    let back = Instant::now();
    while !redis_keys(&redis.url, &redis.key_prefix).await.is_empty() {
        assert!(
            back.elapsed() < Duration::from_secs(20),
            "the blobs are removed once the store is back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
