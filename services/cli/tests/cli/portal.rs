//! The CLI and the portal read each other's links, through the real server
//! and headless Chromium: a short link made by `planshare share --short`
//! opens in the portal with every annotation highlighted, and a short link
//! the portal makes after a reviewer's comment opens with `planshare open`.

use serde_json::{Value, json};
use testkit::TestApp;
use testkit::browser::{harness, run_harness};

use crate::support::planshare;

const PLAN: &str = "# Rollout\n\n## Steps\n\nEnable the flag for ten percent of tenants.\n\n- watch the error rate\n- widen to everyone\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_and_portal_open_each_others_short_links() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let base = app.base_url.as_str();
    let env = [
        ("PLANNOTATOR_PASTE_URL", base),
        ("PLANNOTATOR_SHARE_URL", base),
    ];
    let files = tempfile::tempdir().unwrap();
    let annotations = files.path().join("a.json");
    std::fs::write(
        &annotations,
        r#"[{"type":"COMMENT","originalText":"ten percent","text":"Start at one","author":"Ann"},
            {"type":"DELETION","originalText":"widen to everyone","author":"Ann"},
            {"type":"GLOBAL_COMMENT","text":"Otherwise fine","author":"Ann"}]"#,
    )
    .unwrap();
    let annotations = annotations.display().to_string();
    let share = planshare(
        &["share", "-", "--annotations", &annotations, "--short"],
        &env,
        PLAN,
    )
    .await;
    assert_eq!(share.code, 0, "{}", share.stderr);
    let cli_link = share.stdout.trim().to_owned();
    assert!(cli_link.starts_with(&format!("{base}/p/")), "{cli_link}");

    // The portal opens the CLI's link, adds a reviewer's comment and makes
    // its own short link.
    let input = json!({"chromium": chromium, "sessions": [{"url": cli_link, "actions": [
        {"author": "Bo"},
        {"comment": ["watch the error rate", "And p99 latency"]},
        {"short": true},
    ]}]});
    let report = run_harness(&dir, "review.mjs", &input).await;
    let session = &report["sessions"][0];
    assert_eq!(session["error"], Value::Null, "{report}");
    assert_eq!(
        session["annotations"].as_array().unwrap().len(),
        4,
        "{report}"
    );
    assert_eq!(session["highlighted"], 3, "{report}");
    let portal_link = session["outputs"][2].as_str().unwrap();
    assert!(
        portal_link.starts_with(&format!("{base}/p/")),
        "{portal_link}"
    );

    // The CLI opens the portal's link with no environment: the link names
    // its paste API and carries the key.
    let markdown = planshare(&["open", portal_link, "--format", "markdown"], &[], "").await;
    assert_eq!(
        (markdown.code, markdown.stdout.as_str()),
        (0, PLAN),
        "{}",
        markdown.stderr
    );
    let opened = planshare(&["open", portal_link, "--format", "json"], &[], "").await;
    assert_eq!(opened.code, 0, "{}", opened.stderr);
    let opened: Value = serde_json::from_str(&opened.stdout).unwrap();
    let restored = opened["annotations"].as_array().unwrap();
    assert_eq!(restored.len(), 4, "{opened:#}");
    assert_eq!(restored[3]["originalText"], "watch the error rate");
    assert_eq!(restored[3]["text"], "And p99 latency");
    assert_eq!(restored[3]["author"], "Bo");
    assert_eq!(opened["notFound"], 0, "{opened:#}");
}
