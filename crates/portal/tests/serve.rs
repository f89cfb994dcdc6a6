//! The portal router: SPA routes, content-hashed immutable assets with
//! pre-compressed variants and ETags, `/config.json`, and the security
//! headers on every answer.

#![allow(clippy::unwrap_used)]

use axum::body::Body;
use http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use portal::{PortalConfig, router};
use tower::ServiceExt as _;

async fn get(
    config: &PortalConfig,
    path: &str,
    headers: &[(&str, &str)],
) -> http::Response<Vec<u8>> {
    let mut request = Request::get(path);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = router(config)
        .unwrap()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes().to_vec();
    http::Response::from_parts(parts, bytes)
}

fn header<'a>(response: &'a http::Response<Vec<u8>>, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

fn assert_secured(response: &http::Response<Vec<u8>>, what: &str) {
    let csp = header(response, "content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "object-src 'none'",
        "form-action 'none'",
        "require-trusted-types-for 'script'",
    ] {
        assert!(
            csp.contains(directive),
            "{what}: {directive} missing in {csp}"
        );
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{what}: {csp}"
    );
    assert_eq!(header(response, "referrer-policy"), "no-referrer", "{what}");
    assert_eq!(
        header(response, "x-content-type-options"),
        "nosniff",
        "{what}"
    );
}

#[tokio::test]
async fn the_app_is_served_at_the_root_and_at_short_and_review_link_paths() {
    let config = PortalConfig::default();
    for path in ["/", "/p/AbCdEf12", "/p/whatever", "/r/AbCdEf12AbCdEf12"] {
        let response = get(&config, path, &[]).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(
            header(&response, "content-type"),
            "text/html; charset=utf-8"
        );
        assert_eq!(header(&response, "cache-control"), "no-cache", "{path}");
        assert!(header(&response, "etag").starts_with('"'), "{path}");
        assert_secured(&response, path);
        let html = String::from_utf8(response.body().clone()).unwrap();
        assert!(!html.contains("{{"), "placeholders replaced");
        assert!(!html.contains("<script>"), "no inline script");
    }
}

#[tokio::test]
async fn the_icon_answers_at_favicon_ico_where_browsers_ask() {
    let config = PortalConfig::default();
    let response = get(&config, "/favicon.ico", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "content-type"), "image/svg+xml");
    assert!(String::from_utf8_lossy(response.body()).starts_with("<svg"));
    assert_secured(&response, "/favicon.ico");
}

#[tokio::test]
async fn assets_have_hashed_names_are_immutable_and_precompressed() {
    let config = PortalConfig::default();
    let html = String::from_utf8(get(&config, "/", &[]).await.into_body()).unwrap();
    let assets: Vec<&str> = html
        .split('"')
        .filter(|s| s.starts_with("/assets/"))
        .collect();
    // The script, the stylesheets (app, highlight), the icon, and a module
    // preload for each module the script imports statically; the QR
    // encoder is imported on demand only.
    let styles = assets.iter().filter(|a| a.ends_with(".css")).count();
    let icons = assets.iter().filter(|a| a.ends_with(".svg")).count();
    let preloads = html
        .matches(r#"<link rel="modulepreload" href="/assets/"#)
        .count();
    assert_eq!(styles, 2, "{assets:?}");
    assert!(html.contains(r#"<script type="module" src="/assets/app."#));
    assert!(preloads >= 10, "{preloads} preloads: {assets:?}");
    assert_eq!(icons, 1, "{assets:?}");
    assert_eq!(assets.len(), styles + icons + preloads + 1, "{assets:?}");
    assert!(!html.contains("/assets/qrcode."), "{assets:?}");
    for path in assets {
        let plain = get(&config, path, &[]).await;
        assert_eq!(plain.status(), StatusCode::OK, "{path}");
        assert_eq!(
            header(&plain, "cache-control"),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(header(&plain, "content-encoding"), "");
        assert_secured(&plain, path);
        let br = get(&config, path, &[("accept-encoding", "gzip, deflate, br")]).await;
        assert_eq!(header(&br, "content-encoding"), "br", "{path}");
        assert!(
            br.body().len() < plain.body().len(),
            "{path}: brotli is smaller"
        );
        let gz = get(&config, path, &[("accept-encoding", "gzip")]).await;
        assert_eq!(header(&gz, "content-encoding"), "gzip", "{path}");
        assert!(header(&gz, "vary").contains("Accept-Encoding"));
        let etag = header(&plain, "etag").to_owned();
        let again = get(&config, path, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.body().is_empty());
    }
    let missing = get(&config, "/assets/app.0000000000.js", &[]).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_secured(&missing, "missing asset");
}

#[tokio::test]
async fn config_json_tells_the_app_its_apis_and_connect_src_allows_them() {
    let config = PortalConfig {
        paste_api_url: "https://paste.example.com".into(),
        allowed_paste_apis: vec!["https://other.example.org/base".into()],
        share_base_url: "https://share.example.com".into(),
        callback_origins: vec!["https://bot.example.net/hooks".into()],
        ..PortalConfig::default()
    };
    let response = get(&config, "/config.json", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "cache-control"), "no-cache");
    assert!(header(&response, "content-type").starts_with("application/json"));
    let json: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "pasteApiUrl": "https://paste.example.com",
            "allowedPasteApis": ["https://other.example.org/base"],
            "shareBaseUrl": "https://share.example.com",
            "callbackOrigins": ["https://bot.example.net"],
        })
    );
    let csp = header(&response, "content-security-policy");
    assert!(
        csp.contains(
            "connect-src 'self' https://paste.example.com https://other.example.org \
             https://bot.example.net;"
        ),
        "{csp}"
    );
    assert_eq!(
        header(&response, header::X_CONTENT_TYPE_OPTIONS.as_str()),
        "nosniff"
    );
}

#[test]
fn a_bad_paste_api_is_refused_when_the_router_is_built() {
    let config = PortalConfig {
        paste_api_url: "javascript:alert(1)".into(),
        ..PortalConfig::default()
    };
    assert!(
        router(&config)
            .unwrap_err()
            .contains("portal.paste_api_url")
    );
}
