//! The OpenAPI document: the committed `openapi/openapi.json` is the one the
//! code generates, it describes every route the server answers, and the
//! server serves it (and the reference page) itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;
use testkit::TestApp;

const REGENERATE: &str = "cargo run -q -p planshare-server -- openapi > openapi/openapi.json";
const ROUTE_NOT_FOUND: &str = "Not found. Valid paths: POST /api/paste, GET /api/paste/:id";
const ADMIN_TOKEN: &str = "openapi-test-admin-token-0123456789";

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../openapi/openapi.json")
}

#[test]
fn the_committed_document_is_the_generated_one() {
    let generated = paste_api::openapi_json();
    let committed = std::fs::read_to_string(committed_path()).unwrap_or_default();
    if committed != generated {
        let first_difference = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "one is a prefix of the other".to_owned(),
                |i| format!("first difference at line {}", i + 1),
            );
        panic!(
            "openapi/openapi.json is out of date ({first_difference}); regenerate it from the \
             workspace root with:\n\n    {REGENERATE}\n"
        );
    }
}

/// Every method and path of the router (the table in `router/mod.rs`), no more
/// and no less.
#[test]
fn the_document_lists_every_route() {
    let doc: Value = serde_json::from_str(&paste_api::openapi_json()).unwrap();
    let mut operations: Vec<String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    operations.sort();
    let mut expected = vec![
        "POST /api/paste",
        "GET /api/paste/{id}",
        "DELETE /api/paste/{id}",
        "GET /api/v1/pastes",
        "POST /api/v1/pastes",
        "GET /api/v1/pastes/{id}",
        "DELETE /api/v1/pastes/{id}",
        "GET /healthz",
        "GET /readyz",
        "GET /api/openapi.json",
        "GET /admin/v1/tenants",
        "POST /admin/v1/tenants",
        "GET /admin/v1/tenants/{id}",
        "PATCH /admin/v1/tenants/{id}",
        "DELETE /admin/v1/tenants/{id}",
        "POST /admin/v1/tenants/{id}/disable",
        "POST /admin/v1/tenants/{id}/enable",
        "GET /admin/v1/tenants/{id}/keys",
        "POST /admin/v1/tenants/{id}/keys",
        "DELETE /admin/v1/tenants/{id}/keys/{key_id}",
        "GET /admin/v1/tenants/{id}/usage",
        "POST /api/v1/reviews",
        "GET /api/v1/reviews/{id}",
        "DELETE /api/v1/reviews/{id}",
        "POST /api/v1/reviews/{id}/versions",
        "GET /api/v1/reviews/{id}/versions/{n}",
        "POST /api/v1/reviews/{id}/links",
        "DELETE /api/v1/reviews/{id}/links/{link}",
        "PUT /api/v1/reviews/{id}/comments",
        "DELETE /api/v1/reviews/{id}/comments",
        "POST /api/v1/reviews/{id}/decision",
        "GET /api/v1/reviews/{id}/events",
        "PUT /api/v1/reviews/{id}/deadline",
        "POST /api/v1/reviews/{id}/subscriptions",
        "GET /api/v1/reviews/{id}/subscriptions",
        "DELETE /api/v1/reviews/{id}/subscriptions/{sid}",
        "GET /api/v1/reviews/{id}/subscriptions/{sid}/deliveries",
        "GET /api/v1/discovery",
        "GET /.well-known/planshare",
    ];
    expected.sort_unstable();
    assert_eq!(operations, expected);
    // Every operation answers its errors with the shared body and says who
    // may call it.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            assert!(op["operationId"].is_string(), "{method} {path}");
            if path.starts_with("/admin/") {
                assert_eq!(op["security"][0]["adminToken"], Value::Array(vec![]));
                assert!(op["responses"]["401"].is_object(), "{method} {path}");
            }
            if path.starts_with("/api/") && path != "/api/openapi.json" {
                assert!(op["responses"]["429"].is_object(), "{method} {path}");
                assert!(op["responses"]["503"].is_object(), "{method} {path}");
            }
        }
    }
}

/// Requests each documented operation on a live server (admin API on):
/// none falls through to the generic 404 or a 405.
#[tokio::test]
async fn every_documented_operation_is_served() {
    let app = TestApp::spawn_configured(&[("PLANSHARE_RATE_LIMITS", "off")], |s| {
        s.admin.token = ADMIN_TOKEN.into()
    })
    .await;
    let doc: Value = serde_json::from_str(&paste_api::openapi_json()).unwrap();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path
            .replace("{id}", "AbCdEfGh12345678")
            .replace("{key_id}", "AbCdEfGh12345678");
        for method in item.as_object().unwrap().keys() {
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let mut request = app.client.request(method.clone(), app.url(&concrete));
            if concrete.starts_with("/admin/") {
                request = request.bearer_auth(ADMIN_TOKEN);
            }
            if method == reqwest::Method::POST || method == reqwest::Method::PATCH {
                request = request
                    .header("content-type", "application/json")
                    .body("{}");
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body = response.text().await.unwrap();
            assert_ne!(status, 405, "{method} {concrete}: {body}");
            assert!(
                !body.contains(ROUTE_NOT_FOUND),
                "{method} {concrete} fell through to the generic 404"
            );
        }
    }
    app.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_server_serves_the_document_and_the_reference_page() {
    let app = TestApp::spawn(&[]).await;
    let response = app
        .client
        .get(app.url("/api/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/json;charset=utf-8"
    );
    assert_eq!(response.text().await.unwrap(), paste_api::openapi_json());

    // The page and its assets are built in, with a CSP of their own that
    // names no other origin.
    let page = app.client.get(app.url("/api/docs/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("http"), "{csp}");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    assert!(html.contains("swagger-ui-bundle.js"), "{html}");
    let init = app
        .client
        .get(app.url("/api/docs/swagger-initializer.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(init.status(), 200);
    let init = init.text().await.unwrap();
    assert!(init.contains("/api/openapi.json"), "{init}");
    for asset in ["swagger-ui-bundle.js", "swagger-ui.css"] {
        let r = app
            .client
            .get(app.url(&format!("/api/docs/{asset}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{asset}");
    }
    // The API's own responses keep their strict policy.
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(
        health.headers()["content-security-policy"],
        "default-src 'none'; frame-ancestors 'none'; sandbox"
    );
    app.shutdown().await.unwrap();
}
