//! Scale-out: three `planshare-server` processes on different ports share
//! one paste store and one PostgreSQL database (the tenant catalog), the way
//! hosted replicas sit behind a load balancer — once with the store on Redis,
//! once on the S3 server with Redis holding the shared per-key limiter. A
//! client spreads its requests round-robin:
//!
//! - every paste created on one replica reads back identically on the others;
//! - burn-after-read: nine concurrent reads across the three → exactly one 200;
//! - a tenant quota of 20 pastes holds under 60 concurrent keyed creates
//!   spread over the replicas → exactly 20 × 201;
//! - one Idempotency-Key sent to all three at once → one paste, one id;
//! - one replica is SIGKILLed mid-load and restarted on its port: every
//!   acknowledged (201) paste reads back from every replica afterwards, the
//!   other two stay ready throughout, and the recovery time is reported.
//!
//! Needs `PLANSHARE_TEST_REDIS_URL`, `PLANSHARE_TEST_DATABASE_URL` and, for
//! the S3 variant, `PLANSHARE_TEST_S3_ENDPOINT` (scripts/test sets them);
//! without them it says so and skips — except under CI, where the helpers
//! panic.

#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::{Value, json};
use tokio::sync::Mutex;

const ADMIN_TOKEN: &str = "scale-out-admin-token-4Fq9Lm2xR7";

/// One replica: a child process on a fixed port.
struct Replica {
    child: Option<Child>,
    port: u16,
    rate_limits: bool,
    config: PathBuf,
    data: PathBuf,
    log: PathBuf,
}

impl Replica {
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_planshare-server"))
            .env_clear()
            .env("PLANSHARE_CONFIG", &self.config)
            .env("PLANSHARE_HOST", "127.0.0.1")
            .env("PLANSHARE_PORT", self.port.to_string())
            .env("PLANSHARE_DATA_DIR", &self.data)
            .env("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN)
            .env(
                "PLANSHARE_RATE_LIMITS",
                if self.rate_limits { "on" } else { "off" },
            )
            .env("PLANSHARE_LOG", "info")
            // S3 credentials for the test server (scripts/test sets them).
            .envs(std::env::vars().filter(|(name, _)| name.starts_with("AWS_")))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits until `/readyz` answers 200; how long that took.
    async fn wait_ready(&self, client: &Client) -> Duration {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if let Ok(r) = client.get(format!("{}/readyz", self.base())).send().await
                && r.status() == 200
            {
                return started.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        panic!("replica on {} not ready after 30 s; log:\n{log}", self.port);
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Where the replicas keep their pastes.
#[derive(Clone, Copy, Debug)]
enum Store {
    /// Redis.
    Redis,
    /// The S3 server; Redis then holds the shared per-key limiter.
    S3,
}

/// `count` replicas sharing a paste store and a fresh PostgreSQL database,
/// with `extra` appended to their TOML configuration, or `None` when a
/// backend is not configured (outside CI).
async fn cluster(
    dir: &Path,
    count: usize,
    extra: &str,
) -> Option<(Vec<Replica>, tenancy::conformance::env::TestDb)> {
    cluster_on(Store::Redis, dir, count, extra).await
}

async fn cluster_on(
    store: Store,
    dir: &Path,
    count: usize,
    extra: &str,
) -> Option<(Vec<Replica>, tenancy::conformance::env::TestDb)> {
    let redis = paste_store::conformance::env::redis()?;
    let store_toml = match store {
        Store::Redis => format!(
            "[store]\nkind = \"redis\"\n\n[store.redis]\nurl = {:?}\nkey_prefix = {:?}\n",
            redis.url, redis.key_prefix
        ),
        Store::S3 => {
            let s3 = paste_store::conformance::env::s3()?;
            format!(
                "[store]\nkind = \"s3\"\n\n[store.s3]\nendpoint = {:?}\nbucket = {:?}\nprefix = {:?}\n",
                s3.endpoint, s3.bucket, s3.prefix
            )
        }
    };
    let pg = tenancy::conformance::env::postgres().await?;
    let config = dir.join("planshare.toml");
    std::fs::write(
        &config,
        format!(
            "{store_toml}\n[catalog]\nurl = {:?}\n{extra}",
            pg.config.url
        ),
    )
    .unwrap();
    let mut replicas = Vec::new();
    for i in 0..count {
        let data = dir.join(format!("replica-{i}"));
        std::fs::create_dir_all(&data).unwrap();
        let mut replica = Replica {
            child: None,
            port: testkit::free_port(),
            // `[limits]` in `extra` turns the limiters on.
            rate_limits: extra.contains("[limits]"),
            config: config.clone(),
            data,
            log: dir.join(format!("replica-{i}.log")),
        };
        replica.spawn();
        replicas.push(replica);
    }
    Some((replicas, pg))
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A tenant (with `settings`) and one of its keys, made on `base`.
async fn tenant(client: &Client, base: &str, name: &str, mut settings: Value) -> String {
    // Unless the test is about them, per-key limits stay out of the way.
    for field in ["rate_per_sec", "rate_burst"] {
        if settings.get(field).is_none() {
            settings[field] = json!(1_000_000);
        }
    }
    let (status, body) = json_of(
        client
            .post(format!("{base}/admin/v1/tenants"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({"name": name, "namespace": name, "settings": settings}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["id"].as_str().unwrap();
    let (status, key) = json_of(
        client
            .post(format!("{base}/admin/v1/tenants/{id}/keys"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({"name": "scale-out"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{key}");
    key["key"].as_str().unwrap().to_owned()
}

/// Waits until every replica knows `key` (each refreshes its tenant
/// snapshot within a second).
async fn known_everywhere(client: &Client, bases: &[String], key: &str) {
    for base in bases {
        let started = Instant::now();
        loop {
            let status = client
                .get(format!("{base}/api/v1/pastes"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .status();
            if status == 200 {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{base}: key still {status}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_redis_share_pastes_quotas_idempotency_and_survive_a_kill() {
    replicas_share_pastes_quotas_idempotency_and_survive_a_kill(Store::Redis, "").await;
}

/// The same on the S3 server, with the per-key limiter shared in Redis (its
/// limits set high enough not to refuse this test's load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_s3_share_pastes_quotas_idempotency_and_survive_a_kill() {
    let Some(redis) = paste_store::conformance::env::redis() else {
        return;
    };
    let limits = format!(
        "\n[limits]\nredis_url = {:?}\nip_per_sec = 1000000\nip_burst = 1000000\n",
        redis.url
    );
    replicas_share_pastes_quotas_idempotency_and_survive_a_kill(Store::S3, &limits).await;
}

async fn replicas_share_pastes_quotas_idempotency_and_survive_a_kill(store: Store, extra: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some((mut replicas, _pg)) = cluster_on(store, dir.path(), 3, extra).await else {
        return;
    };
    let client = Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    for replica in &replicas {
        replica.wait_ready(&client).await;
    }
    let bases: Vec<String> = replicas.iter().map(Replica::base).collect();

    // Created on one, read on the others.
    for i in 0..30 {
        let data = format!("scale-out-paste-{i:04}-{}", "x".repeat(i * 7));
        let (status, created) = json_of(
            client
                .post(format!("{}/api/paste", bases[i % 3]))
                .json(&json!({"data": data}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_str().unwrap();
        for other in [(i + 1) % 3, (i + 2) % 3] {
            let (status, read) = json_of(
                client
                    .get(format!("{}/api/paste/{id}", bases[other]))
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!((status, read["data"].as_str()), (200, Some(data.as_str())));
        }
    }

    // Burn-after-read: one winner across all replicas.
    let key = tenant(&client, &bases[0], "burners", json!({"quota_pastes": 20})).await;
    known_everywhere(&client, &bases, &key).await;
    for round in 0..5 {
        let (status, created) = json_of(
            client
                .post(format!("{}/api/v1/pastes", bases[round % 3]))
                .bearer_auth(&key)
                .json(&json!({"data": format!("burn-{round}"), "burnAfterRead": true}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_str().unwrap().to_owned();
        let reads = (0..9).map(|i| {
            let (client, base, key, id) = (
                client.clone(),
                bases[i % 3].clone(),
                key.clone(),
                id.clone(),
            );
            tokio::spawn(async move {
                client
                    .get(format!("{base}/api/v1/pastes/{id}"))
                    .bearer_auth(key)
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            })
        });
        let mut statuses = Vec::new();
        for read in reads {
            statuses.push(read.await.unwrap());
        }
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            1,
            "round {round}: {statuses:?}"
        );
        assert!(
            statuses.iter().all(|s| *s == 200 || *s == 404),
            "{statuses:?}"
        );
    }

    // Quota: 20 pastes for this tenant, 60 concurrent creates spread over
    // the replicas (the 5 burned ones are gone and released).
    let quota_key = tenant(&client, &bases[1], "quota", json!({"quota_pastes": 20})).await;
    known_everywhere(&client, &bases, &quota_key).await;
    let creates = (0..60).map(|i| {
        let (client, base, key) = (client.clone(), bases[i % 3].clone(), quota_key.clone());
        tokio::spawn(async move {
            client
                .post(format!("{base}/api/v1/pastes"))
                .bearer_auth(key)
                .json(&json!({"data": format!("quota-{i}")}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    });
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    for create in creates {
        *statuses.entry(create.await.unwrap()).or_default() += 1;
    }
    assert_eq!(statuses.get(&201), Some(&20), "{statuses:?}");
    assert_eq!(statuses.get(&413), Some(&40), "{statuses:?}");

    // Idempotency: the same key and body on all three at once.
    let body = json!({"data": "idempotent-across-replicas"});
    let sends = (0..3).map(|i| {
        let (client, base, key, body) =
            (client.clone(), bases[i].clone(), key.clone(), body.clone());
        tokio::spawn(async move {
            json_of(
                client
                    .post(format!("{base}/api/v1/pastes"))
                    .bearer_auth(key)
                    .header("Idempotency-Key", "scale-out-idem-1")
                    .json(&body)
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        })
    });
    let mut ids = HashSet::new();
    for send in sends {
        let (status, created) = send.await.unwrap();
        match status {
            201 | 200 => {
                ids.insert(created["id"].as_str().unwrap().to_owned());
            }
            409 => {} // still in progress on another replica
            other => panic!("idempotent create: {other} {created}"),
        }
    }
    // Retried after the first finished, every replica names the same paste.
    for base in &bases {
        let (status, created) = json_of(
            client
                .post(format!("{base}/api/v1/pastes"))
                .bearer_auth(&key)
                .header("Idempotency-Key", "scale-out-idem-1")
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert!(status == 201 || status == 200, "{status} {created}");
        ids.insert(created["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), 1, "one paste for one Idempotency-Key: {ids:?}");
    let (_, list) = json_of(
        client
            .get(format!("{}/api/v1/pastes?limit=100", bases[2]))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let listed = list["pastes"].as_array().map_or(0, |p| {
        p.iter()
            .filter(|p| ids.contains(p["id"].as_str().unwrap_or_default()))
            .count()
    });
    assert_eq!(listed, 1, "{list}");

    // SIGKILL one replica under load, restart it on its port.
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for w in 0..8 {
        let (client, bases) = (client.clone(), bases.clone());
        let (acknowledged, stop, failed) = (acknowledged.clone(), stop.clone(), failed.clone());
        workers.push(tokio::spawn(async move {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let data = format!("load-{w}-{n}");
                let base = &bases[(w + n) % 3];
                n += 1;
                match client
                    .post(format!("{base}/api/paste"))
                    .json(&json!({"data": data}))
                    .send()
                    .await
                {
                    Ok(r) if r.status() == 201 => {
                        let created: Value = r.json().await.unwrap();
                        let id = created["id"].as_str().unwrap().to_owned();
                        acknowledged.lock().await.push((id, data));
                    }
                    _ => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    // The untouched replicas must stay ready the whole time.
    let watch_stop = stop.clone();
    let (watch_client, watched) = (client.clone(), [bases[0].clone(), bases[2].clone()]);
    let watcher = tokio::spawn(async move {
        let mut not_ready = Vec::new();
        let mut polls = 0;
        while !watch_stop.load(Ordering::Relaxed) {
            for base in &watched {
                polls += 1;
                match watch_client.get(format!("{base}/readyz")).send().await {
                    Ok(r) if r.status() == 200 => {}
                    other => not_ready.push(format!("{base}: {:?}", other.map(|r| r.status()))),
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (polls, not_ready)
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    replicas[1].kill();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    replicas[1].spawn();
    let recovery = replicas[1].wait_ready(&client).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }
    let (polls, not_ready) = watcher.await.unwrap();
    assert!(
        not_ready.is_empty(),
        "untouched replicas not ready: {not_ready:?}"
    );

    let acknowledged = acknowledged.lock().await.clone();
    assert!(
        acknowledged.len() > 100,
        "the load ran: {}",
        acknowledged.len()
    );
    let mut lost = Vec::new();
    for (id, data) in &acknowledged {
        for base in &bases {
            let read = client
                .get(format!("{base}/api/paste/{id}"))
                .send()
                .await
                .unwrap();
            let (status, body) = json_of(read).await;
            if status != 200 || body["data"].as_str() != Some(data.as_str()) {
                lost.push(format!("{base} {id}: {status}"));
            }
        }
    }
    assert!(lost.is_empty(), "acknowledged pastes missing: {lost:?}");
    #[expect(clippy::print_stderr, reason = "the test reports its figures")]
    {
        eprintln!(
            "scale-out ({store:?} store): {} acknowledged creates under load ({} refused or failed \
             while a replica was down), 0 lost, each read back from 3 replicas; replica restart → \
             ready in {:.0} ms; {polls} readiness polls of the other two, all 200",
            acknowledged.len(),
            failed.load(Ordering::Relaxed),
            recovery.as_secs_f64() * 1000.0
        );
    }
}

/// SIGTERM under load: `/readyz` answers 503 at once while requests are
/// still served for the shutdown delay, every request that reached the
/// server gets its answer (only new connections are refused once the
/// listener closes), the process exits 0 well within delay + grace, and
/// every acknowledged paste reads back from the replica that stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_drains_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "\n[server]\nshutdown_delay_secs = 1\nshutdown_grace_secs = 10\n";
    let Some((mut replicas, _pg)) = cluster(dir.path(), 2, extra).await else {
        return;
    };
    let client = Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    for replica in &replicas {
        replica.wait_ready(&client).await;
    }
    let target = replicas[0].base();
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let refused = Arc::new(AtomicUsize::new(0));
    let broken = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut workers = Vec::new();
    for w in 0..8 {
        let (client, target) = (client.clone(), target.clone());
        let (stop, acknowledged, refused, broken) = (
            stop.clone(),
            acknowledged.clone(),
            refused.clone(),
            broken.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let data = format!("drain-{w}-{n}-{}", "d".repeat(2048));
                n += 1;
                match client
                    .post(format!("{target}/api/paste"))
                    .json(&json!({"data": data}))
                    .send()
                    .await
                {
                    Ok(r) if r.status() == 201 => {
                        let created: Value = r.json().await.unwrap();
                        let id = created["id"].as_str().unwrap().to_owned();
                        acknowledged.lock().await.push((id, data));
                    }
                    Ok(r) => broken.lock().await.push(format!("HTTP {}", r.status())),
                    // The listener is closed: a new connection is refused.
                    Err(e) if e.is_connect() => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    // A pooled connection the server closed while idle is
                    // not a lost request; anything else is.
                    Err(e) if e.is_request() && !e.is_timeout() => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => broken.lock().await.push(format!("{e:?}")),
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = acknowledged.lock().await.len();
    let pid = replicas[0].child.as_ref().unwrap().id().to_string();
    let signalled = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    // Readiness flips at once; real requests are still served meanwhile.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ready = client.get(format!("{target}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503, "readyz right after SIGTERM");
    let exited = loop {
        if let Some(status) = replicas[0].child.as_mut().unwrap().try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(11),
            "no exit within delay + grace"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let took = signalled.elapsed();
    let during = acknowledged.lock().await.len() - before;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }
    assert!(exited.success(), "exit status after SIGTERM: {exited}");
    replicas[0].child = None;
    assert!(
        during > 0,
        "requests were still served during the shutdown delay"
    );
    let broken = broken.lock().await.clone();
    assert!(
        broken.is_empty(),
        "requests that reached the server without an answer: {broken:?}"
    );
    let acknowledged = acknowledged.lock().await.clone();
    let survivor = replicas[1].base();
    for (id, data) in &acknowledged {
        let (status, body) = json_of(
            client
                .get(format!("{survivor}/api/paste/{id}"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            (status, body["data"].as_str()),
            (200, Some(data.as_str())),
            "{id}"
        );
    }
    eprintln!(
        "sigterm under load: {} acknowledged ({during} after SIGTERM), 0 lost, {} refused after \
         the listener closed, exit 0 after {:.0} ms (delay 1 s, grace 10 s)",
        acknowledged.len(),
        refused.load(Ordering::Relaxed),
        took.as_secs_f64() * 1000.0
    );
}

/// Sends `n` keyed reads round-robin over `bases` one after another;
/// how many were allowed (200) and how many limited (429).
async fn burst(client: &Client, bases: &[String], key: &str, n: usize) -> (usize, usize) {
    let (mut allowed, mut limited) = (0, 0);
    for i in 0..n {
        let status = client
            .get(format!("{}/api/v1/pastes", bases[i % bases.len()]))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .status();
        match status.as_u16() {
            200 => allowed += 1,
            429 => limited += 1,
            other => panic!("keyed read: {other}"),
        }
    }
    (allowed, limited)
}

/// A key's rate limit holds across replicas when they share a Redis
/// limiter (burst 10 → 10 of 30 requests spread over three replicas), and
/// with that Redis unreachable each replica falls back to limiting alone
/// (each allows its own burst) without failing a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_key_limits_hold_across_replicas_and_fall_back_per_process() {
    let Some(redis) = paste_store::conformance::env::redis() else {
        return;
    };
    let client = Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let settings = json!({"rate_per_sec": 1, "rate_burst": 10});

    let dir = tempfile::tempdir().unwrap();
    let shared = format!("\n[limits]\nredis_url = {:?}\n", redis.url);
    let Some((replicas, _pg)) = cluster(dir.path(), 3, &shared).await else {
        return;
    };
    for replica in &replicas {
        replica.wait_ready(&client).await;
    }
    let bases: Vec<String> = replicas.iter().map(Replica::base).collect();
    let key = tenant(&client, &bases[0], "limited", settings.clone()).await;
    // Wait for every replica to know the key without spending its budget.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (allowed, limited) = burst(&client, &bases, &key, 30).await;
    assert!(
        (10..=11).contains(&allowed),
        "shared limit: {allowed} allowed, {limited} limited (burst 10, 1/s)"
    );
    drop(replicas);

    // The same with the limiter's Redis down: per process, no failures.
    let dir = tempfile::tempdir().unwrap();
    let down = format!(
        "\n[limits]\nredis_url = \"redis://127.0.0.1:{}\"\n",
        testkit::free_port()
    );
    let Some((replicas, _pg)) = cluster(dir.path(), 3, &down).await else {
        return;
    };
    for replica in &replicas {
        replica.wait_ready(&client).await;
    }
    let bases: Vec<String> = replicas.iter().map(Replica::base).collect();
    let key = tenant(&client, &bases[0], "fallback", settings).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (fallback_allowed, fallback_limited) = burst(&client, &bases, &key, 30).await;
    assert!(
        fallback_allowed >= 28,
        "per-process fallback: {fallback_allowed} allowed, {fallback_limited} limited"
    );
    eprintln!(
        "per-key limit across 3 replicas (burst 10, 1/s, 30 requests): shared {allowed} allowed; \
         Redis down → per process {fallback_allowed} allowed"
    );
}

/// Reads SSE frames (`id`, `event`) from a streaming response until one of
/// `event` kind arrives; every frame seen, in order.
async fn sse_until(
    response: &mut reqwest::Response,
    buffer: &mut String,
    kind: &str,
    within: Duration,
) -> Vec<(Option<u64>, String)> {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let id = block
                .lines()
                .find_map(|l| l.strip_prefix("id: "))
                .map(|v| v.parse().unwrap());
            if let Some(event) = block.lines().find_map(|l| l.strip_prefix("event: ")) {
                seen.push((id, event.to_owned()));
                if event == kind {
                    return seen;
                }
            }
        }
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(bytes))) => buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
            Ok(Ok(None)) => panic!("the stream ended before a {kind} event; saw {seen:?}"),
            Ok(Err(e)) => panic!("stream error: {e}"),
            Err(_) => panic!("no {kind} event in time; saw {seen:?}"),
        }
    }
}

/// Live reviews across three replicas: a reviewer posts on one, the
/// owner's stream on another sees it promptly (PostgreSQL notifications,
/// no polling), a revocation on the third ends the reviewer's stream on the
/// first, and a deletion reaches every replica's streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_events_reach_streams_on_every_replica() {
    let dir = tempfile::tempdir().unwrap();
    let Some((replicas, _pg)) = cluster(dir.path(), 3, "").await else {
        eprintln!("skipped: Redis or PostgreSQL is not configured");
        return;
    };
    let client = Client::new();
    for replica in &replicas {
        replica.wait_ready(&client).await;
    }
    let bases: Vec<String> = replicas.iter().map(Replica::base).collect();
    let digest = "d".repeat(43);
    let (status, created) = json_of(
        client
            .post(format!("{}/api/v1/reviews", bases[0]))
            .json(&json!({"version": {"data": "v1-cipher", "digest": digest}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap();
    let owner = created["ownerToken"].as_str().unwrap();
    let path = |base: &str, rest: &str| format!("{base}/api/v1/reviews/{id}{rest}");
    let (status, link) = json_of(
        client
            .post(path(&bases[1], "/links"))
            .bearer_auth(owner)
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{link}");
    let (link_id, reviewer) = (
        link["id"].as_str().unwrap(),
        link["token"].as_str().unwrap(),
    );

    // The owner follows on replica 1, the reviewer on replica 0.
    let open = |base: &str, token: &str, after: u64| {
        client
            .get(path(base, "/events"))
            .bearer_auth(token)
            .header("last-event-id", after.to_string())
            .send()
    };
    let mut owner_stream = open(&bases[1], owner, 2).await.unwrap();
    let mut reviewer_stream = open(&bases[0], reviewer, 2).await.unwrap();
    let (mut owner_buf, mut reviewer_buf) = (String::new(), String::new());
    // Each stream has sent its retry hint, so it is subscribed.
    for stream in [&mut owner_stream, &mut reviewer_stream] {
        let first = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(first.starts_with(b"retry:"));
    }

    // A comment on replica 2 reaches the owner's stream on replica 1.
    let started = Instant::now();
    let put = client
        .put(path(&bases[2], "/comments"))
        .bearer_auth(reviewer)
        .json(&json!({"name": "rita", "version": 1, "data": "rita-cipher"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    let acknowledged = started.elapsed();
    let seen = sse_until(
        &mut owner_stream,
        &mut owner_buf,
        "comments",
        Duration::from_secs(5),
    )
    .await;
    let arrived = started.elapsed();
    assert_eq!(seen, [(Some(3), "comments".to_owned())]);
    eprintln!(
        "comment acknowledged after {acknowledged:?}, on another replica's stream after {arrived:?}"
    );

    // The reviewer's own stream on replica 0 has it too.
    let seen = sse_until(
        &mut reviewer_stream,
        &mut reviewer_buf,
        "comments",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(seen, [(Some(3), "comments".to_owned())]);

    // A revocation on replica 2 ends the reviewer's stream on replica 0
    // within a second, and the token stops answering on every replica.
    let started = Instant::now();
    let revoked = client
        .delete(path(&bases[2], &format!("/links/{link_id}")))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 204);
    let seen = sse_until(
        &mut reviewer_stream,
        &mut reviewer_buf,
        "revoked",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(seen.last().unwrap().1, "revoked");
    let ended = tokio::time::timeout(Duration::from_secs(2), reviewer_stream.chunk())
        .await
        .unwrap()
        .unwrap();
    assert!(ended.is_none(), "the revoked reviewer's stream ends");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    for base in &bases {
        let status = client
            .get(path(base, ""))
            .bearer_auth(reviewer)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404, "{base}: a revoked token answers nowhere");
    }

    // A deletion on replica 0 closes the owner's stream on replica 1.
    let deleted = client
        .delete(path(&bases[0], ""))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let seen = sse_until(
        &mut owner_stream,
        &mut owner_buf,
        "closed",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(seen.last().unwrap().1, "closed");
}
