//! Secrets never reach the log: the real
//! `planshare-server` binary runs as a child process with
//! `PLANSHARE_LOG=trace` (and no `RUST_LOG`), its stdout and stderr going to
//! a file; the test creates a tenant and two keys through the admin API,
//! uses the keys and delete tokens on every paste route, presents a revoked
//! key, a key with a bad checksum, an unknown key, a key in the query string,
//! a wrong admin token and a tenant key on the admin API, stops the server
//! with SIGTERM and searches the whole log for every secret it handled: each
//! full key, each key's 43-character secret part, each delete token and the
//! admin token. None may appear, while the log must show the requests.
//!
//! Runs on the default SQLite catalog (pretty and JSON log formats) and,
//! when `PLANSHARE_TEST_DATABASE_URL` is set, with the catalog on a fresh
//! PostgreSQL database.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use reqwest::{Client, Method, RequestBuilder};
use serde_json::{Value, json};
use tenancy::ApiKey;
use testkit::ChildServer;

const ADMIN_TOKEN: &str = "logs-admin-token-7Qx2vN9kR4mW8zT1";

/// The server as a child process (killed if the test ends early).
struct Running {
    process: ChildServer,
    base: String,
}

impl Running {
    /// SIGTERM, then waits (10 s at most) for a graceful exit; whether it
    /// exited.
    async fn stop(&mut self) -> bool {
        self.process.terminate(Duration::from_secs(10)).await
    }
}

/// Starts the binary on `port` with its log in `log`, and waits for `/readyz`.
async fn start(data: &Path, log: &Path, port: u16, format: &str, catalog: Option<&str>) -> Running {
    let file = std::fs::File::create(log).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_planshare-server"));
    command
        .env_clear()
        .env("PLANSHARE_HOST", "127.0.0.1")
        .env("PLANSHARE_PORT", port.to_string())
        .env("PLANSHARE_DATA_DIR", data)
        .env("PLANSHARE_LOG", "trace")
        .env("PLANSHARE_LOG_FORMAT", format)
        .env("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN)
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file);
    if let Some(url) = catalog {
        command.env("PLANSHARE_DATABASE_URL", url);
    }
    let running = Running {
        process: ChildServer::spawn(&mut command),
        base: format!("http://127.0.0.1:{port}"),
    };
    assert!(
        testkit::wait_ready(&running.base, Duration::from_secs(20)).await,
        "the server did not become ready; its log:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    running
}

/// A small client of the running server.
struct Api {
    client: Client,
    base: String,
}

impl Api {
    fn request(&self, method: Method, path: &str, bearer: Option<&str>) -> RequestBuilder {
        let request = self.client.request(method, format!("{}{path}", self.base));
        match bearer {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Sends, asserts the status, returns the JSON body (`Null` if empty).
    async fn expect(&self, request: RequestBuilder, status: u16, what: &str) -> Value {
        let response = request.send().await.unwrap();
        let got = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(got, status, "{what}: {text}");
        if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap()
        }
    }

    async fn create_v1(&self, key: Option<&str>, data: &str) -> (String, String) {
        let body = self
            .expect(
                self.request(Method::POST, "/api/v1/pastes", key)
                    .header("content-type", "application/json")
                    .body(json!({ "data": data }).to_string()),
                201,
                "v1 create",
            )
            .await;
        id_and_token(&body)
    }

    async fn create_compat(&self, data: &str) -> (String, String) {
        let body = self
            .expect(
                self.request(Method::POST, "/api/paste", None)
                    .header("content-type", "application/json")
                    .body(json!({ "data": data }).to_string()),
                201,
                "compat create",
            )
            .await;
        id_and_token(&body)
    }
}

fn id_and_token(created: &Value) -> (String, String) {
    (
        created["id"].as_str().unwrap().to_owned(),
        created["deleteToken"].as_str().unwrap().to_owned(),
    )
}

/// The part of a key between `pst_live_` and its last `_` (the secret).
fn secret_part(key: &str) -> &str {
    let body = key.strip_prefix("pst_live_").unwrap();
    &body[..body.rfind('_').unwrap()]
}

/// `key` with a wrong last checksum character.
fn bad_checksum(key: &str) -> String {
    let last = if key.ends_with('A') { "B" } else { "A" };
    format!("{}{last}", &key[..key.len() - 1])
}

/// Drives every route that handles a secret; returns the secrets used.
async fn exercise(api: &Api) -> Vec<(String, String)> {
    let mut secrets: Vec<(String, String)> = vec![("admin token".into(), ADMIN_TOKEN.into())];
    let admin = Some(ADMIN_TOKEN);

    let tenant = api
        .expect(
            api.request(Method::POST, "/admin/v1/tenants", admin)
                .header("content-type", "application/json")
                .body(
                    json!({"name": "Logs", "namespace": "logs",
                           "settings": {"hosts": ["logs.example"]}})
                    .to_string(),
                ),
            201,
            "create tenant",
        )
        .await;
    let tenant = tenant["id"].as_str().unwrap().to_owned();
    let mut keys = Vec::new();
    for n in 1..=2 {
        let created = api
            .expect(
                api.request(
                    Method::POST,
                    &format!("/admin/v1/tenants/{tenant}/keys"),
                    admin,
                )
                .header("content-type", "application/json")
                .body(json!({"name": format!("key {n}")}).to_string()),
                201,
                "create key",
            )
            .await;
        let key = created["key"].as_str().unwrap().to_owned();
        let key_id = created["id"].as_str().unwrap().to_owned();
        assert!(key.starts_with("pst_live_"), "{key}");
        secrets.push((format!("key {n}"), key.clone()));
        secrets.push((format!("secret of key {n}"), secret_part(&key).to_owned()));
        keys.push((key, key_id));
    }
    let (key1, key2) = (keys[0].0.as_str(), keys[1].0.as_str());
    api.expect(
        api.request(
            Method::GET,
            &format!("/admin/v1/tenants/{tenant}/keys"),
            admin,
        ),
        200,
        "list keys",
    )
    .await;

    // Key 1 on every v1 route.
    let (p1, t1) = api.create_v1(Some(key1), "first").await;
    secrets.push(("delete token 1".into(), t1));
    api.expect(
        api.request(Method::GET, "/api/v1/pastes", Some(key1)),
        200,
        "list",
    )
    .await;
    api.expect(
        api.request(Method::GET, &format!("/api/v1/pastes/{p1}"), Some(key1)),
        200,
        "get",
    )
    .await;
    api.expect(
        api.request(Method::DELETE, &format!("/api/v1/pastes/{p1}"), Some(key1)),
        204,
        "delete by key",
    )
    .await;

    // Delete tokens: of a v1 create (key 2), presented on the tenant's host
    // (without a key a request is for its host's tenant), and of a compat
    // create on the default tenant.
    let (p2, t2) = api.create_v1(Some(key2), "second").await;
    secrets.push(("delete token 2".into(), t2.clone()));
    api.expect(
        api.request(Method::DELETE, &format!("/api/v1/pastes/{p2}"), Some(&t2))
            .header("host", "logs.example"),
        204,
        "v1 delete by token",
    )
    .await;
    let (p3, t3) = api.create_compat("third").await;
    secrets.push(("delete token 3".into(), t3.clone()));
    api.expect(
        api.request(Method::GET, &format!("/api/paste/{p3}"), None),
        200,
        "compat get",
    )
    .await;
    api.expect(
        api.request(Method::DELETE, &format!("/api/paste/{p3}"), Some(&t3)),
        204,
        "compat delete by token",
    )
    .await;
    let (p4, t4) = api.create_compat("fourth").await;
    let wrong = bad_checksum(&t4);
    secrets.push(("delete token 4".into(), t4));
    secrets.push(("a wrong delete token".into(), wrong.clone()));
    api.expect(
        api.request(Method::DELETE, &format!("/api/paste/{p4}"), Some(&wrong)),
        404,
        "delete with a wrong token",
    )
    .await;

    // Refused keys: revoked, bad checksum, unknown, in the URL, on /admin.
    api.expect(
        api.request(
            Method::DELETE,
            &format!("/admin/v1/tenants/{tenant}/keys/{}", keys[1].1),
            admin,
        ),
        204,
        "revoke key 2",
    )
    .await;
    api.expect(
        api.request(Method::GET, "/api/v1/pastes", Some(key2)),
        401,
        "revoked key",
    )
    .await;
    let bad = bad_checksum(key1);
    secrets.push(("a key with a bad checksum".into(), bad.clone()));
    api.expect(
        api.request(Method::GET, "/api/v1/pastes", Some(&bad)),
        401,
        "bad checksum",
    )
    .await;
    let unknown = ApiKey::generate().unwrap().expose_secret().to_owned();
    secrets.push(("an unknown key".into(), unknown.clone()));
    secrets.push(("its secret".into(), secret_part(&unknown).to_owned()));
    api.expect(
        api.request(Method::GET, "/api/v1/pastes", Some(&unknown)),
        401,
        "unknown key",
    )
    .await;
    api.expect(
        api.request(Method::GET, &format!("/api/v1/pastes?api_key={key1}"), None),
        401,
        "key in the query string",
    )
    .await;
    api.expect(
        api.request(Method::GET, "/admin/v1/tenants", Some(key1)),
        403,
        "tenant key on the admin API",
    )
    .await;
    secrets.extend(exercise_reviews(api).await);
    let wrong_admin = format!("{ADMIN_TOKEN}-not");
    secrets.push(("a wrong admin token".into(), wrong_admin.clone()));
    api.expect(
        api.request(Method::GET, "/admin/v1/tenants", Some(&wrong_admin)),
        401,
        "wrong admin token",
    )
    .await;
    secrets
}

/// Drives every review route with the owner's and a reviewer's tokens (a
/// live stream included), a revoked token and a wrong one; returns them.
async fn exercise_reviews(api: &Api) -> Vec<(String, String)> {
    let json_body = |body: Value| body.to_string();
    let created = api
        .expect(
            api.request(Method::POST, "/api/v1/reviews", None)
                .header("content-type", "application/json")
                .body(json_body(
                    json!({"version": {"data": "review-v1", "digest": "d".repeat(43)}}),
                )),
            201,
            "review create",
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let owner = created["ownerToken"].as_str().unwrap().to_owned();
    let path = |rest: &str| format!("/api/v1/reviews/{id}{rest}");
    let link = api
        .expect(
            api.request(Method::POST, &path("/links"), Some(&owner))
                .header("content-type", "application/json")
                .body("{}"),
            201,
            "review link",
        )
        .await;
    let reviewer = link["token"].as_str().unwrap().to_owned();
    let second = api
        .expect(
            api.request(Method::POST, &path("/links"), Some(&owner))
                .header("content-type", "application/json")
                .body("{}"),
            201,
            "second review link",
        )
        .await;
    let revoked = second["token"].as_str().unwrap().to_owned();
    // A stream open while the changes happen (its frames carry no token).
    let mut stream = api
        .request(Method::GET, &path("/events"), Some(&reviewer))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    api.expect(
        api.request(Method::PUT, &path("/comments"), Some(&reviewer))
            .header("content-type", "application/json")
            .body(json_body(
                json!({"name": "rev", "version": 1, "data": "set"}),
            )),
        200,
        "review comments",
    )
    .await;
    api.expect(
        api.request(Method::POST, &path("/versions"), Some(&owner))
            .header("content-type", "application/json")
            .body(json_body(
                json!({"data": "review-v2", "digest": "e".repeat(43), "parent": 1}),
            )),
        201,
        "review push",
    )
    .await;
    api.expect(
        api.request(Method::GET, &path("/versions/2"), Some(&reviewer)),
        200,
        "version read",
    )
    .await;
    api.expect(
        api.request(Method::GET, &path(""), Some(&owner)),
        200,
        "review read",
    )
    .await;
    let second_id = second["id"].as_str().unwrap();
    api.expect(
        api.request(
            Method::DELETE,
            &path(&format!("/links/{second_id}")),
            Some(&owner),
        ),
        204,
        "revoke",
    )
    .await;
    api.expect(
        api.request(Method::GET, &path(""), Some(&revoked)),
        404,
        "revoked token",
    )
    .await;
    let wrong = "W".repeat(43);
    api.expect(
        api.request(Method::GET, &path(""), Some(&wrong)),
        404,
        "wrong review token",
    )
    .await;
    api.expect(
        api.request(Method::GET, &path("/events?after=0&wait=0"), Some(&owner))
            .header("accept", "application/json"),
        200,
        "long poll",
    )
    .await;
    api.expect(
        api.request(Method::POST, &path("/decision"), Some(&owner))
            .header("content-type", "application/json")
            .body(json_body(json!({"decision": "approved", "version": 2}))),
        200,
        "decision",
    )
    .await;
    // The stream saw the changes and none of the tokens.
    let mut frames = String::new();
    while !frames.contains("event: decision") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        frames.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    drop(stream);
    for token in [&owner, &reviewer, &revoked] {
        assert!(
            !frames.contains(token.as_str()),
            "a token in an event frame"
        );
    }
    api.expect(
        api.request(Method::DELETE, &path(""), Some(&owner)),
        204,
        "review delete",
    )
    .await;
    vec![
        ("a review owner token".into(), owner),
        ("a reviewer token".into(), reviewer),
        ("a revoked reviewer token".into(), revoked),
        ("a wrong review token".into(), wrong),
    ]
}

/// Runs the server with `format` logs (and `catalog`), exercises it, stops
/// it and checks its log.
async fn no_secret_in_the_log(format: &str, catalog: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log: PathBuf = logs.path().join("server.log");
    let port = testkit::free_port();
    let mut server = start(data.path(), &log, port, format, catalog).await;
    // No idle connections are kept: a connection the server has accepted but
    // that never sends a byte holds a graceful shutdown up to the first-byte
    // timeout (10 s), and the client is dropped before the SIGTERM.
    let api = Api {
        client: Client::builder().pool_max_idle_per_host(0).build().unwrap(),
        base: server.base.clone(),
    };
    let secrets = exercise(&api).await;
    drop(api);
    let exited = server.stop().await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        exited,
        "the server did not exit within 10 s of SIGTERM; its log ends:\n{}",
        tail(&text, 30)
    );

    // The log is real: request lines at info, rejections at debug, trace on.
    let (created, unauthorized) = match format {
        "json" => (r#""status":201"#, r#""status":401"#),
        _ => ("status=201", "status=401"),
    };
    for marker in [
        "request",
        created,
        unauthorized,
        "request rejected",
        "admin request denied",
        "authentication failed",
    ] {
        assert!(text.contains(marker), "{marker:?} not in the log:\n{text}");
    }
    assert!(
        text.lines().count() >= 20,
        "a short log ({} lines):\n{text}",
        text.lines().count()
    );

    let leaked: Vec<&str> = secrets
        .iter()
        .filter(|(_, secret)| text.contains(secret.as_str()))
        .map(|(what, _)| what.as_str())
        .collect();
    assert!(
        leaked.is_empty(),
        "secrets in the log: {leaked:?}\n--- log ---\n{text}"
    );
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_token_or_admin_secret_reaches_a_trace_log_on_sqlite() {
    no_secret_in_the_log("pretty", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_token_or_admin_secret_reaches_a_json_trace_log() {
    no_secret_in_the_log("json", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_token_or_admin_secret_reaches_a_trace_log_on_postgres() {
    // Skips (says so on stderr) when PLANSHARE_TEST_DATABASE_URL is not set.
    let Some(db) = tenancy::conformance::env::postgres().await else {
        return;
    };
    no_secret_in_the_log("pretty", Some(&db.config.url)).await;
    drop(db);
}
