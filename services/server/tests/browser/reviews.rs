//! Live reviews in the portal (`/r/<id>#key=…&t=…`): a reviewer names
//! herself and sends encrypted comments; the owner's page shows another
//! reviewer's comment without a reload; a change that arrives while a
//! reviewer has unsent comments is announced, not painted over them; a
//! revoked link is told so and the plan stays readable. No request URL or
//! body carries the key or the token (the harness fails the run if one
//! does).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use share_codec::{DEFAULT_MAX_INFLATED_BYTES, ShareKey};
use testkit::TestApp;

use crate::{harness, run_harness};

const PLAN: &str = "# Deploy plan\n\nRoll out to ten percent first, then widen to everyone.\n\nKeep the old path for a week.\n";

/// A review made through the API with real encryption: its id, key,
/// owner token and one reviewer token.
pub(crate) struct Review {
    pub(crate) id: String,
    pub(crate) key: ShareKey,
    pub(crate) owner: String,
    pub(crate) reviewers: Vec<String>,
}

fn seal(key: &ShareKey, json: &Value) -> String {
    let mut iv = [0u8; 12];
    iv[0] = 7;
    iv[1] = u8::try_from(json.to_string().len() % 251).unwrap();
    share_codec::encrypt_with(key, &iv, &share_codec::compress(&json.to_string()))
}

pub(crate) async fn start_review(app: &TestApp, reviewers: usize) -> Review {
    start_review_of(app, &json!({"p": PLAN, "a": []}), reviewers).await
}

/// A review whose first version is the share payload `version` (its
/// digest that of `version.p`), with `reviewers` reviewer links.
pub(crate) async fn start_review_of(app: &TestApp, version: &Value, reviewers: usize) -> Review {
    start_review_at(&app.client, &app.base_url, version, reviewers).await
}

/// [`start_review_of`] through `client` on the server at `base`.
pub(crate) async fn start_review_at(
    client: &reqwest::Client,
    base: &str,
    version: &Value,
    reviewers: usize,
) -> Review {
    let key = ShareKey::generate().unwrap();
    let data = seal(&key, version);
    let digest = share_codec::plan_digest(&key, version["p"].as_str().unwrap());
    let created: Value = client
        .post(format!("{base}/api/v1/reviews"))
        .json(&json!({"version": {"data": data, "digest": digest}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let owner = created["ownerToken"].as_str().unwrap().to_owned();
    let mut tokens = Vec::new();
    for _ in 0..reviewers {
        let link: Value = client
            .post(format!("{base}/api/v1/reviews/{id}/links"))
            .bearer_auth(&owner)
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        tokens.push(link["token"].as_str().unwrap().to_owned());
    }
    Review {
        id,
        key,
        owner,
        reviewers: tokens,
    }
}

impl Review {
    pub(crate) fn link(&self, app: &TestApp, token: &str) -> String {
        self.link_at(&app.base_url, token)
    }

    /// The link of `token` on the portal at `base`.
    pub(crate) fn link_at(&self, base: &str, token: &str) -> String {
        format!(
            "{base}/r/{}#key={}&t={token}",
            self.id,
            self.key.to_base64url()
        )
    }

    /// Puts a comment set as the holder of `token`, named `name`.
    pub(crate) async fn comment(&self, app: &TestApp, token: &str, name: &str, tuples: Value) {
        self.put_set(app, token, name, &json!({"v": 1, "a": tuples}))
            .await;
    }

    /// Puts `set` (a comment set's plaintext, made on v1: annotations,
    /// thread ids, replies, state changes) as the holder of `token`,
    /// named `name`, replacing whatever set it had.
    pub(crate) async fn put_set(&self, app: &TestApp, token: &str, name: &str, set: &Value) {
        let data = seal(&self.key, set);
        let response = app
            .client
            .put(format!(
                "{}/api/v1/reviews/{}/comments",
                app.base_url, self.id
            ))
            .bearer_auth(token)
            .json(&json!({"name": name, "version": 1, "data": data}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }

    /// Mints a link with `role` (`reviewer` or `approver`): its token.
    pub(crate) async fn add_link(&self, app: &TestApp, role: &str) -> String {
        let link: Value = app
            .client
            .post(format!("{}/api/v1/reviews/{}/links", app.base_url, self.id))
            .bearer_auth(&self.owner)
            .json(&json!({"role": role}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        link["token"].as_str().unwrap().to_owned()
    }

    /// Decides this round as the holder of `token`, on `version`.
    pub(crate) async fn decide(&self, app: &TestApp, token: &str, decision: &str, version: u64) {
        let response = app
            .client
            .post(format!(
                "{}/api/v1/reviews/{}/decision",
                app.base_url, self.id
            ))
            .bearer_auth(token)
            .json(&json!({"decision": decision, "version": version}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }

    async fn view(&self, app: &TestApp) -> Value {
        app.client
            .get(format!("{}/api/v1/reviews/{}", app.base_url, self.id))
            .bearer_auth(&self.owner)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// Where the tests save screenshots of the pages, for a person to look at.
pub(crate) fn screenshots() -> PathBuf {
    let shots = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/portal-screenshots"
    ));
    std::fs::create_dir_all(&shots).unwrap();
    shots
}

async fn run(sessions: Value) -> Vec<Value> {
    let (chromium, dir) = harness().unwrap();
    let input = json!({"chromium": chromium, "sessions": sessions});
    let report = run_harness(&dir, "review.mjs", &input).await;
    report["sessions"].as_array().unwrap().clone()
}

/// A fresh path for the page's "ready" signal.
pub(crate) fn signal_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/portal-signals"
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

pub(crate) async fn when_ready(path: &std::path::Path) {
    for _ in 0..600 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the page never became ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_names_herself_and_sends_encrypted_comments() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let url = review.link(&app, &review.reviewers[0]);
    let sessions = run(json!([{"url": url, "actions": [
        {"author": "Bea"},
        {"comment": ["ten percent", "Start at one"]},
        {"global": "Fine otherwise"},
        {"reviewSend": true},
    ]}]))
    .await;
    assert_eq!(sessions[0]["outputs"][3], "Sent: 2 annotations.");
    let view = review.view(&app).await;
    assert_eq!(view["comments"][0]["name"], "Bea");
    // The server holds ciphertext that the review key opens.
    let data = view["comments"][0]["data"].as_str().unwrap();
    assert!(!data.contains("Start at one"));
    let plain = share_codec::decrypt(data, &review.key.to_base64url()).unwrap();
    let set: Value =
        serde_json::from_str(&share_codec::decompress(&plain, DEFAULT_MAX_INFLATED_BYTES).unwrap())
            .unwrap();
    assert_eq!(
        set["a"],
        json!([
            ["C", "ten percent", "Start at one", "Bea", null],
            ["G", "Fine otherwise", "Bea", null],
        ])
    );
    // Each comment is the root of a thread with an id the page made.
    let ids: Vec<&str> = set["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert!(
        ids.iter()
            .all(|id| id.len() == 12 && id.chars().all(|c| c.is_ascii_alphanumeric())),
        "{ids:?}"
    );
    assert_eq!(set.get("replies"), None, "no replies yet: {set}");
    // Opened again, her comments are hers: bound name, sent, removable.
    let shots = screenshots();
    let again = run(json!([{"url": url, "actions": [
        {"screenshot": shots.join("review-reviewer-light.png")},
        {"screenshot": shots.join("review-reviewer-dark.png"), "dark": true},
        {"screenshot": shots.join("review-reviewer-phone.png"), "width": 390},
    ]}]))
    .await;
    assert_eq!(again[0]["annotations"][0]["meta"], "Comment — Bea");
    assert_eq!(again[0]["highlighted"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_sees_a_comment_live_and_a_draft_is_never_painted_over() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 2).await;
    let owner_ready = signal_path("owner");
    let bea_ready = signal_path("bea");
    let pages = run(json!([
        {"url": review.link(&app, &review.owner), "actions": [
            {"signal": owner_ready},
            {"waitText": ["#annotation-list", "Widen slower"]},
        ]},
        {"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"author": "Bea"},
            {"comment": ["ten percent", "My unsent draft"]},
            {"signal": bea_ready},
            {"waitText": ["#review-news-text", "Bob commented"]},
            {"annotationsNow": true},
            {"showNews": true},
        ]},
    ]));
    let comments = async {
        when_ready(&owner_ready).await;
        review
            .comment(
                &app,
                &review.reviewers[1],
                "Bob",
                json!([["C", "widen to everyone", "Widen slower", null, null]]),
            )
            .await;
        when_ready(&bea_ready).await;
        review
            .comment(
                &app,
                &review.reviewers[1],
                "Bob",
                json!([["C", "old path", "A week is short", null, null]]),
            )
            .await;
    };
    let (sessions, ()) = tokio::join!(pages, comments);
    let owner = &sessions[0];
    let painted_ms: u64 = owner["outputs"][1].as_str().unwrap().parse().unwrap();
    assert!(painted_ms < 20_000);
    assert!(
        owner["annotations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["meta"] == "Comment — Bob" && a["text"] == "Widen slower"),
        "{owner}"
    );
    // Bea's page announced Bob's second comment instead of painting it
    // over her unsent draft; "Show" then shows it, and her draft stays.
    let bea = &sessions[1];
    let texts = |list: &Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|a| {
                format!(
                    "{} | {}",
                    a["meta"].as_str().unwrap(),
                    a["text"].as_str().unwrap()
                )
            })
            .collect()
    };
    let before: Value = serde_json::from_str(bea["outputs"][4].as_str().unwrap()).unwrap();
    assert_eq!(
        texts(&before),
        [
            "Comment — Bob | Widen slower",
            "Comment — Bea · not sent | My unsent draft"
        ]
    );
    assert_eq!(bea["outputs"][5], "Bob commented");
    assert_eq!(
        texts(&bea["annotations"]),
        [
            "Comment — Bob | A week is short",
            "Comment — Bea · not sent | My unsent draft"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_reviewer_is_told_and_keeps_the_plan() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let ready = signal_path("revoked");
    let page = run(
        json!([{"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"signal": ready},
            {"waitText": ["#review-state", "was revoked"]},
        ]}]),
    );
    let revoke = async {
        when_ready(&ready).await;
        let view = review.view(&app).await;
        let link = view["links"][0]["id"].as_str().unwrap().to_owned();
        let response = app
            .client
            .delete(format!(
                "{}/api/v1/reviews/{}/links/{link}",
                app.base_url, review.id
            ))
            .bearer_auth(&review.owner)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 204);
    };
    let (sessions, ()) = tokio::join!(page, revoke);
    assert_eq!(sessions[0]["error"], Value::Null);
    // A wrong key is a clear failure, not a blank page.
    let wrong = format!(
        "{}/r/{}#key={}&t={}",
        app.base_url,
        review.id,
        ShareKey::generate().unwrap().to_base64url(),
        review.owner
    );
    let failed = run(json!([{"url": wrong, "actions": []}])).await;
    assert_eq!(failed[0]["error"], "Failed to open the review.");
    assert!(
        failed[0]["errorDetail"]
            .as_str()
            .unwrap()
            .contains("does not open this review's plan"),
        "{failed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsent_comments_and_typing_survive_a_reload() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let sessions = run(
        json!([{"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"author": "Bea"},
            {"comment": ["ten percent", "Kept across the reload"]},
            {"type": ["old path", "Half typed"]},
            {"reload": true},
            {"dialogText": true},
            {"closeDialog": true},
            {"annotationsNow": true},
            {"reviewSend": true},
            {"reload": true},
            {"annotationsNow": true},
        ]}]),
    )
    .await;
    let s = &sessions[0];
    let out =
        |i: usize| -> Value { serde_json::from_str(s["outputs"][i].as_str().unwrap()).unwrap() };
    assert_eq!(
        out(4),
        json!({"open": true, "quote": "old path", "text": "Half typed"})
    );
    assert_eq!(
        out(6),
        json!([{"meta": "Comment — Bea · not sent", "text": "Kept across the reload"}])
    );
    assert_eq!(s["outputs"][7], "Sent: 1 annotation.");
    // Sent: the draft is gone, and the reload shows the stored set.
    assert_eq!(
        out(9),
        json!([{"meta": "Comment — Bea", "text": "Kept across the reload"}])
    );
    assert_eq!(review.view(&app).await["comments"][0]["name"], "Bea");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_mints_and_revokes_links_and_requests_changes_seen_live() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let bea_ready = signal_path("decision-bea");
    // Owner and reviewer at once, each in a browser context of its own.
    let (chromium, dir) = harness().unwrap();
    let input = json!({"chromium": chromium, "parallel": true, "sessions": [
        {"url": review.link(&app, &review.owner), "actions": [
            {"addLink": true},
            {"revokeLink": 1},
            {"waitFile": bea_ready},
            {"requestChanges": "Add a rollback section"},
        ]},
        {"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"signal": bea_ready},
            {"waitText": ["#review-state", "The owner requested changes."]},
        ]},
    ]});
    let report = run_harness(&dir, "review.mjs", &input).await;
    let owner = &report["sessions"][0];
    let minted = owner["outputs"][0].as_str().unwrap();
    let prefix = format!(
        "{}/r/{}#key={}&t=",
        app.base_url,
        review.id,
        review.key.to_base64url()
    );
    assert!(minted.starts_with(&prefix), "{minted}");
    let token = &minted[prefix.len()..];
    let revoked = owner["outputs"][1].as_str().unwrap();
    assert!(
        revoked.starts_with("Revoked: ") && revoked.ends_with(" can no longer open the review."),
        "{revoked}"
    );
    // The revoked link answers like no review at all.
    let gone = app
        .client
        .get(format!("{}/api/v1/reviews/{}", app.base_url, review.id))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    assert!(
        owner["outputs"][3]
            .as_str()
            .unwrap()
            .starts_with("You requested changes."),
        "the owner reads who decided as themselves: {owner}"
    );
    let view = review.view(&app).await;
    assert_eq!(view["state"], "changes_requested");
    let data = view["decision"]["data"].as_str().unwrap();
    let plain = share_codec::decrypt(data, &review.key.to_base64url()).unwrap();
    let feedback: Value =
        serde_json::from_str(&share_codec::decompress(&plain, DEFAULT_MAX_INFLATED_BYTES).unwrap())
            .unwrap();
    assert_eq!(feedback["a"][0][0], "G");
    assert_eq!(feedback["a"][0][1], "Add a rollback section");
}

/// Opens blob `data` of a review with `key`: the JSON inside.
fn open_blob(data: &str, key: &ShareKey) -> Value {
    let plain = share_codec::decrypt(data, &key.to_base64url()).unwrap();
    serde_json::from_str(&share_codec::decompress(&plain, DEFAULT_MAX_INFLATED_BYTES).unwrap())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_link_starts_a_review_with_an_owner_link_and_reviewer_links() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let payload = json!({"p": PLAN, "a": [["C", "ten percent", "Why ten?", "Ann", null]]});
    let share = format!(
        "{}/#{}",
        app.base_url,
        share_codec::compress(&payload.to_string())
    );
    let shots = screenshots();
    let sessions = run(json!([{"url": share, "actions": [
        {"startReview": true, "reviewers": 1},
        {"screenshot": shots.join("review-start-light.png")},
        {"screenshot": shots.join("review-start-phone.png"), "width": 390, "dark": true},
        {"goto": "last"},
        {"annotationsNow": true},
    ]}]))
    .await;
    let outputs = &sessions[0]["outputs"];
    let started: Value = serde_json::from_str(outputs[0].as_str().unwrap()).unwrap();
    let links: Vec<&str> = started["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        links.len(),
        3,
        "the owner link and two reviewer links: {started}"
    );
    assert!(
        started["started"]
            .as_str()
            .unwrap()
            .starts_with("The review is started. It expires on "),
        "{started}"
    );
    // Each QR code reads back as its link; "Open the review" is the owner's.
    assert_eq!(started["qr"], started["links"]);
    assert_eq!(started["open"], links[0]);
    let parsed: Vec<_> = links
        .iter()
        .map(|l| share_codec::parse_review_link(l).unwrap())
        .collect();
    assert!(
        parsed
            .iter()
            .all(|l| l.id == parsed[0].id && l.key == parsed[0].key)
    );
    assert!(parsed.iter().all(|l| l.api.is_none()), "{links:?}");
    let key = ShareKey::parse(&parsed[0].key).unwrap();
    let owner = parsed[0].token.clone().unwrap();
    // The owner link opens the review as its owner, with the share's
    // annotation on the plan.
    let opened: Value = serde_json::from_str(outputs[3].as_str().unwrap()).unwrap();
    assert_eq!(opened["error"], Value::Null, "{opened}");
    assert_eq!(
        serde_json::from_str::<Value>(outputs[4].as_str().unwrap()).unwrap(),
        json!([{"meta": "Comment — Ann", "text": "Why ten?"}])
    );
    let review = Review {
        id: parsed[0].id.clone(),
        key,
        owner,
        reviewers: parsed[1..]
            .iter()
            .map(|l| l.token.clone().unwrap())
            .collect(),
    };
    let view = review.view(&app).await;
    assert_eq!(view["you"]["role"], "owner");
    assert_eq!(view["links"].as_array().unwrap().len(), 2);
    // Version 1 is the share, encrypted in the browser, its digest the
    // HMAC of the plan under the review key.
    assert_eq!(
        view["versions"][0]["digest"],
        share_codec::plan_digest(&review.key, PLAN)
    );
    let version: Value = app
        .client
        .get(format!(
            "{}/api/v1/reviews/{}/versions/1",
            app.base_url, review.id
        ))
        .bearer_auth(&review.owner)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let data = version["data"].as_str().unwrap();
    assert!(!data.contains("ten percent"));
    assert_eq!(open_blob(data, &review.key), payload);
    // A reviewer link works as one: its holder comments under her name.
    review
        .comment(
            &app,
            &review.reviewers[1],
            "Cy",
            json!([["G", "Looks fine", null, null]]),
        )
        .await;
    assert_eq!(review.view(&app).await["comments"][0]["name"], "Cy");
}

/// The plan's second version: the old path's line is gone, a new one is in.
pub(crate) const PLAN_V2: &str = "# Deploy plan\n\nRoll out to ten percent first, then widen to everyone.\n\nWatch the error rate for a day.\n";

impl Review {
    /// Pushes `plan` as the owner, on version `parent`.
    pub(crate) async fn push(&self, app: &TestApp, plan: &str, parent: u64) -> Value {
        self.push_as(app, plan, parent, false).await
    }

    /// Pushes `plan` as the owner, on version `parent`, claiming a
    /// progress push (only checklist marks changed) when `progress`.
    pub(crate) async fn push_as(
        &self,
        app: &TestApp,
        plan: &str,
        parent: u64,
        progress: bool,
    ) -> Value {
        let response = app
            .client
            .post(format!(
                "{}/api/v1/reviews/{}/versions",
                app.base_url, self.id
            ))
            .bearer_auth(&self.owner)
            .json(&json!({
                "data": seal(&self.key, &json!({"p": plan, "a": []})),
                "digest": share_codec::plan_digest(&self.key, plan),
                "parent": parent,
                "progress": progress,
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        response.json().await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_pushed_while_a_reviewer_drafts_is_announced_and_compared() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 2).await;
    // Bob commented on v1, on a line that v2 drops.
    review
        .comment(
            &app,
            &review.reviewers[1],
            "Bob",
            json!([["C", "old path", "A week is short", null, null]]),
        )
        .await;
    let ready = signal_path("version-bea");
    let page = run(
        json!([{"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"author": "Bea"},
            {"comment": ["ten percent", "Draft on v1"]},
            {"type": ["widen", "Half typed"]},
            {"signal": ready},
            {"waitText": ["#review-news-text", "v2 pushed"]},
            {"dialogText": true},
            {"closeDialog": true},
            {"annotationsNow": true},
            {"showNews": true},
            {"annotationsNow": true},
            {"versions": true},
        ]}]),
    );
    let push = async {
        when_ready(&ready).await;
        assert_eq!(review.push(&app, PLAN_V2, 1).await["n"], 2);
    };
    let (sessions, ()) = tokio::join!(page, push);
    let s = &sessions[0];
    let out =
        |i: usize| -> Value { serde_json::from_str(s["outputs"][i].as_str().unwrap()).unwrap() };
    // Announced while she typed: her typing and her unsent comment are as
    // she left them, on the plan she was reading.
    assert_eq!(
        out(5),
        json!({"open": true, "quote": "widen", "text": "Half typed"})
    );
    assert_eq!(
        out(7),
        json!([
            {"meta": "Comment — Bob", "text": "A week is short"},
            {"meta": "Comment — Bea · not sent", "text": "Draft on v1"},
        ])
    );
    // Shown: v2, her draft re-anchored on it and marked with its version;
    // Bob's comment on the dropped line listed as no longer found.
    assert_eq!(s["outputs"][8], "v2 pushed");
    assert_eq!(
        out(9),
        json!([
            {"meta": "Comment — Bob · on v1", "text": "A week is short", "notFound": true},
            {"meta": "Comment — Bea · on v1 · not sent", "text": "Draft on v1"},
        ])
    );
    let versions = out(10);
    assert_eq!(
        versions["list"],
        json!([
            "v1 · the first version",
            "v2 · the latest · +1 −1 against v1"
        ])
    );
    assert_eq!(versions["summary"], "From v1 to v2: +1 −1 lines.");
    assert_eq!(
        versions["lines"],
        json!([
            "same  # Deploy plan",
            "same   ",
            "same  Roll out to ten percent first, then widen to everyone.",
            "same   ",
            "del removed: −Keep the old path for a week.",
            "add added: +Watch the error rate for a day.",
        ])
    );
    // Nothing of hers was sent meanwhile.
    assert_eq!(
        review.view(&app).await["comments"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// The texts of the comments `writer` (a name) has stored on the review.
async fn stored_texts(review: &Review, app: &TestApp, name: &str) -> Vec<String> {
    let view = review.view(app).await;
    let Some(set) = view["comments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
    else {
        return Vec::new();
    };
    let opened = open_blob(set["data"].as_str().unwrap(), &review.key);
    opened["a"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tuple| {
            // ["C", quote, text, …] or ["G", text, …]
            let at = if tuple[0] == "G" { 1 } else { 2 };
            tuple[at].as_str().unwrap().to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_edits_withdraws_and_takes_back_her_comments_and_a_taken_name_is_refused() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 2).await;
    let bea = run(
        json!([{"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"author": "Bea"},
            {"comment": ["ten percent", "Start at one"]},
            {"global": "Fine otherwise"},
            {"reviewSend": true},
            {"edit": [0, "Start at one percent"]},
            {"annotationsNow": true},
            {"reviewSend": true},
            {"remove": 1},
            {"remove": 0},
            {"reviewSend": true},
            {"undo": true},
            {"annotationsNow": true},
            {"reviewSend": true},
        ]}]),
    )
    .await;
    let s = &bea[0];
    let out =
        |i: usize| -> Value { serde_json::from_str(s["outputs"][i].as_str().unwrap()).unwrap() };
    assert_eq!(s["outputs"][3], "Sent: 2 annotations.");
    assert_eq!(
        out(5),
        json!([
            {"meta": "Comment — Bea · not sent", "text": "Start at one percent"},
            {"meta": "Comment on the plan — Bea", "text": "Fine otherwise"},
        ])
    );
    assert_eq!(s["outputs"][6], "Sent: 2 annotations.");
    assert_eq!(s["outputs"][9], "Your comments are withdrawn.");
    assert_eq!(
        s["outputs"][10],
        "Comment removed (withdrawn once you send)."
    );
    assert_eq!(
        out(11),
        json!([{"meta": "Comment — Bea · not sent", "text": "Start at one percent"}])
    );
    assert_eq!(s["outputs"][12], "Sent: 1 annotation.");
    assert_eq!(
        stored_texts(&review, &app, "Bea").await,
        ["Start at one percent"]
    );
    // Another reviewer asking for Bea's name is told why, and can pick
    // another.
    let other = run(
        json!([{"url": review.link(&app, &review.reviewers[1]), "actions": [
            {"author": "Bea"},
            {"global": "Me too"},
            {"reviewSend": true},
            {"author": "Bee"},
            {"reviewSend": true},
        ]}]),
    )
    .await;
    assert_eq!(
        other[0]["outputs"][2],
        "Another reviewer of this review already writes under that name: choose another one."
    );
    assert_eq!(other[0]["outputs"][4], "Sent: 1 annotation.");
    assert_eq!(stored_texts(&review, &app, "Bee").await, ["Me too"]);
    assert_eq!(
        stored_texts(&review, &app, "Bea").await,
        ["Start at one percent"]
    );
}

/// Bob's thread: his comment on "ten percent", under a thread id his
/// client made.
const BOB_THREAD: &str = "bobThread001";

/// Now, in Unix milliseconds (what a thread's `at` is).
fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Bob's set: one comment, the root of [`BOB_THREAD`].
fn bobs_set() -> Value {
    json!({"v": 1, "a": [["C", "ten percent", "Why ten?", null, null]], "ids": [BOB_THREAD]})
}

/// The stored, decrypted set of the writer named `name`.
async fn stored_set(review: &Review, app: &TestApp, name: &str) -> Value {
    let view = review.view(app).await;
    let set = view["comments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no set of {name}: {view}"));
    open_blob(set["data"].as_str().unwrap(), &review.key)
}

/// Output `i` of a session, parsed as JSON.
fn output(session: &Value, i: usize) -> Value {
    let text = session["outputs"][i]
        .as_str()
        .unwrap_or_else(|| panic!("output {i} is not text: {session}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("output {i} ({text}): {e}"))
}

/// A `threads` output in a fixed order (by each card's heading): the
/// server lists the writers' sets by their random link ids.
fn by_meta(threads: Value) -> Value {
    let mut cards = threads.as_array().unwrap().clone();
    cards.sort_by(|a, b| a["meta"].as_str().cmp(&b["meta"].as_str()));
    Value::Array(cards)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_and_resolves_arrive_live_and_a_reviewers_forged_resolve_is_ignored() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 3).await;
    review
        .put_set(&app, &review.reviewers[1], "Bob", &bobs_set())
        .await;
    // Cy, a reviewer, wrote a change that resolves Bob's thread: the rules
    // let only Bob, the owner or an approver do that, so it counts for
    // nothing.
    review
        .put_set(
            &app,
            &review.reviewers[2],
            "Cy",
            &json!({"v": 1, "a": [["C", "old path", "Keep it two weeks", null, null]],
                    "ids": ["cyThread0001"],
                    "states": [{"to": BOB_THREAD, "state": "resolved", "at": now_ms()}]}),
        )
        .await;
    let bea_replied = signal_path("threads-bea");
    let owner_resolved = signal_path("threads-owner");
    let (chromium, dir) = harness().unwrap();
    let input = json!({"chromium": chromium, "parallel": true, "sessions": [
        {"url": review.link(&app, &review.owner), "actions": [
            {"author": "Olivia"},
            {"threads": true},
            {"textOf": "#open-threads"},
            {"waitFile": bea_replied},
            {"waitText": ["#annotation-list", "Five would be safer"]},
            {"threadAction": ["Why ten?", "Resolve"]},
            {"reply": ["Keep it two weeks", "The old path stays two weeks in v1 already."], "addressed": true},
            {"signal": owner_resolved},
            {"threads": true},
            {"textOf": "#open-threads"},
        ]},
        {"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"author": "Bea"},
            {"threads": true},
            {"reply": ["Why ten?", "Five would be safer"]},
            {"signal": bea_replied},
            // She is typing a reply to Cy when the resolve arrives.
            {"typeReply": ["Keep it two weeks", "Two weeks of"]},
            {"waitFile": owner_resolved},
            {"waitText": ["#annotation-list", "stays two weeks"]},
            {"threads": true},
            {"focused": true},
        ]},
    ]});
    let report = run_harness(&dir, "review.mjs", &input).await;
    let owner = &report["sessions"][0];
    let bea = &report["sessions"][1];

    // Bob's thread is open despite Cy's change; the owner may resolve it.
    assert_eq!(
        by_meta(output(owner, 1)),
        json!([
            {"meta": "Comment — Bob", "root": "Why ten?", "replies": [], "actions": ["Reply", "Resolve"], "folded": false, "typed": ""},
            {"meta": "Comment — Cy", "root": "Keep it two weeks", "replies": [], "actions": ["Reply", "Resolve"], "folded": false, "typed": ""},
        ]),
        "{owner}"
    );
    assert_eq!(owner["outputs"][2], "2 open threads");
    // Bea may reply to anyone's thread but resolve none of theirs.
    assert_eq!(
        by_meta(output(bea, 1)),
        json!([
            {"meta": "Comment — Bob", "root": "Why ten?", "replies": [], "actions": ["Reply"], "folded": false, "typed": ""},
            {"meta": "Comment — Cy", "root": "Keep it two weeks", "replies": [], "actions": ["Reply"], "folded": false, "typed": ""},
        ]),
        "{bea}"
    );
    assert_eq!(bea["outputs"][2], "Reply sent.");
    // The owner saw her reply without a reload, and resolved the thread.
    assert_eq!(owner["outputs"][5], "Thread resolved.");
    assert_eq!(owner["outputs"][6], "Reply sent.");
    let resolved = by_meta(output(owner, 8));
    assert_eq!(resolved[0]["meta"], "Comment — Bob · resolved");
    assert_eq!(resolved[0]["replies"], json!(["Bea: Five would be safer"]));
    assert_eq!(resolved[0]["actions"], json!(["Reply", "Reopen"]));
    // The owner's reply with "addressed in v1" ticked marks the thread.
    assert_eq!(resolved[1]["meta"], "Comment — Cy · addressed in v1");
    assert_eq!(
        resolved[1]["replies"],
        json!(["Olivia: The old path stays two weeks in v1 already."])
    );
    assert_eq!(owner["outputs"][9], "1 open thread");
    // Bea saw the resolve without a reload: the thread is folded.
    let seen = by_meta(output(bea, 7));
    assert_eq!(
        seen[0],
        json!({"meta": "Comment — Bob · resolved", "root": "Why ten?", "replies": ["Bea: Five would be safer"], "actions": ["Reply"], "folded": true, "typed": ""}),
        "{bea}"
    );
    // The list was drawn again under her reply to Cy: it is as she left
    // it, and she is still typing in it.
    assert_eq!(
        (&seen[1]["meta"], &seen[1]["typed"]),
        (
            &json!("Comment — Cy · addressed in v1"),
            &json!("Two weeks of")
        )
    );
    assert_eq!(
        bea["outputs"][8],
        "textarea in Comment — Cy · addressed in v1"
    );

    // What the pages wrote, in the sets' plaintext: Bea's reply to Bob's
    // thread, the owner's state change.
    let beas = stored_set(&review, &app, "Bea").await;
    assert_eq!(beas["a"], json!([]));
    let replies = beas["replies"].as_array().unwrap();
    assert_eq!(replies.len(), 1, "{beas}");
    assert_eq!(
        (&replies[0]["to"], &replies[0]["text"]),
        (&json!(BOB_THREAD), &json!("Five would be safer"))
    );
    assert!(replies[0]["at"].as_u64().unwrap() > 0);
    let view = review.view(&app).await;
    let owners = view["comments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["writer"] == "owner")
        .expect("the owner's set");
    let owners = open_blob(owners["data"].as_str().unwrap(), &review.key);
    assert_eq!(owners["states"][0]["to"], BOB_THREAD, "{owners}");
    assert_eq!(owners["states"][0]["state"], "resolved", "{owners}");
}

/// The plan's third version: a step added to the second.
const PLAN_V3: &str = "# Deploy plan\n\nRoll out to ten percent first, then widen to everyone.\n\nWatch the error rate for a day.\n\nTell support first.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_is_told_of_a_push_while_approving_and_sees_open_threads_and_the_rounds() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let ann = review.add_link(&app, "approver").await;
    review
        .put_set(&app, &review.reviewers[0], "Bob", &bobs_set())
        .await;
    // Round 1: the owner asks for changes on v1; v2 opens round 2.
    review
        .decide(&app, &review.owner, "changes_requested", 1)
        .await;
    review.push(&app, PLAN_V2, 1).await;
    let ready = signal_path("approver");
    let page = run(json!([{"url": review.link(&app, &ann), "actions": [
        {"author": "Ann"},
        {"textOf": "#review-approve"},
        {"textOf": "#review-changes"},
        {"textOf": "#review-links"},
        {"textOf": "#open-threads"},
        // A note she is writing: the push is announced, not shown.
        {"comment": ["ten percent", "Fine by me"]},
        {"signal": ready},
        {"waitText": ["#review-news-text", "v3 pushed"]},
        {"approve": true},
        {"textOf": "#review-state"},
        {"textOf": "#plan"},
        {"approve": true},
        {"textOf": "#review-history"},
    ]}]));
    let push = async {
        when_ready(&ready).await;
        review.push(&app, PLAN_V3, 2).await;
    };
    let (sessions, ()) = tokio::join!(page, push);
    let s = &sessions[0];
    assert_eq!(s["error"], Value::Null, "{s}");
    assert_eq!(
        (&s["outputs"][1], &s["outputs"][2], &s["outputs"][3]),
        (&json!("Approve"), &json!("Request changes"), &Value::Null),
        "an approver decides but does not manage links: {s}"
    );
    assert_eq!(s["outputs"][4], "1 open thread");
    // She approved while reading v2: nothing was decided, v3 is shown.
    assert_eq!(
        s["outputs"][8],
        "Nothing was decided: version 3 was pushed while you were reading v2. It is shown now; read it, then decide again."
    );
    let state_line = s["outputs"][9].as_str().unwrap();
    assert!(state_line.contains("· v3 · round 2 ·"), "{state_line}");
    assert!(
        s["outputs"][10]
            .as_str()
            .unwrap()
            .contains("Tell support first."),
        "{s}"
    );
    assert_eq!(s["outputs"][11], "Approved.");
    let history = s["outputs"][12].as_str().unwrap();
    assert!(
        history.contains("Round 1 — changes requested on v1 by the owner")
            && history.contains("Round 2 — approved v3 by Ann"),
        "{history}"
    );
    let view = review.view(&app).await;
    assert_eq!(
        (&view["state"], &view["decision"]["version"]),
        (&json!("approved"), &json!(3))
    );

    // A push that is not progress voids her approval (round 3), which the
    // owner approves on v4; then two progress pushes: one that only ticks
    // a box, one that also adds a step, which the page flags.
    let v4 = format!("{PLAN_V3}\n- [ ] Tell support\n");
    let v5 = format!("{PLAN_V3}\n- [x] Tell support\n");
    let v6 = format!("{PLAN_V3}\n- [x] Tell support\n- [ ] Drop the old path\n");
    review.push(&app, &v4, 3).await;
    review.decide(&app, &review.owner, "approved", 4).await;
    review.push_as(&app, &v5, 4, true).await;
    review.push_as(&app, &v6, 5, true).await;
    let again = run(json!([{"url": review.link(&app, &ann), "actions": [
        {"textOf": "#review-history"},
        {"versions": true},
    ]}]))
    .await;
    let history = again[0]["outputs"][0].as_str().unwrap();
    assert!(
        history.contains("Round 2 — approved v3 by Ann (voided by v4)")
            && history.contains("Round 3 — approved v4 by the owner"),
        "{history}"
    );
    let versions = output(&again[0], 1);
    let list: Vec<&str> = versions["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(list.len(), 6, "{list:?}");
    assert!(
        list[4].contains("· round 3 · progress ·") && !list[4].contains("checklist marks"),
        "only a box ticked: {}",
        list[4]
    );
    assert!(
        list[5].contains("· round 3 · progress ·")
            && list[5].ends_with("pushed as progress, but more than checklist marks changed"),
        "a step added in a progress push is flagged: {}",
        list[5]
    );
    assert!(
        !list[3].contains("progress"),
        "v4 was no progress push: {}",
        list[3]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_being_typed_survives_a_reload_and_threads_fit_a_phone() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 2).await;
    review
        .put_set(&app, &review.reviewers[1], "Bob", &bobs_set())
        .await;
    review
        .put_set(
            &app,
            &review.owner,
            "Olivia",
            &json!({"v": 1, "a": [], "replies": [
                {"id": "oliviaReply1", "to": BOB_THREAD, "text": "Ten is where we always start, and the dashboards are set up for it.", "at": now_ms(), "addressed": 1},
            ]}),
        )
        .await;
    let shots = screenshots();
    let sessions = run(
        json!([{"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"selectHighlight": "ten percent"},
            {"typeReply": ["Why ten?", "Half a reply"]},
            {"reload": true},
            {"threads": true},
            {"layout": 390},
            {"selectHighlight": "ten percent"},
            {"screenshot": shots.join("review-threads-phone.png"), "width": 390},
        ]}]),
    )
    .await;
    let s = &sessions[0];
    assert_eq!(s["error"], Value::Null, "{s}");
    // On a wide window the thread's card is in view beside its highlight.
    assert_eq!(
        output(s, 0),
        json!({"selected": "Comment — Bob · addressed in v1", "inView": true})
    );
    // After the reload the reply is still in its box, unsent.
    assert_eq!(
        output(s, 3),
        json!([{"meta": "Comment — Bob · addressed in v1", "root": "Why ten?",
                "replies": ["Olivia: Ten is where we always start, and the dashboards are set up for it."],
                "actions": ["Reply"], "folded": false, "typed": "Half a reply"}])
    );
    // 390 px wide: nothing is wider than the window, and the card comes
    // into view when its highlight is chosen.
    let layout = output(s, 4);
    assert_eq!(layout["window"], 390, "{layout}");
    assert!(layout["page"].as_u64().unwrap() <= 390, "{layout}");
    assert_eq!(output(s, 5)["inView"], true, "{s}");
    assert_eq!(
        review.view(&app).await["comments"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "nothing of hers was sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_another_client_wrote_keeps_its_threads_when_two_tabs_add_to_it() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 2).await;
    review
        .put_set(&app, &review.reviewers[1], "Bob", &bobs_set())
        .await;
    // Bea's set as the CLI wrote it: a thread id, a reply, a state change
    // and a field this portal does not know.
    let cli_reply = json!({"id": "beaCliReply1", "to": BOB_THREAD, "text": "From the terminal", "at": 1_800_000_000_000_u64});
    let cli_state = json!({"to": "beaThread001", "state": "resolved", "at": 1_800_000_000_001_u64});
    review
        .put_set(
            &app,
            &review.reviewers[0],
            "Bea",
            &json!({"v": 1, "a": [["C", "widen", "Widen by region", null, null]],
                    "ids": ["beaThread001"], "replies": [cli_reply], "states": [cli_state],
                    "cliNote": {"kept": true}}),
        )
        .await;
    let link = review.link(&app, &review.reviewers[0]);
    let (drafted, replied) = (signal_path("cli-drafted"), signal_path("cli-replied"));
    let (chromium, dir) = harness().unwrap();
    let report = run_harness(
        &dir,
        "review.mjs",
        &json!({"chromium": chromium, "parallel": true, "sessions": [
            {"url": link, "actions": [
                {"comment": ["old path", "Two weeks"]},
                {"signal": drafted},
                {"waitFile": replied},
                {"reviewSend": true},
            ]},
            {"url": link, "actions": [
                {"waitFile": drafted},
                {"reply": ["Why ten?", "From the browser"]},
                {"signal": replied},
            ]},
        ]}),
    )
    .await;
    let laptop = &report["sessions"][0];
    let phone = &report["sessions"][1];
    assert_eq!(phone["outputs"][1], "Reply sent.", "{phone}");
    assert!(
        laptop["outputs"][3]
            .as_str()
            .unwrap()
            .starts_with("Sent: 2 annotations."),
        "{laptop}"
    );
    let set = stored_set(&review, &app, "Bea").await;
    assert_eq!(
        set["a"],
        json!([
            ["C", "widen", "Widen by region", "Bea", null],
            ["C", "old path", "Two weeks", "Bea", null],
        ]),
        "{set}"
    );
    assert_eq!(set["ids"][0], "beaThread001", "{set}");
    assert_eq!(set["ids"][1].as_str().unwrap().len(), 12, "{set}");
    let replies = set["replies"].as_array().unwrap();
    assert_eq!(replies.len(), 2, "{set}");
    assert_eq!(replies[0], cli_reply, "the CLI's reply, as it wrote it");
    assert_eq!(replies[1]["text"], "From the browser");
    assert_eq!(set["states"], json!([cli_state]));
    assert_eq!(set["cliNote"], json!({"kept": true}));
}
