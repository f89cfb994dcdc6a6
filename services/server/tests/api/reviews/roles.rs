//! Who may call what: every review route against the owner, a live
//! reviewer, a live approver, a revoked reviewer, a stranger (another review's owner), an
//! API key of another tenant, no token and a malformed token — on SQLite
//! and PostgreSQL catalogs. The failures that must not tell a review exists
//! answer one and the same 404 body.

use reqwest::Method;
use serde_json::{Value, json};
use testkit::TestApp;

use super::{Answer, Review, call, digest};
use crate::tenants_support::{databases, spawn, tenant};

#[derive(Clone, Copy, Debug)]
enum Who {
    Owner,
    Reviewer,
    Approver,
    Revoked,
    Stranger,
    OtherTenantKey,
    NoToken,
    Malformed,
}

const EVERYONE: [Who; 8] = [
    Who::Owner,
    Who::Reviewer,
    Who::Approver,
    Who::Revoked,
    Who::Stranger,
    Who::OtherTenantKey,
    Who::NoToken,
    Who::Malformed,
];

/// One route: method, path after `/api/v1/reviews/{id}`, body, and the
/// status for the owner and for a live reviewer; an approver answers as a
/// reviewer except where it decides.
struct Route {
    method: Method,
    rest: &'static str,
    body: Option<Value>,
    owner: u16,
    reviewer: u16,
    approver: u16,
}

fn routes() -> Vec<Route> {
    let r = |method: Method, rest: &'static str, body: Option<Value>, owner, reviewer| Route {
        method,
        rest,
        body,
        owner,
        reviewer,
        approver: reviewer,
    };
    vec![
        r(Method::GET, "", None, 200, 200),
        r(Method::GET, "/versions/1", None, 200, 200),
        r(
            Method::POST,
            "/versions",
            Some(json!({"data": "v2", "digest": digest(2), "parent": 1})),
            201,
            403,
        ),
        r(Method::POST, "/links", Some(json!({})), 201, 403),
        r(Method::DELETE, "/links/{link}", None, 204, 403),
        r(
            Method::PUT,
            "/comments",
            Some(json!({"name": "someone", "version": 1, "data": "set"})),
            200,
            200,
        ),
        r(Method::DELETE, "/comments", None, 204, 204),
        Route {
            approver: 200,
            ..r(
                Method::POST,
                "/decision",
                Some(json!({"decision": "approved", "version": 1, "name": "decider"})),
                200,
                403,
            )
        },
        r(Method::GET, "/events?after=0&wait=0", None, 200, 200),
        r(Method::DELETE, "", None, 204, 403),
    ]
}

struct Scene {
    review: Review,
    reviewer: String,
    approver: String,
    revoked: String,
    link: String,
    stranger: String,
    other_key: String,
}

async fn scene(app: &TestApp, other_key: &str) -> Scene {
    let review = Review::create(app, "cipher").await;
    let (link, reviewer) = review.link(app).await;
    let (_, approver) = review.link_as(app, "approver").await;
    let (gone, revoked) = review.link(app).await;
    let answer = call(
        app,
        "DELETE",
        &review.path(&format!("/links/{gone}")),
        Some(&review.owner),
        None,
    )
    .await;
    assert_eq!(answer.status, 204);
    let stranger = Review::create(app, "other").await.owner;
    Scene {
        review,
        reviewer,
        approver,
        revoked,
        link,
        stranger,
        other_key: other_key.to_owned(),
    }
}

async fn send(app: &TestApp, scene: &Scene, route: &Route, who: Who) -> Answer {
    let path = scene
        .review
        .path(&route.rest.replace("{link}", &scene.link));
    let mut request = app.client.request(route.method.clone(), app.url(&path));
    let token = match who {
        Who::Owner => Some(scene.review.owner.clone()),
        Who::Reviewer => Some(scene.reviewer.clone()),
        Who::Approver => Some(scene.approver.clone()),
        Who::Revoked => Some(scene.revoked.clone()),
        Who::Stranger => Some(scene.stranger.clone()),
        Who::OtherTenantKey => Some(scene.other_key.clone()),
        Who::NoToken => None,
        Who::Malformed => Some("not-a-token".into()),
    };
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if route.rest.starts_with("/events") {
        request = request.header("accept", "application/json");
    }
    if let Some(body) = &route.body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    Answer {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    }
}

#[tokio::test]
async fn every_route_answers_each_principal_as_its_role_allows() {
    for db in databases().await {
        // Failed authentications are limited per client: off here, where
        // the matrix fails on purpose dozens of times.
        let app = spawn(db, &[("PLANSHARE_RATE_LIMITS", "off")], |_| {}).await;
        let other = tenant(&app, "elsewhere", json!({})).await;
        let mut not_found_bodies = std::collections::BTreeSet::new();
        for route in routes() {
            for who in EVERYONE {
                // A fresh review per cell: some calls delete or decide.
                let scene = scene(&app, &other.key).await;
                let answer = send(&app, &scene, &route, who).await;
                let expected = match who {
                    Who::Owner => route.owner,
                    Who::Reviewer => route.reviewer,
                    Who::Approver => route.approver,
                    Who::NoToken => 401,
                    Who::Revoked | Who::Stranger | Who::OtherTenantKey | Who::Malformed => 404,
                };
                assert_eq!(
                    answer.status, expected,
                    "{db:?} {} {} as {who:?}: {}",
                    route.method, route.rest, answer.text
                );
                if expected >= 400 {
                    assert!(answer.body["code"].is_string(), "{who:?}: {}", answer.text);
                }
                if expected == 404 {
                    not_found_bodies.insert(answer.text.clone());
                }
                if expected == 403 {
                    let code = if route.rest == "/decision" {
                        "approver-only"
                    } else {
                        "owner-only"
                    };
                    assert_eq!(answer.body["code"], code, "{who:?} {}", route.rest);
                }
                for secret in [
                    &scene.review.owner,
                    &scene.reviewer,
                    &scene.approver,
                    &scene.revoked,
                    &other.key,
                ] {
                    assert!(
                        !answer.text.contains(secret.as_str()),
                        "{who:?} {}: a token in the answer",
                        route.rest
                    );
                }
            }
        }
        assert_eq!(
            not_found_bodies.len(),
            1,
            "one 404 body for every cause: {not_found_bodies:?}"
        );
    }
}

#[tokio::test]
async fn a_review_of_a_keyed_tenant_is_reached_by_its_token_but_not_through_another_tenants_host() {
    for db in databases().await {
        let app = spawn(db, &[("PLANSHARE_RATE_LIMITS", "off")], |_| {}).await;
        let a = tenant(&app, "alpha", json!({"allow_anonymous": false})).await;
        let b = tenant(&app, "beta", json!({})).await;
        // Anonymous creates are refused where the tenant says so.
        let refused = app
            .client
            .post(app.url("/api/v1/reviews"))
            .header("host", &a.host)
            .header("content-type", "application/json")
            .body(json!({"version": {"data": "x", "digest": digest(1)}}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401);
        let created = app
            .client
            .post(app.url("/api/v1/reviews"))
            .header("authorization", format!("Bearer {}", a.key))
            .header("content-type", "application/json")
            .body(json!({"version": {"data": "x", "digest": digest(1)}}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
        let created: Value = created.json().await.unwrap();
        let path = format!("/api/v1/reviews/{}", created["id"].as_str().unwrap());
        let owner = created["ownerToken"].as_str().unwrap();
        let read = |host: Option<String>| {
            let mut request = app
                .client
                .get(app.url(&path))
                .header("authorization", format!("Bearer {owner}"));
            if let Some(host) = host {
                request = request.header("host", host);
            }
            request.send()
        };
        assert_eq!(
            read(None).await.unwrap().status(),
            200,
            "{db:?}: the token finds it"
        );
        assert_eq!(read(Some(a.host.clone())).await.unwrap().status(), 200);
        assert_eq!(
            read(Some(b.host.clone())).await.unwrap().status(),
            404,
            "{db:?}: another tenant's host does not reach it"
        );
    }
}

#[tokio::test]
async fn failed_review_tokens_count_as_failed_authentications() {
    let app = TestApp::spawn(&[("PLANSHARE_RATE_LIMITS", "on")]).await;
    let review = Review::create(&app, "cipher").await;
    let mut statuses = Vec::new();
    for i in 0..40 {
        let wrong = format!("{:A<43}", i);
        statuses.push(
            call(&app, "GET", &review.path(""), Some(&wrong), None)
                .await
                .status,
        );
    }
    assert!(
        statuses.contains(&429),
        "the failed-auth limiter steps in: {statuses:?}"
    );
    assert_eq!(statuses[0], 404);
}

#[tokio::test]
async fn each_tenant_has_its_own_review_limits() {
    let db = databases().await[0];
    let app = spawn(db, &[("PLANSHARE_RATE_LIMITS", "off")], |_| {}).await;
    let small = tenant(
        &app,
        "small",
        json!({"allow_anonymous": true, "review_max_links": 2, "review_max_versions": 2}),
    )
    .await;
    let created = app
        .client
        .post(app.url("/api/v1/reviews"))
        .header("host", &small.host)
        .header("content-type", "application/json")
        .body(json!({"version": {"data": "x", "digest": digest(1)}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let review = Review {
        id: created["id"].as_str().unwrap().to_owned(),
        owner: created["ownerToken"].as_str().unwrap().to_owned(),
    };
    review.link(&app).await;
    review.link(&app).await;
    let third = call(
        &app,
        "POST",
        &review.path("/links"),
        Some(&review.owner),
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (third.status, third.body["code"].as_str()),
        (409, Some("too-many-links"))
    );
    assert!(
        third.body["error"].as_str().unwrap().contains(" 2 "),
        "{}",
        third.text
    );
    let versions = review.path("/versions");
    let push = |n: u32, parent: u64| {
        call(
            &app,
            "POST",
            &versions,
            Some(&review.owner),
            Some(json!({"data": "v", "digest": digest(n), "parent": parent})),
        )
    };
    assert_eq!(push(2, 1).await.status, 201);
    let capped = push(3, 2).await;
    assert_eq!(
        (capped.status, capped.body["code"].as_str()),
        (409, Some("too-many-versions"))
    );
    // Out-of-range limits are refused by the admin API.
    let bad = crate::tenants_support::admin(
        &app,
        Method::PATCH,
        &format!("/admin/v1/tenants/{}", small.id),
        Some(json!({"review_max_links": 0})),
    )
    .await;
    assert_eq!(bad.status(), 422);
}
