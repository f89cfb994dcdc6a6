//! Re-anchoring is bounded: the shape of issue 22's link (a large repetitive
//! plan with thousands of annotations that are not in it) at a scale a test
//! runs quickly, through the public API. Work is counted in bytes of plan
//! text scanned (the search budget), never in time: annotations ruled out
//! by the plan's index cost nothing, a text quoted many times is searched
//! once, and annotations past the budget are reported as not searched.
#![allow(clippy::unwrap_used)]

use plan_doc::{
    AnchorHow, DEFAULT_SEARCH_BUDGET, Reanchored, parse_blocks, reanchor, reanchor_with_budget,
};
use share_codec::{Annotation, AnnotationType};

const SECTION: &str = "## Step\n\nThe service **retries** failed writes with `backoff` and logs each attempt...\n\n- check the queue depth\n- alert on errors\n\n";

/// `SECTION` repeated to about `kb` KB.
fn plan(kb: usize) -> String {
    let mut plan = String::from("# Plan\n\n");
    while plan.len() < kb * 1024 {
        plan.push_str(SECTION);
    }
    plan
}

fn comment(text: &str) -> Annotation {
    Annotation {
        kind: Some(AnnotationType::Comment),
        original_text: text.to_owned(),
        text: Some("c".into()),
        ..Annotation::default()
    }
}

/// The bytes of the blocks' sources joined: what one scan of the first
/// search step reads.
fn joined_len(plan: &str) -> u64 {
    parse_blocks(plan)
        .iter()
        .map(|b| b.content.len() as u64)
        .sum()
}

fn hows(r: &Reanchored) -> Vec<AnchorHow> {
    r.anchors.iter().map(|a| a.as_ref().unwrap().how).collect()
}

/// One text found by each search step (all in the plan's first section),
/// with the step and the line it is on.
const FOUND: [(&str, AnchorHow, usize); 5] = [
    ("logs each attempt", AnchorHow::Exact, 5),
    ("service retries failed", AnchorHow::Rendered, 5),
    ("depthalert on", AnchorHow::CrossBlock, 7),
    ("queue depth\n  alert", AnchorHow::Normalized, 7),
    ("each attempt…", AnchorHow::Transformed, 5),
];

/// Texts absent from the plan whose every 4-byte piece is in it ("the " of
/// "check the queue" glued to "The service"): each is scanned for in full.
fn recombined(count: usize) -> Vec<String> {
    let rest = "service **retries** failed writes with `backoff` and logs each attempt";
    (0..count)
        .map(|i| {
            let start = i % 5;
            let end = 20 + (i / 5) % (rest.len() - 20);
            format!("{}he {}", &"check t"[start..], &rest[..end])
        })
        .collect()
}

#[test]
fn thousands_of_absent_annotations_cost_no_scan_and_found_ones_stay_right() {
    let plan = plan(256);
    let mut annotations: Vec<Annotation> = (0..2000)
        .map(|i| comment(&format!("reviewer note {i}: this sentence was edited out")))
        .collect();
    annotations.extend(FOUND.iter().map(|(text, _, _)| comment(text)));
    // One text at the plan's end, quoted by 500 annotations.
    let plan = format!("{plan}## End\n\nSigned off after the review.\n");
    let last = "Signed off after the review";
    annotations.extend((0..500).map(|_| comment(last)));

    // A budget of four scans of the plan: the 2 000 absent texts are ruled
    // out by the index, the 500 copies are searched once.
    let r = reanchor_with_budget(&plan, &annotations, 4 * joined_len(&plan));
    let hows = hows(&r);
    assert!(hows[..2000].iter().all(|h| *h == AnchorHow::NotFound));
    for (i, (text, how, line)) in FOUND.iter().enumerate() {
        let anchor = r.anchors[2000 + i].as_ref().unwrap();
        assert_eq!((anchor.how, anchor.start_line), (*how, *line), "{text:?}");
    }
    let copies = &r.anchors[2000 + FOUND.len()..];
    let first = copies[0].as_ref().unwrap();
    assert_eq!(
        (first.how, first.start_line),
        (AnchorHow::Exact, plan.lines().count())
    );
    assert!(copies.iter().all(|a| a.as_ref() == Some(first)));
    assert_eq!((r.not_found().count(), r.not_searched()), (2000, 0));
    assert_eq!(
        reanchor(&plan, &annotations),
        r,
        "the same as with the default budget"
    );
}

#[test]
fn annotations_past_the_budget_are_not_searched_and_say_so() {
    let plan = plan(64);
    let scan = joined_len(&plan);
    let mut annotations: Vec<Annotation> =
        recombined(200).iter().map(|text| comment(text)).collect();
    annotations.push(comment("logs each attempt"));

    // Unbounded, every recombined text is searched for and not found.
    let all = reanchor(&plan, &annotations);
    assert!(DEFAULT_SEARCH_BUDGET > 200 * 20 * scan);
    assert_eq!(all.not_searched(), 0);
    assert_eq!(all.not_found().count(), 200);

    let budget = 10 * scan;
    let r = reanchor_with_budget(&plan, &annotations, budget);
    let hows = hows(&r);
    let searched = hows
        .iter()
        .position(|h| *h == AnchorHow::NotSearched)
        .unwrap();
    // Each search reads at least the joined sources, so the budget allows
    // at most budget / scan of them (the last one finishes its scan).
    assert!(
        (1..=11).contains(&searched),
        "{searched} searched with a budget of 10 scans"
    );
    assert!(hows[..searched].iter().all(|h| *h == AnchorHow::NotFound));
    assert!(
        hows[searched..]
            .iter()
            .all(|h| *h == AnchorHow::NotSearched)
    );
    // Text that is in the plan, after the budget: not searched, not found.
    let last = r.anchors[200].as_ref().unwrap();
    assert!(!last.found);
    assert_eq!(r.not_searched(), hows.len() - searched);
    assert_eq!(r.not_found().count(), hows.len());
    assert_eq!(r.annotations[200].block_id, "");
    let json = serde_json::to_value(last).unwrap();
    assert_eq!(
        (json["found"].clone(), json["how"].clone()),
        (false.into(), "not-searched".into())
    );
}
