//! A review from create to decision, as the owner and a reviewer see it.

use std::time::Duration;

use serde_json::json;
use testkit::TestApp;

use super::{Review, call, digest, kinds};

#[tokio::test]
async fn a_review_goes_from_first_version_to_decision() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "cipher-v1").await;
    assert_eq!(review.owner.len(), 43);
    let (link, alice) = review.link(&app).await;

    // The reviewer reads the plan and comments on version 1.
    let v1 = call(&app, "GET", &review.path("/versions/1"), Some(&alice), None).await;
    assert_eq!(v1.status, 200, "{}", v1.text);
    assert_eq!(
        (v1.body["n"].as_u64(), v1.body["data"].as_str()),
        (Some(1), Some("cipher-v1"))
    );
    assert_eq!(v1.body["digest"], digest(1));
    let put = review.comment(&app, &alice, "alice", "alice-set-1").await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(put.body["writer"], link.as_str());

    // The owner pushes version 2 on 1; pushing the same plan again is a no-op.
    let versions = review.path("/versions");
    let push = |data: &str, digest: String, parent: u64| {
        call(
            &app,
            "POST",
            &versions,
            Some(&review.owner),
            Some(json!({"data": data, "digest": digest, "parent": parent})),
        )
    };
    let pushed = push("cipher-v2", digest(2), 1).await;
    assert_eq!(
        (pushed.status, pushed.body.clone()),
        (201, json!({"n": 2, "round": 1}))
    );
    let again = push("cipher-v2-again", digest(2), 2).await;
    assert_eq!(
        (again.status, again.body.clone()),
        (200, json!({"n": 2, "unchanged": true}))
    );

    // Everyone sees both versions and alice's set; only the owner sees links.
    let as_alice = call(&app, "GET", &review.path(""), Some(&alice), None).await;
    assert_eq!(as_alice.status, 200, "{}", as_alice.text);
    let body = &as_alice.body;
    assert_eq!(body["state"], "open");
    assert_eq!(body["latest"], 2);
    assert_eq!(
        body["you"],
        json!({"role": "reviewer", "link": link, "name": "alice"})
    );
    assert_eq!(body["versions"].as_array().unwrap().len(), 2);
    assert_eq!(body["comments"][0]["name"], "alice");
    assert_eq!(body["comments"][0]["data"], "alice-set-1");
    assert!(body.get("links").is_none(), "a reviewer sees no links");
    let as_owner = call(&app, "GET", &review.path(""), Some(&review.owner), None).await;
    assert_eq!(as_owner.body["you"]["role"], "owner");
    assert_eq!(as_owner.body["links"][0]["id"], link.as_str());
    assert_eq!(as_owner.body["links"][0]["name"], "alice");

    // A second set replaces the first; the owner comments too.
    assert_eq!(
        review
            .comment(&app, &alice, "alice", "alice-set-2")
            .await
            .status,
        200
    );
    assert_eq!(
        review
            .comment(&app, &review.owner, "owen", "owner-set")
            .await
            .status,
        200
    );
    let read = call(&app, "GET", &review.path(""), Some(&review.owner), None).await;
    let mut sets: Vec<(String, String)> = read.body["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().into(),
                c["data"].as_str().unwrap().into(),
            )
        })
        .collect();
    sets.sort();
    assert_eq!(
        sets,
        [
            ("alice".into(), "alice-set-2".into()),
            ("owen".into(), "owner-set".into())
        ]
    );

    // The decision, with feedback; then nothing more is taken.
    let decided = call(
        &app,
        "POST",
        &review.path("/decision"),
        Some(&review.owner),
        Some(json!({"decision": "changes_requested", "version": 2, "data": "feedback-cipher"})),
    )
    .await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    assert_eq!(decided.body["decision"], "changes_requested");
    let twice = call(
        &app,
        "POST",
        &review.path("/decision"),
        Some(&review.owner),
        Some(json!({"decision": "approved", "version": 2})),
    )
    .await;
    assert_eq!(
        (twice.status, twice.body["code"].as_str()),
        (409, Some("review-decided"))
    );
    // Comments go on after a decision (answers to the feedback).
    let later = review.comment(&app, &alice, "alice", "alice-set-3").await;
    assert_eq!(later.status, 200, "{}", later.text);
    let read = call(&app, "GET", &review.path(""), Some(&alice), None).await;
    assert_eq!(read.body["state"], "changes_requested");
    assert_eq!(read.body["decision"]["data"], "feedback-cipher");
    assert_eq!(read.body["decision"]["by"]["role"], "owner");
    assert_eq!(read.body["decision"]["version"], 2);
    assert_eq!(
        read.body["comments"].as_array().unwrap().len(),
        2,
        "comments stay readable"
    );

    // The log: every change once, in order.
    let page = review.poll(&app, &review.owner, 0, 0).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(
        kinds(&page.body),
        [
            "version", "links", "comments", "version", "comments", "comments", "decision",
            "comments"
        ]
    );
    let ids: Vec<u64> = page.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, (1..=8).collect::<Vec<_>>());
    assert_eq!(page.body["seq"], 8);
    assert_eq!(
        page.body["events"][1]["data"],
        json!({"link": link, "role": "reviewer"})
    );
    assert!(!page.text.contains(&alice) && !page.text.contains(&review.owner));
}

#[tokio::test]
async fn deleting_a_review_removes_everything_of_it() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "cipher").await;
    let (_, bob) = review.link(&app).await;
    assert_eq!(
        review.comment(&app, &bob, "bob", "bob-set").await.status,
        200
    );
    let deleted = call(&app, "DELETE", &review.path(""), Some(&review.owner), None).await;
    assert_eq!((deleted.status, deleted.text.as_str()), (204, ""));
    for token in [&review.owner, &bob] {
        let gone = call(&app, "GET", &review.path(""), Some(token), None).await;
        assert_eq!(
            (gone.status, gone.body["code"].as_str()),
            (404, Some("review-not-found"))
        );
    }
    let again = call(&app, "DELETE", &review.path(""), Some(&review.owner), None).await;
    assert_eq!(again.status, 404);
}

#[tokio::test]
async fn withdrawn_comments_are_gone_and_the_name_stays_bound() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "cipher").await;
    let (_, carol) = review.link(&app).await;
    assert_eq!(
        review.comment(&app, &carol, "carol", "set").await.status,
        200
    );
    let withdrawn = call(
        &app,
        "DELETE",
        &review.path("/comments"),
        Some(&carol),
        None,
    )
    .await;
    assert_eq!(withdrawn.status, 204);
    let read = call(&app, "GET", &review.path(""), Some(&carol), None).await;
    assert_eq!(read.body["comments"], json!([]));
    assert_eq!(read.body["you"]["name"], "carol");
    let renamed = review.comment(&app, &carol, "caroline", "set").await;
    assert_eq!(
        (renamed.status, renamed.body["code"].as_str()),
        (409, Some("name-bound"))
    );
    // Withdrawing when there is nothing is fine.
    let nothing = call(
        &app,
        "DELETE",
        &review.path("/comments"),
        Some(&carol),
        None,
    )
    .await;
    assert_eq!(nothing.status, 204);
}

#[tokio::test]
async fn the_link_cap_is_named_and_a_revoked_link_frees_its_place() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "cipher").await;
    let mut links = Vec::new();
    for _ in 0..8 {
        links.push(review.link(&app).await);
    }
    let ninth = call(
        &app,
        "POST",
        &review.path("/links"),
        Some(&review.owner),
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (ninth.status, ninth.body["code"].as_str()),
        (409, Some("too-many-links"))
    );
    assert!(
        ninth.body["error"].as_str().unwrap().contains('8'),
        "{}",
        ninth.text
    );
    let revoked = call(
        &app,
        "DELETE",
        &review.path(&format!("/links/{}", links[0].0)),
        Some(&review.owner),
        None,
    )
    .await;
    assert_eq!(revoked.status, 204);
    let dead = call(&app, "GET", &review.path(""), Some(&links[0].1), None).await;
    assert_eq!(dead.status, 404, "a revoked token stops answering at once");
    assert_eq!(review.link(&app).await.1.len(), 43);
    let unknown = call(
        &app,
        "DELETE",
        &review.path("/links/AAAAAAAAAAAA"),
        Some(&review.owner),
        None,
    )
    .await;
    assert_eq!(
        (unknown.status, unknown.body["code"].as_str()),
        (404, Some("link-not-found"))
    );
}

#[tokio::test]
async fn a_review_expires_with_its_ttl() {
    let app = TestApp::spawn(&[]).await;
    let created = call(
        &app,
        "POST",
        "/api/v1/reviews",
        None,
        Some(json!({"version": {"data": "cipher", "digest": digest(1)}, "ttl": 1})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.body["id"].as_str().unwrap();
    let owner = created.body["ownerToken"].as_str().unwrap();
    let path = format!("/api/v1/reviews/{id}");
    assert_eq!(
        call(&app, "GET", &path, Some(owner), None).await.status,
        200
    );
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let expired = call(&app, "GET", &path, Some(owner), None).await;
    assert_eq!(
        (expired.status, expired.body["code"].as_str()),
        (404, Some("review-not-found"))
    );
}

#[tokio::test]
async fn review_blobs_count_against_the_quota() {
    let app = TestApp::spawn(&[("PLANSHARE_ADMIN_TOKEN", "admin-secret-for-tests")]).await;
    // The default tenant with room for two stored entries.
    let admin = |method: &str, path: &str, body: Option<serde_json::Value>| {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = app
            .client
            .request(method, app.url(path))
            .header("authorization", "Bearer admin-secret-for-tests");
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        request.send()
    };
    let patched = admin(
        "PATCH",
        "/admin/v1/tenants/tnt_default",
        Some(json!({"quota_pastes": 2})),
    )
    .await
    .unwrap();
    assert_eq!(patched.status(), 200, "{}", patched.text().await.unwrap());
    // The catalog checks the quota itself (no cached tenant in the way).
    let review = Review::create(&app, "v1").await;
    let (_, dan) = review.link(&app).await;
    assert_eq!(review.comment(&app, &dan, "dan", "set").await.status, 200);
    let full = call(
        &app,
        "POST",
        &review.path("/versions"),
        Some(&review.owner),
        Some(json!({"data": "v2", "digest": digest(2), "parent": 1})),
    )
    .await;
    assert_eq!(
        (full.status, full.body["code"].as_str()),
        (413, Some("quota-exceeded"))
    );
    // Replacing a set frees the old one in the same change.
    assert_eq!(review.comment(&app, &dan, "dan", "set-2").await.status, 200);
    // Deleting the review gives everything back.
    assert_eq!(
        call(&app, "DELETE", &review.path(""), Some(&review.owner), None)
            .await
            .status,
        204
    );
    let usage: serde_json::Value = admin("GET", "/admin/v1/tenants/tnt_default/usage", None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(usage["pastes"], 0, "{usage}");
}
