//! The feedback export: upstream's `exportAnnotations`, byte for byte (the
//! vectors in `testdata/` were recorded from it). Its output is what the reviewer sends back to the
//! agent, so the wording, blank lines and the en dash in line ranges are
//! part of the format.
//!
//! Where upstream reads a missing field, JavaScript writes `undefined`; this
//! export does the same (a comment without text ends in `> undefined`), so
//! the text matches what the upstream UI would produce. Parts of upstream's
//! export that need fields the shared annotation model does not carry
//! (raw-HTML element context and extra targets, threaded replies, per-page
//! grouping, diagram anchors) and the skill-reference block (a no-op unless a
//! skill catalog is registered) are never emitted.

use share_codec::{Annotation, AnnotationType, ImageAttachment};

use crate::blocks::Block;

/// Upstream's default document title.
pub const DEFAULT_TITLE: &str = "Plan Feedback";
/// Upstream's default name for what was reviewed.
pub const DEFAULT_SUBJECT: &str = "plan";

/// The export's parameters beyond the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportOptions<'a> {
    /// The `# <title>` heading ([`DEFAULT_TITLE`]).
    pub title: &'a str,
    /// What was reviewed, as in "I've reviewed this plan" ([`DEFAULT_SUBJECT`]).
    pub subject: &'a str,
    /// The markdown was converted from HTML or a URL: add the note that line
    /// numbers refer to the converted markdown.
    pub source_converted: bool,
    /// Name who wrote each piece of feedback: a `Written by <author>` line
    /// after it (planshare's live reviews, where several people write;
    /// upstream's export has no such line, so `false` keeps it exact).
    pub authors: bool,
}

impl Default for ExportOptions<'_> {
    fn default() -> Self {
        Self {
            title: DEFAULT_TITLE,
            subject: DEFAULT_SUBJECT,
            source_converted: false,
            authors: false,
        }
    }
}

/// Upstream's `exportAnnotations(blocks, annotations, globalAttachments,
/// title, subject)`. Pass [`DEFAULT_TITLE`] and [`DEFAULT_SUBJECT`] for
/// upstream's defaults.
pub fn export_annotations(
    blocks: &[Block],
    annotations: &[Annotation],
    global_attachments: &[ImageAttachment],
    title: &str,
    subject: &str,
) -> String {
    export_annotations_with(
        blocks,
        annotations,
        global_attachments,
        &ExportOptions {
            title,
            subject,
            source_converted: false,
            authors: false,
        },
    )
}

/// [`export_annotations`] with all options.
///
/// Annotations are sorted (stably) by the index of the block whose id is
/// their `block_id` (−1, so first, when there is none), then by
/// `start_offset`. Legacy replacement and insertion annotations export as the
/// exporter before 2026-03-29 wrote them. An annotation of unknown type
/// (`kind: None`, from an unknown tuple letter) exports the way upstream's
/// single-entry export (`exportAnnotationEntry`) writes unknown types: as a
/// comment (or quick label) on its text, rather than the empty body the
/// full export would give it.
pub fn export_annotations_with(
    blocks: &[Block],
    annotations: &[Annotation],
    global_attachments: &[ImageAttachment],
    options: &ExportOptions<'_>,
) -> String {
    if annotations.is_empty() && global_attachments.is_empty() {
        return "No changes detected.".to_owned();
    }
    let subject = options.subject;
    let block_index = |ann: &Annotation| -> i64 {
        blocks
            .iter()
            .position(|b| b.id == ann.block_id)
            .and_then(|i| i64::try_from(i).ok())
            .unwrap_or(-1)
    };
    let mut sorted: Vec<(i64, &Annotation)> =
        annotations.iter().map(|a| (block_index(a), a)).collect();
    sorted.sort_by_key(|&(index, ann)| (index, ann.start_offset));

    let mut out = format!("# {}\n\n", options.title);
    if options.source_converted {
        out.push_str("> Note: Line numbers below refer to the converted markdown, not the original HTML/URL source.\n\n");
    }
    if !global_attachments.is_empty() {
        out.push_str("## Reference Images\n");
        out.push_str("Please review these reference images (use the Read tool to view):\n");
        for (i, img) in global_attachments.iter().enumerate() {
            out.push_str(&format!("{}. [{}] `{}`\n", i + 1, img.name, img.path));
        }
        out.push('\n');
    }
    if !annotations.is_empty() {
        let n = annotations.len();
        let plural = if n > 1 { "s" } else { "" };
        out.push_str(&format!(
            "I've reviewed this {subject} and have {n} piece{plural} of feedback:\n\n"
        ));
    }

    for (i, (_, ann)) in sorted.iter().enumerate() {
        out.push_str(&format!("## {}. ", i + 1));
        if ann.diff_context.as_deref().is_some_and(|d| !d.is_empty()) {
            out.push_str("[In diff content] ");
        } else if let Some(label) = line_label(blocks, ann) {
            out.push_str(&format!("({label}) "));
        }
        push_body(&mut out, ann, subject);
        if !ann.images.is_empty() {
            out.push_str("**Attached images:**\n");
            for img in &ann.images {
                out.push_str(&format!("- [{}] `{}`\n", img.name, img.path));
            }
        }
        if options.authors {
            let author = ann.author.as_deref().filter(|a| !a.is_empty());
            out.push_str(&format!(
                "Written by {}\n",
                author.unwrap_or("an unnamed writer")
            ));
        }
        out.push('\n');
    }
    out.push_str("---\n");

    // Quick labels, counted per label text in order of first appearance.
    let mut labels: Vec<(&str, usize)> = Vec::new();
    for (_, ann) in &sorted {
        let Some(text) = ann
            .text
            .as_deref()
            .filter(|t| ann.is_quick_label && !t.is_empty())
        else {
            continue;
        };
        match labels.iter_mut().find(|(t, _)| *t == text) {
            Some((_, count)) => *count += 1,
            None => labels.push((text, 1)),
        }
    }
    if !labels.is_empty() {
        out.push_str("\n## Label Summary\n\n");
        for (text, count) in labels {
            out.push_str(&format!("- **{text}**: {count}\n"));
        }
        out.push('\n');
    }
    out
}

/// The `line L` / `lines A–B` label of an annotation (without parentheses),
/// or `None` for global comments, annotations without a block, diff blocks
/// (`diff-block-…`) and ids no block has. The end line is
/// [`Block::end_line`].
pub fn line_label(blocks: &[Block], annotation: &Annotation) -> Option<String> {
    if annotation.block_id.is_empty()
        || annotation.kind == Some(AnnotationType::GlobalComment)
        || annotation.block_id.starts_with("diff-block-")
    {
        return None;
    }
    let block = blocks.iter().find(|b| b.id == annotation.block_id)?;
    let end = block.end_line();
    Some(if end <= block.start_line {
        format!("line {}", block.start_line)
    } else {
        format!("lines {}\u{2013}{end}", block.start_line)
    })
}

/// JavaScript's `${value}` for an optional string.
fn js(value: Option<&String>) -> &str {
    value.map_or("undefined", String::as_str)
}

fn push_body(out: &mut String, ann: &Annotation, subject: &str) {
    let original = &ann.original_text;
    let text = js(ann.text.as_ref());
    match ann.kind {
        Some(AnnotationType::Deletion) => {
            out.push_str(&format!(
                "Remove this\n```\n{original}\n```\n> I don't want this in the {subject}.\n"
            ));
        }
        Some(AnnotationType::Comment) => push_comment(out, ann, text),
        Some(AnnotationType::GlobalComment) => {
            out.push_str(&format!("General feedback about the {subject}\n> {text}\n"));
        }
        Some(AnnotationType::Insertion) => {
            out.push_str(&format!("Add this\n```\n{text}\n```\n"));
        }
        Some(AnnotationType::Replacement) => {
            out.push_str(&format!(
                "Change this\n**From:**\n```\n{original}\n```\n**To:**\n```\n{text}\n```\n"
            ));
        }
        // `exportAnnotationEntry` reads a missing text as "" here.
        None => push_comment(
            out,
            ann,
            if ann.is_quick_label {
                text
            } else {
                ann.text.as_deref().unwrap_or("")
            },
        ),
    }
}

fn push_comment(out: &mut String, ann: &Annotation, text: &str) {
    let original = &ann.original_text;
    if ann.is_quick_label {
        out.push_str(&format!("[{text}] Feedback on: \"{original}\"\n"));
        if let Some(tip) = ann.quick_label_tip.as_deref().filter(|t| !t.is_empty()) {
            out.push_str(&format!("> {tip}\n"));
        }
    } else {
        out.push_str(&format!("Feedback on: \"{original}\"\n> {text}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::parse_blocks;

    fn ann(kind: Option<AnnotationType>, original: &str, text: Option<&str>) -> Annotation {
        Annotation {
            kind,
            original_text: original.to_owned(),
            text: text.map(str::to_owned),
            ..Annotation::default()
        }
    }

    fn export(blocks: &[Block], anns: &[Annotation]) -> String {
        export_annotations(blocks, anns, &[], DEFAULT_TITLE, DEFAULT_SUBJECT)
    }

    const HEAD1: &str =
        "# Plan Feedback\n\nI've reviewed this plan and have 1 piece of feedback:\n\n";

    #[test]
    fn authors_are_named_only_when_asked() {
        let mut a = ann(Some(AnnotationType::Comment), "a", Some("b"));
        a.author = Some("alice".into());
        let plain = export(&[], std::slice::from_ref(&a));
        assert!(!plain.contains("alice"), "{plain}");
        let options = ExportOptions {
            authors: true,
            ..ExportOptions::default()
        };
        let unnamed = ann(Some(AnnotationType::GlobalComment), "", Some("c"));
        assert_eq!(
            export_annotations_with(&[], &[a, unnamed], &[], &options),
            format!(
                "# Plan Feedback\n\nI've reviewed this plan and have 2 pieces of feedback:\n\n## 1. Feedback on: \"a\"\n> b\nWritten by alice\n\n## 2. General feedback about the plan\n> c\nWritten by an unnamed writer\n\n---\n"
            )
        );
    }

    #[test]
    fn nothing_to_export_is_the_fixed_sentence() {
        assert_eq!(export(&[], &[]), "No changes detected.");
    }

    #[test]
    fn attachments_alone_still_export_without_a_count_line() {
        let img = ImageAttachment {
            path: "/tmp/r.png".into(),
            name: "r".into(),
        };
        assert_eq!(
            export_annotations(&[], &[], &[img], "T", "doc"),
            "# T\n\n## Reference Images\nPlease review these reference images (use the Read tool to view):\n1. [r] `/tmp/r.png`\n\n---\n"
        );
    }

    #[test]
    fn deletion_body_names_the_subject() {
        let out = export_annotations(
            &[],
            &[ann(Some(AnnotationType::Deletion), "x", None)],
            &[],
            "Review",
            "document",
        );
        assert_eq!(
            out,
            "# Review\n\nI've reviewed this document and have 1 piece of feedback:\n\n## 1. Remove this\n```\nx\n```\n> I don't want this in the document.\n\n---\n"
        );
    }

    #[test]
    fn comment_global_and_missing_text_bodies() {
        let out = export(&[], &[ann(Some(AnnotationType::Comment), "a", Some("b"))]);
        assert_eq!(
            out,
            format!("{HEAD1}## 1. Feedback on: \"a\"\n> b\n\n---\n")
        );
        let out = export(
            &[],
            &[ann(
                Some(AnnotationType::GlobalComment),
                "",
                Some("g\nsecond"),
            )],
        );
        assert_eq!(
            out,
            format!("{HEAD1}## 1. General feedback about the plan\n> g\nsecond\n\n---\n")
        );
        let out = export(&[], &[ann(Some(AnnotationType::Comment), "a", None)]);
        assert_eq!(
            out,
            format!("{HEAD1}## 1. Feedback on: \"a\"\n> undefined\n\n---\n")
        );
    }

    #[test]
    fn quick_labels_print_the_label_tip_and_summary() {
        let mut a = ann(Some(AnnotationType::Comment), "a", Some("Needs tests"));
        a.is_quick_label = true;
        let mut b = a.clone();
        b.quick_label_tip = Some("Add unit tests".into());
        let mut c = ann(Some(AnnotationType::Comment), "c", Some("Unclear"));
        c.is_quick_label = true;
        let out = export(&[], &[a, b, c]);
        assert_eq!(
            out,
            "# Plan Feedback\n\nI've reviewed this plan and have 3 pieces of feedback:\n\n\
             ## 1. [Needs tests] Feedback on: \"a\"\n\n\
             ## 2. [Needs tests] Feedback on: \"a\"\n> Add unit tests\n\n\
             ## 3. [Unclear] Feedback on: \"c\"\n\n---\n\n\
             ## Label Summary\n\n- **Needs tests**: 2\n- **Unclear**: 1\n\n"
        );
    }

    #[test]
    fn legacy_insertion_and_replacement_use_the_older_wording() {
        let out = export(
            &[],
            &[ann(
                Some(AnnotationType::Insertion),
                "ctx",
                Some("new step"),
            )],
        );
        assert_eq!(
            out,
            format!("{HEAD1}## 1. Add this\n```\nnew step\n```\n\n---\n")
        );
        let out = export(
            &[],
            &[ann(Some(AnnotationType::Replacement), "old", Some("new"))],
        );
        assert_eq!(
            out,
            format!(
                "{HEAD1}## 1. Change this\n**From:**\n```\nold\n```\n**To:**\n```\nnew\n```\n\n---\n"
            )
        );
    }

    #[test]
    fn unknown_types_export_as_comments() {
        let out = export(&[], &[ann(None, "a", None)]);
        assert_eq!(out, format!("{HEAD1}## 1. Feedback on: \"a\"\n> \n\n---\n"));
        let out = export(&[], &[ann(None, "a", Some("t"))]);
        assert_eq!(
            out,
            format!("{HEAD1}## 1. Feedback on: \"a\"\n> t\n\n---\n")
        );
    }

    #[test]
    fn source_converted_adds_the_note() {
        let options = ExportOptions {
            source_converted: true,
            ..ExportOptions::default()
        };
        let out = export_annotations_with(
            &[],
            &[ann(Some(AnnotationType::Comment), "a", Some("b"))],
            &[],
            &options,
        );
        assert!(out.starts_with(
            "# Plan Feedback\n\n> Note: Line numbers below refer to the converted markdown, not the original HTML/URL source.\n\nI've reviewed"
        ));
    }

    #[test]
    fn line_labels_follow_the_block_end_rules() {
        let md =
            "# H\n\npara one\npara two\n\n```\na\nb\n```\n\n> [!NOTE]\n> n\n\n$$\nx\n$$\n\n---\n";
        let blocks = parse_blocks(md);
        let on = |id: &str| Annotation {
            block_id: id.into(),
            ..ann(Some(AnnotationType::Comment), "x", Some("y"))
        };
        let labels: Vec<_> = (0..6)
            .map(|i| line_label(&blocks, &on(&format!("block-{i}"))))
            .collect();
        assert_eq!(
            labels,
            [
                Some("line 1".into()),
                Some("lines 3\u{2013}4".into()),
                Some("lines 6\u{2013}9".into()),
                Some("lines 11\u{2013}12".into()),
                Some("lines 14\u{2013}16".into()),
                Some("line 18".into()),
            ]
        );
        let global = Annotation {
            block_id: "block-0".into(),
            ..ann(Some(AnnotationType::GlobalComment), "", Some("g"))
        };
        assert_eq!(line_label(&blocks, &global), None);
        assert_eq!(line_label(&blocks, &on("diff-block-0")), None);
        assert_eq!(line_label(&blocks, &on("block-99")), None);
    }

    #[test]
    fn sort_is_stable_by_block_then_offset_with_unknown_blocks_first() {
        let blocks = parse_blocks("one\n\ntwo\n");
        let at = |id: &str, off: u64, text: &str| Annotation {
            block_id: id.into(),
            start_offset: off,
            ..ann(Some(AnnotationType::Comment), text, Some(text))
        };
        let out = export(
            &blocks,
            &[
                at("block-1", 0, "d"),
                at("block-0", 2, "c"),
                at("", 0, "a"),
                at("block-0", 1, "b"),
                at("nope", 0, "a2"),
            ],
        );
        let order: Vec<&str> = out.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(
            order,
            [
                "## 1. Feedback on: \"a\"",
                "## 2. Feedback on: \"a2\"",
                "## 3. (line 1) Feedback on: \"b\"",
                "## 4. (line 1) Feedback on: \"c\"",
                "## 5. (line 3) Feedback on: \"d\"",
            ]
        );
    }
}
