//! Prometheus `/metrics`: where it is served (the admin listener; the main
//! listener only behind the admin token), and that its counts go up by
//! exactly the requests made, per route template, method and status; store
//! operations and failures by backend and operation; 429s by limiter.
//!
//! The recorder is process-wide, so the tests of this binary take turns
//! ([`SERIAL`]) and compare scrapes taken before and after.

#![allow(clippy::unwrap_used)]

use reqwest::StatusCode;
use testkit::TestApp;
use tokio::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::const_new(());

const ADMIN_TOKEN: &str = "metrics-admin-token-Zq8wX3";

/// The sum of the samples of `name` whose labels include all of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
            if metric != name {
                return None;
            }
            let rest = rest.strip_suffix('}')?;
            let all = labels
                .iter()
                .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
            all.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

/// The headers every API answer carries (`/metrics` included).
fn assert_security_headers(headers: &reqwest::header::HeaderMap, what: &str) {
    assert_eq!(headers["x-content-type-options"], "nosniff", "{what}");
    assert_eq!(headers["referrer-policy"], "no-referrer", "{what}");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("default-src 'none'"), "{what}: {csp}");
}

async fn scrape(app: &TestApp) -> String {
    let url = format!("{}/metrics", app.admin_url.as_deref().unwrap());
    let response = app.client.get(url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_security_headers(response.headers(), "scrape of the admin listener");
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    response.text().await.unwrap()
}

/// `after - before` of one series.
fn delta(before: &str, after: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    sample(after, name, labels) - sample(before, name, labels)
}

const REQUESTS: &str = "planshare_http_requests_total";
const DURATION_COUNT: &str = "planshare_http_request_duration_seconds_count";
const RATE_LIMITED: &str = "planshare_rate_limited_total";

#[tokio::test]
async fn request_counts_go_up_by_exactly_the_requests_made() {
    let _turn = SERIAL.lock().await;
    let app = TestApp::spawn(&[
        ("PLANSHARE_ADMIN_ADDR", "127.0.0.1:0"),
        ("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN),
    ])
    .await;
    let before = scrape(&app).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(
            app.create_ok("metrics-payload").await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    for id in &ids[..2] {
        assert_eq!(app.get(id).await.status(), StatusCode::OK);
    }
    assert_eq!(
        app.get("AAAAAAAAAAAAAAAA").await.status(),
        StatusCode::NOT_FOUND
    );
    let unmatched = app
        .client
        .get(app.url("/no/such/route/123"))
        .send()
        .await
        .unwrap();
    assert_eq!(unmatched.status(), StatusCode::NOT_FOUND);
    // The public listener has no /metrics while the admin listener exists.
    let public = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(public.status(), StatusCode::NOT_FOUND);
    let after = scrape(&app).await;

    let count = |labels: &[(&str, &str)]| delta(&before, &after, REQUESTS, labels);
    let post = [
        ("route", "/api/paste"),
        ("method", "POST"),
        ("status", "201"),
    ];
    assert_eq!(count(&post), 3.0, "{after}");
    let get_ok = [
        ("route", "/api/paste/{id}"),
        ("method", "GET"),
        ("status", "200"),
    ];
    assert_eq!(count(&get_ok), 2.0);
    let get_404 = [
        ("route", "/api/paste/{id}"),
        ("method", "GET"),
        ("status", "404"),
    ];
    assert_eq!(count(&get_404), 1.0);
    // The unknown path and the public /metrics.
    let unknown = [("route", "unmatched"), ("method", "GET"), ("status", "404")];
    assert_eq!(count(&unknown), 2.0);
    // The first scrape, counted once it was answered (the second one is
    // counted after it renders).
    let scrapes = [("route", "/metrics"), ("method", "GET"), ("status", "200")];
    assert_eq!(count(&scrapes), 1.0);
    // Nothing else was counted, and no path with an id became a route.
    assert_eq!(count(&[]), 9.0);
    assert!(!after.contains(&ids[0]), "a paste id in the metrics");
    let durations = [
        ("route", "/api/paste"),
        ("method", "POST"),
        ("status_class", "2xx"),
    ];
    assert_eq!(delta(&before, &after, DURATION_COUNT, &durations), 3.0);
    assert!(after.contains("planshare_http_request_duration_seconds_bucket{"));

    let store = |operation: &str, outcome: &str| {
        let labels = [("operation", operation), ("outcome", outcome)];
        delta(&before, &after, "planshare_store_operations_total", &labels)
    };
    assert_eq!(store("put", "ok"), 3.0);
    assert_eq!(store("get", "ok"), 2.0);
    assert_eq!(store("get", "not_found"), 1.0);
    let backend = format!("{:?}", app.settings.store.kind).to_lowercase();
    let labels = [("backend", backend.as_str()), ("operation", "put")];
    let latency = "planshare_store_operation_duration_seconds_count";
    assert_eq!(delta(&before, &after, latency, &labels), 3.0);
    app.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_main_listener_serves_metrics_only_with_the_admin_token() {
    let _turn = SERIAL.lock().await;
    let app = TestApp::spawn(&[("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN)]).await;
    let url = app.url("/metrics");
    let anonymous = app.client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.headers()["www-authenticate"], "Bearer");
    assert_security_headers(anonymous.headers(), "401");
    let body: serde_json::Value = anonymous.json().await.unwrap();
    assert_eq!(body["code"], "unauthorized", "{body}");
    // Like every other path: OPTIONS is a 204 preflight, other methods 405.
    let options = app
        .client
        .request(reqwest::Method::OPTIONS, &url)
        .send()
        .await
        .unwrap();
    assert_eq!(options.status(), StatusCode::NO_CONTENT);
    assert_security_headers(options.headers(), "OPTIONS");
    let post = app
        .client
        .post(&url)
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.headers()["allow"], "GET, HEAD");
    assert_security_headers(post.headers(), "405");
    let wrong = app
        .client
        .get(&url)
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    // The admin API's gate: a token of the right length but wrong is a 401
    // like any other, a tenant API key a 403.
    let same_length = "x".repeat(ADMIN_TOKEN.len());
    let wrong = app
        .client
        .get(&url)
        .bearer_auth(&same_length)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let tenant_key = tenancy::ApiKey::generate().unwrap();
    let forbidden = app
        .client
        .get(&url)
        .bearer_auth(tenant_key.expose_secret())
        .send()
        .await
        .unwrap();
    assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);
    let body: serde_json::Value = forbidden.json().await.unwrap();
    assert_eq!(body["code"], "forbidden", "{body}");
    app.create_ok("x").await;
    let right = app
        .client
        .get(&url)
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), StatusCode::OK);
    assert_security_headers(right.headers(), "200");
    let text = right.text().await.unwrap();
    assert!(text.contains("planshare_http_requests_total{"), "{text}");
    assert!(!text.contains(ADMIN_TOKEN));
    // Per-tenant usage from the catalog (the default tenant at least).
    assert!(text.contains("planshare_tenants "), "{text}");
    assert!(text.contains("planshare_tenant_stored_pastes{tenant=\"tnt_default\"}"));
    app.shutdown().await.unwrap();

    // Without an admin token there is no /metrics on the public listener.
    let app = TestApp::spawn(&[]).await;
    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    app.shutdown().await.unwrap();
}

#[tokio::test]
async fn rate_limited_requests_are_counted_by_limiter() {
    let _turn = SERIAL.lock().await;
    let vars = [
        ("PLANSHARE_RATE_LIMITS", "on"),
        ("PLANSHARE_ADMIN_ADDR", "127.0.0.1:0"),
        ("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN),
    ];
    let app = TestApp::spawn_configured(&vars, |s| {
        s.limits.ip_per_sec = 1;
        s.limits.ip_burst = 2;
    })
    .await;
    let before = scrape(&app).await;
    let mut refused = 0.0;
    for _ in 0..5 {
        if app.create("x").await.status() == StatusCode::TOO_MANY_REQUESTS {
            refused += 1.0;
        }
    }
    let after = scrape(&app).await;
    assert!(refused >= 2.0, "the per-IP limiter refused {refused} of 5");
    let ip = delta(&before, &after, RATE_LIMITED, &[("limiter", "ip")]);
    assert_eq!(ip, refused);
    let post_429 = [("route", "/api/paste"), ("status", "429")];
    assert_eq!(delta(&before, &after, REQUESTS, &post_429), refused);
    app.shutdown().await.unwrap();

    // Bad keys: 401s until the failed-auth limiter refuses (the per-IP
    // limiter, at its defaults, stays out of the way).
    let app = TestApp::spawn(&vars).await;
    let before = scrape(&app).await;
    let mut auth_refused = 0.0;
    for _ in 0..14 {
        let response = app
            .client
            .get(app.url("/api/v1/pastes"))
            .bearer_auth("pst_live_not-a-real-key")
            .send()
            .await
            .unwrap();
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            auth_refused += 1.0;
        }
    }
    let after = scrape(&app).await;
    assert!(auth_refused >= 1.0, "the failed-auth limiter never refused");
    let failed_auth = delta(&before, &after, RATE_LIMITED, &[("limiter", "failed_auth")]);
    assert_eq!(failed_auth, auth_refused, "{after}");
    assert_eq!(
        delta(&before, &after, RATE_LIMITED, &[("limiter", "ip")]),
        0.0
    );
    app.shutdown().await.unwrap();

    // Reads of absent pastes: 404s until the not-found limiter refuses.
    let app = TestApp::spawn(&vars).await;
    let before = scrape(&app).await;
    let mut absent_refused = 0.0;
    for i in 0..34 {
        let status = app.get(&format!("AbsentAbsent{i:04}")).await.status();
        if status == StatusCode::TOO_MANY_REQUESTS {
            absent_refused += 1.0;
        } else {
            assert_eq!(status, StatusCode::NOT_FOUND);
        }
    }
    let after = scrape(&app).await;
    assert!(absent_refused >= 1.0, "the not-found limiter never refused");
    let not_found = delta(&before, &after, RATE_LIMITED, &[("limiter", "not_found")]);
    assert_eq!(not_found, absent_refused, "{after}");

    // A tenant key over its own rate: refused by the per-key limiter.
    let admin = app.admin_url.clone().unwrap();
    let tenant: serde_json::Value = app
        .client
        .post(format!("{admin}/admin/v1/tenants"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&serde_json::json!({
            "name": "metered", "namespace": "metered",
            "settings": {"rate_per_sec": 1, "rate_burst": 2}
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key: serde_json::Value = app
        .client
        .post(format!(
            "{admin}/admin/v1/tenants/{}/keys",
            tenant["id"].as_str().unwrap()
        ))
        .bearer_auth(ADMIN_TOKEN)
        .json(&serde_json::json!({"name": "k"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = key["key"].as_str().unwrap();
    let before = scrape(&app).await;
    let mut key_refused = 0.0;
    for _ in 0..6 {
        let status = app
            .client
            .get(app.url("/api/v1/pastes"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .status();
        if status == StatusCode::TOO_MANY_REQUESTS {
            key_refused += 1.0;
        } else {
            assert_eq!(status, StatusCode::OK);
        }
    }
    let after = scrape(&app).await;
    assert!(
        key_refused >= 3.0,
        "the per-key limiter refused {key_refused} of 6"
    );
    assert_eq!(
        delta(&before, &after, RATE_LIMITED, &[("limiter", "key")]),
        key_refused,
        "{after}"
    );
    app.shutdown().await.unwrap();
}

#[tokio::test]
async fn store_failures_are_counted_by_operation() {
    let _turn = SERIAL.lock().await;
    let app = TestApp::spawn(&[
        ("PLANSHARE_STORE", "fs"),
        ("PLANSHARE_ADMIN_ADDR", "127.0.0.1:0"),
    ])
    .await;
    let before = scrape(&app).await;
    // The store's directory becomes a file: every write fails.
    let dir = app.settings.store.fs.path.clone();
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, b"not a directory").unwrap();
    let response = app.create("x").await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let after = scrape(&app).await;
    let errors = [
        ("backend", "fs"),
        ("operation", "put"),
        ("kind", "unavailable"),
    ];
    let failed = delta(&before, &after, "planshare_store_errors_total", &errors);
    assert!(failed >= 1.0, "{after}");
    let unavailable = [("operation", "put"), ("outcome", "unavailable")];
    let ops = delta(
        &before,
        &after,
        "planshare_store_operations_total",
        &unavailable,
    );
    assert_eq!(ops, failed);
    let status = [("route", "/api/paste"), ("status", "503")];
    assert_eq!(delta(&before, &after, REQUESTS, &status), 1.0);
    let _ = std::fs::remove_file(&dir);
    app.shutdown().await.unwrap();
}

/// Review streams are counted while open, and each event written to one.
#[tokio::test]
async fn review_streams_and_their_events_are_counted() {
    let _turn = SERIAL.lock().await;
    let app = TestApp::spawn(&[
        ("PLANSHARE_ADMIN_ADDR", "127.0.0.1:0"),
        ("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN),
    ])
    .await;
    let created: serde_json::Value = app
        .client
        .post(app.url("/api/v1/reviews"))
        .json(&serde_json::json!({"version": {"data": "v1", "digest": "d".repeat(43)}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let events = format!("/api/v1/reviews/{}/events", created["id"].as_str().unwrap());
    let owner = created["ownerToken"].as_str().unwrap();
    let before = scrape(&app).await;
    let mut stream = app
        .client
        .get(app.url(&events))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    // The retry hint, then the backlog's one event (the first version).
    let mut text = String::new();
    while !text.contains("event: version") {
        let chunk = stream.chunk().await.unwrap().unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let during = scrape(&app).await;
    assert_eq!(
        delta(&before, &during, "planshare_review_streams_open", &[]),
        1.0
    );
    assert_eq!(
        delta(&before, &during, "planshare_review_events_sent_total", &[]),
        1.0
    );
    drop(stream);
    // A long poll counts the events of its page.
    let page = app
        .client
        .get(app.url(&format!("{events}?after=0&wait=0")))
        .bearer_auth(owner)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let after = scrape(&app).await;
    assert_eq!(
        delta(&during, &after, "planshare_review_events_sent_total", &[]),
        1.0
    );
}
