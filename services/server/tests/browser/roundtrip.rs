//! A reviewer's round trips in the portal: annotate (select → comment or
//! deletion, a global comment, an author name) → Share → the new link
//! reopens with every annotation; an encrypted short link made in the page
//! is stored here as ciphertext only and carries a reviewer's additions
//! (upstream #798); Import merges a teammate's link with upstream's dedupe
//! and error texts; Share is reachable from the keyboard; print shows the
//! plan alone (a PDF is saved next to the screenshots).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use share_codec::{DEFAULT_MAX_INFLATED_BYTES, SharePayload};
use testkit::TestApp;

use crate::{harness, run_harness};

const PLAN: &str = "# Session plan\n\n## Storage\n\nUse JWT tokens stored in httpOnly cookies, then drop the legacy cache layer.\n\nMove session ids to the **sessions** table.\n";

/// Runs the review harness over `sessions`, returning its per-session reports.
async fn review(chromium: &Path, dir: &Path, sessions: Value) -> Vec<Value> {
    let input = json!({"chromium": chromium, "sessions": sessions});
    let report = run_harness(dir, "review.mjs", &input).await;
    report["sessions"].as_array().unwrap().clone()
}

/// The payload behind a hash link made by the portal.
fn decode_hash_link(link: &str) -> SharePayload {
    let (_, hash) = link.split_once("/#").unwrap();
    share_codec::decode_hash(hash, DEFAULT_MAX_INFLATED_BYTES).unwrap()
}

/// The tuples of a payload, as JSON (the wire form).
fn tuples(payload: &SharePayload) -> Value {
    let json: Value = serde_json::from_str(&payload.to_json()).unwrap();
    json["a"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotate_share_and_reopen() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let base = &app.base_url;
    let start = json!({"p": PLAN, "a": [["C", "JWT tokens", "Prefer opaque ids", "Ann", null]]})
        .to_string();
    let url = format!("{base}/#{}", share_codec::compress(&start));
    let pdf = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/portal-screenshots"
    ));
    std::fs::create_dir_all(&pdf).unwrap();
    let pdf = pdf.join("plan-print.pdf");
    let _ = std::fs::remove_file(&pdf);
    let first = review(
        &chromium,
        &dir,
        json!([{"url": url, "actions": [
            {"author": "Reviewer Rae"},
            {"comment": ["session ids", "Why not JWT?"]},
            {"delete": "drop the legacy cache layer"},
            {"global": "Ship it after the migration"},
            {"share": true},
            {"keyboardShare": true},
            {"print": pdf},
        ]}]),
    )
    .await;
    let outputs = first[0]["outputs"].as_array().unwrap();
    let link = outputs[4].as_str().unwrap();
    assert!(link.starts_with(&format!("{base}/#")), "{link}");
    assert_eq!(
        outputs[5], outputs[4],
        "the keyboard reaches the same Share"
    );
    assert!(
        std::fs::read(&pdf).unwrap().starts_with(b"%PDF"),
        "print made a PDF"
    );
    let shared = decode_hash_link(link);
    assert_eq!(shared.plan, PLAN);
    assert_eq!(
        tuples(&shared),
        json!([
            ["C", "JWT tokens", "Prefer opaque ids", "Ann", null],
            ["C", "session ids", "Why not JWT?", "Reviewer Rae", null],
            ["D", "drop the legacy cache layer", "Reviewer Rae", null],
            ["G", "Ship it after the migration", "Reviewer Rae", null],
        ])
    );
    // The new link opens with all four, three of them highlighted.
    let reopened = review(&chromium, &dir, json!([{"url": link, "actions": []}])).await;
    assert_eq!(
        reopened[0]["annotations"].as_array().unwrap().len(),
        4,
        "{reopened:?}"
    );
    assert_eq!(reopened[0]["highlighted"], 3, "{reopened:?}");
    assert_eq!(
        reopened[0]["annotations"][1]["meta"],
        "Comment — Reviewer Rae"
    );
    assert_eq!(reopened[0]["annotations"][1]["text"], "Why not JWT?");

    // Removing an annotation before sharing leaves it out.
    let trimmed = review(
        &chromium,
        &dir,
        json!([{"url": link, "actions": [
            {"remove": 0}, {"share": true},
        ]}]),
    )
    .await;
    let trimmed = decode_hash_link(trimmed[0]["outputs"][1].as_str().unwrap());
    assert_eq!(tuples(&trimmed).as_array().unwrap().len(), 3);
    assert_eq!(tuples(&trimmed)[0][1], "session ids");
}

/// A plan whose hash link is well past 2048 characters (words that do not
/// compress away).
pub(crate) fn long_plan() -> String {
    let mut plan = String::from("# Long plan\n\n");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for line in 0..60 {
        plan.push_str(&format!("- step {line}:"));
        for _ in 0..8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            plan.push_str(&format!(" w{:x}", x % 0xfffff));
        }
        plan.push('\n');
    }
    plan.push_str("\nFinally enable the rollout flag.\n");
    plan
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_links_made_in_the_portal_carry_new_annotations() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let base = &app.base_url;
    let plan = long_plan();
    let start = json!({"p": plan, "a": []}).to_string();
    let url = format!("{base}/#{}", share_codec::compress(&start));
    assert!(url.len() > 2048, "the hash link is long: {}", url.len());
    let first = review(
        &chromium,
        &dir,
        json!([{"url": url, "actions": [
            {"author": "Rae"},
            {"comment": ["enable the rollout flag", "Behind a kill switch"]},
            {"short": true},
        ]}]),
    )
    .await;
    let link = first[0]["outputs"][2].as_str().unwrap().to_owned();
    let (id, fragment) = link
        .strip_prefix(&format!("{base}/p/"))
        .and_then(|rest| rest.split_once("#key="))
        .unwrap_or_else(|| panic!("a short link on this portal: {link}"));
    let key = fragment.split('&').next().unwrap();
    assert_eq!(key.len(), 43, "a 256-bit key");
    // The server holds ciphertext only; the key in the link opens it.
    let stored: Value = app.get(id).await.json().await.unwrap();
    let data = stored["data"].as_str().unwrap();
    assert!(
        share_codec::decode_paste(data, None, DEFAULT_MAX_INFLATED_BYTES).is_err(),
        "without the key the stored data is not a readable payload"
    );
    let payload = share_codec::decode_paste(data, Some(key), DEFAULT_MAX_INFLATED_BYTES).unwrap();
    assert_eq!(payload.plan, plan);
    assert_eq!(
        tuples(&payload),
        json!([[
            "C",
            "enable the rollout flag",
            "Behind a kill switch",
            "Rae",
            null
        ]])
    );

    // Opened from the short link, a second reviewer's addition reaches the
    // next short link (upstream #798 kept returning the incoming one).
    let second = review(
        &chromium,
        &dir,
        json!([{"url": link, "actions": [
            {"author": "Bo"},
            {"delete": "Finally"},
            {"short": true},
        ]}]),
    )
    .await;
    assert_eq!(second[0]["highlighted"], 2, "{second:?}");
    let next = second[0]["outputs"][2].as_str().unwrap();
    assert_ne!(next, link);
    let (next_id, next_fragment) = next
        .strip_prefix(&format!("{base}/p/"))
        .and_then(|rest| rest.split_once("#key="))
        .unwrap();
    let next_key = next_fragment.split('&').next().unwrap();
    let stored: Value = app.get(next_id).await.json().await.unwrap();
    let payload = share_codec::decode_paste(
        stored["data"].as_str().unwrap(),
        Some(next_key),
        DEFAULT_MAX_INFLATED_BYTES,
    )
    .unwrap();
    assert_eq!(
        tuples(&payload),
        json!([
            [
                "C",
                "enable the rollout flag",
                "Behind a kill switch",
                "Rae",
                null
            ],
            ["D", "Finally", "Bo", null],
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_merges_a_teammates_review() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let base = &app.base_url;
    let mine = json!({"p": PLAN, "a": [["C", "JWT tokens", "Prefer opaque ids", "Ann", null]]})
        .to_string();
    let url = format!("{base}/#{}", share_codec::compress(&mine));
    let theirs = json!({
        "p": PLAN,
        "a": [
            ["C", "JWT tokens", "Prefer opaque ids", "Bo", null],
            ["D", "legacy cache", "Bo", null],
            ["G", "Needs a rollback plan", "Bo", null],
        ],
        "g": [["/tmp/plannotator/arch.png", "arch"]],
    })
    .to_string();
    let theirs_hash = format!("https://share.example/#{}", share_codec::compress(&theirs));
    let compressed = share_codec::compress(&theirs);
    let (key, data) = share_codec::encrypt(&compressed).unwrap();
    let id = app.create_ok(&data).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let theirs_short = share_codec::short_url(base, &id, &key, base);
    let empty = json!({"p": PLAN, "a": []}).to_string();
    let absent = share_codec::short_url(base, "AbsentPaste1", &key, base);
    let sessions = review(
        &chromium,
        &dir,
        json!([{"url": url, "actions": [
            {"import": theirs_hash},
            {"import": theirs_short},
            {"import": "no link here"},
            {"import": "https://share.example/#"},
            {"import": absent},
            {"import": format!("{base}/#{}", share_codec::compress(&empty))},
            {"share": true},
        ]}]),
    )
    .await;
    let outputs = sessions[0]["outputs"].as_array().unwrap();
    assert_eq!(
        outputs[..6],
        [
            json!("Imported 2 annotations from \"Session plan\" (1 already here)."),
            json!("Imported 0 annotations from \"Session plan\" (3 already here)."),
            json!("Invalid share URL: no hash fragment or short link found"),
            json!("Invalid share URL: empty hash"),
            json!("Failed to load from short URL — paste may have expired"),
            json!("No annotations found in share link"),
        ]
    );
    let merged = decode_hash_link(outputs[6].as_str().unwrap());
    assert_eq!(
        tuples(&merged),
        json!([
            ["C", "JWT tokens", "Prefer opaque ids", "Ann", null],
            ["D", "legacy cache", "Bo", null],
            ["G", "Needs a rollback plan", "Bo", null],
        ])
    );
    assert_eq!(merged.global_attachments.len(), 1);
    assert_eq!(
        merged.global_attachments[0].path,
        "/tmp/plannotator/arch.png"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_loads_say_what_happened() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    // An allowed paste API that is down: a port that was free a moment ago.
    let down = format!("http://127.0.0.1:{}", testkit::free_port());
    let app = TestApp::spawn(&[("PLANSHARE_PORTAL_ALLOWED_PASTE_APIS", down.as_str())]).await;
    let base = &app.base_url;
    let json = json!({"p": PLAN, "a": []}).to_string();
    let hash = share_codec::compress(&json);
    let compressed = share_codec::compress(&json);
    let (key, data) = share_codec::encrypt(&compressed).unwrap();
    let id = app.create_ok(&data).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (wrong_key, _) = share_codec::encrypt("x").unwrap();
    // A link that inflates past the page's 64 MiB limit, and one with bytes
    // after the end of its compressed data: the inflate stops and says so.
    let bomb = share_codec::compress(&" ".repeat(65 * 1024 * 1024));
    let cases = [
        (format!("{base}/#{}", &hash[..hash.len() - 9]), "cut off"),
        (
            format!("{base}/#{bomb}"),
            "larger than this page opens (64 MiB)",
        ),
        (
            format!("{base}/#{hash}AAAAAAAA"),
            "ends early or is damaged",
        ),
        (
            share_codec::short_url(base, &id, &wrong_key, base),
            "The key in the link does not open this paste",
        ),
        (
            share_codec::short_url(base, "AbsentPaste1", &key, base),
            "does not exist: it may have expired",
        ),
        (
            share_codec::short_url(base, &id, &key, &down),
            "could not be reached",
        ),
        (
            share_codec::short_url(base, &id, &key, "https://paste.example"),
            "not configured to read from",
        ),
    ];
    let sessions: Vec<Value> = cases
        .iter()
        .map(|(url, _)| json!({"url": url, "actions": [], "allowOrigins": [down]}))
        .collect();
    let shown = review(&chromium, &dir, Value::Array(sessions)).await;
    for ((url, expected), shown) in cases.iter().zip(&shown) {
        let headline = shown["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{url}: no error shown"));
        assert!(
            headline.starts_with("Failed to load shared plan"),
            "{url}: {headline}"
        );
        let detail = shown["errorDetail"].as_str().unwrap_or_default();
        assert!(
            detail.contains(expected),
            "{url}: {detail:?} should say {expected:?}"
        );
        assert!(shown["annotations"].as_array().unwrap().is_empty());
    }
}
