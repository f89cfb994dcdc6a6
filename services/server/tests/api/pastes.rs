//! Creating and reading pastes: round trips, expiry, ids, CORS.

use std::time::Duration;

use testkit::TestApp;

#[tokio::test]
async fn any_text_round_trips_byte_for_byte() {
    let app = TestApp::spawn(&[]).await;
    let samples = [
        "Xc6xCsJAEATQX1kmhc0h2KYTbbRRUEmRpDiSlRy57IW7jSLiv4umEKznzTBPjMiR0W4YPQ8satUFoaO3UkklWUYn5ZF".to_owned(),
        "AA==".to_owned(),
        "not base64: ✓ 🚀 \u{2028} \"quoted\" \\ \n\t".to_owned(),
        "a".repeat(100 * 1024),
        "x".to_owned(),
    ];
    for data in samples {
        let created = app.create_ok(&data).await;
        let response = app.get(created["id"].as_str().unwrap()).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["cache-control"], "private, no-store");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["data"].as_str().unwrap(), data);
    }
}

#[tokio::test]
async fn create_returns_a_16_char_id_a_delete_token_and_the_expiry() {
    let app = TestApp::spawn(&[]).await;
    let before = paste_store::now_ms();
    let created = app.create_ok("abc").await;
    let id = created["id"].as_str().unwrap();
    assert_eq!(id.len(), 16);
    assert!(id.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert_eq!(created["deleteToken"].as_str().unwrap().len(), 43);
    let expires = created["expiresAt"].as_u64().unwrap();
    let week = 7 * 86_400_000;
    assert!(expires >= before + week && expires <= paste_store::now_ms() + week);
}

#[tokio::test]
async fn the_id_length_is_configurable() {
    let app = TestApp::spawn(&[("PLANSHARE_ID_LENGTH", "8")]).await;
    let created = app.create_ok("abc").await;
    assert_eq!(created["id"].as_str().unwrap().len(), 8);
}

#[tokio::test]
async fn concurrent_creates_get_distinct_ids_and_all_read_back() {
    let app = std::sync::Arc::new(TestApp::spawn(&[]).await);
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                let data = format!("paste{i}");
                let created = app.create_ok(&data).await;
                (created["id"].as_str().unwrap().to_owned(), data)
            })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let (id, data) = task.await.unwrap();
        let body: serde_json::Value = app.get(&id).await.json().await.unwrap();
        assert_eq!(body["data"], data);
        assert!(ids.insert(id));
    }
}

#[tokio::test]
async fn pastes_expire_after_their_ttl() {
    let app = TestApp::spawn(&[("PLANSHARE_TTL_SECS", "1")]).await;
    let created = app.create_ok("short-lived").await;
    let id = created["id"].as_str().unwrap();
    assert_eq!(app.get(id).await.status(), 200);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let response = app.get(id).await;
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.text().await.unwrap(),
        r#"{"error":"Paste not found or expired"}"#
    );
}

#[tokio::test]
async fn a_ttl_of_zero_days_expires_at_once_as_upstream() {
    let app = TestApp::spawn(&[("PASTE_TTL_DAYS", "0")]).await;
    let created = app.create_ok("gone").await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(app.get(created["id"].as_str().unwrap()).await.status(), 404);
}

#[tokio::test]
async fn cors_echoes_allowed_origins_only_and_always_varies_on_origin() {
    let app = TestApp::spawn(&[("PASTE_ALLOWED_ORIGINS", "https://plans.example.com")]).await;
    let cases = [
        (
            Some("https://plans.example.com"),
            Some("https://plans.example.com"),
        ),
        (Some("http://localhost:5173"), Some("http://localhost:5173")),
        (Some("https://evil.example"), None),
        (Some("https://plans.example.com.evil.com"), None),
        (Some("http://127.0.0.1:3000"), None),
        (Some("null"), None),
        (None, None),
    ];
    for (origin, allowed) in cases {
        let mut request = app
            .client
            .post(app.url("/api/paste"))
            .body(r#"{"data":"abc"}"#);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let response = request.send().await.unwrap();
        // Upstream runs the request either way; the browser enforces.
        assert_eq!(response.status(), 201, "{origin:?}");
        let acao = response
            .headers()
            .get("access-control-allow-origin")
            .map(|v| v.to_str().unwrap());
        assert_eq!(acao, allowed, "{origin:?}");
        assert_eq!(response.headers()["vary"], "Origin");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    }
}

#[tokio::test]
async fn uploads_beyond_the_body_memory_budget_are_shed_with_503() {
    let app = TestApp::spawn_configured(&[], |s| s.http.body_memory_mib = 1).await;
    let response = app.create(&"a".repeat(2 * 1024 * 1024)).await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains(r#""code":"overloaded""#)
    );
    // The reservation was returned: smaller uploads go through.
    for _ in 0..5 {
        app.create_ok(&"a".repeat(512 * 1024)).await;
    }
}

/// Payloads are compressed already: a read is never compressed again,
/// whatever the client accepts (browsers and load generators ask for gzip).
#[tokio::test]
async fn reads_are_sent_as_stored_whatever_the_client_accepts() {
    let app = TestApp::spawn(&[]).await;
    let text = "q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg".repeat(200);
    let id = app.create_ok(&text).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for accept in ["gzip", "br", "gzip, deflate, br, zstd", "*"] {
        let response = app
            .client
            .get(app.url(&format!("/api/paste/{id}")))
            .header("accept-encoding", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers().get("content-encoding"), None, "{accept}");
        let body = response.bytes().await.unwrap();
        assert_eq!(
            body,
            format!(r#"{{"data":"{text}"}}"#).as_bytes(),
            "{accept}"
        );
    }
}
