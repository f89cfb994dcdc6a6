//! The share portal on the server's own origin: `/` and `/p/{id}` serve the
//! app with the portal's CSP; every other unknown path keeps upstream's
//! generic 404; `PLANSHARE_PORTAL=off` removes it.

use testkit::TestApp;

const ROUTE_NOT_FOUND: &str =
    r#"{"error":"Not found. Valid paths: POST /api/paste, GET /api/paste/:id"}"#;

#[tokio::test]
async fn the_portal_shares_the_origin_and_leaves_other_paths_alone() {
    let app = TestApp::spawn(&[]).await;
    for path in ["/", "/p/AbCdEf12"] {
        let page = app.get_path(path).await;
        assert_eq!(page.status(), 200, "{path}");
        let csp = page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert!(page.text().await.unwrap().contains("<!doctype html>"));
    }
    let config = app.get_path("/config.json").await;
    assert_eq!(config.status(), 200);
    let config: serde_json::Value = config.json().await.unwrap();
    assert_eq!(config["pasteApiUrl"], "");

    let other = app.get_path("/whatever/else").await;
    assert_eq!(other.status(), 404);
    assert_eq!(other.text().await.unwrap(), ROUTE_NOT_FOUND);
    // The API keeps its own headers.
    let created = app.create("abc").await;
    assert_eq!(created.status(), 201);
    assert_eq!(
        created.headers()["content-security-policy"],
        "default-src 'none'; frame-ancestors 'none'; sandbox"
    );
}

#[tokio::test]
async fn the_portal_can_be_turned_off() {
    let app = TestApp::spawn(&[("PLANSHARE_PORTAL", "off")]).await;
    let root = app.get_path("/").await;
    assert_eq!(root.status(), 404);
    assert_eq!(root.text().await.unwrap(), ROUTE_NOT_FOUND);
}
