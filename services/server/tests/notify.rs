//! Review notifications end to end: the server binary (fs + SQLite, or three
//! replicas on PostgreSQL) delivers to a real receiver that verifies every
//! webhook with the Standard Webhooks library (`tests/notify/receiver.mjs`,
//! npm `standardwebhooks`), and nothing it sends carries plan or comment
//! text, a key or a token.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed
// test.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{ChildServer, wait_ready};

const ADMIN_TOKEN: &str = "notify-test-admin-token-0123456789";
/// Stands for plan and comment text: it must reach no receiver.
const CONTENT: &str = "CONTENT-MARKER-the-plan-says-rotate-the-keys";
/// A sealed preview as a client would attach it (opaque to the server).
const SEALED: &str = "c2VhbGVkLXByZXZpZXctYnl0ZXM";

// ---- the receiver ----

/// `receiver.mjs` running on a port of its own, its lines collected.
struct Receiver {
    child: Child,
    port: u16,
    secrets: PathBuf,
    lines: Arc<Mutex<Vec<Value>>>,
    _dir: tempfile::TempDir,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// Starts it, or `None` (skip) when node or its package is missing
    /// outside CI; under CI that fails the test.
    fn start() -> Option<Receiver> {
        let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/notify"));
        let node = Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !node || !dir.join("node_modules/standardwebhooks").exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "node or standardwebhooks is missing under CI: scripts/test installs them"
            );
            #[expect(clippy::print_stderr, reason = "a skipped test says so")]
            {
                eprintln!(
                    "skipping: node or standardwebhooks missing (npm ci in {})",
                    dir.display()
                );
            }
            return None;
        }
        let temp = tempfile::tempdir().unwrap();
        let secrets = temp.path().join("secrets.json");
        std::fs::write(&secrets, "{}").unwrap();
        let port = testkit::free_port();
        let mut child = Command::new("node")
            .arg(dir.join("receiver.mjs"))
            .arg(port.to_string())
            .arg(&secrets)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines: Arc<Mutex<Vec<Value>>> = Arc::default();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if value["ready"] == true {
                    let _ = ready_tx.send(());
                } else {
                    sink.lock().unwrap().push(value);
                }
            }
        });
        ready_rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("the receiver did not start"));
        Some(Receiver {
            child,
            port,
            secrets,
            lines,
            _dir: temp,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Tells the receiver the secret of `path`'s webhook.
    fn set_secret(&self, path: &str, secret: &str) {
        let mut all: Value =
            serde_json::from_slice(&std::fs::read(&self.secrets).unwrap()).unwrap();
        all[path] = json!(secret);
        std::fs::write(&self.secrets, all.to_string()).unwrap();
    }

    fn on(&self, path: &str) -> Vec<Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l["path"] == path)
            .cloned()
            .collect()
    }

    fn all(&self) -> Vec<Value> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits until `path` has had `n` requests; answers them.
    async fn wait(&self, path: &str, n: usize, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.on(path);
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{path}: {} of {n} requests within {timeout:?}: {:#?}",
                got.len(),
                self.all()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

// ---- the server ----

struct Server {
    process: ChildServer,
    base: String,
    log: PathBuf,
}

/// Starts the binary on `data` with `vars`; its log goes to `data/../<name>.log`.
async fn start_server(data: &Path, name: &str, vars: &[(&str, &str)]) -> Server {
    let port = testkit::free_port();
    let log = data.with_file_name(format!("{name}.log"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_planshare-server"));
    command
        .env_clear()
        .env("HOME", data.parent().unwrap())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PLANSHARE_HOST", "127.0.0.1")
        .env("PLANSHARE_PORT", port.to_string())
        .env("PLANSHARE_DATA_DIR", data)
        .env("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("PLANSHARE_RATE_LIMITS", "off")
        .env("PLANSHARE_NOTIFY_REPLICA", name)
        .env("PLANSHARE_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::options()
                .create(true)
                .append(true)
                .open(&log)
                .unwrap(),
        );
    for (k, v) in vars {
        command.env(k, v);
    }
    let process = ChildServer::spawn(&mut command);
    let base = format!("http://127.0.0.1:{port}");
    assert!(
        wait_ready(&base, Duration::from_secs(30)).await,
        "{name} not ready"
    );
    Server { process, base, log }
}

// ---- the review API ----

struct Review {
    id: String,
    owner: String,
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

async fn call(
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client().request(method, url).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn digest(n: u8) -> String {
    format!("{}", char::from(b'a' + n)).repeat(43)
}

async fn create_review(base: &str, key: Option<&str>) -> Review {
    let mut request = client()
        .post(format!("{base}/api/v1/reviews"))
        .json(&json!({"version": {"data": CONTENT, "digest": digest(0)}}));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let created: Value = request.send().await.unwrap().json().await.unwrap();
    Review {
        id: created["id"].as_str().unwrap().to_owned(),
        owner: created["ownerToken"].as_str().unwrap().to_owned(),
    }
}

async fn add_link(base: &str, review: &Review, role: &str) -> String {
    let (status, link) = call(
        reqwest::Method::POST,
        format!("{base}/api/v1/reviews/{}/links", review.id),
        &review.owner,
        Some(json!({"role": role})),
    )
    .await;
    assert_eq!(status, 201, "{link}");
    link["token"].as_str().unwrap().to_owned()
}

async fn subscribe(base: &str, review: &str, token: &str, body: Value) -> (u16, Value) {
    call(
        reqwest::Method::POST,
        format!("{base}/api/v1/reviews/{review}/subscriptions"),
        token,
        Some(body),
    )
    .await
}

/// Subscribes a webhook at `path` and tells the receiver its secret.
async fn webhook(base: &str, review: &str, token: &str, receiver: &Receiver, path: &str) -> String {
    let (status, made) = subscribe(
        base,
        review,
        token,
        json!({"kind": "webhook", "url": receiver.url(path)}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let secret = made["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{made}");
    receiver.set_secret(path, secret);
    made["id"].as_str().unwrap().to_owned()
}

async fn comment(base: &str, review: &str, token: &str, name: &str, version: u64) -> u64 {
    let (status, stored) = call(
        reqwest::Method::PUT,
        format!("{base}/api/v1/reviews/{review}/comments"),
        token,
        Some(json!({"name": name, "version": version, "data": CONTENT, "sealed": SEALED})),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    stored["seq"].as_u64().unwrap()
}

/// Every request's body and headers, none of which may hold `secrets`.
fn assert_clean(lines: &[Value], secrets: &[&str]) {
    for line in lines {
        let text = line.to_string();
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "a delivery carries {secret:?}: {text}"
            );
        }
    }
}

// ---- the tests ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_are_signed_carry_no_content_are_retried_and_survive_a_crash() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let vars = [("PLANSHARE_NOTIFY_PRIVATE_TARGETS", "true")];
    let mut server = start_server(&data, "solo", &vars).await;
    let base = server.base.clone();
    let review = create_review(&base, None).await;
    let reviewer = add_link(&base, &review, "reviewer").await;
    let approver = add_link(&base, &review, "approver").await;

    // The owner hears of everything the others do; the reviewer of
    // versions and decisions only; an ntfy topic too.
    let owners = webhook(&base, &review.id, &review.owner, &receiver, "/ok-owner").await;
    let (status, reviewers) = subscribe(
        &base,
        &review.id,
        &reviewer,
        json!({"kind": "webhook", "url": receiver.url("/ok-reviewer"),
               "events": ["review.version", "review.decision"]}),
    )
    .await;
    assert_eq!(status, 201, "{reviewers}");
    receiver.set_secret("/ok-reviewer", reviewers["secret"].as_str().unwrap());
    let (status, topic) = subscribe(
        &base,
        &review.id,
        &review.owner,
        json!({"kind": "ntfy", "url": receiver.url("/ntfy-topic")}),
    )
    .await;
    assert_eq!(status, 201, "{topic}");
    assert!(
        topic.get("secret").is_none(),
        "an ntfy target has no secret: {topic}"
    );

    // Dana comments: the owner's two targets get it; her own does not.
    let seq = comment(&base, &review.id, &reviewer, "Dana", 1).await;
    let got = receiver.wait("/ok-owner", 1, Duration::from_secs(10)).await;
    let delivery = &got[0];
    assert_eq!(delivery["verified"], true, "{delivery}");
    let body: Value = serde_json::from_str(delivery["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["type"], "review.comment", "{body}");
    assert_eq!(body["data"]["review"], review.id.as_str());
    assert_eq!(body["data"]["seq"], seq);
    assert_eq!(
        body["data"]["writer"],
        json!({"role": "reviewer", "name": "Dana"})
    );
    assert_eq!(body["data"]["sealed"], SEALED);
    assert_eq!(
        body["data"]["url"].as_str().unwrap(),
        format!("{base}/r/{}", review.id),
        "the link names no key or token"
    );
    assert_eq!(
        delivery["id"].as_str().unwrap(),
        format!("msg_{}_{seq}_{owners}", review.id)
    );
    let pushed = receiver
        .wait("/ntfy-topic", 1, Duration::from_secs(10))
        .await;
    assert_eq!(pushed[0]["body"], "Dana commented on v1", "{:?}", pushed[0]);
    assert_eq!(
        pushed[0]["click"].as_str().unwrap(),
        format!("{base}/r/{}", review.id)
    );
    assert!(
        receiver.on("/ok-reviewer").is_empty(),
        "told of her own comment"
    );

    // The owner pushes v2: the reviewer hears of it.
    let (status, _) = call(
        reqwest::Method::POST,
        format!("{base}/api/v1/reviews/{}/versions", review.id),
        &review.owner,
        Some(json!({"data": CONTENT, "digest": digest(1), "parent": 1})),
    )
    .await;
    assert_eq!(status, 201);
    let got = receiver
        .wait("/ok-reviewer", 1, Duration::from_secs(10))
        .await;
    assert_eq!(got[0]["verified"], true, "{:?}", got[0]);
    assert!(
        got[0]["body"]
            .as_str()
            .unwrap()
            .contains(r#""type":"review.version""#)
    );

    // A receiver that fails once gets the same message again (same id),
    // within the first back-off step; both attempts are listed.
    let flaky = webhook(&base, &review.id, &review.owner, &receiver, "/fail-once").await;
    comment(&base, &review.id, &approver, "Ann", 2).await;
    let got = receiver
        .wait("/fail-once", 2, Duration::from_secs(20))
        .await;
    assert_eq!(got[0]["id"], got[1]["id"], "a retry keeps its webhook-id");
    assert!(got.iter().all(|g| g["verified"] == true), "{got:?}");
    let listed = wait_delivered(&base, &review, &flaky).await;
    let attempts = listed["deliveries"][0]["attempts"].as_array().unwrap();
    assert_eq!(attempts[0]["status"], 500, "{listed}");
    assert_eq!(attempts[1]["status"], 204, "{listed}");

    // SIGKILL while a delivery is under way (the receiver holds the first
    // attempt): after the restart it goes out again with the same id.
    let crash = webhook(&base, &review.id, &review.owner, &receiver, "/hang-once").await;
    comment(&base, &review.id, &approver, "Ann", 2).await;
    receiver
        .wait("/hang-once", 1, Duration::from_secs(10))
        .await;
    drop(server.process); // SIGKILL
    let log = server.log.clone();
    server = start_server(&data, "solo", &vars).await;
    let got = receiver
        .wait("/hang-once", 2, Duration::from_secs(10))
        .await;
    assert_eq!(got[0]["id"], got[1]["id"], "{got:?}");
    assert_eq!(got[1]["verified"], true);
    let _ = crash;

    // A receiver that hangs holds up nobody else: while its first attempt
    // is still waiting for an answer, the others get five comments.
    webhook(
        &base_of(&server),
        &review.id,
        &review.owner,
        &receiver,
        "/hang-forever",
    )
    .await;
    let started = receiver.on("/ok-owner").len();
    for _ in 0..5 {
        comment(&server.base, &review.id, &reviewer, "Dana", 2).await;
    }
    receiver
        .wait("/ok-owner", started + 5, Duration::from_secs(8))
        .await;
    assert_eq!(
        receiver.on("/hang-forever").len(),
        1,
        "the hanging target got one attempt and waits for its answer"
    );

    // A redirect is not followed; a 410 ends the subscription.
    webhook(
        &server.base,
        &review.id,
        &review.owner,
        &receiver,
        "/redirect",
    )
    .await;
    let gone = webhook(&server.base, &review.id, &review.owner, &receiver, "/gone").await;
    comment(&server.base, &review.id, &reviewer, "Dana", 2).await;
    receiver.wait("/gone", 1, Duration::from_secs(10)).await;
    receiver.wait("/redirect", 1, Duration::from_secs(10)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, list) = call(
            reqwest::Method::GET,
            format!("{}/api/v1/reviews/{}/subscriptions", server.base, review.id),
            &review.owner,
            None,
        )
        .await;
        let disabled = list["subscriptions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == gone.as_str() && s["disabledAt"].is_u64());
        if disabled {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "410 did not end the subscription: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        receiver.on("/ok-redirected").is_empty(),
        "a redirect was followed"
    );

    // Nothing sent held content, a token or a key; every webhook verified.
    let all = receiver.all();
    assert_clean(&all, &[CONTENT, &review.owner, &reviewer, &approver]);
    assert!(
        all.iter()
            .filter(|l| l["id"].is_string())
            .all(|l| l["verified"] == true),
        "{all:#?}"
    );
    // And the logs hold no secret either.
    server.process.terminate(Duration::from_secs(20)).await;
    let logs = std::fs::read_to_string(&log).unwrap();
    for secret in [CONTENT, review.owner.as_str(), reviewer.as_str(), "whsec_"] {
        assert!(!logs.contains(secret), "the log holds {secret:?}");
    }
}

fn base_of(server: &Server) -> String {
    server.base.clone()
}

/// Waits until the subscription's newest delivery is delivered; its list.
async fn wait_delivered(base: &str, review: &Review, sid: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, listed) = call(
            reqwest::Method::GET,
            format!(
                "{base}/api/v1/reviews/{}/subscriptions/{sid}/deliveries",
                review.id
            ),
            &review.owner,
            None,
        )
        .await;
        assert_eq!(status, 200, "{listed}");
        if listed["deliveries"][0]["state"] == "delivered" {
            return listed;
        }
        assert!(Instant::now() < deadline, "not delivered: {listed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_are_refused_at_subscribe_time_unless_the_tenant_allows_private_ones() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let server = start_server(&data, "strict", &[]).await;
    let base = &server.base;
    let review = create_review(base, None).await;
    let reviewer = add_link(base, &review, "reviewer").await;
    for url in [
        "http://127.0.0.1:9/hook",
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://10.1.2.3/hook",
        "https://192.168.0.10/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/hook",
        "https://[fe80::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://2130706433/hook",
        "https://user:password@hooks.example.com/hook",
        "ftp://hooks.example.com/hook",
    ] {
        let (status, answer) = subscribe(
            base,
            &review.id,
            &reviewer,
            json!({"kind": "webhook", "url": url}),
        )
        .await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (422, Some("target-not-allowed")),
            "{url}: {answer}"
        );
    }
    // Bad input: a clear 4xx, nothing stored.
    for (body, code) in [
        (
            json!({"kind": "email", "url": "https://example.com"}),
            "invalid-field",
        ),
        (
            json!({"kind": "webhook", "url": "https://example.com", "events": []}),
            "invalid-field",
        ),
        (
            json!({"kind": "webhook", "url": "https://example.com", "events": ["review.nope"]}),
            "invalid-field",
        ),
        (json!({"kind": "webhook"}), "invalid-json"),
    ] {
        let (status, answer) = subscribe(base, &review.id, &reviewer, body.clone()).await;
        assert!((400..500).contains(&status), "{body}: {status} {answer}");
        assert!(
            answer["code"].is_string() && answer["error"].is_string(),
            "{answer}"
        );
        let _ = code;
    }
    let (_, list) = call(
        reqwest::Method::GET,
        format!("{base}/api/v1/reviews/{}/subscriptions", review.id),
        &review.owner,
        None,
    )
    .await;
    assert_eq!(
        list["subscriptions"],
        json!([]),
        "a refused target was stored"
    );

    // A tenant that allows private targets takes them; a reviewer sees only
    // its own subscriptions and cannot remove the owner's.
    let (status, tenant) = call(
        reqwest::Method::POST,
        format!("{base}/admin/v1/tenants"),
        ADMIN_TOKEN,
        Some(json!({"name": "LAN", "namespace": "lan", "settings": {"notify_private_targets": true}})),
    )
    .await;
    assert_eq!(status, 201, "{tenant}");
    assert_eq!(tenant["settings"]["notify_private_targets"], true);
    let (_, key) = call(
        reqwest::Method::POST,
        format!(
            "{base}/admin/v1/tenants/{}/keys",
            tenant["id"].as_str().unwrap()
        ),
        ADMIN_TOKEN,
        Some(json!({"name": "ci"})),
    )
    .await;
    let lan = create_review(base, key["key"].as_str()).await;
    let lan_reviewer = add_link(base, &lan, "reviewer").await;
    let (status, owners) = subscribe(
        base,
        &lan.id,
        &lan.owner,
        json!({"kind": "webhook", "url": "http://127.0.0.1:9/hook"}),
    )
    .await;
    assert_eq!(status, 201, "{owners}");
    let (status, mine) = subscribe(
        base,
        &lan.id,
        &lan_reviewer,
        json!({"kind": "ntfy", "url": "http://192.168.1.20/topic"}),
    )
    .await;
    assert_eq!(status, 201, "{mine}");
    let (_, seen) = call(
        reqwest::Method::GET,
        format!("{base}/api/v1/reviews/{}/subscriptions", lan.id),
        &lan_reviewer,
        None,
    )
    .await;
    assert_eq!(seen["subscriptions"].as_array().unwrap().len(), 1, "{seen}");
    let (status, refused) = call(
        reqwest::Method::DELETE,
        format!(
            "{base}/api/v1/reviews/{}/subscriptions/{}",
            lan.id,
            owners["id"].as_str().unwrap()
        ),
        &lan_reviewer,
        None,
    )
    .await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (404, Some("subscription-not-found"))
    );
    let (status, _) = call(
        reqwest::Method::DELETE,
        format!(
            "{base}/api/v1/reviews/{}/subscriptions/{}",
            lan.id,
            mine["id"].as_str().unwrap()
        ),
        &lan.owner,
        None,
    )
    .await;
    assert_eq!(status, 204, "the owner removes any");
}

/// Three replicas on one PostgreSQL database and one fs store: every event
/// is delivered, and none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_deliver_each_notification_once() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let Some(db) = tenancy::conformance::env::postgres().await else {
        return;
    };
    let url = db.config.url.clone();
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let mut replicas = Vec::new();
    for name in ["replica-a", "replica-b", "replica-c"] {
        replicas.push(
            start_server(
                &data,
                name,
                &[
                    ("PLANSHARE_NOTIFY_PRIVATE_TARGETS", "true"),
                    ("PLANSHARE_DATABASE_URL", &url),
                ],
            )
            .await,
        );
    }
    let review = create_review(&replicas[0].base, None).await;
    let reviewer = add_link(&replicas[0].base, &review, "reviewer").await;
    for (n, replica) in replicas.iter().enumerate() {
        webhook(
            &replica.base,
            &review.id,
            &review.owner,
            &receiver,
            &format!("/ok-{n}"),
        )
        .await;
    }
    let comments = 30;
    for i in 0..comments {
        comment(&replicas[i % 3].base, &review.id, &reviewer, "Dana", 1).await;
    }
    for n in 0..3 {
        let got = receiver
            .wait(&format!("/ok-{n}"), comments, Duration::from_secs(30))
            .await;
        let mut ids: Vec<&str> = got.iter().map(|g| g["id"].as_str().unwrap()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), comments, "/ok-{n}: each event once");
        assert!(got.iter().all(|g| g["verified"] == true));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for n in 0..3 {
        assert_eq!(
            receiver.on(&format!("/ok-{n}")).len(),
            comments,
            "/ok-{n}: a notification was delivered twice"
        );
    }
    for mut r in replicas {
        r.process.terminate(Duration::from_secs(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_is_the_owners_and_must_be_to_come() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let server = start_server(&data, "deadlines", &[]).await;
    let base = &server.base;
    let review = create_review(base, None).await;
    let reviewer = add_link(base, &review, "reviewer").await;
    let url = format!("{base}/api/v1/reviews/{}/deadline", review.id);
    let now = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let soon = now + 3_600_000;
    for (body, status, code) in [
        (json!({"deadline": now - 1_000}), 422, "invalid-field"),
        (
            json!({"deadline": now + 400 * 86_400_000_u64}),
            422,
            "invalid-field",
        ),
        (
            json!({"deadline": soon, "remindEvery": 10}),
            422,
            "invalid-field",
        ),
        (json!({"deadline": soon, "when": 1}), 422, "unknown-field"),
    ] {
        let (got, answer) = call(
            reqwest::Method::PUT,
            url.clone(),
            &review.owner,
            Some(body.clone()),
        )
        .await;
        assert_eq!(
            (got, answer["code"].as_str()),
            (status, Some(code)),
            "{body}: {answer}"
        );
    }
    let (got, answer) = call(
        reqwest::Method::PUT,
        url.clone(),
        &reviewer,
        Some(json!({"deadline": soon})),
    )
    .await;
    assert_eq!(
        (got, answer["code"].as_str()),
        (403, Some("owner-only")),
        "{answer}"
    );
    let (got, answer) = call(
        reqwest::Method::PUT,
        url.clone(),
        &review.owner,
        Some(json!({"deadline": soon, "remindEvery": 3600})),
    )
    .await;
    assert_eq!(got, 200, "{answer}");
    let view_url = format!("{base}/api/v1/reviews/{}", review.id);
    let (_, view) = call(reqwest::Method::GET, view_url.clone(), &reviewer, None).await;
    assert_eq!(
        (view["deadline"].as_u64(), view["remindEvery"].as_u64()),
        (Some(soon), Some(3600))
    );
    let (got, _) = call(reqwest::Method::PUT, url, &review.owner, Some(json!({}))).await;
    assert_eq!(got, 200);
    let (_, view) = call(reqwest::Method::GET, view_url, &reviewer, None).await;
    assert!(
        view.get("deadline").is_none() && view.get("remindEvery").is_none(),
        "{view}"
    );
}

/// A sealed preview that is not base64url, or too long, is refused with a
/// clear 4xx, and the write it came with stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_preview_is_refused_and_stores_nothing() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let server = start_server(&data, "previews", &[]).await;
    let base = &server.base;
    let review = create_review(base, None).await;
    let reviewer = add_link(base, &review, "reviewer").await;
    for sealed in [
        json!("not base64!"),
        json!("A".repeat(1025)),
        json!(""),
        json!(7),
    ] {
        let (status, answer) = call(
            reqwest::Method::PUT,
            format!("{base}/api/v1/reviews/{}/comments", review.id),
            &reviewer,
            Some(json!({"name": "Dana", "version": 1, "data": CONTENT, "sealed": sealed})),
        )
        .await;
        assert!((400..500).contains(&status), "{sealed}: {status} {answer}");
        assert!(
            answer["code"].is_string() && answer["error"].is_string(),
            "{answer}"
        );
        let (status, answer) = call(
            reqwest::Method::POST,
            format!("{base}/api/v1/reviews/{}/decision", review.id),
            &review.owner,
            Some(json!({"decision": "approved", "version": 1, "sealed": sealed})),
        )
        .await;
        assert!((400..500).contains(&status), "{sealed}: {status} {answer}");
    }
    let (_, view) = call(
        reqwest::Method::GET,
        format!("{base}/api/v1/reviews/{}", review.id),
        &reviewer,
        None,
    )
    .await;
    assert_eq!(view["comments"], json!([]), "{view}");
    assert_eq!(view["state"], "open", "{view}");
}
