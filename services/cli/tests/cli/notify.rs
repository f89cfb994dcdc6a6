//! `planshare review notify` against the real server, delivering to a stub
//! receiver: subscribe, list, deliveries, remove; the previews the CLI seals
//! open with the review key and with nothing else; a refused target exits 2.

use std::time::{Duration, Instant};

use serde_json::Value;
use share_codec::{decompress, parse_review_link};
use testkit::TestApp;

use crate::support::{Stub, planshare};

const PLAN: &str = "# Plan\n\n## Step 1\n\nRotate the keys.\n\n## Step 2\n\nWrite the migration.\n";

/// Waits until `stub` has `n` requests on `path`; their bodies.
async fn bodies(stub: &Stub, path: &str, n: usize) -> Vec<(Value, String)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got: Vec<(Value, String)> = stub
            .recorded()
            .into_iter()
            .filter(|r| r.uri.path() == path)
            .map(|r| {
                let body = String::from_utf8_lossy(&r.body).into_owned();
                (
                    serde_json::from_str(&body).unwrap_or(Value::Null),
                    r.all_bytes(),
                )
            })
            .collect();
        if got.len() >= n {
            return got;
        }
        assert!(Instant::now() < deadline, "{path}: {} of {n}", got.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Opens a sealed preview with the link's key.
fn open_preview(link: &str, sealed: &str) -> Value {
    let key = parse_review_link(link).unwrap().key;
    let compressed = share_codec::crypto::decrypt(sealed, &key).unwrap();
    serde_json::from_str(&decompress(&compressed, 1 << 20).unwrap()).unwrap()
}

#[tokio::test]
async fn notify_subscribes_lists_shows_deliveries_and_removes() {
    let app = TestApp::spawn(&[("PLANSHARE_NOTIFY_PRIVATE_TARGETS", "true")]).await;
    let receiver = Stub::start(Vec::new(), (204, Vec::new(), String::new())).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.md");
    std::fs::write(&plan, PLAN).unwrap();
    let started = planshare(
        &[
            "review",
            "start",
            plan.to_str().unwrap(),
            "--approvers",
            "1",
            "--json",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(started.code, 0, "{}", started.stderr);
    let out: Value = serde_json::from_str(&started.stdout).unwrap();
    let owner = out["owner"].as_str().unwrap().to_owned();
    let links = out["links"].as_array().unwrap();
    let link_of = |role: &str| {
        links
            .iter()
            .find(|l| l["role"] == role)
            .map(|l| l["url"].as_str().unwrap().to_owned())
            .unwrap()
    };
    let (reviewer, approver) = (link_of("reviewer"), link_of("approver"));

    let hook = format!("{}/hook", receiver.url);
    let made = planshare(&["review", "notify", &owner, "--webhook", &hook], &env, "").await;
    assert_eq!(made.code, 0, "{}", made.stderr);
    let first = made.stdout.lines().next().unwrap();
    assert!(first.starts_with("subscribed sub_"), "{}", made.stdout);
    assert!(
        first.contains(&format!("webhook  {hook}  all events  by owner")),
        "{first}"
    );
    assert!(made.stdout.contains("\nsecret whsec_"), "{}", made.stdout);
    let topic = format!("{}/topic", receiver.url);
    let ntfy = planshare(
        &[
            "review",
            "notify",
            &owner,
            "--ntfy",
            &topic,
            "--events",
            "decision,review.comment",
            "--json",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(ntfy.code, 0, "{}", ntfy.stderr);
    let ntfy: Value = serde_json::from_str(&ntfy.stdout).unwrap();
    assert_eq!(
        ntfy["events"],
        serde_json::json!(["review.comment", "review.decision"])
    );
    assert!(ntfy.get("secret").is_none());

    // The reviewer's comment reaches the owner's targets with a preview
    // that only the key opens; the text itself is nowhere in the request.
    let text = "Split step 2 into two migrations\nso each can roll back alone";
    let commented = planshare(
        &[
            "review", "comment", &reviewer, "--name", "Dana", "--text", text,
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(commented.code, 0, "{}", commented.stderr);
    let got = bodies(&receiver, "/hook", 1).await;
    let (body, raw) = &got[0];
    assert_eq!(body["type"], "review.comment", "{body}");
    assert_eq!(body["data"]["writer"]["name"], "Dana");
    let preview = open_preview(&owner, body["data"]["sealed"].as_str().unwrap());
    assert_eq!(
        preview,
        serde_json::json!({"text": "Split step 2 into two migrations"})
    );
    assert!(
        !raw.contains("Split step 2") && !raw.contains("Rotate the keys"),
        "{raw}"
    );
    let pushed = bodies(&receiver, "/topic", 1).await;
    assert!(
        pushed[0].1.ends_with("Dana commented on v1"),
        "{}",
        pushed[0].1
    );

    // The approver requests changes with a note: its first line travels sealed.
    let note = dir.path().join("note.txt");
    std::fs::write(&note, "Not yet: the rollback is missing.\nDetails follow.").unwrap();
    let decided = planshare(
        &[
            "review",
            "decide",
            &approver,
            "--request-changes",
            "--name",
            "Ann",
            "--feedback",
            note.to_str().unwrap(),
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(decided.code, 0, "{}", decided.stderr);
    let got = bodies(&receiver, "/hook", 2).await;
    let decision = &got[1].0;
    assert_eq!(decision["type"], "review.decision", "{decision}");
    assert_eq!(decision["data"]["decision"], "changes_requested");
    assert_eq!(
        open_preview(&owner, decision["data"]["sealed"].as_str().unwrap()),
        serde_json::json!({"text": "Not yet: the rollback is missing."})
    );

    // Listing: the owner sees both; the reviewer none of its own.
    let listed = planshare(&["review", "notify", &owner, "--list"], &env, "").await;
    assert_eq!(listed.stdout.lines().count(), 2, "{}", listed.stdout);
    let theirs = planshare(&["review", "notify", &reviewer, "--list"], &env, "").await;
    assert_eq!(theirs.stdout, "no subscriptions\n");
    let sid = first.split_whitespace().nth(1).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let shown = loop {
        let shown = planshare(&["review", "notify", &owner, "--deliveries", sid], &env, "").await;
        if shown.stdout.lines().count() == 2
            && shown.stdout.lines().all(|l| l.contains("delivered"))
        {
            break shown;
        }
        assert!(Instant::now() < deadline, "{}", shown.stdout);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        shown
            .stdout
            .lines()
            .next()
            .unwrap()
            .contains("review.decision  delivered  attempts: 204"),
        "{}",
        shown.stdout
    );
    // A reviewer cannot remove the owner's; the owner can.
    let refused = planshare(&["review", "notify", &reviewer, "--remove", sid], &env, "").await;
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    let removed = planshare(&["review", "notify", &owner, "--remove", sid], &env, "").await;
    assert_eq!(
        (removed.code, removed.stdout.as_str()),
        (0, &*format!("removed {sid}\n"))
    );
    let bad = planshare(&["review", "notify", &owner, "--remove", "nope"], &env, "").await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);

    // No token reached a receiver.
    for r in receiver.recorded() {
        let all = r.all_bytes();
        for link in [&owner, &reviewer, &approver] {
            let token = parse_review_link(link).unwrap().token.unwrap();
            assert!(!all.contains(&token), "a token reached the receiver");
        }
    }
}

#[tokio::test]
async fn a_private_target_is_refused_with_what_to_do() {
    let app = TestApp::spawn(&[]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.md");
    std::fs::write(&plan, PLAN).unwrap();
    let started = planshare(
        &["review", "start", plan.to_str().unwrap(), "--json"],
        &env,
        "",
    )
    .await;
    let out: Value = serde_json::from_str(&started.stdout).unwrap();
    let owner = out["owner"].as_str().unwrap();
    let refused = planshare(
        &[
            "review",
            "notify",
            owner,
            "--webhook",
            "https://169.254.169.254/latest/",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("refused the target")
            && refused.stderr.contains("not a public address"),
        "{}",
        refused.stderr
    );
}

/// A deadline set from the CLI ends `review wait` (exit 17, saying so) and
/// sends `review.deadline` to the review's subscriptions.
#[tokio::test]
async fn a_deadline_ends_waits_and_is_announced() {
    let app = TestApp::spawn(&[("PLANSHARE_NOTIFY_PRIVATE_TARGETS", "true")]).await;
    let receiver = Stub::start(Vec::new(), (204, Vec::new(), String::new())).await;
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("XDG_DATA_HOME", data.to_str().unwrap()),
    ];
    let plan = home.path().join("plan.md");
    std::fs::write(&plan, PLAN).unwrap();
    let started = planshare(
        &[
            "review",
            "start",
            plan.to_str().unwrap(),
            "--deadline",
            "1h",
            "--remind",
            "2h",
            "--json",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(started.code, 0, "{}", started.stderr);
    let id = serde_json::from_str::<Value>(&started.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let hook = format!("{}/hook", receiver.url);
    let made = planshare(&["review", "notify", &id, "--ntfy", &hook], &env, "").await;
    assert_eq!(made.code, 0, "{}", made.stderr);
    let too_often = planshare(
        &["review", "deadline", &id, "1h", "--remind", "10s"],
        &env,
        "",
    )
    .await;
    assert_eq!(too_often.code, 2, "{}", too_often.stderr);
    let set = planshare(&["review", "deadline", &id, "2s"], &env, "").await;
    assert_eq!(set.code, 0, "{}", set.stderr);
    assert!(
        set.stdout.contains("a decision is due") && set.stdout.ends_with("no reminders\n"),
        "{}",
        set.stdout
    );
    let waited = planshare(&["review", "wait", &id, "--timeout", "1h"], &env, "").await;
    assert_eq!(waited.code, 17, "{}", waited.stderr);
    assert!(
        waited.stderr.contains("deadline of review"),
        "{}",
        waited.stderr
    );
    // Announced within a reminder check (5 s) of the deadline.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let got: Vec<String> = receiver
            .recorded()
            .iter()
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .collect();
        if got
            .iter()
            .any(|b| b.starts_with("The deadline passed without a decision on v1"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no deadline notice: {got:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let cleared = planshare(&["review", "deadline", &id, "--clear"], &env, "").await;
    assert_eq!(
        cleared.stdout,
        format!("review {id}: no deadline; no reminders\n")
    );
}
