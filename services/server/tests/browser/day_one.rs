//! What a team met in its first hour of a live review, driven through the
//! pages as a person does (select, comment, Send, Show, paste a link):
//! sent comments are never replaced from a stale view; the decision's text
//! and who decided reach every page; a wide table scrolls in its own box
//! on a phone; a link pasted into an open tab is followed; a page served
//! over plain HTTP to another host says what is wrong instead of blaming
//! the link.

use serde_json::{Value, json};
use share_codec::DEFAULT_MAX_INFLATED_BYTES;
use testkit::TestApp;

use crate::reviews::{
    Review, screenshots, signal_path, start_review, start_review_at, start_review_of, when_ready,
};
use crate::{harness, run_harness};

/// The texts of the comment set stored under `name`.
async fn stored(review: &Review, app: &TestApp, name: &str) -> Vec<String> {
    let view: Value = app
        .client
        .get(format!("{}/api/v1/reviews/{}", app.base_url, review.id))
        .bearer_auth(&review.owner)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let Some(set) = view["comments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
    else {
        return Vec::new();
    };
    let plain =
        share_codec::decrypt(set["data"].as_str().unwrap(), &review.key.to_base64url()).unwrap();
    let set: Value =
        serde_json::from_str(&share_codec::decompress(&plain, DEFAULT_MAX_INFLATED_BYTES).unwrap())
            .unwrap();
    set["a"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t[if t[0] == "G" { 1 } else { 2 }]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn listed(value: &Value) -> Vec<String> {
    let list: Value = serde_json::from_str(value.as_str().unwrap()).unwrap();
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
}

async fn run(input: Value) -> Value {
    let (chromium, dir) = harness().unwrap();
    let mut input = input;
    input["chromium"] = json!(chromium);
    run_harness(&dir, "review.mjs", &input).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_news_bar_never_brings_back_a_view_older_than_a_send() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 2).await;
    let (drafted, sent, drafted_again) = (
        signal_path("news-drafted"),
        signal_path("news-sent"),
        signal_path("news-drafted-again"),
    );
    let page = run(
        json!({"sessions": [{"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"author": "Ann"},
            {"comment": ["ten percent", "First of Ann"]},
            {"signal": drafted},
            {"waitText": ["#review-news-text", "Bob commented"]},
            // Ann sends while the bar announces Bob's comment: the bar is
            // answered by the send (the page now shows Bob's comment too).
            {"reviewSend": true},
            {"textOf": "#review-news"},
            {"annotationsNow": true},
            {"signal": sent},
            {"global": "Second of Ann"},
            {"signal": drafted_again},
            {"waitText": ["#review-news-text", "Bob commented"]},
            // "Show" reads the newest state: Ann's sent comment stays, her
            // draft stays, Bob's newest comment appears.
            {"showNews": true},
            {"annotationsNow": true},
            {"reviewSend": true},
        ]}]}),
    );
    let bob = async {
        when_ready(&drafted).await;
        review
            .comment(
                &app,
                &review.reviewers[1],
                "Bob",
                json!([["C", "old path", "Bob one", null, null]]),
            )
            .await;
        when_ready(&sent).await;
        when_ready(&drafted_again).await;
        review
            .comment(
                &app,
                &review.reviewers[1],
                "Bob",
                json!([["C", "old path", "Bob two", null, null]]),
            )
            .await;
    };
    let (report, ()) = tokio::join!(page, bob);
    let s = &report["sessions"][0];
    assert_eq!(s["outputs"][4], "Sent: 1 annotation.", "{s}");
    assert_eq!(
        s["outputs"][5],
        Value::Null,
        "the news bar is gone after the send: {s}"
    );
    // (Comment sets are listed by writer id, which is random.)
    let sorted = |v: &Value| {
        let mut list = listed(v);
        list.sort();
        list
    };
    assert_eq!(
        sorted(&s["outputs"][6]),
        ["Comment — Ann | First of Ann", "Comment — Bob | Bob one"]
    );
    assert_eq!(
        sorted(&s["outputs"][12]),
        [
            "Comment on the plan — Ann · not sent | Second of Ann",
            "Comment — Ann | First of Ann",
            "Comment — Bob | Bob two",
        ]
    );
    assert_eq!(s["outputs"][13], "Sent: 2 annotations.", "{s}");
    assert_eq!(
        stored(&review, &app, "Ann").await,
        ["First of Ann", "Second of Ann"],
        "nothing Ann sent was lost"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tabs_of_one_link_never_replace_each_others_comments() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let link = review.link(&app, &review.reviewers[0]);
    let (b_drafted, a_sent) = (signal_path("tabs-b-drafted"), signal_path("tabs-a-sent"));
    let report = run(json!({"parallel": true, "sessions": [
        {"url": link, "actions": [
            {"author": "Cy"},
            {"waitFile": b_drafted},
            {"comment": ["ten percent", "From the laptop"]},
            {"reviewSend": true},
            {"signal": a_sent},
        ]},
        {"url": link, "actions": [
            {"author": "Cy"},
            {"comment": ["old path", "From the phone"]},
            {"signal": b_drafted},
            {"waitFile": a_sent},
            {"reviewSend": true},
            {"annotationsNow": true},
        ]},
    ]}))
    .await;
    let laptop = &report["sessions"][0];
    let phone = &report["sessions"][1];
    assert_eq!(laptop["outputs"][3], "Sent: 1 annotation.", "{laptop}");
    assert_eq!(
        phone["outputs"][4],
        "Sent: 2 annotations. Your comments had changed in another tab or on another device: both are kept.",
        "{phone}"
    );
    assert_eq!(
        listed(&phone["outputs"][5]),
        [
            "Comment — Cy | From the laptop",
            "Comment — Cy | From the phone"
        ]
    );
    assert_eq!(
        stored(&review, &app, "Cy").await,
        ["From the laptop", "From the phone"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decision_text_and_who_decided_reach_every_page() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let ready = signal_path("decision-text");
    let shots = screenshots();
    let report = run(json!({"parallel": true, "sessions": [
        {"url": review.link(&app, &review.owner), "actions": [
            {"author": "Olivia"},
            {"global": "Close, one gap"},
            {"reviewSend": true},
            {"waitFile": ready},
            {"waitText": ["#annotation-list", "Start at one"]},
            {"screenshot": shots.join("review-owner-light.png")},
            {"screenshot": shots.join("review-owner-dark.png"), "dark": true},
            {"screenshot": shots.join("review-owner-phone.png"), "width": 390},
            {"requestChanges": "Add a rollback section.\nAnd name who is on call."},
            {"waitText": ["#decision-text", "rollback"]},
            {"textOf": "#review-decision"},
            {"screenshot": shots.join("review-owner-decided-light.png")},
            {"screenshot": shots.join("review-owner-decided-dark.png"), "dark": true},
        ]},
        {"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"author": "Bea"},
            {"comment": ["ten percent", "Start at one"]},
            {"reviewSend": true},
            {"signal": ready},
            {"waitText": ["#decision-text", "rollback"]},
            {"textOf": "#review-decision"},
            {"textOf": "#review-state"},
            {"screenshot": shots.join("review-reviewer-decided-phone.png"), "width": 390},
            {"screenshot": shots.join("review-reviewer-decided-dark.png"), "dark": true},
        ]},
    ]}))
    .await;
    let owner = &report["sessions"][0];
    let reviewer = &report["sessions"][1];
    let owner_box = owner["outputs"][10].as_str().unwrap();
    assert!(
        owner_box.starts_with("You requested changes on "),
        "{owner_box}"
    );
    assert!(
        owner_box.contains("Add a rollback section.\nAnd name who is on call."),
        "{owner_box}"
    );
    let seen = reviewer["outputs"][5].as_str().unwrap();
    assert!(
        seen.starts_with("The owner, Olivia, requested changes on "),
        "{seen}"
    );
    assert!(seen.contains("Add a rollback section."), "{seen}");
    let state = reviewer["outputs"][6].as_str().unwrap();
    assert!(
        state.starts_with("The owner, Olivia, requested changes."),
        "{state}"
    );
    assert!(!state.contains("changes_requested"), "{state}");
    assert!(state.contains("You review as Bea"), "{state}");
}

const WIDE_PLAN: &str = "# Rollout\n\nWho does what, and when.\n\n\
| Region | Owner | Window | Canary share | Rollback trigger | Pager | Notes |\n\
|---|---|---|---|---|---|---|\n\
| eu-west-1 | platform-team-alpha | Tue 02:00–04:00 UTC | 1 % then 10 % then 50 % | error rate above 0.5 % for 5 minutes | alpha-primary | database migration runs first |\n\
| us-east-1 | platform-team-bravo | Wed 02:00–04:00 UTC | 1 % then 10 % then 50 % | p99 latency above 800 ms for 10 minutes | bravo-primary | watch the queue depth dashboards |\n\n\
```\nkubectl rollout status deployment/planshare-server --namespace production-eu-west-1 --timeout 15m --watch\n```\n\n\
- [x] Write the runbook\n- [ ] Run the `canary` in eu-west-1\n- [ ] Widen to **everyone**\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_phone_a_wide_table_scrolls_in_its_own_box() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review_of(&app, &json!({"p": WIDE_PLAN, "a": []}), 1).await;
    let shots = screenshots();
    let report = run(json!({"sessions": [{"url": review.link(&app, &review.reviewers[0]), "actions": [
        {"layout": 390},
        {"steps": true},
        {"screenshot": shots.join("review-reviewer-table-phone.png"), "width": 390},
        {"screenshot": shots.join("review-reviewer-table-phone-dark.png"), "width": 390, "dark": true},
    ]}]}))
    .await;
    let s = &report["sessions"][0];
    let layout: Value = serde_json::from_str(s["outputs"][0].as_str().unwrap()).unwrap();
    assert_eq!(layout["window"], 390);
    assert!(
        layout["page"].as_u64().unwrap() <= 390,
        "the page is no wider than the phone: {layout}"
    );
    let table = &layout["tables"][0];
    assert!(
        table["content"].as_u64().unwrap() > table["box"].as_u64().unwrap(),
        "the table is wider than its box: {layout}"
    );
    assert_eq!(table["scrolls"], "auto", "{layout}");
    let code = &layout["code"][0];
    assert!(
        code["content"].as_u64().unwrap() > code["box"].as_u64().unwrap(),
        "the long command keeps its line and scrolls: {layout}"
    );
    assert_eq!(code["scrolls"], "auto", "{layout}");
    // The step meter shows the steps as the plan does, not their markdown.
    let steps: Value = serde_json::from_str(s["outputs"][1].as_str().unwrap()).unwrap();
    let text = steps.to_string();
    assert!(!text.contains('`') && !text.contains("**"), "{steps}");
    assert!(text.contains("Run the canary in eu-west-1"), "{steps}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_pasted_into_an_open_tab_is_followed() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let payload = json!({"p": "# Pasted plan\n\nOpened from the address bar.\n", "a": []});
    let share = format!(
        "{}/#{}",
        app.base_url,
        share_codec::compress(&payload.to_string())
    );
    let report = run(json!({"sessions": [
        {"url": review.link(&app, &review.reviewers[0]), "actions": [
            {"textOf": "#owner-tools"},
            {"pasteLink": review.link(&app, &review.owner)},
        ]},
        {"url": format!("{}/", app.base_url), "actions": [
            {"pasteLink": share},
            {"textOf": "#plan h1"},
        ]},
    ]}))
    .await;
    let reviewer = &report["sessions"][0];
    assert_eq!(
        reviewer["outputs"][0],
        Value::Null,
        "a reviewer has no owner tools"
    );
    let now: Value = serde_json::from_str(reviewer["outputs"][1].as_str().unwrap()).unwrap();
    assert_eq!(now["error"], Value::Null, "{now}");
    assert_eq!(
        now["ownerTools"], true,
        "the owner link made the page the owner's: {now}"
    );
    assert!(
        now["state"]
            .as_str()
            .unwrap()
            .contains("You own this review"),
        "{now}"
    );
    assert!(
        !now["address"].as_str().unwrap().contains('#'),
        "the token left the address bar: {now}"
    );
    let root = &report["sessions"][1];
    assert_eq!(root["outputs"][1], "Pasted plan", "{root}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_over_plain_http_on_another_host_says_what_is_wrong() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let review = start_review(&app, 1).await;
    let port = url_port(&app.base_url);
    let url = review
        .link(&app, &review.reviewers[0])
        .replace(&app.base_url, &format!("http://team-host.test:{port}"));
    let report = run(
        json!({"hostRules": "MAP team-host.test 127.0.0.1", "sessions": [
            {"url": url, "actions": [{"textOf": "#error-detail"}]},
        ]}),
    )
    .await;
    let s = &report["sessions"][0];
    assert_eq!(
        s["error"], "This page cannot decrypt over plain HTTP.",
        "{s}"
    );
    let detail = s["outputs"][0].as_str().unwrap();
    assert!(detail.contains("the link itself is fine"), "{detail}");
    assert!(
        detail.contains(&format!("https://team-host.test:{port}/r/{}", review.id)),
        "{detail}"
    );
    assert!(detail.contains("tls_cert"), "{detail}");
    assert!(!detail.contains("does not open"), "{detail}");
}

fn url_port(base: &str) -> u16 {
    base.rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_servers_own_https_a_team_host_opens_and_comments() {
    if harness().is_none() {
        return;
    }
    // A certificate for the team's host name, served by the server itself.
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["plans.test".into()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, signing_key.serialize_pem()).unwrap();
    let app = TestApp::spawn(&[
        ("PLANSHARE_TLS_CERT", cert_path.to_str().unwrap()),
        ("PLANSHARE_TLS_KEY", key_path.to_str().unwrap()),
    ])
    .await;
    let base = format!("https://plans.test:{}", url_port(&app.base_url));
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(cert.pem().as_bytes()).unwrap()])
        .resolve("plans.test", app.addr)
        .build()
        .unwrap();
    let review = start_review_at(&client, &base, &json!({"p": WIDE_PLAN, "a": []}), 1).await;
    let report = run(json!({
        "hostRules": "MAP plans.test 127.0.0.1",
        "ignoreHttpsErrors": true,
        "sessions": [{"url": review.link_at(&base, &review.reviewers[0]), "actions": [
            {"textOf": "#plan h1"},
            {"author": "Tess"},
            {"comment": ["Who does what", "Add the on-call column"]},
            {"reviewSend": true},
        ]}],
    }))
    .await;
    let s = &report["sessions"][0];
    assert_eq!(s["error"], Value::Null, "{s}");
    assert_eq!(
        s["outputs"][0], "Rollout",
        "the page decrypted the plan: {s}"
    );
    assert_eq!(s["outputs"][3], "Sent: 1 annotation.", "{s}");
    let view: Value = client
        .get(format!("{base}/api/v1/reviews/{}", review.id))
        .bearer_auth(&review.owner)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["comments"][0]["name"], "Tess", "{view}");
}
