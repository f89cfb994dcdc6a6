//! Link reference definitions (`[id]: url`) and reference links (`[text][id]`,
//! `[text][]`, `[text]`, and the `![…]` image forms), resolved into inline
//! links before the block split, as upstream's `resolveReferenceLinks` does.
//!
//! A definition line is blanked only when one of its labels was used outside
//! code and HTML, so line numbers never move. Definitions and references
//! inside fenced code, raw HTML blocks and inline code spans are untouched.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::html::{HtmlBlockEnds, html_block_extent, html_block_open};
use crate::text::{collapse_spaces, is_js_space, js_trim, utf16_len};

/// CommonMark's bound on a link label, in UTF-16 code units.
const MAX_REF_LABEL: usize = 999;
/// How far an inline code span may run looking for its closing backticks.
const MAX_CODE_SPAN: usize = 5000;
/// Cap on the definitions collected from one document.
const MAX_TRACKED_DEFINITIONS: usize = 20_000;

/// Resolves reference links in `markdown` (see the module docs). Returns the
/// input unchanged when it defines no references.
pub(crate) fn resolve_reference_links(markdown: &str) -> Cow<'_, str> {
    if !markdown.contains('[') {
        return Cow::Borrowed(markdown);
    }
    let lines: Vec<&str> = markdown.split('\n').collect();
    let protected = protected_lines(&lines);
    let mut defs: HashMap<String, String> = HashMap::new();
    let mut def_label: Vec<Option<String>> = vec![None; lines.len()];
    // A definition cannot interrupt a paragraph.
    let mut can_start_definition = true;
    for (i, line) in lines.iter().enumerate() {
        if protected[i] {
            can_start_definition = true;
            continue;
        }
        let blank = js_trim(line).is_empty();
        let def = if can_start_definition && !blank {
            match_definition(line)
        } else {
            None
        };
        match def {
            Some((raw_label, dest)) => {
                // Footnote definitions (`[^x]: …`) are never link definitions.
                if !raw_label.starts_with('^') && defs.len() < MAX_TRACKED_DEFINITIONS {
                    let label = normalize_label(raw_label);
                    if !label.is_empty() && !dest.is_empty() && !defs.contains_key(&label) {
                        defs.insert(label.clone(), dest.to_owned());
                    }
                    def_label[i] = Some(label);
                }
            }
            None => can_start_definition = blank,
        }
    }
    if defs.is_empty() {
        return Cow::Borrowed(markdown);
    }
    let mut used: HashSet<String> = HashSet::new();
    let resolved: Vec<Cow<'_, str>> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            if protected[i] || def_label[i].is_some() {
                Cow::Borrowed(*line)
            } else {
                resolve_refs_in_line(line, &defs, &mut used)
            }
        })
        .collect();
    let out: Vec<Cow<'_, str>> = resolved
        .into_iter()
        .zip(def_label)
        .map(|(line, label)| match label {
            // Blank a consumed definition in place, keeping a CRLF ending.
            Some(label) if used.contains(&label) => {
                Cow::Borrowed(if line.ends_with('\r') { "\r" } else { "" })
            }
            _ => line,
        })
        .collect();
    Cow::Owned(out.join("\n"))
}

/// Lines the block parser renders as fenced code or raw HTML, found with the
/// parser's own conditions (backtick fences only, at any indentation).
fn protected_lines(lines: &[&str]) -> Vec<bool> {
    let mut protected = vec![false; lines.len()];
    let mut fence_len = 0usize;
    let mut ends = HtmlBlockEnds::default();
    let mut i = 0;
    while i < lines.len() {
        if fence_len > 0 {
            protected[i] = true;
            if closes_fence(lines[i], fence_len) {
                fence_len = 0;
            }
            i += 1;
            continue;
        }
        let trimmed = js_trim(lines[i]);
        if trimmed.starts_with("```") {
            fence_len = trimmed.bytes().take_while(|&b| b == b'`').count();
            protected[i] = true;
            i += 1;
            continue;
        }
        if let Some(open) = html_block_open(trimmed) {
            let end = html_block_extent(lines, i, &open, &mut ends);
            for p in &mut protected[i..=end] {
                *p = true;
            }
            i = end;
        }
        i += 1;
    }
    protected
}

/// `^\s*`{n,}` — a line that closes a fence opened with `n` backticks.
pub(crate) fn closes_fence(line: &str, n: usize) -> bool {
    line.trim_start_matches(is_js_space)
        .bytes()
        .take_while(|&b| b == b'`')
        .count()
        >= n
}

/// CommonMark label matching: trimmed, whitespace collapsed, lower-cased.
fn normalize_label(label: &str) -> String {
    collapse_spaces(label).to_lowercase()
}

/// `^ {0,3}\[([^\]]{1,999})\]:[ \t]*(?:<([^>]*)>|(\S+))[ \t]*(?:"[^"]*"|'[^']*'|\([^)]*\))?[ \t]*\r?$`,
/// returning the raw label and the destination.
fn match_definition(line: &str) -> Option<(&str, &str)> {
    let indent = line.bytes().take_while(|&b| b == b' ').count();
    if indent > 3 {
        return None;
    }
    let rest = line[indent..].strip_prefix('[')?;
    let close = rest.find(']')?;
    let label = &rest[..close];
    if !(1..=MAX_REF_LABEL).contains(&utf16_len(label)) {
        return None;
    }
    let after = rest[close + 1..]
        .strip_prefix(':')?
        .trim_start_matches([' ', '\t']);
    if let Some(inner) = after.strip_prefix('<')
        && let Some(gt) = inner.find('>')
        && definition_tail_ok(&inner[gt + 1..])
    {
        return Some((label, &inner[..gt]));
    }
    // `\S+` is greedy: try the longest run of non-space first, then shorter.
    let run_end = after.find(is_js_space).unwrap_or(after.len());
    let mut ends: Vec<usize> = after[..run_end]
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .collect();
    ends.reverse();
    ends.into_iter()
        .find(|&end| definition_tail_ok(&after[end..]))
        .map(|end| (label, &after[..end]))
}

/// `[ \t]*(?:"[^"]*"|'[^']*'|\([^)]*\))?[ \t]*\r?$`
fn definition_tail_ok(tail: &str) -> bool {
    fn end_ok(s: &str) -> bool {
        matches!(s.trim_start_matches([' ', '\t']), "" | "\r")
    }
    let rest = tail.trim_start_matches([' ', '\t']);
    if end_ok(rest) {
        return true;
    }
    let close = match rest.chars().next() {
        Some('"') => '"',
        Some('\'') => '\'',
        Some('(') => ')',
        _ => return false,
    };
    let body = &rest[1..];
    body.find(close).is_some_and(|k| end_ok(&body[k + 1..]))
}

const BACKTICK: u16 = b'`' as u16;
const OPEN_BRACKET: u16 = b'[' as u16;
const CLOSE_BRACKET: u16 = b']' as u16;

/// One left-to-right pass over a line with upstream's
/// `` (`+)[^\n]{0,5000}?\1|(!?)\[([^\]]{1,999})\](\[([^\]]{0,999})\])? ``,
/// in UTF-16 code units like the JavaScript regex: a code span is kept
/// verbatim; a reference that names a definition becomes `[text](dest)`.
fn resolve_refs_in_line<'a>(
    line: &'a str,
    defs: &HashMap<String, String>,
    used: &mut HashSet<String>,
) -> Cow<'a, str> {
    if !line.contains('[') {
        return Cow::Borrowed(line);
    }
    let u: Vec<u16> = line.encode_utf16().collect();
    let mut out: Vec<u16> = Vec::with_capacity(u.len() + 16);
    let mut copied = 0;
    let mut changed = false;
    let mut p = 0;
    while p < u.len() {
        if let Some(end) = match_code_span(&u, p) {
            p = end;
            continue;
        }
        let Some(r) = match_reference(&u, p) else {
            p += 1;
            continue;
        };
        if let Some(replacement) = replace_reference(&u, p, &r, defs, used) {
            out.extend_from_slice(&u[copied..p]);
            out.extend(replacement.encode_utf16());
            copied = r.end;
            changed = true;
        }
        p = r.end;
    }
    if !changed {
        return Cow::Borrowed(line);
    }
    out.extend_from_slice(&u[copied..]);
    // Every cut is at an ASCII bracket, so no surrogate pair was split.
    Cow::Owned(String::from_utf16_lossy(&out))
}

/// `` (`+)[^\n]{0,5000}?\1 `` at `p`: the end of the span, trying the longest
/// opening run first and the shortest body for each.
fn match_code_span(u: &[u16], p: usize) -> Option<usize> {
    let run = u[p..].iter().take_while(|&&c| c == BACKTICK).count();
    for n in (1..=run).rev() {
        for k in 0..=MAX_CODE_SPAN {
            let close = p + n + k;
            if close + n > u.len() {
                break;
            }
            if u[close..close + n].iter().all(|&c| c == BACKTICK) {
                return Some(close + n);
            }
        }
    }
    None
}

/// A reference-shaped match.
struct RefMatch {
    bang: bool,
    text: (usize, usize),
    /// The second bracket's label, when present.
    label: Option<(usize, usize)>,
    end: usize,
}

/// `(!?)\[([^\]]{1,999})\](\[([^\]]{0,999})\])?` at `p`.
fn match_reference(u: &[u16], p: usize) -> Option<RefMatch> {
    let bang = u[p] == u16::from(b'!');
    let open = if bang { p + 1 } else { p };
    if u.get(open) != Some(&OPEN_BRACKET) {
        return None;
    }
    let bracket_body = |from: usize, min: usize| -> Option<usize> {
        let close = from + u.get(from..)?.iter().position(|&c| c == CLOSE_BRACKET)?;
        (min..=MAX_REF_LABEL)
            .contains(&(close - from))
            .then_some(close)
    };
    let text_close = bracket_body(open + 1, 1)?;
    let mut end = text_close + 1;
    let mut label = None;
    if u.get(end) == Some(&OPEN_BRACKET)
        && let Some(label_close) = bracket_body(end + 1, 0)
    {
        label = Some((end + 1, label_close));
        end = label_close + 1;
    }
    Some(RefMatch {
        bang,
        text: (open + 1, text_close),
        label,
        end,
    })
}

/// The replacement for a reference match, or `None` to keep it verbatim.
fn replace_reference(
    u: &[u16],
    p: usize,
    r: &RefMatch,
    defs: &HashMap<String, String>,
    used: &mut HashSet<String>,
) -> Option<String> {
    let text = String::from_utf16_lossy(&u[r.text.0..r.text.1]);
    let ref_label = match r.label {
        None => {
            // `[text](…)` is an inline link, not a shortcut reference.
            if u.get(r.end) == Some(&u16::from(b'(')) {
                return None;
            }
            // A task-list checkbox belongs to the list parser.
            if matches!(text.as_str(), " " | "x" | "X")
                && is_list_marker_prefix(&String::from_utf16_lossy(&u[..p]))
            {
                return None;
            }
            text.clone()
        }
        Some((a, b)) if a == b => text.clone(),
        Some((a, b)) => String::from_utf16_lossy(&u[a..b]),
    };
    let normalized = normalize_label(&ref_label);
    let dest = defs.get(&normalized)?;
    let bang = if r.bang { "!" } else { "" };
    let replacement = format!("{bang}[{text}]({dest})");
    used.insert(normalized);
    Some(replacement)
}

/// `^\s*(?:[-*+]|\d+[.)])\s+$`
fn is_list_marker_prefix(prefix: &str) -> bool {
    let rest = prefix.trim_start_matches(is_js_space);
    let rest = if let Some(r) = rest.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        match rest[digits..].strip_prefix(['.', ')']) {
            Some(r) => r,
            None => return false,
        }
    };
    !rest.is_empty() && rest.chars().all(is_js_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(md: &str) -> String {
        resolve_reference_links(md).into_owned()
    }

    #[test]
    fn full_collapsed_shortcut_and_image_references_resolve() {
        let md = "See [the docs][d], [D][], [d] and ![logo][d].\n\n[d]: https://x.test/a \"Title\"";
        assert_eq!(
            resolve(md),
            "See [the docs](https://x.test/a), [D](https://x.test/a), [d](https://x.test/a) and ![logo](https://x.test/a).\n\n"
        );
    }

    #[test]
    fn unused_and_unknown_references_stay_literal() {
        let md = "[TODO] later\n\n[other]: https://x.test";
        assert_eq!(resolve(md), md);
        assert_eq!(resolve("no brackets"), "no brackets");
    }

    #[test]
    fn a_definition_cannot_interrupt_a_paragraph() {
        let md = "See [a].\n[a]: https://x.test";
        assert_eq!(resolve(md), md);
    }

    #[test]
    fn code_spans_fences_and_html_are_protected() {
        let md = "`[a]` and [a]\n```\n[a]\n```\n<div>\n[a]\n</div>\n\n[a]: <https://x.test/b c>";
        assert_eq!(
            resolve(md),
            "`[a]` and [a](https://x.test/b c)\n```\n[a]\n```\n<div>\n[a]\n</div>\n\n"
        );
    }

    #[test]
    fn inline_links_checkboxes_and_footnotes_are_left_alone() {
        let md = "- [x] done [x](y)\n\n[x]: https://x.test\n[^1]: note";
        assert_eq!(
            resolve(md),
            "- [x] done [x](y)\n\n[x]: https://x.test\n[^1]: note"
        );
    }

    #[test]
    fn crlf_definitions_blank_to_a_bare_carriage_return() {
        let md = "[a]\r\n\r\n[a]: https://x.test\r\n";
        assert_eq!(resolve(md), "[a](https://x.test)\r\n\r\n\r\n");
    }

    #[test]
    fn definition_shapes() {
        assert_eq!(match_definition("[a]: u"), Some(("a", "u")));
        assert_eq!(match_definition("   [a]:u 'x'  "), Some(("a", "u")));
        assert_eq!(match_definition("[a]: u (t)\r"), Some(("a", "u")));
        assert_eq!(match_definition("[a]: u\"t\""), Some(("a", "u\"t\"")));
        assert_eq!(match_definition("    [a]: u"), None);
        assert_eq!(match_definition("[Reminder]: call the bank"), None);
        assert_eq!(match_definition("[]: u"), None);
        assert_eq!(match_definition("[a]:"), None);
    }

    #[test]
    fn code_span_backtracks_to_a_shorter_run() {
        let u: Vec<u16> = "``a`".encode_utf16().collect();
        assert_eq!(match_code_span(&u, 0), Some(2));
        let u: Vec<u16> = "`a``".encode_utf16().collect();
        assert_eq!(match_code_span(&u, 0), Some(3));
    }
}
