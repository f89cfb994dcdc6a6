//! Property tests for the rendered-text stage: any text a reviewer can select
//! in a block of a random plan with random inline markup re-anchors, at its
//! first occurrence, inside the source of the block it was found in; and the
//! rendered text's map back to the source is well-formed for any input.
#![allow(clippy::unwrap_used)]

use plan_doc::{AnchorHow, Block, find_text, parse_blocks, reanchor, render_inline};
use proptest::prelude::*;
use share_codec::{Annotation, AnnotationType};

fn word() -> impl Strategy<Value = String> {
    let plain = prop::sample::select(vec![
        "auth",
        "token",
        "Café",
        "日本語",
        "😀",
        "x",
        "a.b",
        "1.5",
        "snake_case",
        "#12",
        "@dev",
        "—",
        "it's",
        "\"q\"",
        "...",
        ":rocket:",
        "|",
        "-",
        "*",
        "_",
        "[",
        "]",
        "(",
        "`",
        "<",
        ">",
        "&",
        "\\",
        "$",
        "~",
    ])
    .prop_map(str::to_owned);
    let inner = prop::sample::select(vec!["JWT", "two words", "Café", "a_b", "x"]);
    let markup = (
        prop::sample::select(vec![
            "**{}**",
            "*{}*",
            "_{}_",
            "__{}__",
            "***{}***",
            "~~{}~~",
            "`{}`",
            "[{}](https://x.test/a_(b))",
            "[{}][ref]",
            "![{}](i.png)",
            "[[{}|shown {}]]",
            "<https://x.test/{}>",
            "\\*{}\\_",
            "&amp;{}&#8212;",
            "<kbd>{}</kbd>",
            "<!-- {} -->",
            "${}$",
            "**{} `{}`**",
            "{}  \n{}",
        ]),
        inner,
    )
        .prop_map(|(template, inner)| template.replace("{}", inner));
    prop_oneof![3 => plain, 2 => markup]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..7).prop_map(|w| w.join(" "))
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => text(),
        1 => text().prop_map(|t| format!("## {t}")),
        2 => text().prop_map(|t| format!("- {t}")),
        1 => text().prop_map(|t| format!("1. [ ] {t}")),
        1 => text().prop_map(|t| format!("> {t}")),
        1 => text().prop_map(|t| format!("| {t} | `b` |")),
        1 => Just("|---|---|".to_owned()),
        3 => Just(String::new()),
        1 => Just("> [!TIP]".to_owned()),
        1 => Just("```".to_owned()),
        1 => Just(":::note".to_owned()),
        1 => Just(":::".to_owned()),
        1 => Just("<div>".to_owned()),
        1 => Just("</div>".to_owned()),
        1 => Just("[ref]: https://x.test/ref".to_owned()),
        1 => Just("---".to_owned()),
    ]
}

fn plan() -> impl Strategy<Value = String> {
    prop::collection::vec(line(), 1..25).prop_map(|lines| lines.join("\n"))
}

/// A non-empty `[start, end)` range of `s` on char boundaries, from two seeds.
fn pick(s: &str, a: usize, b: usize) -> Option<(usize, usize)> {
    let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    if bounds.len() < 2 {
        return None;
    }
    let start = a % (bounds.len() - 1);
    let end = start + 1 + b % (bounds.len() - 1 - start);
    Some((bounds[start], bounds[end]))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(768))]

    #[test]
    fn any_substring_of_a_rendered_block_is_found_inside_its_blocks_source(
        md in plan(),
        k in any::<usize>(),
        a in any::<usize>(),
        b in any::<usize>(),
    ) {
        let blocks = parse_blocks(&md);
        let rendered: Vec<_> = blocks.iter().map(Block::rendered_text).collect();
        let with_text: Vec<usize> = (0..blocks.len()).filter(|&i| !rendered[i].is_empty()).collect();
        prop_assume!(!with_text.is_empty());
        let chosen = with_text[k % with_text.len()];
        let (s, e) = pick(rendered[chosen].as_str(), a, b).unwrap();
        let needle = &rendered[chosen].as_str()[s..e];

        let anchor = find_text(&blocks, needle);
        prop_assert!(anchor.found, "needle {:?}", needle);
        // One block's source or rendered text holds it, so the first of
        // those is where it binds: a source match anywhere wins, else the
        // first rendered one (at or before the chosen block).
        let (block, expected) = match blocks.iter().position(|bl| bl.content.contains(needle)) {
            Some(i) => {
                let at = blocks[i].content.find(needle).unwrap();
                (i, (AnchorHow::Exact, at, at + needle.len()))
            }
            None => {
                let i = rendered.iter().position(|r| r.as_str().contains(needle)).unwrap();
                prop_assert!(i <= chosen);
                let at = rendered[i].as_str().find(needle).unwrap();
                let range = rendered[i].source_range(at..at + needle.len()).unwrap();
                (i, (AnchorHow::Rendered, range.start, range.end))
            }
        };
        let bl = &blocks[block];
        prop_assert_eq!(&anchor.block_id, &bl.id);
        prop_assert_eq!(&anchor.end_block_id, &bl.id);
        prop_assert_eq!((anchor.how, anchor.start_offset, anchor.end_offset), expected);
        // Inside that block's source, on char boundaries, on its lines.
        prop_assert!(anchor.start_offset < anchor.end_offset && anchor.end_offset <= bl.content.len());
        prop_assert!(bl.content.is_char_boundary(anchor.start_offset));
        prop_assert!(bl.content.is_char_boundary(anchor.end_offset));
        prop_assert_eq!(anchor.end_block_offset, anchor.end_offset);
        let last_line = bl.end_line().max(bl.start_line);
        prop_assert!(bl.start_line <= anchor.start_line && anchor.start_line <= anchor.end_line);
        prop_assert!(anchor.end_line <= last_line);
        // The rendered match maps back to source whose rendering (in its
        // block) is exactly the needle.
        if anchor.how == AnchorHow::Rendered {
            let r = &rendered[block];
            let at = r.as_str().find(needle).unwrap();
            prop_assert_eq!(r.source_range(at..at + needle.len()), Some(anchor.start_offset..anchor.end_offset));
        }

        // Re-anchoring an annotation with that text binds it to the block.
        let ann = Annotation {
            kind: Some(AnnotationType::Comment),
            original_text: needle.to_owned(),
            text: Some("c".into()),
            ..Annotation::default()
        };
        let r = reanchor(&md, &[ann]);
        prop_assert_eq!(&r.annotations[0].block_id, &bl.id);
        prop_assert_eq!(r.not_found().count(), 0);
    }

    #[test]
    fn the_rendered_map_is_monotonic_and_in_bounds(md in any::<String>(), lines in prop::collection::vec(line(), 0..8)) {
        for src in [md.clone(), lines.join("\n"), format!("{}\n{md}", lines.join("  \n"))] {
            let r = render_inline(&src);
            let text = r.as_str();
            let mut last_end = 0;
            for (i, c) in text.char_indices() {
                let span = r.source_range(i..i + c.len_utf8()).unwrap();
                prop_assert!(span.start < span.end && span.end <= src.len());
                prop_assert!(src.is_char_boundary(span.start) && src.is_char_boundary(span.end));
                prop_assert!(span.start >= last_end || span.end == last_end, "{:?} at {}", src, i);
                last_end = span.end;
            }
            prop_assert!(text.len() <= src.len() + 4 * src.matches('&').count());
            for block in parse_blocks(&src) {
                let r = block.rendered_text();
                if let Some(all) = r.source_range(0..r.len()) {
                    prop_assert!(all.end <= block.content.len());
                }
            }
        }
    }
}
