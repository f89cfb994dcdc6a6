//! A writer's comment set is never replaced from a stale view: a PUT or a
//! withdrawal that names the revision it read (`base`) is refused with
//! `409 comments-changed` once the set moved on, and nothing stored changes.

use serde_json::json;
use testkit::TestApp;

use super::{Review, call};

/// `PUT …/comments` as `token` with `base`.
async fn put(review: &Review, app: &TestApp, token: &str, data: &str, base: u64) -> super::Answer {
    call(
        app,
        "PUT",
        &review.path("/comments"),
        Some(token),
        Some(json!({"name": "Ann", "version": 1, "data": data, "base": base})),
    )
    .await
}

/// The caller's own set in `GET /reviews/{id}`: its data and revision.
async fn own_set(
    review: &Review,
    app: &TestApp,
    token: &str,
    writer: &str,
) -> Option<(String, u64)> {
    let view = call(app, "GET", &review.path(""), Some(token), None).await;
    assert_eq!(view.status, 200, "{}", view.text);
    view.body["comments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["writer"] == writer)
        .map(|c| {
            (
                c["data"].as_str().unwrap().to_owned(),
                c["seq"].as_u64().unwrap(),
            )
        })
}

#[tokio::test]
async fn a_stale_page_cannot_replace_or_withdraw_a_newer_comment_set() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "plan-v1").await;
    let (writer, token) = review.link(&app).await;

    // Two tabs of one link both read "no set yet" (base 0). The first send
    // lands; the second is refused and stores nothing.
    let first = put(&review, &app, &token, "set-from-tab-a", 0).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let rev1 = first.body["seq"].as_u64().unwrap();
    assert!(rev1 > 0, "{}", first.text);
    assert_eq!(
        own_set(&review, &app, &token, &writer).await,
        Some(("set-from-tab-a".to_owned(), rev1)),
        "the answer's seq is the revision the review shows"
    );
    let stale = put(&review, &app, &token, "stale-set-from-tab-b", 0).await;
    assert_eq!(stale.status, 409, "{}", stale.text);
    assert_eq!(stale.body["code"], "comments-changed", "{}", stale.text);
    let message = stale.body["error"].as_str().unwrap();
    assert!(
        message.contains(&format!("\"base\": {rev1}")),
        "the refusal names the revision to build on: {message}"
    );
    assert_eq!(
        own_set(&review, &app, &token, &writer).await,
        Some(("set-from-tab-a".to_owned(), rev1))
    );

    // Building on the newest revision lands and moves it on.
    let second = put(&review, &app, &token, "merged-set", rev1).await;
    assert_eq!(second.status, 200, "{}", second.text);
    let rev2 = second.body["seq"].as_u64().unwrap();
    assert!(rev2 > rev1);
    let again = put(&review, &app, &token, "from-the-old-view", rev1).await;
    assert_eq!(again.status, 409, "{}", again.text);

    // A withdrawal from the old view is refused too; from the new one it goes.
    let withdraw = |base: u64| {
        let path = review.path(&format!("/comments?base={base}"));
        let token = token.clone();
        let app = &app;
        async move { call(app, "DELETE", &path, Some(&token), None).await }
    };
    let refused = withdraw(rev1).await;
    assert_eq!(refused.status, 409, "{}", refused.text);
    assert_eq!(refused.body["code"], "comments-changed");
    assert_eq!(
        own_set(&review, &app, &token, &writer).await,
        Some(("merged-set".to_owned(), rev2))
    );
    let bad = call(
        &app,
        "DELETE",
        &review.path("/comments?base=x"),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert_eq!(withdraw(rev2).await.status, 204);
    assert_eq!(own_set(&review, &app, &token, &writer).await, None);

    // A client that sends no base replaces whatever is there (older clients).
    let plain = review.comment(&app, &token, "Ann", "no-base").await;
    assert_eq!(plain.status, 200, "{}", plain.text);
    let plain = review.comment(&app, &token, "Ann", "no-base-again").await;
    assert_eq!(plain.status, 200, "{}", plain.text);
}

#[tokio::test]
async fn concurrent_sends_from_one_view_store_exactly_one() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "plan-v1").await;
    let (writer, token) = review.link(&app).await;
    let (a, b, c, d) = tokio::join!(
        put(&review, &app, &token, "tab-0", 0),
        put(&review, &app, &token, "tab-1", 0),
        put(&review, &app, &token, "tab-2", 0),
        put(&review, &app, &token, "tab-3", 0),
    );
    let answers = [a, b, c, d];
    let landed: Vec<_> = answers.iter().filter(|a| a.status == 200).collect();
    assert_eq!(landed.len(), 1, "exactly one send from the same view lands");
    assert!(
        answers
            .iter()
            .all(|a| a.status == 200 || (a.status == 409 && a.body["code"] == "comments-changed")),
        "the others are refused as stale"
    );
    let (data, seq) = own_set(&review, &app, &token, &writer).await.unwrap();
    assert_eq!(seq, landed[0].body["seq"].as_u64().unwrap());
    assert!(data.starts_with("tab-"));
}
