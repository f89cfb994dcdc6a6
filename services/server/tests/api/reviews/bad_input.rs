//! Every malformed review request gets its 4xx with a code, and leaves the
//! review exactly as it was.

use serde_json::{Value, json};
use testkit::TestApp;

use super::{Review, call, digest};

/// Sends a raw body with a content type.
async fn raw(
    app: &TestApp,
    method: &str,
    path: &str,
    token: &str,
    content_type: &str,
    body: String,
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let response = app
        .client
        .request(method, app.url(path))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn malformed_requests_get_a_coded_4xx_and_change_nothing() {
    let app = TestApp::spawn(&[("PLANSHARE_MAX_SIZE", "4096")]).await;
    let review = Review::create(&app, "v1").await;
    let (_, reviewer) = review.link(&app).await;
    assert_eq!(
        review.comment(&app, &reviewer, "rae", "first").await.status,
        200
    );
    let before = call(&app, "GET", &review.path(""), Some(&review.owner), None)
        .await
        .body;
    let owner = review.owner.as_str();
    let big = "A".repeat(5000);
    let json_cases: Vec<(&str, String, &str, Value, u16, &str)> = vec![
        // method, path, token, body, status, code
        (
            "POST",
            review.path("/versions"),
            owner,
            json!({"data": "x", "digest": digest(2)}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/versions"),
            owner,
            json!({"data": "x", "digest": "short", "parent": 1}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/versions"),
            owner,
            json!({"data": "", "digest": digest(2), "parent": 1}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/versions"),
            owner,
            json!({"data": "x", "digest": digest(2), "parent": 0}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/versions"),
            owner,
            json!({"data": "x", "digest": digest(2), "parent": 1, "extra": 1}),
            422,
            "unknown-field",
        ),
        (
            "POST",
            review.path("/versions"),
            owner,
            json!({"data": big, "digest": digest(2), "parent": 1}),
            413,
            "payload-too-large",
        ),
        (
            "POST",
            review.path("/versions"),
            owner,
            json!({"data": "x", "digest": digest(2), "parent": 7}),
            409,
            "stale-parent",
        ),
        (
            "PUT",
            review.path("/comments"),
            &reviewer,
            json!({"name": "rae", "version": 9, "data": "x"}),
            422,
            "invalid-value",
        ),
        (
            "PUT",
            review.path("/comments"),
            &reviewer,
            json!({"name": "rae", "version": 0, "data": "x"}),
            422,
            "invalid-field",
        ),
        (
            "PUT",
            review.path("/comments"),
            &reviewer,
            json!({"name": "   ", "version": 1, "data": "x"}),
            422,
            "invalid-field",
        ),
        (
            "PUT",
            review.path("/comments"),
            &reviewer,
            json!({"name": "a\u{1b}[31m", "version": 1, "data": "x"}),
            422,
            "invalid-field",
        ),
        (
            "PUT",
            review.path("/comments"),
            &reviewer,
            json!({"name": "n".repeat(65), "version": 1, "data": "x"}),
            422,
            "invalid-field",
        ),
        (
            "PUT",
            review.path("/comments"),
            &reviewer,
            json!({"name": "rae", "version": 1}),
            422,
            "invalid-field",
        ),
        (
            "PUT",
            review.path("/comments"),
            &reviewer,
            json!({"name": "other", "version": 1, "data": "x"}),
            409,
            "name-bound",
        ),
        (
            "POST",
            review.path("/decision"),
            owner,
            json!({"decision": "maybe", "version": 1}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/decision"),
            owner,
            json!({"decision": "approved", "version": 1, "data": ""}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/decision"),
            owner,
            json!({"decision": "approved"}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/decision"),
            owner,
            json!({"decision": "approved", "version": 1.5}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/decision"),
            owner,
            json!({"decision": "approved", "version": 1, "name": "a\u{200b}b"}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/links"),
            owner,
            json!({"role": "owner"}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/versions"),
            owner,
            json!({"data": "x", "digest": digest(9), "parent": 1, "progress": "yes"}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            review.path("/links"),
            owner,
            json!({"reviewer": "x"}),
            422,
            "unknown-field",
        ),
        (
            "POST",
            "/api/v1/reviews".into(),
            owner,
            json!({"version": {"data": "x"}}),
            422,
            "invalid-field",
        ),
        (
            "POST",
            "/api/v1/reviews".into(),
            owner,
            json!({"version": {"data": "x", "digest": digest(1)}, "ttl": 0}),
            422,
            "invalid-field",
        ),
    ];
    for (method, path, token, body, status, code) in json_cases {
        let answer = call(&app, method, &path, Some(token), Some(body.clone())).await;
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (status, Some(code)),
            "{method} {path} {body}: {}",
            answer.text
        );
    }
    // Not JSON, not an object, not JSON at all by its type.
    let (status, body) = raw(
        &app,
        "PUT",
        &review.path("/comments"),
        &reviewer,
        "application/json",
        "{".into(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("invalid-json")),
        "{body}"
    );
    let (status, body) = raw(
        &app,
        "PUT",
        &review.path("/comments"),
        &reviewer,
        "application/json",
        "[1]".into(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = raw(
        &app,
        "PUT",
        &review.path("/comments"),
        &reviewer,
        "text/plain",
        "{}".into(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (415, Some("unsupported-media-type")),
        "{body}"
    );
    // Malformed ids in the path.
    for (path, code) in [
        ("/api/v1/reviews/ab/versions/1".to_owned(), "invalid-id"),
        (review.path("/versions/0"), "invalid-id"),
        (review.path("/versions/x"), "invalid-id"),
        ("/api/v1/reviews/abc%2F..%2Fdef".to_owned(), "invalid-id"),
    ] {
        let answer = call(&app, "GET", &path, Some(owner), None).await;
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (400, Some(code)),
            "{path}: {}",
            answer.text
        );
    }
    let answer = call(
        &app,
        "DELETE",
        &review.path("/links/not-an-id!"),
        Some(owner),
        None,
    )
    .await;
    assert_eq!(
        (answer.status, answer.body["code"].as_str()),
        (400, Some("invalid-id"))
    );
    let answer = call(&app, "GET", &review.path("/versions/5"), Some(owner), None).await;
    assert_eq!(
        (answer.status, answer.body["code"].as_str()),
        (404, Some("version-not-found"))
    );
    // The events query and Last-Event-ID.
    for query in ["?after=-1", "?wait=30", "?token=x"] {
        let answer = call(
            &app,
            "GET",
            &review.path(&format!("/events{query}")),
            Some(owner),
            None,
        )
        .await;
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (422, Some("invalid-field")),
            "{query}"
        );
    }
    let response = app
        .client
        .get(app.url(&review.path("/events")))
        .header("authorization", format!("Bearer {owner}"))
        .header("last-event-id", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    // A wrong method names the allowed ones.
    let answer = call(&app, "PATCH", &review.path("/comments"), Some(owner), None).await;
    assert_eq!(answer.status, 405);

    let after = call(&app, "GET", &review.path(""), Some(owner), None)
        .await
        .body;
    assert_eq!(after, before, "nothing stored changed");
}
