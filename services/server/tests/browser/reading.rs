//! Reading a plan in the portal: annotation kinds in words ("Deletion —
//! Ann", not `DELETION`), the outline of a long plan, the keyboard
//! shortcuts and their `?` help (which never fire while a field has the
//! focus).

use serde_json::{Value, json};
use testkit::TestApp;

use crate::{harness, run_harness};

/// A plan with enough headings for an outline, and one of each kind of
/// annotation.
fn long_plan_link(base: &str) -> String {
    let mut plan = String::from("# Rollout plan\n\n");
    for (i, section) in ["Context", "Storage", "Migration", "Risks", "Rollback"]
        .iter()
        .enumerate()
    {
        plan.push_str(&format!("## {section}\n\n"));
        if i == 2 {
            plan.push_str("### Backfill\n\n");
        }
        for p in 0..12 {
            plan.push_str(&format!(
                "Paragraph {p} of {section}: the service keeps working while this section runs.\n\n"
            ));
        }
    }
    plan.push_str("Ship it behind a flag.\n");
    let payload = json!({"p": plan, "a": [
        ["C", "Paragraph 3 of Storage", "Why here?", "Ann", null],
        ["D", "Ship it behind a flag.", "Bo", null],
        ["G", "Looks good overall", "Cy", null],
        ["C", "Paragraph 1 of Risks", "lgtm", null, null, 1],
    ]});
    format!("{base}/#{}", share_codec::compress(&payload.to_string()))
}

async fn run(sessions: Value) -> Vec<Value> {
    let (chromium, dir) = harness().unwrap();
    let input = json!({"chromium": chromium, "sessions": sessions});
    let report = run_harness(&dir, "review.mjs", &input).await;
    report["sessions"].as_array().unwrap().clone()
}

fn output(session: &Value, index: usize) -> Value {
    serde_json::from_str(session["outputs"][index].as_str().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_read_as_words_and_long_plans_have_an_outline() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let url = long_plan_link(&app.base_url);
    let sessions = run(json!([{"url": url, "actions": [
        {"outline": true},
        {"outline": 4},
    ]}]))
    .await;
    let metas: Vec<&str> = sessions[0]["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["meta"].as_str().unwrap())
        .collect();
    assert_eq!(
        metas,
        [
            "Comment — Ann",
            "Deletion — Bo",
            "Comment on the plan — Cy",
            "Label"
        ]
    );
    let outline = output(&sessions[0], 0);
    assert_eq!(
        outline["entries"],
        json!([
            "depth-0 Rollout plan",
            "depth-1 Context",
            "depth-1 Storage",
            "depth-1 Migration",
            "depth-2 Backfill",
            "depth-1 Risks",
            "depth-1 Rollback",
        ])
    );
    // Clicking "Backfill" brings that heading to the top of the window.
    assert_eq!(output(&sessions[0], 1)["reached"], true);

    // A short plan has no outline.
    let short = json!({"p": "# Tiny\n\nOne line.\n", "a": []});
    let url = format!(
        "{}/#{}",
        app.base_url,
        share_codec::compress(&short.to_string())
    );
    let sessions = run(json!([{"url": url, "actions": [{"outline": true}]}])).await;
    assert_eq!(output(&sessions[0], 0)["entries"], Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyboard_shortcuts_step_through_annotations_and_stay_out_of_fields() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let url = long_plan_link(&app.base_url);
    let sessions = run(json!([{"url": url, "actions": [
        {"help": true},
        {"keys": ["n"]},
        {"keys": ["n", "n"]},
        {"keys": ["p"]},
        // Typed into the name field, `n` and `?` are only letters.
        {"keys": ["n", "?"], "in": "#author"},
        {"keys": ["g"]},
        {"closeDialog": true},
        {"keys": ["c"]},
    ]}]))
    .await;
    let s = &sessions[0];
    assert_eq!(
        output(s, 0),
        json!([
            "n/j Next annotation",
            "p/k Previous annotation",
            "c Comment on the selected text",
            "g Comment on the plan",
            "? Show these shortcuts",
        ])
    );
    // Only highlighted annotations are stepped through (the global comment
    // is not in the plan's text).
    assert_eq!(output(s, 1)["focused"], "Comment — Ann");
    // With the focus elsewhere again, `n` starts over at the first.
    assert_eq!(output(s, 2)["focused"], "Deletion — Bo");
    assert_eq!(output(s, 3)["focused"], "Label");
    let typed = output(s, 4);
    assert_eq!(typed["dialog"], Value::Null, "{typed}");
    assert_eq!(typed["focused"], "author");
    assert_eq!(output(s, 5)["dialog"], "comment-dialog");
    // `c` without a selection says what to do instead of opening an empty dialog.
    let c = output(s, 7);
    assert_eq!(c["dialog"], Value::Null);
    assert_eq!(
        c["status"],
        "Select some text of the plan first, then press c."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checklist_plan_shows_its_step_meter() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    // The `## Steps` section's top-level items are the steps; the task
    // list above it and the nested item are not.
    let plan = "# Migration\n\n- [x] agree on the schema\n\n## Steps\n\n\
                - [x] Write the migration\n- [~] Backfill the table\n  - [ ] check row counts\n\
                - [ ] Switch reads\n- [ ] Remove the old table\n\n## Notes\n\n- [ ] not a step\n";
    let link = |plan: &str| {
        let payload = json!({"p": plan, "a": []});
        format!(
            "{}/#{}",
            app.base_url,
            share_codec::compress(&payload.to_string())
        )
    };
    let sessions = run(json!([
        {"url": link(plan), "actions": [{"steps": true}]},
        {"url": link("# No checklist\n\n- a list\n- of things\n"), "actions": [{"steps": true}]},
    ]))
    .await;
    assert_eq!(
        output(&sessions[0], 0),
        json!({
            "count": "1/4 steps done",
            "current": "Now: Backfill the table",
            "meter": [1, 4],
            "items": [
                "done: Write the migration (Done)",
                "in-progress: Backfill the table (In progress, current)",
                "pending: Switch reads (To do)",
                "pending: Remove the old table (To do)",
            ],
        })
    );
    assert_eq!(output(&sessions[1], 0), Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotations_made_on_a_share_link_survive_a_reload() {
    if harness().is_none() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let url = long_plan_link(&app.base_url);
    let sessions = run(json!([
        {"url": url, "actions": [
            {"author": "Rae"},
            {"comment": ["Paragraph 5 of Context", "Made before the reload"]},
            {"remove": 0},
            {"reload": true},
        ]},
        // Another browser (a fresh context) opening the same link sees the
        // link as it is: drafts are kept by the browser, not in the link.
        {"url": url, "actions": []},
    ]))
    .await;
    let metas = |s: &Value| -> Vec<String> {
        s["annotations"]
            .as_array()
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
    assert!(
        sessions[0]["outputs"][3]
            .as_str()
            .unwrap()
            .ends_with("your unsaved annotations were restored"),
        "{}",
        sessions[0]["outputs"][3]
    );
    assert_eq!(
        metas(&sessions[0]),
        [
            "Deletion — Bo | ",
            "Comment on the plan — Cy | Looks good overall",
            "Label | lgtm",
            "Comment — Rae | Made before the reload",
        ]
    );
    assert_eq!(metas(&sessions[1]).len(), 4);
    assert_eq!(metas(&sessions[1])[0], "Comment — Ann | Why here?");
}
