//! Taking a short link back from the portal: the browser that made a short
//! link keeps its delete token, offers "Delete this link" in the share
//! dialog and on the link itself, and the deleted link then opens to the
//! deleted message; another browser is not offered it. The paste API is on
//! another origin than the portal, as in a real deployment, so the delete
//! also passes CORS (a preflight for `DELETE` with `Authorization`), and so
//! do the early error answers a page may meet (413, 431).

use serde_json::{Value, json};
use testkit::TestApp;

use crate::{harness, run_harness};

const DELETED: &str = "This paste does not exist: it may have expired or been deleted.";

/// A paste API, and a portal on another origin that shares through it.
async fn portal_and_api() -> (TestApp, TestApp, String) {
    let api = TestApp::spawn(&[]).await;
    let api_url = api.base_url.clone();
    let portal = TestApp::spawn_configured(&[], |s| {
        s.portal.paste_api_url = api_url.clone();
    })
    .await;
    // `localhost` is an origin every paste API allows (as upstream's does).
    let origin = format!("http://localhost:{}", portal.addr.port());
    (api, portal, origin)
}

async fn review(sessions: Value) -> Vec<Value> {
    let (chromium, dir) = harness().unwrap();
    let input = json!({"chromium": chromium, "sessions": sessions});
    let report = run_harness(&dir, "review.mjs", &input).await;
    report["sessions"].as_array().unwrap().clone()
}

fn output(session: &Value, index: usize) -> Value {
    serde_json::from_str(session["outputs"][index].as_str().unwrap()).unwrap()
}

/// The id of short link `link`.
fn id_of(link: &str) -> String {
    let (_, rest) = link.split_once("/p/").unwrap();
    rest.split('#').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_that_made_a_short_link_can_delete_it() {
    if harness().is_none() {
        return;
    }
    let (api, _portal, origin) = portal_and_api().await;
    // Long enough that Share offers a short link.
    let plan = crate::roundtrip::long_plan();
    let hash = share_codec::compress(&json!({"p": plan, "a": []}).to_string());
    let url = format!("{origin}/#{hash}");
    let sessions = review(json!([
        // Made, then deleted from the share dialog; the link then says so.
        {"url": url, "allowOrigins": [api.base_url], "actions": [
            {"shortThenDelete": true},
            {"goto": "last"},
        ]},
        // Made, opened again later in the same browser, deleted from the bar.
        {"url": url, "allowOrigins": [api.base_url], "actions": [
            {"short": true},
            {"goto": "last"},
            {"deleteOpened": true},
            {"goto": "last"},
        ]},
        // Made here and kept: another browser opens it below.
        {"url": url, "allowOrigins": [api.base_url], "actions": [{"short": true}]},
    ]))
    .await;

    let made = output(&sessions[0], 0);
    assert!(
        made["note"].as_str().unwrap().starts_with("Link deleted"),
        "{made}"
    );
    let first = made["link"].as_str().unwrap();
    assert!(first.starts_with(&format!("{origin}/p/")), "{first}");
    let reopened = output(&sessions[0], 1);
    assert_eq!(reopened["detail"], DELETED, "{reopened}");
    assert_eq!(api.get(&id_of(first)).await.status(), 404);

    let second = sessions[1]["outputs"][0].as_str().unwrap().to_owned();
    let opened = output(&sessions[1], 1);
    assert_eq!(opened["error"], Value::Null, "{opened}");
    assert_eq!(opened["deleteVisible"], true, "the maker is offered it");
    let deleted = output(&sessions[1], 2);
    assert!(
        deleted["note"]
            .as_str()
            .unwrap()
            .starts_with("Link deleted"),
        "{deleted}"
    );
    assert_eq!(deleted["deleteVisible"], false, "{deleted}");
    assert_eq!(output(&sessions[1], 3)["detail"], DELETED);
    assert_eq!(api.get(&id_of(&second)).await.status(), 404);

    // Another browser (a fresh profile) opens the kept link: no delete offered.
    let kept = sessions[2]["outputs"][0].as_str().unwrap().to_owned();
    let other = review(json!([
        {"url": url, "allowOrigins": [api.base_url], "actions": [{"goto": kept}]},
    ]))
    .await;
    let seen = output(&other[0], 0);
    assert_eq!(seen["error"], Value::Null, "{seen}");
    assert_eq!(seen["deleteVisible"], false, "{seen}");
    assert_eq!(api.get(&id_of(&kept)).await.status(), 200);
}

/// A page on an allowed origin reads the paste API's early refusals (413
/// for a body refused while it streams in, or at once from its declared
/// length; 431 for an oversized head) instead of seeing a CORS failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_origin_page_reads_early_refusals() {
    if harness().is_none() {
        return;
    }
    let (api, _portal, origin) = portal_and_api().await;
    let hash = share_codec::compress(&json!({"p": "# Plan\n\nText.\n", "a": []}).to_string());
    let sessions = review(json!([
        {"url": format!("{origin}/#{hash}"), "allowOrigins": [api.base_url], "actions": [
            {"oversized": 6_000_000},
            {"oversized": 40_000_000},
            {"longUrl": 40_000},
        ]},
    ]))
    .await;
    let outputs = &sessions[0]["outputs"];
    let too_large = "413 Payload too large (max 5 MB encrypted)";
    assert_eq!(outputs[0], too_large, "streamed: {outputs}");
    assert_eq!(outputs[1], too_large, "declared: {outputs}");
    assert!(
        outputs[2].as_str().unwrap().starts_with("431 "),
        "{outputs}"
    );
}
