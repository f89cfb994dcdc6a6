//! Bot callback links (`cb`, `ct`): Approve and Send feedback POST
//! upstream's body to the bot, which here is a small receiver started by
//! the test on its own origin; its answers 401 and 500 give upstream's
//! messages. The page reaches only the callback origins the portal's
//! configuration allows (they are in its `connect-src`); a link naming
//! another origin says so, and nothing is sent to it.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Value, json};
use share_codec::DEFAULT_MAX_INFLATED_BYTES;
use testkit::TestApp;

use crate::{harness, run_harness};

/// What the bot received, and the status it answers with.
#[derive(Clone, Default)]
struct Bot {
    received: Arc<Mutex<Vec<Value>>>,
    status: Arc<Mutex<u16>>,
}

async fn hook(State(bot): State<Bot>, method: Method, body: String) -> Response {
    let mut response = if method == Method::OPTIONS {
        StatusCode::NO_CONTENT.into_response()
    } else {
        bot.received
            .lock()
            .unwrap()
            .push(serde_json::from_str(&body).unwrap_or(Value::String(body)));
        let status = *bot.status.lock().unwrap();
        StatusCode::from_u16(status).unwrap().into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("content-type"),
    );
    response
}

/// Starts the bot; returns it and its origin.
async fn start_bot() -> (Bot, String) {
    let bot = Bot {
        status: Arc::new(Mutex::new(200)),
        ..Bot::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/hook", any(hook))
        .with_state(bot.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (bot, origin)
}

const PLAN: &str = "# Deploy plan\n\nRoll out to ten percent first, then widen to everyone.\n";

async fn run(sessions: Value) -> Vec<Value> {
    let (chromium, dir) = harness().unwrap();
    let input = json!({"chromium": chromium, "sessions": sessions});
    let report = run_harness(&dir, "review.mjs", &input).await;
    report["sessions"].as_array().unwrap().clone()
}

fn output(session: &Value, index: usize) -> Value {
    serde_json::from_str(session["outputs"][index].as_str().unwrap()).unwrap()
}

fn encoded(url: &str) -> String {
    url.replace(':', "%3A").replace('/', "%2F")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_and_feedback_reach_the_bot_with_upstreams_body() {
    if harness().is_none() {
        return;
    }
    let (bot, bot_origin) = start_bot().await;
    let allowed = bot_origin.clone();
    let app = TestApp::spawn_configured(&[], move |s| {
        s.portal.callback_origins = vec![allowed.clone()];
    })
    .await;
    let base = &app.base_url;
    let hook = format!("{bot_origin}/hook");
    let payload = json!({"p": PLAN, "a": []}).to_string();
    // The hash form: cb/ct after a `?` inside the fragment.
    let hash_link = format!(
        "{base}/#{}?cb={}&ct=tok-hash",
        share_codec::compress(&payload),
        encoded(&hook)
    );
    let sessions = run(json!([
        {"url": hash_link, "allowOrigins": [bot_origin], "actions": [
            {"callbackState": true},
            {"comment": ["ten percent", "Start at one"]},
            {"callback": "approve"},
        ]},
    ]))
    .await;
    let s = &sessions[0];
    assert_eq!(
        output(s, 0),
        json!({"visible": true, "disabled": false,
               "note": "A bot shared this plan and waits for your answer."})
    );
    assert_eq!(
        output(s, 2),
        json!({"visible": true, "disabled": true, "note": "Approved: the bot has been told."})
    );
    let received = bot.received.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["action"], "approve");
    assert_eq!(received[0]["token"], "tok-hash");
    // The annotated link is the plan as the reviewer left it.
    let annotated = received[0]["annotated_url"].as_str().unwrap();
    let (_, hash) = annotated.split_once("/#").unwrap();
    let shared = share_codec::decode_hash(hash, DEFAULT_MAX_INFLATED_BYTES).unwrap();
    assert_eq!(shared.plan, PLAN);
    let tuples: Value = serde_json::from_str(&shared.to_json()).unwrap();
    assert_eq!(tuples["a"][0][2], "Start at one");

    // The query form on a short link: feedback goes back as a new short
    // link that opens to the reviewer's annotations.
    let short = app
        .client
        .post(format!("{base}/api/paste"))
        .json(&json!({"data": share_codec::compress(&payload)}))
        .send()
        .await
        .unwrap();
    let id = short.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let short_link = format!("{base}/p/{id}?cb={}&ct=tok-short", encoded(&hook));
    let sessions = run(json!([
        {"url": short_link, "allowOrigins": [bot_origin], "actions": [
            {"global": "Needs a rollback section"},
            {"callback": "feedback"},
        ]},
    ]))
    .await;
    assert_eq!(output(&sessions[0], 1)["note"], "Feedback sent to the bot.");
    let received = bot.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!(received[1]["action"], "feedback");
    assert_eq!(received[1]["token"], "tok-short");
    let annotated = received[1]["annotated_url"].as_str().unwrap();
    assert!(
        annotated.contains("/p/") && annotated.contains("#key="),
        "{annotated}"
    );
    assert!(!annotated.contains(&id), "a new link, not the incoming one");
    let reopened = run(json!([{"url": annotated, "actions": []}])).await;
    assert_eq!(
        reopened[0]["annotations"][0]["text"],
        "Needs a rollback section"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bots_refusals_read_as_upstreams_messages() {
    if harness().is_none() {
        return;
    }
    let (bot, bot_origin) = start_bot().await;
    let allowed = bot_origin.clone();
    let app = TestApp::spawn_configured(&[], move |s| {
        s.portal.callback_origins = vec![allowed.clone()];
    })
    .await;
    let payload = json!({"p": PLAN, "a": []}).to_string();
    let link = |token: &str| {
        format!(
            "{}/?cb={}&ct={token}#{}",
            app.base_url,
            encoded(&format!("{bot_origin}/hook")),
            share_codec::compress(&payload)
        )
    };
    *bot.status.lock().unwrap() = 401;
    let expired = run(json!([{"url": link("old"), "allowOrigins": [bot_origin],
        "actions": [{"callback": "approve"}]}]))
    .await;
    assert_eq!(
        output(&expired[0], 0),
        json!({"visible": true, "disabled": false,
               "note": "Plan link expired — request a new one from the bot."})
    );
    *bot.status.lock().unwrap() = 500;
    let failed = run(json!([{"url": link("t"), "allowOrigins": [bot_origin],
        "actions": [{"callback": "feedback"}]}]))
    .await;
    assert_eq!(
        output(&failed[0], 0)["note"],
        format!("Callback failed. {bot_origin} answered HTTP 500.")
    );
    assert_eq!(bot.received.lock().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_the_portal_does_not_allow_is_explained_and_never_called() {
    if harness().is_none() {
        return;
    }
    let (bot, bot_origin) = start_bot().await;
    // The portal allows no callback origin at all.
    let app = TestApp::spawn(&[]).await;
    let payload = share_codec::compress(&json!({"p": PLAN, "a": []}).to_string());
    let sessions = run(json!([
        // Not in allowOrigins: a request to the bot would fail the run.
        {"url": format!("{}/#{payload}?cb={}&ct=t", app.base_url, encoded(&format!("{bot_origin}/hook"))),
         "actions": [{"callbackState": true}, {"keys": ["a"]}]},
        {"url": format!("{}/#{payload}?cb=javascript%3Aalert(1)&ct=t", app.base_url),
         "actions": [{"callbackState": true}]},
    ]))
    .await;
    assert_eq!(
        output(&sessions[0], 0),
        json!({"visible": true, "disabled": true, "note": format!(
            "The link asks to report back to {bot_origin}, which this portal is not set up to \
             reach (its callback_origins setting), so Approve and Send feedback are off.")})
    );
    assert_eq!(
        output(&sessions[1], 0),
        json!({"visible": true, "disabled": true, "note":
            "The link asks to report back to an address that is not http(s), so Approve and \
             Send feedback are off."})
    );
    assert!(bot.received.lock().unwrap().is_empty());
}
