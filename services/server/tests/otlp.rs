//! OpenTelemetry export: the real binary runs with `PLANSHARE_OTLP_ENDPOINT`
//! pointing at a collector stand-in (an axum server recording
//! `POST /v1/traces`, OTLP/HTTP JSON). After requests and a SIGTERM (which
//! flushes the exporter) the stand-in must hold one `request` span per
//! request with the route template, method, status and tenant id, and no
//! secret or payload anywhere.

#![allow(clippy::unwrap_used)]

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use serde_json::Value;

const ADMIN_TOKEN: &str = "otlp-admin-token-Hk3Pq9Zr";
const PAYLOAD: &str = "otlp-secret-payload-Vb7Nc2";

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Everything posted to the collector stand-in.
type Posted = Arc<Mutex<Vec<String>>>;

/// The collector stand-in: every body posted to `/v1/traces`, and the
/// `Authorization` header of every post (empty when there was none).
async fn collector() -> (String, Posted, Posted) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let authorizations = Arc::new(Mutex::new(Vec::new()));
    let (recorded, auths) = (bodies.clone(), authorizations.clone());
    let app = Router::new().route(
        "/v1/traces",
        post(move |headers: axum::http::HeaderMap, body: String| {
            let (recorded, auths) = (recorded.clone(), auths.clone());
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                auths.lock().unwrap().push(auth.to_owned());
                recorded.lock().unwrap().push(body);
                "{}"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, bodies, authorizations)
}

/// Attribute `key` of an OTLP JSON span, as a string.
fn attribute(span: &Value, key: &str) -> Option<String> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| {
            let value = &a["value"];
            match (&value["stringValue"], &value["intValue"]) {
                (Value::String(s), _) => s.clone(),
                (_, Value::String(s)) => s.clone(),
                (_, v) if !v.is_null() => v.to_string(),
                _ => value.to_string(),
            }
        })
}

fn spans(bodies: &[String]) -> Vec<Value> {
    let mut spans = Vec::new();
    for body in bodies {
        let doc: Value = serde_json::from_str(body).unwrap();
        for resource in doc["resourceSpans"].as_array().unwrap() {
            for scope in resource["scopeSpans"].as_array().unwrap() {
                spans.extend(scope["spans"].as_array().unwrap().iter().cloned());
            }
        }
    }
    spans
}

#[tokio::test(flavor = "multi_thread")]
async fn request_spans_reach_the_collector_without_secrets() {
    let (collector_url, bodies, authorizations) = collector().await;
    let data = tempfile::tempdir().unwrap();
    let port = testkit::free_port();
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_planshare-server"))
            .env_clear()
            .env("PLANSHARE_HOST", "127.0.0.1")
            .env("PLANSHARE_PORT", port.to_string())
            .env("PLANSHARE_DATA_DIR", data.path())
            .env("PLANSHARE_LOG", "info")
            .env("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("PLANSHARE_OTLP_ENDPOINT", &collector_url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = client.get(format!("{base}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        assert!(Instant::now() < deadline, "the server did not become ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A tenant and its key, then a keyed create, read and delete.
    let admin = |path: &str| {
        client
            .post(format!("{base}/admin/v1{path}"))
            .bearer_auth(ADMIN_TOKEN)
    };
    let tenant: Value = admin("/tenants")
        .json(&serde_json::json!({"name": "Otlp", "namespace": "otlp"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tenant_id = tenant["id"].as_str().unwrap().to_owned();
    let key: Value = admin(&format!("/tenants/{tenant_id}/keys"))
        .json(&serde_json::json!({"name": "ci"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = key["key"].as_str().unwrap().to_owned();
    let created = client
        .post(format!("{base}/api/v1/pastes"))
        .bearer_auth(&key)
        .json(&serde_json::json!({"data": PAYLOAD}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let delete_token = created["deleteToken"].as_str().unwrap().to_owned();
    let read = client
        .get(format!("{base}/api/v1/pastes/{id}"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    let deleted = client
        .delete(format!("{base}/api/v1/pastes/{id}"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);

    // SIGTERM: the server drains, then flushes the exporter and exits.
    let pid = child.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the server did not exit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let bodies = bodies.lock().unwrap().clone();
    assert!(!bodies.is_empty(), "no spans were exported");
    assert!(
        authorizations.lock().unwrap().iter().all(String::is_empty),
        "an endpoint without credentials sends none"
    );
    let all = bodies.concat();
    for secret in [ADMIN_TOKEN, key.as_str(), delete_token.as_str(), PAYLOAD] {
        assert!(!all.contains(secret), "a secret reached the collector");
    }
    assert!(
        !all.contains(&id),
        "a paste id (path) reached the collector"
    );
    let requests: Vec<Value> = spans(&bodies)
        .into_iter()
        .filter(|s| s["name"] == "request")
        .collect();
    let find = |route: &str, method: &str, status: &str| {
        requests.iter().find(|s| {
            attribute(s, "http.route").as_deref() == Some(route)
                && attribute(s, "http.method").as_deref() == Some(method)
                && attribute(s, "http.response.status_code").as_deref() == Some(status)
        })
    };
    let create = find("/api/v1/pastes", "POST", "201").unwrap_or_else(|| panic!("{all}"));
    assert_eq!(
        attribute(create, "tenant.id").as_deref(),
        Some(tenant_id.as_str())
    );
    assert!(attribute(create, "duration_ms").is_some());
    assert!(find("/api/v1/pastes/{id}", "GET", "200").is_some(), "{all}");
    assert!(
        find("/api/v1/pastes/{id}", "DELETE", "204").is_some(),
        "{all}"
    );
    let readyz = find("/readyz", "GET", "200");
    assert!(readyz.is_some(), "{all}");
}

/// A collector URL with a password in it: `check-config` and the start-up
/// log line name the endpoint with the password redacted, the password
/// appears nowhere in a trace-level log, and the credentials reach the
/// collector as an `Authorization: Basic` header.
#[tokio::test(flavor = "multi_thread")]
async fn a_password_in_the_endpoint_is_never_printed() {
    const PASSWORD: &str = "otlp-pass-Qz8Wm4";
    let (collector_url, bodies, authorizations) = collector().await;
    let endpoint = collector_url.replacen("http://", &format!("http://user:{PASSWORD}@"), 1);

    let checked = Command::new(env!("CARGO_BIN_EXE_planshare-server"))
        .arg("check-config")
        .env_clear()
        .env("PLANSHARE_DATA_DIR", "/nonexistent/planshare")
        .env("PLANSHARE_OTLP_ENDPOINT", &endpoint)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "check-config failed: {checked:?}");
    assert!(
        printed.contains("otlp_endpoint = \"http://user:<redacted>@"),
        "{printed}"
    );
    assert!(
        !printed.contains(PASSWORD),
        "check-config printed the password"
    );
    assert!(!String::from_utf8_lossy(&checked.stderr).contains(PASSWORD));

    let data = tempfile::tempdir().unwrap();
    let log_path = data.path().join("server.log");
    let port = testkit::free_port();
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_planshare-server"))
            .env_clear()
            .env("PLANSHARE_HOST", "127.0.0.1")
            .env("PLANSHARE_PORT", port.to_string())
            .env("PLANSHARE_DATA_DIR", data.path())
            .env("PLANSHARE_LOG", "trace")
            .env("PLANSHARE_OTLP_ENDPOINT", &endpoint)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = client.get(format!("{base}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        assert!(Instant::now() < deadline, "the server did not become ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = child.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the server did not exit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let log = std::fs::read_to_string(&log_path).unwrap();
    let start_up = log
        .lines()
        .find(|l| l.contains("exporting traces over OTLP/HTTP"))
        .unwrap_or_else(|| panic!("no start-up line for the exporter:\n{log}"));
    assert!(
        start_up.contains("http://user:<redacted>@127.0.0.1:"),
        "{start_up}"
    );
    assert!(
        !log.contains(PASSWORD),
        "the password is in the log:\n{log}"
    );
    assert!(
        !bodies.lock().unwrap().is_empty(),
        "no spans reached the collector"
    );
    use base64::Engine as _;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("user:{PASSWORD}"))
    );
    let authorizations = authorizations.lock().unwrap().clone();
    assert!(
        authorizations.iter().all(|a| *a == basic),
        "{authorizations:?}"
    );
}
