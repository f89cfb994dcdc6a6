//! Bad input on every route gets a clear 4xx with an exact JSON body, never a
//! 5xx, and changes nothing stored; on the compat routes the body is
//! upstream's own (`docs/wire-format.md`, "Paste API compatibility").

use testkit::TestApp;
use testkit::raw;

const ROUTE_404: &str =
    r#"{"error":"Not found. Valid paths: POST /api/paste, GET /api/paste/:id"}"#;
const INVALID_JSON: &str = r#"{"error":"Invalid JSON body"}"#;
const MISSING_DATA: &str = r#"{"error":"Missing or invalid \"data\" field"}"#;

fn count_files(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            if e.path().is_dir() {
                count_files(&e.path())
            } else {
                1
            }
        })
        .sum()
}

fn post(body: &[u8], content_type: Option<&str>) -> Vec<u8> {
    let mut request = format!(
        "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(ct) = content_type {
        request.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

#[tokio::test]
async fn malformed_create_bodies_get_upstreams_400s_and_store_nothing() {
    let app = TestApp::spawn(&[]).await;
    let kept = app.create_ok("Xc6xCsJAEATQ").await;
    let files_before = count_files(&app.store_dir());

    let utf16: Vec<u8> = "{\"data\":\"a\"}"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty body", b"".to_vec(), INVALID_JSON),
        (
            "truncated object",
            br#"{"data":"abc""#.to_vec(),
            INVALID_JSON,
        ),
        (
            "trailing garbage",
            br#"{"data":"abc"}x"#.to_vec(),
            INVALID_JSON,
        ),
        ("NaN", b"NaN".to_vec(), INVALID_JSON),
        (
            "BOM prefix",
            b"\xef\xbb\xbf{\"data\":\"abc\"}".to_vec(),
            INVALID_JSON,
        ),
        ("UTF-16 body", utf16, INVALID_JSON),
        (
            "invalid UTF-8 in data",
            b"{\"data\":\"\xff\xfe\"}".to_vec(),
            INVALID_JSON,
        ),
        (
            "lone surrogate",
            br#"{"data":"\ud800"}"#.to_vec(),
            INVALID_JSON,
        ),
        // Valid JSON (JSON.parse takes it too), just without `data`; parsed without recursion.
        (
            "deep nesting",
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
            MISSING_DATA,
        ),
        ("single quotes", b"{'data':'abc'}".to_vec(), INVALID_JSON),
        ("null", b"null".to_vec(), MISSING_DATA),
        ("array", b"[]".to_vec(), MISSING_DATA),
        ("string", br#""abc""#.to_vec(), MISSING_DATA),
        ("number", b"42".to_vec(), MISSING_DATA),
        ("empty object", b"{}".to_vec(), MISSING_DATA),
        ("data missing", br#"{"other":1}"#.to_vec(), MISSING_DATA),
        ("data null", br#"{"data":null}"#.to_vec(), MISSING_DATA),
        ("data empty", br#"{"data":""}"#.to_vec(), MISSING_DATA),
        ("data number", br#"{"data":123}"#.to_vec(), MISSING_DATA),
        ("data array", br#"{"data":["abc"]}"#.to_vec(), MISSING_DATA),
        (
            "data object",
            br#"{"data":{"x":"y"}}"#.to_vec(),
            MISSING_DATA,
        ),
        ("data bool", br#"{"data":true}"#.to_vec(), MISSING_DATA),
    ];
    for (name, body, expected) in cases {
        let response = raw::send(app.addr, &post(&body, Some("application/json"))).await;
        assert_eq!(response.status, 400, "{name}");
        assert_eq!(response.body, expected, "{name}");
        assert_eq!(
            response.header("content-type"),
            Some("application/json;charset=utf-8"),
            "{name}"
        );
    }

    assert_eq!(
        count_files(&app.store_dir()),
        files_before,
        "nothing was stored"
    );
    let response = app.get(kept["id"].as_str().unwrap()).await;
    assert_eq!(response.text().await.unwrap(), r#"{"data":"Xc6xCsJAEATQ"}"#);
}

#[tokio::test]
async fn the_compat_create_parses_json_whatever_the_content_type() {
    let app = TestApp::spawn(&[]).await;
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/json; charset=utf-16"),
    ] {
        let response = raw::send(app.addr, &post(br#"{"data":"abc"}"#, content_type)).await;
        assert_eq!(response.status, 201, "{content_type:?}: {}", response.body);
    }
}

#[tokio::test]
async fn oversized_data_is_refused_with_upstreams_message() {
    let app = TestApp::spawn(&[("PASTE_MAX_SIZE", "1000")]).await;
    let too_large = r#"{"error":"Payload too large (max 1 KB encrypted)"}"#;

    // Equality is allowed, one more code unit is not.
    assert_eq!(app.create(&"a".repeat(1000)).await.status(), 201);
    let response = app.create(&"a".repeat(1001)).await;
    assert_eq!(response.status(), 413);
    assert_eq!(response.text().await.unwrap(), too_large);

    // Counted in UTF-16 code units: 500 rockets are 1000 units (4000 bytes).
    assert_eq!(app.create(&"🚀".repeat(500)).await.status(), 201);
    assert_eq!(
        app.create(&format!("{}a", "🚀".repeat(500))).await.status(),
        413
    );
    assert_eq!(app.create(&"é".repeat(1000)).await.status(), 201);

    // Canonical base64url in upstream's exact body, which the server reads
    // without its JSON parser: the same limit, at the same boundary.
    assert_eq!(
        app.create(&format!("{}AA", "a".repeat(998))).await.status(),
        201
    );
    let response = app.create(&format!("{}AA", "a".repeat(1000))).await;
    assert_eq!(response.status(), 413);
    assert_eq!(response.text().await.unwrap(), too_large);

    // A 10 MiB body is cut off long before it is read whole.
    let response = app.create(&"a".repeat(10 * 1024 * 1024)).await;
    assert_eq!(response.status(), 413);
    assert_eq!(response.text().await.unwrap(), too_large);

    // A declared length far beyond the limit is refused before any body is read.
    let response = raw::send(
        app.addr,
        b"POST /api/paste HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 99999999999\r\n\r\n{}",
    )
    .await;
    assert_eq!(response.status, 413);
    assert_eq!(response.body, too_large);

    // Chunked without a length: counted as it arrives.
    let mut chunked = b"POST /api/paste HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..200 {
        chunked.extend_from_slice(format!("{:x}\r\n{}\r\n", 1024, "a".repeat(1024)).as_bytes());
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let response = raw::send(app.addr, &chunked).await;
    assert_eq!(response.status, 413);
    assert_eq!(response.body, too_large);
}

#[tokio::test]
async fn bad_ids_and_unknown_routes_get_the_generic_404() {
    let app = TestApp::spawn(&[]).await;
    let created = app.create_ok("abc").await;
    let files_before = count_files(&app.store_dir());
    let long = "a".repeat(200);
    let very_long = "a".repeat(10_000);
    let paths = [
        "/api/paste/",
        "/api/paste/a",
        "/api/paste/abcde",
        "/api/paste/abcdefghabcdefghX",
        &format!("/api/paste/{long}") as &str,
        &format!("/api/paste/{very_long}"),
        "/api/paste/%00abcdef",
        "/api/paste/.",
        "/api/paste/..",
        "/api/paste/%2e%2e",
        "/api/paste/..%2f..%2fetc%2fpasswd",
        "/api/paste/../../etc/passwd",
        "/api/paste/a%2Fbcdefgh",
        "/api/paste//etc/passwd",
        "/api/paste/abcdefgh/",
        "/api/paste/*",
        "/api/paste/abc?def",
        "/api/paste/[a-z]abcd",
        "/api/paste/abc%25def",
        "/api/paste/abc_defg",
        "/api/paste/%D0%B0bcdefg",
        "/api/paste/%EF%BD%81bcdefg",
        "/api/paste/abc%E2%80%AEdefg",
        "/api/paste/abc%F0%9F%9A%80def",
        "/api/paste/abc-1234",
        "/api/paste/%FF%FEabcdef",
        "/",
        "/api",
        "/api/paste/abcdefgh/extra",
        "/v0/paste",
        "/debug",
        "/metrics",
        "/admin",
        "/.git/config",
        "/swagger",
    ];
    for path in paths {
        let response = raw::simple(app.addr, "GET", path).await;
        assert_eq!(
            (response.status, response.body.as_str()),
            (404, ROUTE_404),
            "GET {path}"
        );
    }
    for (method, path) in [
        ("GET", "/api/paste"),
        ("PUT", "/api/paste"),
        ("DELETE", "/api/paste"),
        ("PATCH", "/api/paste/abcdefgh"),
        ("PUT", "/api/paste/abcdefgh"),
        ("POST", "/api/paste/abcdefgh"),
        ("POST", "/api/paste/"),
        ("TRACE", "/api/paste"),
        ("TRACE", "/"),
        ("FOO", "/api/paste"),
    ] {
        let response = raw::simple(app.addr, method, path).await;
        assert_eq!(
            (response.status, response.body.as_str()),
            (404, ROUTE_404),
            "{method} {path}"
        );
    }
    // HEAD: upstream's 404, without a body.
    let response = raw::simple(
        app.addr,
        "HEAD",
        &format!("/api/paste/{}", created["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!((response.status, response.body.as_str()), (404, ""));
    // A valid but absent id is the paste 404.
    let response = raw::simple(app.addr, "GET", "/api/paste/abcdefgh").await;
    assert_eq!(
        (response.status, response.body.as_str()),
        (404, r#"{"error":"Paste not found or expired"}"#)
    );

    assert_eq!(count_files(&app.store_dir()), files_before);
    let stored = app.get(created["id"].as_str().unwrap()).await;
    assert_eq!(stored.text().await.unwrap(), r#"{"data":"abc"}"#);
}

#[tokio::test]
async fn probes_answer_405_with_allow_for_other_methods() {
    let app = TestApp::spawn(&[]).await;
    for path in ["/healthz", "/readyz"] {
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            let response = raw::simple(app.addr, method, path).await;
            assert_eq!(response.status, 405, "{method} {path}");
            assert_eq!(response.header("allow"), Some("GET, HEAD"));
            assert_eq!(
                response.body,
                r#"{"error":"method not allowed on this path","code":"method-not-allowed"}"#
            );
        }
    }
}

/// `/api/v1/pastes` refuses bad input with a clear 4xx and a JSON body with
/// a code, and stores nothing for it.
#[tokio::test]
async fn v1_bad_input_gets_a_4xx_with_a_code_and_stores_nothing() {
    use crate::tenants_support::{Db, keyed, spawn, status_json, tenant};
    use reqwest::Method;
    use serde_json::json;

    let app = spawn(Db::Sqlite, &[], |_| {}).await;
    let t = tenant(&app, "badin", json!({})).await;
    let post = |content_type: &'static str, body: String, extra: Option<(&'static str, String)>| {
        let mut request = keyed(&app, Method::POST, "/api/v1/pastes", &t.key)
            .header("content-type", content_type)
            .body(body);
        if let Some((name, value)) = extra {
            request = request.header(name, value);
        }
        request.send()
    };
    let cases: Vec<(u16, &str, reqwest::Response)> = vec![
        (
            415,
            "unsupported-media-type",
            post("text/plain", r#"{"data":"abc"}"#.into(), None)
                .await
                .unwrap(),
        ),
        (
            400,
            "invalid-json",
            post("application/json", "{nope".into(), None)
                .await
                .unwrap(),
        ),
        (
            400,
            "invalid-json",
            post("application/json", "[1,2]".into(), None)
                .await
                .unwrap(),
        ),
        (
            422,
            "invalid-field",
            post("application/json", r#"{"data":""}"#.into(), None)
                .await
                .unwrap(),
        ),
        (
            422,
            "invalid-field",
            post("application/json", r#"{"data":5}"#.into(), None)
                .await
                .unwrap(),
        ),
        (
            422,
            "invalid-field",
            post("application/json", "{}".into(), None).await.unwrap(),
        ),
        (
            422,
            "invalid-field",
            post(
                "application/json",
                r#"{"data":"abc","burnAfterRead":"yes"}"#.into(),
                None,
            )
            .await
            .unwrap(),
        ),
        (
            400,
            "invalid-idempotency-key",
            post(
                "application/json",
                r#"{"data":"abc"}"#.into(),
                Some(("idempotency-key", "k".repeat(300))),
            )
            .await
            .unwrap(),
        ),
    ];
    for (status, code, response) in cases {
        let (got, body) = status_json(response).await;
        assert_eq!((got, body["code"].as_str()), (status, Some(code)), "{body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{body}"
        );
    }
    for (query, status, code) in [
        ("?limit=0", 422, "invalid-field"),
        ("?limit=5000", 422, "invalid-field"),
        ("?limit=x", 422, "invalid-field"),
        ("?after=no-such-id!", 400, "invalid-paste-id"),
        ("?tenant=other", 422, "invalid-field"),
    ] {
        let response = keyed(&app, Method::GET, &format!("/api/v1/pastes{query}"), &t.key)
            .send()
            .await
            .unwrap();
        let (got, body) = status_json(response).await;
        assert_eq!(
            (got, body["code"].as_str()),
            (status, Some(code)),
            "{query}: {body}"
        );
    }
    let listed = keyed(&app, Method::GET, "/api/v1/pastes", &t.key)
        .send()
        .await
        .unwrap();
    let (_, list) = status_json(listed).await;
    assert_eq!(list["pastes"], json!([]), "nothing was stored");
}
