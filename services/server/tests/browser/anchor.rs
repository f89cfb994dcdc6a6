//! The portal's highlighter (`crates/portal/web/highlighter.js`). Its work is
//! bounded, on the shape of issue 22's link at a scale a test runs
//! quickly: a large repetitive plan with thousands of annotations that are
//! not in it (work is counted in characters scanned, the search budget,
//! never in time). And it finds what `planshare open` finds: issue 23's
//! plan, typed with straight quotes, `--`, `...` and `:rocket:`, with
//! annotations selected in upstream's typeset rendering.

use serde_json::{Value, json};
use testkit::TestApp;

use crate::{harness, run_harness};

/// Issue 23's example: the plan's source is typed plainly; the annotations
/// hold what a reviewer selected where upstream typesets it. (annotation
/// text, what its highlight covers on the page, or `None`: not in the plan).
const TYPESET_PLAN: &str = "# Launch notes\n\nWe said \"ship it\" -- then waited... for the :rocket: launch.\n\n- Pages 3--5 cover the \"rollback\" plan\n- It's done...\n";
const TYPESET: &[(&str, Option<&str>)] = &[
    ("We said “ship it”", Some("We said \"ship it\"")),
    ("ship it” – then", Some("ship it\" -- then")),
    ("then waited… for", Some("then waited... for")),
    ("the 🚀 launch", Some("the :rocket: launch")),
    (
        "Pages 3–5 cover the “rollback” plan",
        Some("Pages 3--5 cover the \"rollback\" plan"),
    ),
    ("It’s done…", Some("It's done...")),
    ("It’s finished…", None),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_highlighter_rules_out_absent_text_and_stops_at_its_budget() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let tuples: Vec<Value> = TYPESET
        .iter()
        .map(|(text, _)| json!(["C", text, "typeset", null, null]))
        .collect();
    let hash = share_codec::compress(&json!({"p": TYPESET_PLAN, "a": tuples}).to_string());
    let expected: serde_json::Map<String, Value> = TYPESET
        .iter()
        .enumerate()
        .map(|(i, (_, covers))| (format!("shared-{i}"), json!(covers)))
        .collect();
    let input = json!({
        "chromium": chromium,
        "base": app.base_url,
        "sections": 2000,
        "absent": 2000,
        "copies": 200,
        "recombined": 120,
        "budgetScans": 10,
        "typeset": {"url": format!("{}/#{hash}", app.base_url), "expected": expected},
    });
    let report = run_harness(&dir, "anchor.mjs", &input).await;
    assert!(report["textLength"].as_u64().unwrap() > 200_000, "{report}");

    // With a budget of ten passes over the text: the 2 000 absent texts are
    // ruled out by the index, the three found ones and the 200 copies of the
    // last line (one lookup) are highlighted over their own text.
    let absent = &report["absent"];
    assert_eq!(absent["notSearched"], 0, "{absent}");
    assert_eq!(absent["notFound"], 2000, "{absent}");
    assert_eq!(absent["placed"], 203, "{absent}");
    assert_eq!(absent["wrongMarks"], json!([]), "{absent}");
    assert_eq!(absent["sameWithDefaultBudget"], true, "{absent}");

    // Texts that have to be scanned for: a first few are, and found absent;
    // every later one is not searched. Each lookup reads the whole text at
    // least once, so ten passes allow ten lookups at most.
    let recombined = &report["recombined"];
    let hows: Vec<&str> = recombined["hows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let searched = hows.iter().position(|h| *h == "not-searched").unwrap();
    assert!(
        (1..=11).contains(&searched),
        "{searched} searched: {recombined}"
    );
    assert!(
        hows[..searched].iter().all(|h| *h == "not-found"),
        "{recombined}"
    );
    assert!(
        hows[searched..].iter().all(|h| *h == "not-searched"),
        "{recombined}"
    );
    // Unbounded (the default budget), all of them are searched for.
    assert_eq!(recombined["notSearchedUnbounded"], 0, "{recombined}");
    assert_eq!(recombined["placedUnbounded"], 0, "{recombined}");

    // Issue 23: every annotation the CLI re-finds is highlighted on the
    // real page (which shows the source's plain punctuation), and the one
    // it does not find is listed as not found.
    let payload: share_codec::SharePayload =
        share_codec::decode_hash(&hash, 64 * 1024 * 1024).unwrap();
    let cli: Vec<bool> = plan_doc::reanchor(&payload.plan, &payload.annotations)
        .anchors
        .iter()
        .map(|a| a.as_ref().is_some_and(|a| a.found))
        .collect();
    let want: Vec<bool> = TYPESET.iter().map(|(_, covers)| covers.is_some()).collect();
    assert_eq!(cli, want, "what the CLI finds");
    let typeset = &report["typeset"];
    assert_eq!(typeset["failures"], json!([]), "{typeset}");
    assert_eq!(typeset["notFound"], json!(["shared-6"]), "{typeset}");
}
