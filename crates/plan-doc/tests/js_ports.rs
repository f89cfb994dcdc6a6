//! Differential test: the portal's JavaScript ports of this crate, run
//! under Node (no browser), against plan-doc itself on generated plans and
//! annotations.
//!
//! - `crates/portal/web/plandoc-*.js` (the block parser with its raw-HTML
//!   and reference-link passes, the rendered text, the re-anchoring search
//!   and the feedback export, a file per module of this crate): their
//!   blocks must equal [`parse_blocks`]'s, and `feedbackText` must equal
//!   what `planshare open --format feedback` prints ([`reanchor`], then
//!   [`export_annotations`]).
//! - `crates/portal/web/highlighter.js` (the portal's highlighter): for every
//!   annotation text, its answer must be [`find_text`]'s — found or not, the
//!   step that found it, and the blocks and offsets it covers — and when
//!   plan-doc finds the text, the highlighter must place it on a page
//!   showing the plan's rendered text, over that match (not another
//!   occurrence), whenever the match shows any text. (On the portal's own
//!   page, marked's rendering, a few constructs show differently, so there
//!   the fixed cases below check it.)
//!
//! - `crates/portal/web/plandoc-steps.js` (the step progress of checklist plans):
//!   `planSteps` must answer [`plan_steps`]'s JSON exactly, on the cases
//!   above and on [`DEFAULT_CHECKLISTS`] generated checklist plans of their
//!   own (nested task lists, several sections, fences, headings named Steps
//!   at every level, every marker and box, CRLF).
//!
//! Each run generates [`DEFAULT_CASES`] cases from a fresh seed (plans with
//! every block kind, inline markup, smart punctuation, `--`, `...`, emoji
//! shortcodes and the characters upstream typesets them as, whitespace
//! variations, CRLF and duplicated blocks; annotation texts cut from the
//! plan's rendered text or source, across blocks or not, then perturbed),
//! sends them to one Node process in batches, and compares. A failing case
//! is shrunk (proptest's value trees) and printed with the seed; replay
//! with `PLANSHARE_JS_PORTS_SEED=<seed>` (and `PLANSHARE_JS_PORTS_CASES=<n>`
//! for more or fewer cases). Node is required: without it the test fails
//! (scripts/install-deps installs nodejs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use plan_doc::{
    Anchor, AnchorHow, Block, DEFAULT_SUBJECT, DEFAULT_TITLE, export_annotations, find_text,
    parse_blocks, plan_steps, reanchor,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};
use share_codec::{Annotation, AnnotationType};

/// Cases per run (each a plan with a few annotation texts).
const DEFAULT_CASES: usize = 800;
/// Generated checklist plans per run (for plandoc-steps.js alone).
const DEFAULT_CHECKLISTS: usize = 1500;
/// Cases sent to Node at once.
const BATCH: usize = 200;
/// Shrinking gives up after this many tries.
const MAX_SHRINK_STEPS: usize = 4000;

// --- The Node side ---------------------------------------------------------

/// One Node process running `tests/js_ports/harness.mjs`: a JSON batch per
/// line in, a JSON answer per line out.
struct Harness {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Harness {
    fn start() -> Self {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let web = manifest.join("../portal/web");
        let script = manifest.join("tests/js_ports/harness.mjs");
        let node = std::env::var_os("NODE").map_or_else(|| PathBuf::from("node"), PathBuf::from);
        let spawned = Command::new(&node)
            .arg(&script)
            .arg(&web)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => panic!(
                "cannot run `{}` ({e}): this test needs Node.js to run the portal's \
                 JavaScript; scripts/install-deps installs it (apt-get install nodejs)",
                node.display()
            ),
        };
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// The harness's results for `cases` (each `{markdown, needles, annotations}`).
    fn run(&mut self, cases: &[Value]) -> Vec<Value> {
        let line = json!({ "cases": cases }).to_string();
        writeln!(self.stdin, "{line}").expect("write to node");
        self.stdin.flush().expect("flush to node");
        let mut answer = String::new();
        let n = self.stdout.read_line(&mut answer).expect("read from node");
        assert!(
            n > 0,
            "node exited without answering (its errors are above)"
        );
        let answer: Value = serde_json::from_str(&answer).expect("node answers JSON");
        let results = answer["results"].as_array().expect("results").clone();
        assert_eq!(results.len(), cases.len());
        results
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// --- Generated cases -------------------------------------------------------

/// Upstream's emoji shortcodes, read from plan-doc's own table (render.rs),
/// so that every entry is exercised and a table that changes is followed.
fn emoji_table() -> Vec<(String, String)> {
    let source = include_str!("../src/render.rs");
    let start = source.find("fn emoji(").expect("render.rs has fn emoji");
    let end = start + source[start..].find("_ => return None").unwrap();
    source[start..end]
        .lines()
        .filter_map(|line| {
            let (name, emoji) = line.trim().split_once(" => ")?;
            let unquote = |s: &str| {
                s.trim_end_matches(',')
                    .strip_prefix('"')?
                    .strip_suffix('"')
                    .map(str::to_owned)
            };
            Some((unquote(name)?, unquote(emoji)?))
        })
        .collect()
}

/// Inline pieces of plan text (markdown source).
fn word() -> BoxedStrategy<String> {
    let fixed: Vec<&'static str> = vec![
        "auth",
        "middleware",
        "tokens",
        "plan",
        "the",
        "Café",
        "日本語",
        "😀",
        "x",
        "a.b",
        "1.5",
        "it's",
        "don't",
        "\"quoted\"",
        "'single'",
        "--",
        "---",
        "...",
        "wait...",
        "3--5",
        "a---b",
        ":nope:",
        ":Rocket:",
        "::",
        ":abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz:rocket:",
        "“curly”",
        "‘s’",
        "—",
        "–",
        "…",
        "„low“",
        "′",
        "″",
        "❤️",
        "🚀",
        "⚠\u{fe0f}",
        "**bold**",
        "*em*",
        "_em_",
        "__strong__",
        "***both***",
        "~~gone~~",
        "`code`",
        "`a  b`",
        "`\"q\" -- x`",
        "[link](https://x.test)",
        "[**b**](u)",
        "[\"quoted\" link](u)",
        "<https://x.test>",
        "https://x.test/a",
        "![img](i.png)",
        "[[wiki|page]]",
        "\\*",
        "\\_",
        "&amp;",
        "&mdash;",
        "&#8230;",
        "&hellip;",
        "<kbd>K</kbd>",
        "$x^2$",
        "2 * 3",
        "snake_case",
        "a\u{a0}b",
        "|",
        "#",
        "-",
        "\t",
    ];
    let codes: Vec<String> = emoji_table()
        .into_iter()
        .flat_map(|(name, emoji)| [format!(":{name}:"), emoji])
        .collect();
    prop_oneof![
        6 => prop::sample::select(fixed).prop_map(str::to_owned),
        1 => prop::sample::select(codes),
        1 => "[a-z]{1,8}",
    ]
    .boxed()
}

/// A run of words with varied spacing.
fn inline() -> BoxedStrategy<String> {
    let sep = prop::sample::select(vec![" ", " ", " ", " ", "", "  ", "\t"]);
    prop::collection::vec((word(), sep), 1..7)
        .prop_map(|parts| {
            let mut out = String::new();
            for (i, (w, sep)) in parts.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(w);
            }
            out
        })
        .boxed()
}

/// One block of markdown source.
fn block() -> BoxedStrategy<String> {
    let line_break = prop::sample::select(vec!["\n", "\n", "  \n", "\\\n"]);
    prop_oneof![
        5 => (inline(), prop::option::of((line_break, inline())))
            .prop_map(|(a, b)| match b {
                Some((br, b)) => format!("{a}{br}{b}"),
                None => a,
            }),
        2 => (1..4usize, inline()).prop_map(|(n, t)| format!("{} {t}", "#".repeat(n))),
        3 => (
            prop::sample::select(vec!["", "  ", "\t", "    "]),
            prop::sample::select(vec!["- ", "* ", "1. ", "12. ", "- [ ] ", "- [x] "]),
            inline(),
            prop::option::of(inline()),
        )
            .prop_map(|(indent, marker, t, more)| match more {
                Some(m) => format!("{indent}{marker}{t}\n{indent}  {m}"),
                None => format!("{indent}{marker}{t}"),
            }),
        2 => (inline(), prop::option::of(inline())).prop_map(|(a, b)| match b {
            Some(b) => format!("> {a}\n> {b}"),
            None => format!("> {a}"),
        }),
        1 => (
            prop::sample::select(vec!["NOTE", "TIP", "WARNING"]),
            inline(),
            inline(),
        )
            .prop_map(|(kind, a, b)| format!("> [!{kind}]\n> {a}\n> - {b}")),
        2 => (inline(), inline(), inline(), inline())
            .prop_map(|(a, b, c, d)| format!("| {a} | {b} |\n|---|:-:|\n| {c} | {d} |")),
        1 => inline().prop_map(|t| format!("```rust\n{t}\n  {t}\n```")),
        1 => inline().prop_map(|t| format!("<div>\n{t}\n</div>")),
        1 => inline().prop_map(|t| format!("<details>\n<summary>{t}</summary>\n</details>")),
        1 => inline().prop_map(|t| format!(":::note\n{t}\n:::")),
        1 => inline().prop_map(|t| format!("$$\n{t}\n$$")),
        1 => Just("---".to_owned()),
    ]
    .boxed()
}

/// How a plan is put together from its blocks.
#[derive(Debug, Clone)]
struct PlanSpec {
    /// Each block and the separator before it.
    blocks: Vec<(String, &'static str)>,
    /// Blocks appended again at the end (indices, modulo the count).
    duplicates: Vec<usize>,
    crlf: bool,
    frontmatter: bool,
    trailing_newline: bool,
}

fn plan_spec() -> impl Strategy<Value = PlanSpec> {
    let sep = prop::sample::select(vec!["\n\n", "\n\n", "\n", "\n\n\n"]);
    (
        prop::collection::vec((block(), sep), 1..9),
        prop::collection::vec(any::<usize>(), 0..3),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.1),
        any::<bool>(),
    )
        .prop_map(
            |(blocks, duplicates, crlf, frontmatter, trailing_newline)| PlanSpec {
                blocks,
                duplicates,
                crlf,
                frontmatter,
                trailing_newline,
            },
        )
}

impl PlanSpec {
    fn markdown(&self) -> String {
        let mut parts: Vec<(String, &str)> = self.blocks.clone();
        for &d in &self.duplicates {
            let copy = self.blocks[d % self.blocks.len()].clone();
            parts.push((copy.0, "\n\n"));
        }
        let mut md = String::new();
        if self.frontmatter {
            md.push_str("---\ntitle: \"x\"\n---\n\n");
        }
        for (i, (block, sep)) in parts.iter().enumerate() {
            if i > 0 {
                md.push_str(sep);
            }
            md.push_str(block);
        }
        if self.trailing_newline {
            md.push('\n');
        }
        if self.crlf {
            md = md.replace('\n', "\r\n");
        }
        md
    }
}

/// Where an annotation's text comes from, and what is done to it.
#[derive(Debug, Clone)]
struct NeedleSpec {
    kind: u8,
    a: usize,
    b: usize,
    len: usize,
    perturb: Vec<(u8, usize)>,
    absent: String,
}

fn needle_spec() -> impl Strategy<Value = NeedleSpec> {
    (
        0u8..8,
        any::<usize>(),
        any::<usize>(),
        1usize..48,
        prop::collection::vec((0u8..9, any::<usize>()), 0..3),
        inline(),
    )
        .prop_map(|(kind, a, b, len, perturb, absent)| NeedleSpec {
            kind,
            a,
            b,
            len,
            perturb,
            absent,
        })
}

#[derive(Debug, Clone)]
struct CaseSpec {
    plan: PlanSpec,
    needles: Vec<NeedleSpec>,
}

fn case_spec() -> impl Strategy<Value = CaseSpec> {
    (plan_spec(), prop::collection::vec(needle_spec(), 1..6))
        .prop_map(|(plan, needles)| CaseSpec { plan, needles })
}

/// A generated case made concrete.
#[derive(Debug, Clone)]
struct Case {
    markdown: String,
    needles: Vec<String>,
}

/// `s[start..]`, at most `len` characters, starting at the `start`-th
/// character (modulo the count).
fn cut(s: &str, start: usize, len: usize) -> String {
    let n = s.chars().count();
    if n == 0 {
        return String::new();
    }
    s.chars().skip(start % n).take(len).collect()
}

/// Upstream's typesetting, roughly: what a selection in its viewer holds.
fn typeset(s: &str, emoji: &[(String, String)]) -> String {
    let mut out = s.replace("...", "…").replace("---", "—").replace("--", "–");
    for (name, e) in emoji {
        out = out.replace(&format!(":{name}:"), e);
    }
    let mut open = true;
    out.chars()
        .map(|c| match c {
            '"' => {
                open = !open;
                if open { '”' } else { '“' }
            }
            '\'' => '’',
            c => c,
        })
        .collect()
}

/// The reverse: typographic characters as they are typed.
fn untypeset(s: &str, emoji: &[(String, String)]) -> String {
    let mut out = s
        .replace(['“', '”'], "\"")
        .replace(['‘', '’'], "'")
        .replace('—', "---")
        .replace('–', "--")
        .replace('…', "...");
    for (name, e) in emoji {
        out = out.replace(e.as_str(), &format!(":{name}:"));
    }
    out
}

/// `s` with its `n`-th whitespace run (modulo the count) replaced.
fn respace(s: &str, n: usize, with: &str) -> String {
    let runs: Vec<(usize, usize)> = {
        let mut runs = Vec::new();
        let mut start = None;
        for (i, c) in s.char_indices() {
            match (c.is_whitespace(), start) {
                (true, None) => start = Some(i),
                (false, Some(st)) => {
                    runs.push((st, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(st) = start {
            runs.push((st, s.len()));
        }
        runs
    };
    if runs.is_empty() {
        return s.to_owned();
    }
    let (a, b) = runs[n % runs.len()];
    format!("{}{with}{}", &s[..a], &s[b..])
}

fn needle(
    spec: &NeedleSpec,
    markdown: &str,
    blocks: &[Block],
    emoji: &[(String, String)],
) -> String {
    let rendered: Vec<String> = blocks
        .iter()
        .map(|b| b.rendered_text().as_str().to_owned())
        .collect();
    let pick = |v: &[String]| -> String {
        if v.is_empty() {
            String::new()
        } else {
            v[spec.a % v.len()].clone()
        }
    };
    let mut text = match spec.kind {
        // Selected in one block of the rendered plan.
        0 | 1 => cut(&pick(&rendered), spec.b, spec.len),
        // Selected across blocks: as a selection reads it (line breaks) or
        // as `textContent` does (nothing between).
        2 => {
            let sep = if spec.b.is_multiple_of(2) { "\n" } else { "" };
            let start = rendered
                .iter()
                .take(spec.a % rendered.len().max(1))
                .map(|r| r.chars().count() + sep.chars().count())
                .sum::<usize>();
            cut(&rendered.join(sep), start + spec.b % 7, spec.len + 10)
        }
        // A quote of one block's source.
        3 => cut(
            &pick(&blocks.iter().map(|b| b.content.clone()).collect::<Vec<_>>()),
            spec.b,
            spec.len,
        ),
        // A quote of the markdown, wherever it falls.
        4 => cut(markdown, spec.a, spec.len),
        // A whole block as rendered.
        5 => pick(&rendered),
        // Text that is probably not in the plan.
        6 => spec.absent.clone(),
        // Rendered, typeset as upstream shows it.
        _ => typeset(&cut(&pick(&rendered), spec.b, spec.len), emoji),
    };
    for &(how, n) in &spec.perturb {
        text = match how {
            0 => typeset(&text, emoji),
            1 => untypeset(&text, emoji),
            2 => respace(&text, n, ["  ", "\n", "\t", "\n  ", "\r\n", " "][n % 6]),
            3 => format!(
                "{}{text}{}",
                [" ", "\n", "  "][n % 3],
                [" ", "\n", ""][n / 3 % 3]
            ),
            4 => text.replace('\n', "\r\n"),
            5 => {
                let chars: Vec<char> = text.chars().collect();
                if chars.is_empty() {
                    text
                } else {
                    let at = n % chars.len();
                    chars[..at].iter().chain(&chars[at + 1..]).collect()
                }
            }
            6 => text.split_whitespace().collect::<Vec<_>>().join(" "),
            7 => text.trim().to_owned(),
            _ => text.repeat(2),
        };
    }
    text
}

impl CaseSpec {
    fn concrete(&self, emoji: &[(String, String)]) -> Case {
        let markdown = self.plan.markdown();
        let blocks = parse_blocks(&markdown);
        let needles = self
            .needles
            .iter()
            .map(|n| needle(n, &markdown, &blocks, emoji))
            .collect();
        Case { markdown, needles }
    }
}

// --- Plan-doc's answers and the comparison ----------------------------------

/// The annotations of a case: one per needle (comments, deletions and
/// quick labels in turn) and a global comment.
fn annotations(needles: &[String]) -> Vec<Annotation> {
    let mut out: Vec<Annotation> = needles
        .iter()
        .enumerate()
        .map(|(i, text)| Annotation {
            id: format!("a-{i}"),
            kind: Some(if i % 3 == 1 {
                AnnotationType::Deletion
            } else {
                AnnotationType::Comment
            }),
            original_text: text.clone(),
            text: (i % 3 != 1).then(|| format!("note {i}")),
            is_quick_label: i % 3 == 2,
            ..Annotation::default()
        })
        .collect();
    out.push(Annotation {
        id: "g".into(),
        kind: Some(AnnotationType::GlobalComment),
        text: Some("overall".into()),
        ..Annotation::default()
    });
    out
}

/// The annotation as the portal holds it (what the JS functions take).
fn portal_annotation(a: &Annotation) -> Value {
    json!({
        "id": a.id,
        "type": match a.kind {
            Some(AnnotationType::Deletion) => "DELETION",
            Some(AnnotationType::GlobalComment) => "GLOBAL_COMMENT",
            _ => "COMMENT",
        },
        "originalText": a.original_text,
        "text": a.text,
        "isQuickLabel": a.is_quick_label,
    })
}

fn case_json(case: &Case) -> Value {
    let anns: Vec<Value> = annotations(&case.needles)
        .iter()
        .map(portal_annotation)
        .collect();
    json!({ "markdown": case.markdown, "needles": case.needles, "annotations": anns })
}

fn utf16(s: &str, byte: usize) -> usize {
    s.get(..byte).unwrap_or(s).encode_utf16().count()
}

/// The source an anchor covers, blocks joined by `|`.
fn covered(blocks: &[Block], a: &Anchor) -> String {
    let Some(sb) = blocks.iter().position(|b| b.id == a.block_id) else {
        return String::new();
    };
    let eb = blocks.iter().position(|b| b.id == a.end_block_id).unwrap();
    if sb == eb {
        return blocks[sb].content[a.start_offset..a.end_offset].to_owned();
    }
    let mut parts = vec![&blocks[sb].content[a.start_offset..]];
    parts.extend(blocks[sb + 1..eb].iter().map(|b| b.content.as_str()));
    parts.push(&blocks[eb].content[..a.end_block_offset]);
    parts.join("|")
}

/// Where an anchor's match shows in the blocks' rendered texts joined by
/// line breaks: the UTF-16 range from its first to its last rendered
/// character that is not whitespace, or `None` when it shows no such text.
fn shown_range(blocks: &[Block], a: &Anchor) -> Option<(usize, usize)> {
    let sb = blocks.iter().position(|b| b.id == a.block_id)?;
    let eb = blocks.iter().position(|b| b.id == a.end_block_id)?;
    let mut base = 0;
    let mut range: Option<(usize, usize)> = None;
    for (i, block) in blocks.iter().enumerate() {
        let r = block.rendered_text();
        if (sb..=eb).contains(&i) {
            let lo = if i == sb { a.start_offset } else { 0 };
            let hi = if i == eb {
                a.end_block_offset
            } else {
                block.content.len()
            };
            for (at, c) in r.as_str().char_indices() {
                let inside = r
                    .source_range(at..at + c.len_utf8())
                    .is_some_and(|src| src.start >= lo && src.end <= hi);
                if inside && !c.is_whitespace() {
                    let from = base + utf16(r.as_str(), at);
                    let to = from + c.len_utf16();
                    range = Some(range.map_or((from, to), |(f, _)| (f, to)));
                }
            }
        }
        base += r.as_str().encode_utf16().count() + 1;
    }
    range
}

/// Everything the JavaScript got differently from plan-doc for one case.
fn differences(case: &Case, result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(error) = result.get("error") {
        return vec![format!(
            "the JavaScript threw: {}",
            error.as_str().unwrap_or("")
        )];
    }
    let blocks = parse_blocks(&case.markdown);
    let expected_blocks = serde_json::to_value(&blocks).unwrap();
    if result["blocks"] != expected_blocks {
        out.push(format!(
            "plandoc-blocks.js parseBlocks differs:\n  plan-doc: {expected_blocks}\n  js:       {}",
            result["blocks"]
        ));
    }
    for (i, needle) in case.needles.iter().enumerate() {
        let a = find_text(&blocks, needle);
        let js = &result["anchors"][i];
        let offsets = |id: &str, at: usize| {
            blocks
                .iter()
                .find(|b| b.id == id)
                .map_or(0, |b| utf16(&b.content, at))
        };
        let expected = json!({
            "found": a.found,
            "how": a.how,
            "blockId": a.block_id,
            "startOffset": offsets(&a.block_id, a.start_offset),
            "endOffset": offsets(&a.block_id, a.end_offset),
            "endBlockId": a.end_block_id,
            "endBlockOffset": offsets(&a.end_block_id, a.end_block_offset),
        });
        let got: serde_json::Map<String, Value> = js
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "placed" | "shown"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        if Value::Object(got.clone()) != expected {
            out.push(format!(
                "highlighter.js differs for needle {i} {needle:?}:\n  plan-doc: {expected} covering {:?}\n  js:       {}",
                covered(&blocks, &a),
                Value::Object(got)
            ));
        } else if let Some((from, to)) = shown_range(&blocks, &a) {
            // On a page showing the rendered texts, the highlight must
            // cover part of the match's own text (not another occurrence).
            let placed = js["placed"].as_array().map(|r| {
                (
                    r[0].as_u64().unwrap_or(0) as usize,
                    r[1].as_u64().unwrap_or(0) as usize,
                )
            });
            if !placed.is_some_and(|(f, t)| f < to && from < t) {
                out.push(format!(
                    "highlighter.js found needle {i} {needle:?} ({:?}, covering {:?}, shown at {from}..{to}) \
                     but placed it at {placed:?} on the page {:?}",
                    a.how,
                    covered(&blocks, &a),
                    result["model"].as_str().unwrap_or("")
                ));
            }
        }
    }
    let anns = annotations(&case.needles);
    let r = reanchor(&case.markdown, &anns);
    let expected = export_annotations(
        &r.blocks,
        &r.annotations,
        &[],
        DEFAULT_TITLE,
        DEFAULT_SUBJECT,
    );
    if result["feedback"].as_str() != Some(expected.as_str()) {
        out.push(format!(
            "plandoc-export.js feedbackText differs:\n  plan-doc: {expected:?}\n  js:       {}",
            result["feedback"]
        ));
    }
    out.extend(steps_difference(&case.markdown, result));
    out
}

/// What plandoc-steps.js got differently from plan-doc's [`plan_steps`].
fn steps_difference(markdown: &str, result: &Value) -> Option<String> {
    let expected = serde_json::to_value(plan_steps(markdown)).unwrap();
    (result.get("steps") != Some(&expected)).then(|| {
        format!(
            "plandoc-steps.js planSteps differs:\n  plan-doc: {expected}\n  js:       {}",
            result.get("steps").unwrap_or(&Value::Null)
        )
    })
}

fn seed() -> u64 {
    match std::env::var("PLANSHARE_JS_PORTS_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .expect("PLANSHARE_JS_PORTS_SEED is a number"),
        Err(_) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            now.as_secs() ^ u64::from(now.subsec_nanos()).rotate_left(32)
        }
    }
}

fn rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Shrinks a failing case's value tree, trying each simpler case in Node.
fn shrink<T: ValueTree<Value = CaseSpec>>(
    tree: &mut T,
    harness: &mut Harness,
    emoji: &[(String, String)],
) -> (Case, Vec<String>) {
    let fails = |harness: &mut Harness, case: &Case| {
        let result = harness.run(&[case_json(case)]).remove(0);
        differences(case, &result)
    };
    let mut best = tree.current().concrete(emoji);
    let mut best_diffs = fails(harness, &best);
    let mut steps = 0;
    if tree.simplify() {
        while steps < MAX_SHRINK_STEPS {
            steps += 1;
            let case = tree.current().concrete(emoji);
            let diffs = fails(harness, &case);
            if diffs.is_empty() {
                if !tree.complicate() {
                    break;
                }
            } else {
                best = case;
                best_diffs = diffs;
                if !tree.simplify() {
                    break;
                }
            }
        }
    }
    (best, best_diffs)
}

#[test]
fn the_javascript_ports_agree_with_plan_doc_on_generated_cases() {
    let seed = seed();
    let cases: usize = std::env::var("PLANSHARE_JS_PORTS_CASES")
        .ok()
        .map_or(DEFAULT_CASES, |n| {
            n.trim().parse().expect("a number of cases")
        });
    let emoji = emoji_table();
    assert!(
        emoji.len() >= 30,
        "render.rs's emoji table is read: {emoji:?}"
    );
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
    let strategy = case_spec();
    let mut trees: Vec<_> = (0..cases)
        .map(|_| strategy.new_tree(&mut runner).unwrap())
        .collect();
    let mut harness = Harness::start();
    let mut failing = None;
    let mut steps = HashSet::new();
    'batches: for start in (0..cases).step_by(BATCH) {
        let end = (start + BATCH).min(cases);
        let concrete: Vec<Case> = trees[start..end]
            .iter()
            .map(|t| t.current().concrete(&emoji))
            .collect();
        for case in &concrete {
            let blocks = parse_blocks(&case.markdown);
            steps.extend(case.needles.iter().map(|n| find_text(&blocks, n).how));
        }
        let json: Vec<Value> = concrete.iter().map(case_json).collect();
        let results = harness.run(&json);
        for (k, (case, result)) in concrete.iter().zip(&results).enumerate() {
            if !differences(case, result).is_empty() {
                failing = Some(start + k);
                break 'batches;
            }
        }
    }
    let Some(index) = failing else {
        // The generator reaches every step of the search.
        if cases >= DEFAULT_CASES {
            for how in [
                AnchorHow::Exact,
                AnchorHow::Rendered,
                AnchorHow::CrossBlock,
                AnchorHow::Normalized,
                AnchorHow::Transformed,
                AnchorHow::NotFound,
            ] {
                assert!(
                    steps.contains(&how),
                    "no generated text is found by {how:?} (seed {seed})"
                );
            }
        }
        return;
    };
    let (case, diffs) = shrink(&mut trees[index], &mut harness, &emoji);
    panic!(
        "the JavaScript ports disagree with plan-doc (seed {seed}, case {index} of {cases}; \
         replay with PLANSHARE_JS_PORTS_SEED={seed}).\n\
         Smallest failing case found:\n  markdown: {:?}\n  needles:  {:?}\n\n{}",
        case.markdown,
        case.needles,
        diffs.join("\n\n")
    );
}

/// Runs fixed cases through the harness and asserts they agree.
fn assert_agree(cases: &[Case]) -> Vec<Value> {
    let mut harness = Harness::start();
    let results = harness.run(&cases.iter().map(case_json).collect::<Vec<_>>());
    for (case, result) in cases.iter().zip(&results) {
        let diffs = differences(case, result);
        assert!(
            diffs.is_empty(),
            "{:?}\n{}",
            case.markdown,
            diffs.join("\n\n")
        );
    }
    results
}

/// Issue 23's example: a plan with straight quotes, `--`, `...` and
/// `:rocket:`, and annotations holding what a reviewer selected in
/// upstream's rendering. The portal finds every one the CLI finds, and
/// places it on the page.
#[test]
fn the_portal_finds_the_typeset_selections_the_cli_finds() {
    let markdown = "# Launch notes\n\nWe said \"ship it\" -- then waited... for the :rocket: launch.\n\n- Pages 3--5 cover the \"rollback\" plan\n- It's done...\n";
    let needles: Vec<String> = [
        "We said “ship it”",
        "ship it” – then",
        "then waited… for",
        "the 🚀 launch",
        "Pages 3–5 cover the “rollback” plan",
        "It’s done…",
        "It’s finished…",
    ]
    .map(str::to_owned)
    .to_vec();
    let case = Case {
        markdown: markdown.to_owned(),
        needles: needles.clone(),
    };
    let results = assert_agree(std::slice::from_ref(&case));
    let blocks = parse_blocks(markdown);
    let cli: Vec<bool> = needles
        .iter()
        .map(|n| find_text(&blocks, n).found)
        .collect();
    assert_eq!(cli, [true, true, true, true, true, true, false]);
    let anchors = results[0]["anchors"].as_array().unwrap();
    for (i, needle) in needles.iter().enumerate() {
        assert_eq!(anchors[i]["found"], cli[i], "{needle}");
        assert_eq!(
            !anchors[i]["shown"].is_null(),
            cli[i],
            "{needle}: {}",
            anchors[i]
        );
    }
    // What the portal's page shows for them (marked keeps the source's
    // punctuation and shortcodes).
    assert_eq!(anchors[0]["shown"], "We said \"ship it\"");
    assert_eq!(anchors[2]["shown"], "then waited... for");
    assert_eq!(anchors[3]["shown"], "the :rocket: launch");
    assert_eq!(
        anchors[4]["shown"],
        "Pages 3--5 cover the \"rollback\" plan"
    );
}

/// Every emoji shortcode and every typographic character of plan-doc's
/// tables, both ways round, is folded alike by the JavaScript.
#[test]
fn the_folding_tables_match_plan_doc() {
    let emoji = emoji_table();
    let mut cases = Vec::new();
    for (name, e) in &emoji {
        cases.push(Case {
            markdown: format!("# Table\n\nBefore :{name}: after\n\nAgain {e} here\n"),
            needles: vec![
                format!("Before {e} after"),
                format!("Before {} after", e.replace('\u{fe0f}', "")),
                format!("Again :{name}: here"),
                format!(":{name}:"),
            ],
        });
    }
    let typographic = [
        ("“", "\""),
        ("”", "\""),
        ("„", "\""),
        ("‟", "\""),
        ("″", "\""),
        ("‘", "'"),
        ("’", "'"),
        ("‚", "'"),
        ("‛", "'"),
        ("′", "'"),
        ("…", "..."),
        ("—", "---"),
        ("–", "--"),
    ];
    for (fancy, plain) in typographic {
        cases.push(Case {
            markdown: format!("Plain a{plain}b here\n\nFancy c{fancy}d here\n"),
            needles: vec![
                format!("Plain a{fancy}b"),
                format!("Fancy c{plain}d"),
                format!("a{fancy}b here"),
            ],
        });
    }
    let results = assert_agree(&cases);
    for (case, result) in cases.iter().zip(&results) {
        for (needle, anchor) in case
            .needles
            .iter()
            .zip(result["anchors"].as_array().unwrap())
        {
            assert_eq!(anchor["found"], true, "{needle:?} in {:?}", case.markdown);
        }
    }
}

// --- Step progress (plandoc-steps.js) -------------------------------------

/// A task item line, or something close to one.
fn task_line() -> BoxedStrategy<String> {
    (
        prop::sample::select(vec![
            "", "", "", " ", "  ", "  ", "   ", "    ", "    ", "\t", "\t  ", "  \t", "        ",
            "\u{a0}",
        ]),
        prop::sample::select(vec![
            "-",
            "-",
            "-",
            "*",
            "+",
            "1.",
            "2)",
            "10.",
            "123456789.",
            "1234567890.",
            "a.",
            ">",
            "- -",
        ]),
        prop::sample::select(vec![" ", " ", " ", "  ", "\t", ""]),
        prop::sample::select(vec![
            "[ ]", "[ ]", "[x]", "[x]", "[X]", "[-]", "[-]", "[~]", "[y]", "[]", "[ x]", "[é]",
            "[😀]", "",
        ]),
        prop::sample::select(vec![" ", " ", " ", "", "\t", "x", "  "]),
        prop::option::weighted(0.85, inline()),
        prop::sample::select(vec!["", "", "", " ", "\t", "\u{a0}", "\r", "#"]),
    )
        .prop_map(|(indent, marker, gap, task_box, after, text, trail)| {
            format!(
                "{indent}{marker}{gap}{task_box}{after}{}{trail}",
                text.unwrap_or_default()
            )
        })
        .boxed()
}

/// A heading line: named Steps or not, at every level and then some.
fn heading_line() -> BoxedStrategy<String> {
    (
        prop::sample::select(vec!["", "", " ", "  ", "\t"]),
        0..9usize,
        prop::sample::select(vec![" ", " ", "  ", "\t", ""]),
        prop::sample::select(vec![
            "Steps",
            "Steps",
            "Steps",
            "steps",
            "STEPS",
            "sTePs",
            "Steps ##",
            "Steps#",
            "Steps  #",
            "#",
            "Step",
            "Steps:",
            "Next steps",
            "Plan",
            "Risks",
            "Notes",
            "",
        ]),
        prop::sample::select(vec!["", "", " ", "\t", "\u{a0}"]),
        prop::option::weighted(0.15, inline()),
    )
        .prop_map(|(indent, level, gap, name, trail, other)| match other {
            Some(text) => format!("{indent}{}{gap}{text}", "#".repeat(level.max(1))),
            None => format!("{indent}{}{gap}{name}{trail}", "#".repeat(level)),
        })
        .boxed()
}

/// A fenced block holding a few lines, closed or not.
fn fence_block() -> BoxedStrategy<String> {
    (
        prop::sample::select(vec!["```", "```", "~~~", "````", "~~~~", "``", "~~"]),
        prop::sample::select(vec!["", "", " ", "  ", "\t", "\u{a0}"]),
        prop::sample::select(vec!["", "", "md", "rust", " x"]),
        prop::collection::vec(
            prop_oneof![3 => task_line(), 1 => heading_line(), 1 => inline()],
            0..4,
        ),
        prop::sample::select(vec![
            Some(0i8),
            Some(0),
            Some(0),
            Some(1),
            Some(-1),
            Some(9),
            None,
        ]),
        prop::sample::select(vec!["", "", "  ", "\t"]),
    )
        .prop_map(|(fence, indent, info, body, close, close_indent)| {
            let mut out = format!("{indent}{fence}{info}");
            for line in body {
                out.push('\n');
                out.push_str(&line);
            }
            if let Some(delta) = close {
                let ch = fence.chars().next().unwrap();
                let closer = match delta {
                    // The other fence character.
                    9 => (if ch == '`' { "~" } else { "`" }).repeat(fence.len()),
                    d => ch
                        .to_string()
                        .repeat((fence.len() as i64 + i64::from(d)).max(1) as usize),
                };
                out.push('\n');
                out.push_str(close_indent);
                out.push_str(&closer);
            }
            out
        })
        .boxed()
}

/// One element of a checklist plan (one or more lines).
fn checklist_element() -> BoxedStrategy<String> {
    prop_oneof![
        8 => task_line(),
        3 => heading_line(),
        2 => inline(),
        1 => fence_block(),
        1 => (prop::sample::select(vec!["", "  ", "\t"]), inline())
            .prop_map(|(indent, t)| format!("{indent}- {t}")),
        1 => Just(String::new()),
    ]
    .boxed()
}

/// How a checklist plan is put together.
#[derive(Debug, Clone)]
struct ChecklistSpec {
    /// Each element and the line break after it.
    lines: Vec<(String, &'static str)>,
    crlf: bool,
}

fn checklist_spec() -> impl Strategy<Value = ChecklistSpec> {
    (
        prop::collection::vec(
            (
                checklist_element(),
                prop::sample::select(vec!["\n", "\n", "\n", "\n\n", "\r\n"]),
            ),
            0..24,
        ),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(lines, crlf)| ChecklistSpec { lines, crlf })
}

impl ChecklistSpec {
    fn markdown(&self) -> String {
        let mut md: String = self
            .lines
            .iter()
            .flat_map(|(line, brk)| [line.as_str(), brk])
            .collect();
        if self.crlf {
            md = md.replace("\r\n", "\n").replace('\n', "\r\n");
        }
        md
    }
}

fn steps_case(markdown: &str) -> Value {
    json!({ "markdown": markdown, "stepsOnly": true })
}

/// What plandoc-steps.js got differently, or threw, for one plan.
fn steps_differences(markdown: &str, result: &Value) -> Option<String> {
    if let Some(error) = result.get("error") {
        return Some(format!(
            "plandoc-steps.js threw: {}",
            error.as_str().unwrap_or("")
        ));
    }
    steps_difference(markdown, result)
}

#[test]
fn the_step_progress_port_agrees_with_plan_doc_on_generated_checklists() {
    let seed = seed();
    let cases: usize = std::env::var("PLANSHARE_JS_PORTS_CASES")
        .ok()
        .map_or(DEFAULT_CHECKLISTS, |n| {
            n.trim().parse().expect("a number of cases")
        });
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
    let strategy = checklist_spec();
    let mut trees: Vec<_> = (0..cases)
        .map(|_| strategy.new_tree(&mut runner).unwrap())
        .collect();
    let mut harness = Harness::start();
    // The generator reaches what the rules tell apart.
    let (mut sections, mut fallbacks, mut none, mut all_done) = (0, 0, 0, 0);
    let mut failing = None;
    'batches: for start in (0..cases).step_by(BATCH) {
        let end = (start + BATCH).min(cases);
        let plans: Vec<String> = trees[start..end]
            .iter()
            .map(|t| t.current().markdown())
            .collect();
        let results = harness.run(&plans.iter().map(|p| steps_case(p)).collect::<Vec<_>>());
        for (k, (plan, result)) in plans.iter().zip(&results).enumerate() {
            if steps_differences(plan, result).is_some() {
                failing = Some(start + k);
                break 'batches;
            }
            match plan_steps(plan) {
                None => none += 1,
                Some(s) if s.current.is_none() => all_done += 1,
                Some(s) => {
                    let first = s.items[0].line;
                    let before = plan.split('\n').take(first - 1);
                    if before.into_iter().any(|l| {
                        l.trim()
                            .trim_matches('#')
                            .trim()
                            .eq_ignore_ascii_case("steps")
                    }) {
                        sections += 1;
                    } else {
                        fallbacks += 1;
                    }
                }
            }
        }
    }
    let Some(index) = failing else {
        if cases >= DEFAULT_CHECKLISTS {
            for (what, n) in [
                ("a steps section", sections),
                ("no steps section", fallbacks),
                ("no steps", none),
                ("every step done", all_done),
            ] {
                assert!(
                    n >= 10,
                    "only {n} generated plans with {what} (seed {seed})"
                );
            }
        }
        return;
    };
    // Shrink the failing plan.
    let tree = &mut trees[index];
    let fails = |harness: &mut Harness, plan: &str| {
        let result = harness.run(&[steps_case(plan)]).remove(0);
        steps_differences(plan, &result)
    };
    let mut best = tree.current().markdown();
    let mut best_diff = fails(&mut harness, &best);
    if tree.simplify() {
        for _ in 0..MAX_SHRINK_STEPS {
            let plan = tree.current().markdown();
            match fails(&mut harness, &plan) {
                None if !tree.complicate() => break,
                None => {}
                Some(diff) => {
                    best = plan;
                    best_diff = Some(diff);
                    if !tree.simplify() {
                        break;
                    }
                }
            }
        }
    }
    panic!(
        "plandoc-steps.js disagrees with plan-doc (seed {seed}, plan {index} of {cases}; \
         replay with PLANSHARE_JS_PORTS_SEED={seed}).\nSmallest failing plan found: {best:?}\n\n{}",
        best_diff.unwrap_or_default()
    );
}

/// Hand-written plans at the edges of the rules: each must get the same
/// steps from plandoc-steps.js as from plan-doc, and the answers noted here.
#[test]
fn the_step_progress_port_agrees_on_the_edge_cases() {
    let cases: Vec<(String, Value)> = vec![
        ("".into(), Value::Null),
        ("# Plan\n\nNo boxes.\n".into(), Value::Null),
        ("```\n- [ ] fenced\n```\n".into(), Value::Null),
        ("~~~\n- [ ] fenced\n".into(), Value::Null),
        (
            "- [x] a\r\n- [ ]\r\n".into(),
            json!({"total": 2, "done": 1, "current": 1, "items": [
                {"text": "a", "state": "done", "line": 1},
                {"text": "", "state": "pending", "line": 2}]}),
        ),
        (
            "- [ ] ctx\n## Steps ##\n  1) [~] one\n    - [ ] sub\n  2) [-] two\n# End\n- [ ] after\n"
                .into(),
            json!({"total": 2, "done": 0, "current": 0, "items": [
                {"text": "one", "state": "in-progress", "line": 3},
                {"text": "two", "state": "in-progress", "line": 5}]}),
        ),
        (
            "###### STEPS\n- [X] last\n".into(),
            json!({"total": 1, "done": 1, "current": null, "items": [
                {"text": "last", "state": "done", "line": 2}]}),
        ),
        (
            "####### Steps\n\t- [ ] tab\n    - [x] four\n".into(),
            json!({"total": 2, "done": 1, "current": 0, "items": [
                {"text": "tab", "state": "pending", "line": 2},
                {"text": "four", "state": "done", "line": 3}]}),
        ),
        (
            "- [ ] \u{feff}bom\u{a0}\n- [ ] \u{85}nel\n- [ ] 日本語 😀\n".into(),
            json!({"total": 3, "done": 0, "current": 0, "items": [
                {"text": "bom", "state": "pending", "line": 1},
                {"text": "\u{85}nel", "state": "pending", "line": 2},
                {"text": "日本語 😀", "state": "pending", "line": 3}]}),
        ),
        ("- [é] x\n- [😀] y\n- [ ]\tz\n".into(), Value::Null),
        // Long lines of markers: no slow paths.
        (format!("# {}a\n{}\n", "#".repeat(200_000), "1".repeat(200_000)), Value::Null),
        (
            format!("## Steps {}\n- [ ] a\n", "#".repeat(100_000)),
            json!({"total": 1, "done": 0, "current": 0, "items": [
                {"text": "a", "state": "pending", "line": 2}]}),
        ),
    ];
    let mut harness = Harness::start();
    let results = harness.run(
        &cases
            .iter()
            .map(|(md, _)| steps_case(md))
            .collect::<Vec<_>>(),
    );
    for ((markdown, expected), result) in cases.iter().zip(&results) {
        let shown = markdown.chars().take(80).collect::<String>();
        assert_eq!(
            &serde_json::to_value(plan_steps(markdown)).unwrap(),
            expected,
            "plan-doc on {shown:?}"
        );
        if let Some(diff) = steps_differences(markdown, result) {
            panic!("{shown:?}: {diff}");
        }
    }
    // A 5 MB checklist is quick in both.
    let big = "## Steps\n".to_owned() + &"- [x] done step\n  - [ ] nested\n".repeat(180_000);
    assert!(big.len() > 5_000_000);
    let started = std::time::Instant::now();
    let result = harness.run(&[steps_case(&big)]).remove(0);
    assert_eq!(steps_differences(&big, &result), None);
    assert_eq!(result["steps"]["total"], 180_000);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

// --- Review threads and progress pushes (plandoc-threads.js) ----------------

/// Writers a generated review draws from: the owner, an approver and three
/// reviewers (ids as the server makes them, and one that sorts before
/// `owner` and one after).
const WRITERS: [(&str, &str); 5] = [
    ("owner", "owner"),
    ("AnnApprove01", "approver"),
    ("BobReview001", "reviewer"),
    ("zedReview001", "reviewer"),
    ("CatReview001", "reviewer"),
];

/// Thread ids a generated review draws from: valid ones, ones a client may
/// not make, and one beyond ASCII.
const THREAD_IDS: [&str; 8] = [
    "thread-aaaa1",
    "thread-bbbb2",
    "thread-cccc3",
    "Ünïcödé-thread",
    "short",
    "has.a.dot.in",
    "owner.0",
    "thread-dddd4",
];

/// A JSON value as a careless or hostile client might store it where a
/// field is expected: mostly `good`, sometimes of another type.
fn loosely(good: Value) -> BoxedStrategy<Value> {
    prop_oneof![
        12 => Just(good.clone()),
        1 => Just(Value::Null),
        1 => Just(json!("5")),
        1 => Just(json!(5.0)),
        1 => Just(json!(-1)),
        1 => Just(json!([good])),
    ]
    .boxed()
}

fn thread_ref() -> BoxedStrategy<String> {
    prop_oneof![
        6 => prop::sample::select(THREAD_IDS.to_vec()).prop_map(str::to_owned),
        2 => (0..5usize, 0..4usize).prop_map(|(w, i)| format!("{}.{i}", WRITERS[w].0)),
        1 => Just("nowhere-at-all".to_owned()),
    ]
    .boxed()
}

fn reply_entry() -> BoxedStrategy<Value> {
    (
        prop::sample::select(vec!["reply-1", "reply-2", "reply-3", "réply-4"]),
        thread_ref(),
        prop::sample::select(vec!["yes", "", "see v3", "ok 👍"]),
        0u64..4,
        prop::option::of(1u64..5),
    )
        .prop_flat_map(|(id, to, text, at, addressed)| {
            (
                loosely(json!(id)),
                loosely(json!(to)),
                loosely(json!(text)),
                loosely(json!(at)),
                Just(addressed),
            )
        })
        .prop_map(|(id, to, text, at, addressed)| {
            let mut entry = json!({"id": id, "to": to, "text": text, "at": at});
            if let Some(n) = addressed {
                entry["addressed"] = json!(n);
            }
            entry
        })
        .boxed()
}

fn state_entry() -> BoxedStrategy<Value> {
    (
        thread_ref(),
        prop::sample::select(vec!["resolved", "open", "resolved", "closed"]),
        0u64..4,
    )
        .prop_flat_map(|(to, state, at)| {
            (
                loosely(json!(to)),
                loosely(json!(state)),
                loosely(json!(at)),
            )
        })
        .prop_map(|(to, state, at)| json!({"to": to, "state": state, "at": at}))
        .boxed()
}

/// One writer's set: the roots' texts and ids, replies and state changes.
fn writer_set(writer: usize) -> BoxedStrategy<Value> {
    let (id, role) = WRITERS[writer];
    (
        prop::collection::vec(
            (prop::sample::select(THREAD_IDS.to_vec()), prop::bool::weighted(0.1)),
            0..4,
        ),
        prop::bool::weighted(0.15),
        prop::collection::vec(reply_entry(), 0..4),
        prop::collection::vec(state_entry(), 0..4),
        1u64..4,
    )
        .prop_map(move |(roots, no_ids, replies, states, version)| {
            let ids: Vec<Value> = roots
                .iter()
                .map(|(id, odd)| if *odd { json!(7) } else { json!(id) })
                .collect();
            let mut set = json!({"v": version, "a": [], "replies": replies, "states": states});
            if !no_ids {
                set["ids"] = json!(ids);
            }
            json!({
                "writer": id,
                "role": role,
                "name": format!("{id} name"),
                "version": version,
                "roots": roots.iter().enumerate().map(|(i, _)| json!({"quote": format!("quote {i}"), "text": format!("comment {i} of {id}")})).collect::<Vec<_>>(),
                "set": set,
            })
        })
        .boxed()
}

/// The comment sets of a generated review: a subset of the writers, each
/// with a set.
fn review_sets() -> BoxedStrategy<Vec<Value>> {
    prop::sample::subsequence((0..WRITERS.len()).collect::<Vec<_>>(), 0..=WRITERS.len())
        .prop_flat_map(|writers| writers.into_iter().map(writer_set).collect::<Vec<_>>())
        .boxed()
}

/// plan-doc's threads of `sets` (as the harness gets them), as JSON.
fn rust_threads(sets: &[Value]) -> Value {
    let sets: Vec<plan_doc::WriterSet> = sets
        .iter()
        .map(|s| {
            let roots = s["roots"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| plan_doc::Root {
                    quote: r["quote"].as_str().unwrap().into(),
                    text: r["text"].as_str().unwrap().into(),
                })
                .collect();
            plan_doc::WriterSet::from_json(
                s["writer"].as_str().unwrap(),
                s["role"].as_str().unwrap(),
                s["name"].as_str().unwrap(),
                s["version"].as_u64().unwrap(),
                roots,
                &s["set"],
            )
        })
        .collect();
    serde_json::to_value(plan_doc::threads(&sets)).unwrap()
}

/// The thread rules give the same threads in the CLI (plan-doc) and the
/// portal (plandoc-threads.js) on generated reviews: replies, resolutions
/// and reopenings by every role — a reviewer's forged resolve of another's
/// thread among them — ties in time, ids claimed twice or malformed, and
/// fields of the wrong type.
#[test]
fn the_thread_rules_agree_in_the_cli_and_the_portal_on_generated_reviews() {
    let seed = seed();
    let cases: usize = std::env::var("PLANSHARE_JS_PORTS_CASES")
        .ok()
        .map_or(2000, |n| n.trim().parse().expect("a number of cases"));
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
    let strategy = review_sets();
    let reviews: Vec<Vec<Value>> = (0..cases)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();
    let mut harness = Harness::start();
    // The generator reaches what the rules tell apart.
    let (mut resolved, mut reopened, mut forged, mut addressed) = (0, 0, 0, 0);
    for (start, batch) in reviews.chunks(BATCH).enumerate() {
        let asked: Vec<Value> = batch
            .iter()
            .map(|sets| json!({ "threads": sets }))
            .collect();
        let results = harness.run(&asked);
        for (k, (sets, result)) in batch.iter().zip(&results).enumerate() {
            let ours = rust_threads(sets);
            assert_eq!(
                result.get("threads"),
                Some(&ours),
                "plandoc-threads.js disagrees with plan-doc (seed {seed}, review {}; replay with \
                 PLANSHARE_JS_PORTS_SEED={seed}) on the sets\n{}",
                start * BATCH + k,
                serde_json::to_string_pretty(sets).unwrap()
            );
            for thread in ours.as_array().unwrap() {
                match (thread["state"].as_str(), thread["stateBy"].is_string()) {
                    (Some("resolved"), _) => resolved += 1,
                    (Some("open"), true) => reopened += 1,
                    _ => {}
                }
                addressed += usize::from(thread["addressed"].is_u64());
            }
            // A reviewer's resolve of a thread it did not start, which the
            // rules ignore.
            forged += sets
                .iter()
                .filter(|s| s["role"] == "reviewer")
                .map(|s| s["set"]["states"].as_array().map_or(0, Vec::len))
                .sum::<usize>();
        }
    }
    if cases >= 2000 {
        for (what, n) in [
            ("resolved threads", resolved),
            ("reopened threads", reopened),
            ("reviewers' state changes", forged),
            ("addressed threads", addressed),
        ] {
            assert!(
                n >= 20,
                "only {n} {what} in the generated reviews (seed {seed})"
            );
        }
    }
}

/// The progress-push check agrees on generated checklist plans, each with
/// its marks flipped, and with one more change besides.
#[test]
fn the_progress_check_agrees_in_the_cli_and_the_portal() {
    let seed = seed();
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
    let strategy = (checklist_spec(), any::<u64>(), prop::bool::weighted(0.5));
    let mut pairs = Vec::new();
    for _ in 0..1000 {
        let (spec, flips, edit) = strategy.new_tree(&mut runner).unwrap().current();
        let old = spec.markdown();
        let mut bits = flips;
        let mut new: String = old
            .split('\n')
            .map(|line| {
                bits = bits.rotate_left(1);
                if bits & 1 == 1 {
                    line.replacen("[ ]", "[x]", 1)
                } else {
                    line.replacen("[x]", "[ ]", 1)
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        if edit {
            new.push_str("\n- [ ] one more\n");
        }
        pairs.push((old, new));
    }
    let mut harness = Harness::start();
    let (mut progress, mut not) = (0, 0);
    for batch in pairs.chunks(BATCH) {
        let asked: Vec<Value> = batch
            .iter()
            .map(|(a, b)| json!({ "progress": [a, b] }))
            .collect();
        for ((old, new), result) in batch.iter().zip(harness.run(&asked)) {
            let ours = plan_doc::only_checklist_marks_differ(old, new);
            assert_eq!(
                result.get("progress"),
                Some(&json!(ours)),
                "the progress check disagrees (seed {seed}) on\n{old:?}\n{new:?}"
            );
            if ours { progress += 1 } else { not += 1 }
        }
    }
    assert!(
        progress >= 50 && not >= 50,
        "{progress} progress pushes, {not} others (seed {seed})"
    );
}
