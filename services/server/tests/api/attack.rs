//! Regressions of the outside attack on the running server (issue 22): each
//! test fails on the build that was attacked.

use reqwest::Method;
use serde_json::{Value, json};
use testkit::TestApp;
use testkit::raw;

use crate::tenants_support as ts;

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

/// RFC 9112 §3.2: two `Host` headers are a 400, not "the first one wins"
/// (which would pick a tenant by it).
#[tokio::test]
async fn two_host_headers_are_a_bad_request() {
    let app = TestApp::spawn(&[]).await;
    let created = app.create_ok("hosted").await;
    let id = created["id"].as_str().unwrap();
    let request = format!(
        "GET /api/paste/{id} HTTP/1.1\r\nHost: localhost\r\nHost: other.example\r\nConnection: close\r\n\r\n"
    );
    let response = raw::send(app.addr, request.as_bytes()).await;
    assert_eq!(response.status, 400, "{response:?}");
    let body: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(body["code"], "bad-request", "{body}");
    assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
    // One Host is served as ever.
    let request =
        format!("GET /api/paste/{id} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(raw::send(app.addr, request.as_bytes()).await.status, 200);
}

/// RFC 9112 §6.1: a transfer coding the server does not implement is a 501,
/// not a body read as plain chunked; nothing is stored.
#[tokio::test]
async fn transfer_codings_other_than_chunked_are_refused() {
    let app = TestApp::spawn(&[]).await;
    let body = r#"{"data":"abc"}"#;
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    for coding in ["gzip, chunked", "chunked, chunked", "deflate,chunked"] {
        let request = format!(
            "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: {coding}\r\nConnection: close\r\n\r\n{chunked}"
        );
        let response = raw::send(app.addr, request.as_bytes()).await;
        // hyper itself refuses some of these with a bare 400; any 4xx/501
        // with no paste stored is right, and ours is the 501.
        assert!(
            response.status == 501 || response.status == 400,
            "{coding}: {response:?}"
        );
        if response.status == 501 {
            let json: Value = serde_json::from_str(&response.body).unwrap();
            assert_eq!(json["code"], "unsupported-transfer-coding", "{coding}");
        }
    }
    let request = format!(
        "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n{chunked}"
    );
    assert_eq!(
        raw::send(app.addr, request.as_bytes()).await.status,
        501,
        "gzip, chunked"
    );
    let request = format!(
        "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{chunked}"
    );
    assert_eq!(raw::send(app.addr, request.as_bytes()).await.status, 201);
}

/// RFC 9112 §3.2.2: a request in absolute form is for the target's host; its
/// `Host` header is ignored (it picked the tenant before).
#[tokio::test]
async fn an_absolute_form_target_picks_the_tenant_not_the_host_header() {
    let app = ts::spawn(ts::Db::Sqlite, &[], |_| {}).await;
    let t = ts::tenant(&app, "absform", json!({"allow_anonymous": true})).await;
    let id = ts::create_v1_ok(&app, &t.key, "the tenant's").await;
    let get = |target: String, host: &str| {
        format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    };
    let path = format!("/api/v1/pastes/{id}");
    // Origin form: the Host header decides.
    let r = raw::send(app.addr, get(path.clone(), &t.host).as_bytes()).await;
    assert_eq!(r.status, 200, "origin form at the tenant's host: {r:?}");
    // Absolute form: the target's host decides, whatever Host says.
    let target = format!("http://{}{path}", t.host);
    let r = raw::send(app.addr, get(target, "localhost").as_bytes()).await;
    assert_eq!(r.status, 200, "absolute form naming the tenant: {r:?}");
    let target = format!("http://localhost{path}");
    let r = raw::send(app.addr, get(target, &t.host).as_bytes()).await;
    assert_eq!(
        r.status, 404,
        "absolute form naming the default tenant: {r:?}"
    );
}
