//! Regressions of the outside attack on the running server (issue 22): each
//! test fails on the build that was attacked.

use reqwest::Method;
use serde_json::{Value, json};
use testkit::TestApp;

/// `POST /api/v1/pastes` anonymously on the default tenant.
async fn create_v1(app: &TestApp, body: &Value) -> Value {
    let response = app
        .client
        .post(app.url("/api/v1/pastes"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    response.json().await.unwrap()
}

/// A link preview (`HEAD`) does not burn a burn-after-read paste: it sees
/// what a read would see, and the paste stays for its one reader.
#[tokio::test]
async fn head_leaves_a_burn_after_read_paste_for_its_reader() {
    let app = TestApp::spawn(&[]).await;
    let created = create_v1(
        &app,
        &json!({"data": "read me once", "burnAfterRead": true}),
    )
    .await;
    let path = format!("/api/v1/pastes/{}", created["id"].as_str().unwrap());
    for _ in 0..3 {
        let head = app
            .client
            .request(Method::HEAD, app.url(&path))
            .send()
            .await
            .unwrap();
        assert_eq!(head.status(), 200, "HEAD of an unread paste");
        assert_eq!(head.headers()["cache-control"], "private, no-store");
    }
    let read = app.get_path(&path).await;
    assert_eq!(read.status(), 200, "the HEADs burnt the paste");
    let body: Value = read.json().await.unwrap();
    assert_eq!(body["data"], "read me once");
    // Burnt now: both methods say so.
    assert_eq!(app.get_path(&path).await.status(), 404);
    let head = app
        .client
        .request(Method::HEAD, app.url(&path))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 404, "HEAD of a burnt paste");
}
