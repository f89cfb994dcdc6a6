//! The share page passes axe-core without a serious or critical violation,
//! in the light and the dark colour scheme: a plan with headings, a table,
//! code, a task list and every kind of annotation (one not found), the same
//! page with the share and the shortcuts dialogs open, a link that fails to
//! load, and the page without a link.

use serde_json::{Value, json};
use testkit::TestApp;

use crate::{harness, reviews, run_harness};

const PLAN: &str = "# Rollout plan\n\n\
    Move the sessions table to the new store without downtime.\n\n\
    ## Steps\n\n\
    - [x] Write the migration\n\
    - [ ] Backfill the table\n\
    - [ ] Switch reads\n\n\
    ## Storage\n\n\
    | Store | Reads | Writes |\n\
    |-------|-------|--------|\n\
    | old   | yes   | yes    |\n\
    | new   | no    | yes    |\n\n\
    ### Migration\n\n\
    Run `migrate --dry-run` first:\n\n\
    ```rust\n// In batches of a thousand rows.\nfn main() {\n    let rows = backfill(1000);\n    println!(\"{rows} rows\");\n}\n```\n\n\
    > Keep the old store until reads have switched.\n\n\
    > [!WARNING]\n> Reads switch only once the backfill is complete.\n\n\
    See [the runbook](https://example.com/runbook) for the rollback.\n\n\
    Ship it behind a flag.\n";

fn link(base: &str, payload: &Value) -> String {
    format!("{base}/#{}", share_codec::compress(&payload.to_string()))
}

/// axe runs on the page as it is, in light and dark, labelled for the report.
fn axe_both(page: &str) -> Vec<(Value, Option<String>)> {
    vec![
        (json!({"axe": true}), Some(format!("{page}, light"))),
        (
            json!({"axe": true, "dark": true}),
            Some(format!("{page}, dark")),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_share_page_has_no_serious_accessibility_violation_in_light_or_dark() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let base = &app.base_url;
    let plan = link(
        base,
        &json!({"p": PLAN, "a": [
            ["C", "without downtime", "Which window?", "Ann", null],
            ["D", "Ship it behind a flag.", "Bo", null],
            ["G", "Looks good overall", "Cy", null],
            ["R", "Switch reads", "Switch reads and writes", "Dee", null],
            ["I", "Backfill the table", "in batches", null, null],
            ["C", "Run", "lgtm", null, null, 1],
            ["C", "a sentence this plan does not have", "Where did it go?", "Eve", null],
        ]}),
    );
    let good = link(base, &json!({"p": "# Tiny\n\nOne line.\n", "a": []}));
    // A truncated hash still looks like a payload but does not decode.
    let failed = good[..good.len() - 7].to_owned();
    let empty = format!("{base}/");

    let pages = [
        ("plan", plan.as_str()),
        ("error", failed.as_str()),
        ("empty", empty.as_str()),
    ];
    // Each session's actions, with the label of each axe run (None for the
    // other actions).
    let mut sessions = Vec::new();
    let mut labels = Vec::new();
    for (name, url) in pages {
        let mut actions: Vec<(Value, Option<String>)> = axe_both(name);
        if name == "plan" {
            actions.extend([
                (json!({"click": "#share"}), None),
                (json!({"keys": []}), None),
            ]);
            actions.extend(axe_both("plan with the share dialog"));
            actions.extend([
                (json!({"closeDialog": true}), None),
                (json!({"keys": ["?"]}), None),
            ]);
            actions.extend(axe_both("plan with the shortcuts dialog"));
        }
        let (actions, names): (Vec<_>, Vec<_>) = actions.into_iter().unzip();
        sessions.push(json!({"url": url, "actions": actions}));
        labels.push(names);
    }
    let report = run_harness(
        &dir,
        "review.mjs",
        &json!({"chromium": chromium, "sessions": sessions}),
    )
    .await;
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions[0]["annotations"].as_array().unwrap().len(), 7);
    assert!(sessions[1]["error"].is_string(), "{}", sessions[1]);
    // The dialogs were open while axe looked.
    let dialog = |index: usize| -> Value {
        let output: Value =
            serde_json::from_str(sessions[0]["outputs"][index].as_str().unwrap()).unwrap();
        output["dialog"].clone()
    };
    assert_eq!(dialog(3), "share-dialog");
    assert_eq!(dialog(7), "help-dialog");

    let (runs, serious, all) = violations(sessions, &labels);
    assert_eq!(runs, 10, "every page was checked in light and dark");
    assert!(
        serious.is_empty(),
        "serious or critical axe violations:\n{}\n\nall violations:\n{}",
        serious.join("\n"),
        all.join("\n")
    );
}

/// The axe runs of `sessions` (labelled by `labels`, None for other
/// actions): how many ran, the serious or critical violations, and all of
/// them, one line each ("<page>: <id> (<impact>) <help> — <targets>").
fn violations(
    sessions: &[Value],
    labels: &[Vec<Option<String>>],
) -> (usize, Vec<String>, Vec<String>) {
    let mut all = Vec::new();
    let mut serious = Vec::new();
    let mut runs = 0;
    for (session, labels) in sessions.iter().zip(labels) {
        for (output, label) in session["outputs"].as_array().unwrap().iter().zip(labels) {
            let Some(label) = label else {
                continue;
            };
            runs += 1;
            let result: Value = serde_json::from_str(output.as_str().unwrap()).unwrap();
            for v in result["violations"].as_array().unwrap() {
                let impact = v["impact"].as_str().unwrap_or("none");
                let line = format!(
                    "{label}: {} ({impact}) {} — {}",
                    v["id"].as_str().unwrap(),
                    v["help"].as_str().unwrap(),
                    v["nodes"]
                );
                if matches!(impact, "serious" | "critical") {
                    serious.push(line.clone());
                }
                all.push(line);
            }
        }
    }
    (runs, serious, all)
}

/// The review pages: the owner's (comments of two versions as threads,
/// with replies, one resolved; a reply being typed and the resolved thread
/// unfolded; the links dialog with a new link and its QR code, the
/// versions dialog with a diff, the request-changes dialog), a reviewer's
/// with an unsent comment,
/// and a share page's start dialog once the review is started; in light
/// and dark. Saves the owner's and the reviewer's pages as screenshots
/// (light, dark, phone width) in `target/portal-screenshots`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_pages_have_no_serious_accessibility_violation_in_light_or_dark() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let review = reviews::start_review(&app, 2).await;
    review
        .put_set(
            &app,
            &review.reviewers[0],
            "Bea",
            &json!({"v": 1, "a": [
                ["C", "ten percent", "Start at one percent", null, null],
                ["C", "old path", "A week is short", null, null],
                ["G", "Fine otherwise", null, null],
            ], "ids": ["beaThread001", "beaThread002", "beaThread003"]}),
        )
        .await;
    // The owner answered two of Bea's threads and resolved one.
    review
        .put_set(
            &app,
            &review.owner,
            "Olivia",
            &json!({"v": 1, "a": [], "replies": [
                {"id": "oliviaReply1", "to": "beaThread001", "text": "One percent is too few to see errors.", "at": 1_800_000_000_000_u64},
                {"id": "oliviaReply2", "to": "beaThread002", "text": "Dropped in v2.", "at": 1_800_000_000_001_u64, "addressed": 2},
            ], "states": [{"to": "beaThread002", "state": "resolved", "at": 1_800_000_000_002_u64}]}),
        )
        .await;
    review.push(&app, reviews::PLAN_V2, 1).await;
    let shots = reviews::screenshots();
    let shot = |name: &str| shots.join(name).to_string_lossy().into_owned();
    let open = |what: &str| (json!({"keys": []}), Some(format!("open:{what}")));

    let mut owner: Vec<(Value, Option<String>)> = axe_both("owner page with threads");
    owner.extend([
        (
            json!({"typeReply": ["Start at one percent", "Five, then"]}),
            None,
        ),
        (json!({"click": "details.thread-fold summary"}), None),
        (json!({"selectHighlight": "ten percent"}), None),
    ]);
    owner.extend(axe_both(
        "owner page with a reply being typed and a resolved thread unfolded",
    ));
    owner.extend([
        (
            json!({"screenshot": shot("review-threads-light.png")}),
            None,
        ),
        (
            json!({"screenshot": shot("review-threads-dark.png"), "dark": true}),
            None,
        ),
        (json!({"screenshot": shot("review-owner-light.png")}), None),
        (
            json!({"screenshot": shot("review-owner-dark.png"), "dark": true}),
            None,
        ),
        (
            json!({"screenshot": shot("review-owner-phone.png"), "width": 390}),
            None,
        ),
        (json!({"click": "#review-links"}), None),
        (json!({"click": "#links-add"}), None),
        (
            json!({"waitText": ["#links-note", "Copy this link now"]}),
            None,
        ),
        (
            json!({"click": "#new-link .link-card button + button"}),
            None,
        ),
        (json!({"waitText": ["#new-link", "Hide QR code"]}), None),
        open("links-dialog"),
    ]);
    owner.extend(axe_both(
        "owner links dialog with a new link and its QR code",
    ));
    owner.extend([
        (json!({"closeDialog": true}), None),
        (json!({"versions": true}), None),
        open("versions-dialog"),
    ]);
    owner.extend(axe_both("versions dialog"));
    owner.extend([
        (
            json!({"screenshot": shot("review-owner-versions-light.png")}),
            None,
        ),
        (json!({"closeDialog": true}), None),
        (json!({"click": "#review-changes"}), None),
        open("decide-dialog"),
    ]);
    owner.extend(axe_both("request-changes dialog"));

    let mut reviewer: Vec<(Value, Option<String>)> = vec![
        (json!({"author": "Cy"}), None),
        (
            json!({"comment": ["error rate", "Which error rate?"]}),
            None,
        ),
    ];
    reviewer.extend(axe_both("reviewer page with an unsent comment"));
    reviewer.extend([
        (
            json!({"screenshot": shot("review-reviewer-draft-light.png")}),
            None,
        ),
        (
            json!({"screenshot": shot("review-reviewer-draft-dark.png"), "dark": true}),
            None,
        ),
        (
            json!({"screenshot": shot("review-reviewer-draft-phone.png"), "width": 390}),
            None,
        ),
    ]);

    let share = link(
        &app.base_url,
        &json!({"p": PLAN, "a": [["G", "Looks good overall", "Cy", null]]}),
    );
    let mut start: Vec<(Value, Option<String>)> =
        vec![(json!({"startReview": true}), None), open("start-dialog")];
    start.extend(axe_both("start dialog with the owner and reviewer links"));

    let mut sessions = Vec::new();
    let mut labels = Vec::new();
    for (url, actions) in [
        (review.link(&app, &review.owner), owner),
        (review.link(&app, &review.reviewers[1]), reviewer),
        (share, start),
    ] {
        let (actions, names): (Vec<_>, Vec<_>) = actions.into_iter().unzip();
        sessions.push(json!({"url": url, "actions": actions}));
        labels.push(names);
    }
    let report = run_harness(
        &dir,
        "review.mjs",
        &json!({"chromium": chromium, "sessions": sessions}),
    )
    .await;
    let sessions = report["sessions"].as_array().unwrap();
    // Each dialog was open while axe looked at it.
    let mut axe_labels = Vec::new();
    for (session, names) in sessions.iter().zip(&mut labels) {
        for (output, name) in session["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(names.iter_mut())
        {
            if let Some(dialog) = name.as_deref().and_then(|n| n.strip_prefix("open:")) {
                let said: Value = serde_json::from_str(output.as_str().unwrap()).unwrap();
                assert_eq!(said["dialog"], dialog, "{session}");
                *name = None;
            } else if let Some(label) = name {
                axe_labels.push(label.clone());
            }
        }
    }
    let (runs, serious, all) = violations(sessions, &labels);
    assert_eq!(
        runs, 14,
        "every page and dialog in light and dark: {axe_labels:?}"
    );
    assert!(
        serious.is_empty(),
        "serious or critical axe violations:\n{}\n\nall violations:\n{}",
        serious.join("\n"),
        all.join("\n")
    );
}
