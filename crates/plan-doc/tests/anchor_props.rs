//! Property tests: any text taken from a random plan is found again where it
//! is, across block boundaries and despite whitespace changes; and no input
//! makes the parser, the search or the export panic. Since the search also
//! reads the blocks' rendered text (before the cross-block and normalised
//! steps), text found there is checked against the rendered text it covers.
#![allow(clippy::unwrap_used)]

use plan_doc::{
    Anchor, AnchorHow, Block, DEFAULT_SUBJECT, DEFAULT_TITLE, export_annotations, find_text,
    parse_blocks, reanchor,
};
use proptest::prelude::*;
use share_codec::{Annotation, AnnotationType};

fn text() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "auth",
        "middleware",
        "Café",
        "日本語",
        "x",
        "`code`",
        "**bold**",
        "[link](u)",
        "a.b",
        "1.5",
        "😀",
        "$$",
        "|",
        ":::",
        "[ref]",
        "<b>",
        "-",
        "#",
    ]);
    prop::collection::vec(words, 1..6).prop_map(|w| w.join(" "))
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => text(),
        1 => text().prop_map(|t| format!("# {t}")),
        1 => text().prop_map(|t| format!("- {t}")),
        1 => text().prop_map(|t| format!("  * [x] {t}")),
        1 => text().prop_map(|t| format!("12. {t}")),
        1 => text().prop_map(|t| format!("> {t}")),
        1 => text().prop_map(|t| format!("| {t} | b |")),
        1 => text().prop_map(|t| format!("  {t}  ")),
        3 => Just(String::new()),
        1 => Just("> [!NOTE]".to_owned()),
        1 => Just("```rust".to_owned()),
        1 => Just("```".to_owned()),
        1 => Just("---".to_owned()),
        1 => Just("<div>".to_owned()),
        1 => Just("</div>".to_owned()),
        1 => Just(":::note".to_owned()),
        1 => Just(":::".to_owned()),
        1 => Just("$$".to_owned()),
        1 => Just("[ref]: https://x.test".to_owned()),
        1 => Just("\t".to_owned()),
    ]
}

fn plan() -> impl Strategy<Value = String> {
    prop::collection::vec(line(), 1..30).prop_map(|lines| lines.join("\n"))
}

/// The char boundaries of `s`, ends included.
fn boundaries(s: &str) -> Vec<usize> {
    s.char_indices().map(|(i, _)| i).chain([s.len()]).collect()
}

/// A non-empty `[start, end)` range on char boundaries, chosen by two seeds.
fn pick(s: &str, a: usize, b: usize) -> Option<(usize, usize)> {
    let bounds = boundaries(s);
    if bounds.len() < 2 {
        return None;
    }
    let start = a % (bounds.len() - 1);
    let end = start + 1 + b % (bounds.len() - 1 - start);
    Some((bounds[start], bounds[end]))
}

/// The text an anchor covers, blocks joined by `sep`.
fn covered(blocks: &[Block], anchor: &Anchor, sep: &str) -> String {
    let sb = blocks.iter().position(|b| b.id == anchor.block_id).unwrap();
    let eb = blocks
        .iter()
        .position(|b| b.id == anchor.end_block_id)
        .unwrap();
    if sb == eb {
        return blocks[sb].content[anchor.start_offset..anchor.end_offset].to_owned();
    }
    let mut parts = vec![&blocks[sb].content[anchor.start_offset..]];
    parts.extend(blocks[sb + 1..eb].iter().map(|b| b.content.as_str()));
    parts.push(&blocks[eb].content[..anchor.end_block_offset]);
    parts.join(sep)
}

/// The rendered text an anchor covers: each block's rendered characters
/// whose source lies inside the anchor's range, blocks joined by `sep`.
fn rendered_covered(blocks: &[Block], anchor: &Anchor, sep: &str) -> String {
    let sb = blocks.iter().position(|b| b.id == anchor.block_id).unwrap();
    let eb = blocks
        .iter()
        .position(|b| b.id == anchor.end_block_id)
        .unwrap();
    let mut parts = Vec::new();
    for (i, block) in blocks.iter().enumerate().take(eb + 1).skip(sb) {
        let lo = if i == sb { anchor.start_offset } else { 0 };
        let hi = if i == eb {
            anchor.end_block_offset
        } else {
            block.content.len()
        };
        let r = block.rendered_text();
        let part: String = r
            .as_str()
            .char_indices()
            .filter(|&(at, c)| {
                r.source_range(at..at + c.len_utf8())
                    .is_some_and(|src| src.start >= lo && src.end <= hi)
            })
            .map(|(_, c)| c)
            .collect();
        parts.push(part);
    }
    parts.join(sep)
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_substring_of_a_block_is_found_at_its_first_occurrence(md in plan(), k in any::<usize>(), a in any::<usize>(), b in any::<usize>()) {
        let blocks = parse_blocks(&md);
        let with_text: Vec<&Block> = blocks.iter().filter(|b| !b.content.is_empty()).collect();
        prop_assume!(!with_text.is_empty());
        let block = with_text[k % with_text.len()];
        let (s, e) = pick(&block.content, a, b).unwrap();
        let needle = &block.content[s..e];

        let anchor = find_text(&blocks, needle);
        prop_assert!(anchor.found);
        prop_assert_eq!(anchor.how, AnchorHow::Exact);
        prop_assert_eq!(covered(&blocks, &anchor, ""), needle);
        let first = blocks.iter().find(|b| b.content.contains(needle)).unwrap();
        prop_assert_eq!(&anchor.block_id, &first.id);
        prop_assert_eq!(Some(anchor.start_offset), first.content.find(needle));
        prop_assert!(anchor.start_line >= first.start_line && anchor.end_line >= anchor.start_line);
        prop_assert!(anchor.end_line <= first.end_line().max(first.start_line));

        let ann = Annotation {
            kind: Some(AnnotationType::Comment),
            original_text: needle.to_owned(),
            ..Annotation::default()
        };
        let r = reanchor(&md, &[ann]);
        prop_assert_eq!(&r.annotations[0].block_id, &first.id);
    }

    #[test]
    fn any_substring_of_the_joined_text_is_found(md in plan(), a in any::<usize>(), b in any::<usize>()) {
        let blocks = parse_blocks(&md);
        let joined: String = blocks.iter().map(|b| b.content.as_str()).collect();
        let Some((s, e)) = pick(&joined, a, b) else { return Ok(()) };
        let needle = &joined[s..e];
        let anchor = find_text(&blocks, needle);
        prop_assert!(anchor.found);
        prop_assert!(matches!(anchor.how, AnchorHow::Exact | AnchorHow::Rendered | AnchorHow::CrossBlock));
        if anchor.how == AnchorHow::Exact {
            prop_assert_eq!(covered(&blocks, &anchor, ""), needle);
        } else {
            // A block's rendered text, or the rendered texts joined, may
            // hold it before the sources joined do.
            let source = covered(&blocks, &anchor, "");
            let rendered = rendered_covered(&blocks, &anchor, "");
            prop_assert!(source == needle || rendered == needle, "{:?} / {:?} for {:?}", source, rendered, needle);
        }
    }

    #[test]
    fn text_with_changed_whitespace_is_found_normalised(
        md in plan(),
        a in any::<usize>(),
        b in any::<usize>(),
        spaces in prop::collection::vec(prop::sample::select(vec![" ", "\n", "  ", "\t ", "\n\n"]), 64),
    ) {
        let blocks = parse_blocks(&md);
        let joined = blocks.iter().map(|b| b.content.as_str()).collect::<Vec<_>>().join("\n");
        let Some((s, e)) = pick(&joined, a, b) else { return Ok(()) };
        let words: Vec<&str> = joined[s..e].split_whitespace().collect();
        prop_assume!(!words.is_empty());
        let mut needle = String::from(" ");
        for (i, w) in words.iter().enumerate() {
            if i > 0 {
                needle.push_str(spaces[i % spaces.len()]);
            }
            needle.push_str(w);
        }
        needle.push('\n');

        let anchor = find_text(&blocks, &needle);
        prop_assert!(anchor.found, "needle {:?}", needle);
        let sep = if anchor.how == AnchorHow::Normalized { "\n" } else { "" };
        let source = collapse(&covered(&blocks, &anchor, sep));
        let rendered = collapse(&rendered_covered(&blocks, &anchor, sep));
        prop_assert!(
            source == collapse(&needle) || rendered == collapse(&needle),
            "{:?} / {:?} for {:?} ({:?})", source, rendered, needle, anchor.how
        );
    }

    #[test]
    fn arbitrary_input_never_panics(md in any::<String>(), needle in any::<String>(), lines in prop::collection::vec(line(), 0..20)) {
        for doc in [md.clone(), format!("{}\n{md}", lines.join("\n")), format!("---\n{md}\n---\n{}", lines.join("\r\n"))] {
            let blocks = parse_blocks(&doc);
            for (i, b) in blocks.iter().enumerate() {
                prop_assert_eq!(&b.id, &format!("block-{i}"));
                prop_assert_eq!(b.order, i + 1);
                prop_assert!(b.start_line >= 1 && b.start_line <= doc.split('\n').count());
                if i > 0 {
                    prop_assert!(b.start_line >= blocks[i - 1].start_line);
                }
            }
            let anchor = find_text(&blocks, &needle);
            prop_assert_eq!(anchor.found, anchor.how != AnchorHow::NotFound);
            let ann = Annotation {
                kind: Some(AnnotationType::Deletion),
                original_text: needle.clone(),
                ..Annotation::default()
            };
            let r = reanchor(&doc, &[ann]);
            let out = export_annotations(&r.blocks, &r.annotations, &[], DEFAULT_TITLE, DEFAULT_SUBJECT);
            prop_assert!(out.ends_with("---\n"));
        }
    }
}
