//! `GET /api/v1/discovery` (and `/.well-known/planshare`): unauthenticated,
//! cacheable, CORS like any other GET, and naming the portal: this origin
//! (`""`) by default, `PLANSHARE_SHARE_BASE_URL` when set, `null` with the
//! portal off.

use serde_json::{Value, json};
use testkit::TestApp;

async fn discovery(app: &TestApp, path: &str) -> (reqwest::header::HeaderMap, Value) {
    let response = app
        .client
        .get(app.url(path))
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    let headers = response.headers().clone();
    (headers, response.json().await.unwrap())
}

#[tokio::test]
async fn discovery_names_the_server_its_api_and_its_portal() {
    let app = TestApp::spawn(&[]).await;
    let (headers, body) = discovery(&app, "/api/v1/discovery").await;
    assert_eq!(
        body,
        json!({
            "service": "planshare",
            "version": env!("CARGO_PKG_VERSION"),
            "api": "/api/v1",
            "reviews": true,
            "portal": "",
        })
    );
    assert_eq!(headers["cache-control"], "public, max-age=300");
    assert_eq!(headers["content-type"], "application/json;charset=utf-8");
    assert_eq!(
        headers["access-control-allow-origin"], "http://localhost:5173",
        "CORS as for other GETs"
    );
    // The well-known path answers the same.
    let (headers, well_known) = discovery(&app, "/.well-known/planshare").await;
    assert_eq!(well_known, body);
    assert_eq!(headers["cache-control"], "public, max-age=300");
    // No credentials needed, and a wrong one changes nothing.
    let with_bearer = app
        .client
        .get(app.url("/api/v1/discovery"))
        .bearer_auth("pst_live_not-a-key")
        .send()
        .await
        .unwrap();
    assert_eq!(with_bearer.status(), 200);
    // Another method: 405 with `Allow`.
    let posted = app
        .client
        .post(app.url("/api/v1/discovery"))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 405);
    assert_eq!(posted.headers()["allow"], "GET, HEAD");
    app.shutdown().await.unwrap();
}

#[tokio::test]
async fn discovery_names_a_configured_portal_or_none() {
    let app = TestApp::spawn(&[("PLANSHARE_SHARE_BASE_URL", "https://share.example/")]).await;
    let (_, body) = discovery(&app, "/api/v1/discovery").await;
    assert_eq!(body["portal"], "https://share.example");
    app.shutdown().await.unwrap();

    let app = TestApp::spawn(&[("PLANSHARE_PORTAL", "off")]).await;
    let (_, body) = discovery(&app, "/api/v1/discovery").await;
    assert_eq!(body["portal"], Value::Null);
    assert!(body.as_object().unwrap().contains_key("portal"), "{body}");
    assert_eq!(body["reviews"], true);
    app.shutdown().await.unwrap();
}
