//! The share portal on the server's own origin: `/` and `/p/{id}` serve the
//! app to browser navigations (`Accept: text/html`) with the portal's CSP,
//! while API clients keep upstream's generic 404 there and on every other
//! unknown path; `PLANSHARE_PORTAL=off` removes it.

use testkit::TestApp;

const ROUTE_NOT_FOUND: &str =
    r#"{"error":"Not found. Valid paths: POST /api/paste, GET /api/paste/:id"}"#;

#[tokio::test]
async fn the_portal_shares_the_origin_and_leaves_other_paths_alone() {
    let app = TestApp::spawn(&[]).await;
    let navigate = |path: &str| {
        app.client
            .get(app.url(path))
            .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
            .send()
    };
    for path in ["/", "/p/AbCdEf12"] {
        // An API client (no HTML in Accept) sees upstream's answer.
        let api = app.get_path(path).await;
        assert_eq!(api.status(), 404, "{path}");
        assert_eq!(api.text().await.unwrap(), ROUTE_NOT_FOUND);
        let page = navigate(path).await.unwrap();
        assert!(page.headers()["vary"].to_str().unwrap().contains("Accept"));
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

    let posted = app
        .client
        .post(app.url("/config.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 404, "other methods reach the API");
    assert_eq!(posted.text().await.unwrap(), ROUTE_NOT_FOUND);

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
    let root = app
        .client
        .get(app.url("/"))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(root.status(), 404);
    assert_eq!(root.text().await.unwrap(), ROUTE_NOT_FOUND);
}
