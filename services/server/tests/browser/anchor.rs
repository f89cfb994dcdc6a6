//! The portal's highlighter is bounded (`crates/portal/web/anchor.js`), the
//! shape of issue 22's link at a scale a test runs quickly: a large
//! repetitive plan with thousands of annotations that are not in it. Work
//! is counted in characters scanned (the search budget), never in time.

use serde_json::json;
use testkit::TestApp;

use crate::{harness, run_harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_highlighter_rules_out_absent_text_and_stops_at_its_budget() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let input = json!({
        "chromium": chromium,
        "base": app.base_url,
        "sections": 2000,
        "absent": 2000,
        "copies": 200,
        "recombined": 200,
        "budgetScans": 10,
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
}
