//! The feedback export of a review (`open` of a review link, `review
//! watch`): upstream's export of the latest version, with what a review
//! adds to it.
//!
//! - The open threads first (`## Open threads (2)`): each thread's id,
//!   who started it on which version, its quote, the comment and every
//!   reply with its author; how many are resolved.
//! - Then the decision, saying who decided: `Decision by the owner
//!   (bob): changes requested`, then the decision's general comments as
//!   quotes.
//! - Each piece of feedback says who wrote it (`Written by alice`; the
//!   owner's as `the owner (bob)`).
//! - A removal asked for on an earlier version, whose text the latest
//!   version no longer has, is not passed on as something to do: it is
//!   listed under "Already removed" at the end.
//!
//! Share links keep upstream's export exactly (`open::render`).

use plan_doc::{AnchorHow, ExportOptions, Reanchored, export_annotations_with, reanchor};
use share_codec::{Annotation, AnnotationType};

use super::{DecisionNote, Merged, Part};
use crate::open::not_found_warning;
use crate::terminal::safe_text;

/// The export of `merged` (text made safe for a terminal); a warning on
/// stderr when some feedback was not found in the plan.
pub fn feedback(merged: &Merged) -> String {
    let (text, warning) = build(merged);
    if let Some(warning) = warning {
        super::warn(&warning);
    }
    safe_text(&text).into_owned()
}

/// The export's text, and the not-found warning (if any).
fn build(merged: &Merged) -> (String, Option<String>) {
    let payload = &merged.payload;
    let all = reanchor(&payload.plan, &payload.annotations);
    let mut kept: Vec<Annotation> = Vec::new();
    let mut kept_anchors = Vec::new();
    let mut gone: Vec<(&Annotation, &super::Source)> = Vec::new();
    let mut decision_texts: Vec<&str> = Vec::new();
    for (i, source) in merged.sources.iter().enumerate() {
        let (Some(original), Some(annotation), Some(anchor)) = (
            payload.annotations.get(i),
            all.annotations.get(i),
            all.anchors.get(i),
        ) else {
            continue;
        };
        let kind = annotation.kind;
        if source.part == Part::Decision && kind == Some(AnnotationType::GlobalComment) {
            decision_texts.push(original.text.as_deref().unwrap_or(""));
            continue;
        }
        let not_there = anchor
            .as_ref()
            .is_some_and(|a| a.how == AnchorHow::NotFound);
        if kind == Some(AnnotationType::Deletion) && source.version < merged.latest && not_there {
            gone.push((original, source));
            continue;
        }
        let mut annotation = annotation.clone();
        annotation.author = Some(match source.part {
            Part::Decision => format!("{}, with the decision", source.label),
            Part::Version | Part::Comments => source.label.clone(),
        });
        kept.push(annotation);
        kept_anchors.push(anchor.clone());
    }
    let count = kept.len();
    let reanchored = Reanchored {
        blocks: all.blocks,
        annotations: kept,
        anchors: kept_anchors,
    };
    let warning = if payload.is_html() {
        None
    } else {
        not_found_warning(&reanchored, count)
    };
    let export = export_annotations_with(
        &reanchored.blocks,
        &reanchored.annotations,
        &payload.global_attachments,
        &ExportOptions {
            authors: true,
            ..ExportOptions::default()
        },
    );
    let mut out = threads_block(&merged.threads);
    if let Some(decision) = &merged.decision {
        out.push_str(&decision_block(decision, &decision_texts));
        out.push('\n');
    }
    out.push_str(&export);
    if !gone.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&gone_block(&gone, merged.latest));
    }
    (out, warning)
}

/// The open threads, each with its quote, who wrote what and its replies
/// (an agent answers these first); and how many are resolved. Empty when
/// the review has no threads.
fn threads_block(threads: &[plan_doc::Thread]) -> String {
    if threads.is_empty() {
        return String::new();
    }
    let open: Vec<&plan_doc::Thread> = threads.iter().filter(|t| t.state == "open").collect();
    let resolved = threads.len() - open.len();
    let mut out = format!("## Open threads ({})\n\n", open.len());
    if open.is_empty() {
        out.push_str("None.\n\n");
    }
    for thread in open {
        out.push_str(&super::threads::render_raw(thread));
    }
    if resolved > 0 {
        out.push_str(&format!(
            "({resolved} resolved thread{} not shown: `planshare review threads LINK` lists them.)\n\n",
            if resolved == 1 { "" } else { "s" }
        ));
    }
    out
}

/// `Decision by the owner (bob): changes requested`, and the decision's
/// general comments quoted below it.
fn decision_block(decision: &DecisionNote, texts: &[&str]) -> String {
    let what = match decision.decision.as_str() {
        "approved" => "approved".to_owned(),
        "changes_requested" => "changes requested".to_owned(),
        other => other.replace('_', " "),
    };
    let mut out = format!("Decision by {}: {what}\n", decision.by);
    for text in texts {
        for line in text.lines() {
            out.push_str(&format!("> {line}\n"));
        }
    }
    out
}

/// The removals whose text is already gone, as information only.
fn gone_block(gone: &[(&Annotation, &super::Source)], latest: u64) -> String {
    let mut out = format!(
        "\n## Already removed\n\nThese removals were asked for on an earlier version; their text is no longer in the latest version (v{latest}), so there is nothing to do for them:\n\n"
    );
    for (annotation, source) in gone {
        out.push_str(&format!(
            "- Asked by {} on v{}:\n```\n{}\n```\n",
            source.label, source.version, annotation.original_text
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Source;
    use super::*;
    use share_codec::SharePayload;

    fn annotation(kind: AnnotationType, original: &str, text: Option<&str>) -> Annotation {
        Annotation {
            kind: Some(kind),
            original_text: original.to_owned(),
            text: text.map(str::to_owned),
            ..Annotation::default()
        }
    }

    fn source(label: &str, version: u64, part: Part) -> Source {
        Source {
            label: label.to_owned(),
            version,
            part,
        }
    }

    const PLAN: &str = "# Plan\n\n## Step 1\n\nAdd auth middleware.\n";

    #[test]
    fn each_piece_names_its_writer_and_the_decision_comes_first() {
        let mut payload = SharePayload::markdown(PLAN.to_owned());
        payload.annotations = vec![
            annotation(
                AnnotationType::Comment,
                "auth middleware",
                Some("rate limits"),
            ),
            annotation(AnnotationType::Comment, "Step 1", Some("rename")),
            annotation(AnnotationType::GlobalComment, "", Some("Split step 2.")),
        ];
        let merged = Merged {
            payload,
            sources: vec![
                source("alice", 1, Part::Comments),
                source("the owner (bob)", 1, Part::Comments),
                source("the owner (bob)", 1, Part::Decision),
            ],
            latest: 1,
            threads: Vec::new(),
            decision: Some(DecisionNote {
                by: "the owner (bob)".into(),
                decision: "changes_requested".into(),
            }),
        };
        let (text, warning) = build(&merged);
        assert_eq!(warning, None);
        assert_eq!(
            text,
            "Decision by the owner (bob): changes requested\n> Split step 2.\n\n\
             # Plan Feedback\n\nI've reviewed this plan and have 2 pieces of feedback:\n\n\
             ## 1. (line 3) Feedback on: \"Step 1\"\n> rename\nWritten by the owner (bob)\n\n\
             ## 2. (line 5) Feedback on: \"auth middleware\"\n> rate limits\nWritten by alice\n\n---\n"
        );
    }

    /// What an agent reads first: the open threads with who said what,
    /// then the decision with who made it.
    #[test]
    fn open_threads_come_first_then_the_decision() {
        let reply = |author: &str, text: &str, addressed| plan_doc::Reply {
            id: format!("r-{author}"),
            writer: author.into(),
            author: author.into(),
            role: "reviewer".into(),
            text: text.into(),
            at: 1,
            addressed,
        };
        let thread = |id: &str, state: &str, replies| plan_doc::Thread {
            id: id.into(),
            writer: "AliceLink001".into(),
            author: "alice".into(),
            role: "reviewer".into(),
            version: 1,
            quote: "auth middleware".into(),
            text: "What did the load test show?".into(),
            state: state.into(),
            state_by: None,
            addressed: Some(2),
            replies,
        };
        let merged = Merged {
            payload: SharePayload::markdown(PLAN.to_owned()),
            sources: Vec::new(),
            latest: 2,
            threads: vec![
                thread(
                    "thread-0001",
                    "open",
                    vec![
                        reply("bob", "p99 of 40 ms", Some(2)),
                        reply("alice", "and at 32 clients?", None),
                    ],
                ),
                thread("thread-0002", "resolved", Vec::new()),
            ],
            decision: Some(DecisionNote {
                by: "the approver (Ann)".into(),
                decision: "changes_requested".into(),
            }),
        };
        let (text, _) = build(&merged);
        assert!(
            text.starts_with(
                "## Open threads (1)\n\n\
                 thread-0001  open · alice (reviewer) on v1 · addressed in v2\n\
                 \x20 on \"auth middleware\"\n\
                 \x20 > What did the load test show?\n\
                 \x20 - bob: p99 of 40 ms (addressed in v2)\n\
                 \x20 - alice: and at 32 clients?\n\n\
                 (1 resolved thread not shown: `planshare review threads LINK` lists them.)\n\n\
                 Decision by the approver (Ann): changes requested\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_removal_already_made_is_not_an_instruction() {
        let mut payload = SharePayload::markdown(PLAN.to_owned());
        payload.annotations = vec![
            // Asked on v1, and the text is gone from v2.
            annotation(AnnotationType::Deletion, "Drop the tables.", None),
            // Asked on v1, and the text is still there: still to do.
            annotation(AnnotationType::Deletion, "auth middleware", None),
            // Asked on v2 (the latest), text not found: passed on as is.
            annotation(AnnotationType::Deletion, "Nowhere to be seen", None),
        ];
        let merged = Merged {
            payload,
            sources: vec![
                source("alice", 1, Part::Comments),
                source("alice", 1, Part::Comments),
                source("carol", 2, Part::Comments),
            ],
            latest: 2,
            threads: Vec::new(),
            decision: None,
        };
        let (text, warning) = build(&merged);
        assert!(text.contains("have 2 pieces of feedback"), "{text}");
        assert!(
            text.contains("Remove this\n```\nauth middleware\n```"),
            "{text}"
        );
        assert!(
            text.contains("Remove this\n```\nNowhere to be seen\n```"),
            "{text}"
        );
        assert!(
            !text.contains("Remove this\n```\nDrop the tables."),
            "{text}"
        );
        assert!(
            text.ends_with(
                "---\n\n## Already removed\n\nThese removals were asked for on an earlier version; their text is no longer in the latest version (v2), so there is nothing to do for them:\n\n- Asked by alice on v1:\n```\nDrop the tables.\n```\n"
            ),
            "{text}"
        );
        // Only the removal passed on counts as not found.
        assert_eq!(
            warning.as_deref(),
            Some(
                "1 of 2 annotations could not be found in the plan (exported without line numbers)"
            )
        );
    }

    #[test]
    fn an_approval_without_feedback_still_says_who_decided() {
        let merged = Merged {
            payload: SharePayload::markdown(PLAN.to_owned()),
            sources: Vec::new(),
            latest: 1,
            threads: Vec::new(),
            decision: Some(DecisionNote {
                by: "the owner".into(),
                decision: "approved".into(),
            }),
        };
        assert_eq!(
            build(&merged).0,
            "Decision by the owner: approved\n\nNo changes detected."
        );
    }
}
