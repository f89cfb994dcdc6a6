//! `DELETE /api/paste/{id}` with the delete token returned at creation.

use testkit::TestApp;

const NOT_FOUND: &str = r#"{"error":"Paste not found or expired","code":"paste-not-found"}"#;

async fn delete(
    app: &TestApp,
    id: &str,
    auth: Option<&str>,
) -> (u16, String, reqwest::header::HeaderMap) {
    let mut request = app.client.delete(app.url(&format!("/api/paste/{id}")));
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    let response = request.send().await.unwrap();
    let headers = response.headers().clone();
    (
        response.status().as_u16(),
        response.text().await.unwrap(),
        headers,
    )
}

#[tokio::test]
async fn the_owner_token_deletes_the_paste() {
    let app = TestApp::spawn(&[]).await;
    let created = app.create_ok("secret plan").await;
    let (id, token) = (
        created["id"].as_str().unwrap(),
        created["deleteToken"].as_str().unwrap(),
    );
    let (status, body, _) = delete(&app, id, Some(&format!("Bearer {token}"))).await;
    assert_eq!((status, body.as_str()), (204, ""));
    assert_eq!(app.get(id).await.status(), 404);
    // Deleting again answers as for any absent paste.
    let (status, body, _) = delete(&app, id, Some(&format!("Bearer {token}"))).await;
    assert_eq!((status, body.as_str()), (404, NOT_FOUND));
}

#[tokio::test]
async fn a_wrong_token_looks_exactly_like_an_absent_paste() {
    let app = TestApp::spawn(&[]).await;
    let a = app.create_ok("a").await;
    let b = app.create_ok("b").await;
    let a_id = a["id"].as_str().unwrap();
    let b_token = b["deleteToken"].as_str().unwrap();
    let wrong = delete(&app, a_id, Some(&format!("Bearer {b_token}"))).await;
    let absent = delete(&app, "abcdefghABCDEFGH", Some(&format!("Bearer {b_token}"))).await;
    assert_eq!((wrong.0, wrong.1.as_str()), (404, NOT_FOUND));
    assert_eq!((wrong.0, &wrong.1), (absent.0, &absent.1));
    assert_eq!(app.get(a_id).await.status(), 200, "nothing was deleted");
}

#[tokio::test]
async fn missing_or_malformed_credentials_get_401_before_any_lookup() {
    let app = TestApp::spawn(&[]).await;
    let created = app.create_ok("a").await;
    let id = created["id"].as_str().unwrap();
    let token = created["deleteToken"].as_str().unwrap();
    let long = format!("Bearer {}", "a".repeat(10 * 1024));
    // Bearers that are neither an API key nor shaped like a delete token
    // (43 base64url characters) cannot be a credential for any paste.
    let one_short = format!("Bearer {}", &token[1..]);
    let one_long = format!("Bearer {token}A");
    let padded = format!("Bearer {}=", &token[1..]);
    for auth in [
        None,
        Some("Bearer "),
        Some("Basic YWxhZGRpbjpvcGVu"),
        Some(token),
        Some(long.as_str()),
        Some("Bearer SCHEMATHESIS-INVALID-VALUE"),
        Some(one_short.as_str()),
        Some(one_long.as_str()),
        Some(padded.as_str()),
    ] {
        // The same answer for the paste, an absent id and a deleted one.
        for target in [id, "abcdefghABCDEFGH"] {
            let (status, body, headers) = delete(&app, target, auth).await;
            assert_eq!(status, 401, "{auth:?} {target}");
            assert_eq!(headers["www-authenticate"], "Bearer");
            assert!(body.contains(r#""code":"unauthorized""#), "{body}");
        }
    }
    // The token in the query string is not a credential.
    let response = app
        .client
        .delete(app.url(&format!("/api/paste/{id}?token={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(app.get(id).await.status(), 200);
}

#[tokio::test]
async fn malformed_ids_get_400() {
    let app = TestApp::spawn(&[]).await;
    for id in ["abc", "abc-defgh", "abcdefghabcdefghX", "%2e%2e%2fabcdef"] {
        let (status, body, _) = delete(&app, id, Some("Bearer token")).await;
        assert_eq!(status, 400, "{id}");
        assert!(body.contains(r#""code":"invalid-paste-id""#), "{body}");
    }
}
