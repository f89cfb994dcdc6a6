//! Raw HTML block detection as upstream's parser does it: which tags open a
//! block, how far a block extends, and the per-tag depth index that finds a
//! block's balancing close tag in linear time.

use std::collections::HashMap;

use crate::text::is_js_space;

/// Tags whose line opens a raw HTML block (CommonMark §4.6 type 6, plus media).
const HTML_BLOCK_TAGS: &[&str] = &[
    "details",
    "summary",
    "div",
    "section",
    "article",
    "aside",
    "header",
    "footer",
    "blockquote",
    "pre",
    "table",
    "thead",
    "tbody",
    "tr",
    "td",
    "th",
    "ul",
    "ol",
    "li",
    "p",
    "img",
    "video",
    "picture",
];

/// Void elements: the block is the opening tag alone (possibly wrapped over
/// several lines until its `>`).
const VOID_HTML_TAGS: &[&str] = &[
    "img", "br", "hr", "source", "input", "wbr", "area", "col", "embed",
];

/// How a line opens an HTML block.
pub(crate) struct HtmlOpen {
    /// Lower-cased tag name.
    pub(crate) tag: String,
    /// The line starts with `</tag`.
    pub(crate) is_close: bool,
}

/// `^<\/?([a-zA-Z][a-zA-Z0-9]*)(?:\s|>|\/|$)` on the trimmed line, with the tag
/// in [`HTML_BLOCK_TAGS`].
pub(crate) fn html_block_open(trimmed: &str) -> Option<HtmlOpen> {
    let rest = trimmed.strip_prefix('<')?;
    let (is_close, rest) = match rest.strip_prefix('/') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let name_len = rest
        .bytes()
        .enumerate()
        .take_while(|&(i, b)| {
            if i == 0 {
                b.is_ascii_alphabetic()
            } else {
                b.is_ascii_alphanumeric()
            }
        })
        .count();
    if name_len == 0 {
        return None;
    }
    let after = &rest[name_len..];
    if !after
        .chars()
        .next()
        .is_none_or(|c| is_js_space(c) || c == '>' || c == '/')
    {
        return None;
    }
    let tag = rest[..name_len].to_ascii_lowercase();
    HTML_BLOCK_TAGS
        .contains(&tag.as_str())
        .then_some(HtmlOpen { tag, is_close })
}

/// Whether `tag` is a void element.
pub(crate) fn is_void(tag: &str) -> bool {
    VOID_HTML_TAGS.contains(&tag)
}

/// Matches of `/<tag(?:\s|>|\/|$)/gi` minus matches of `/<\/tag\s*>/gi` in a line.
pub(crate) fn tag_depth(line: &str, tag: &str) -> i64 {
    let bytes = line.as_bytes();
    let t = tag.as_bytes();
    let mut depth = 0i64;
    for (p, _) in line.match_indices('<') {
        let name_at = |at: usize| {
            bytes
                .get(at..at + t.len())
                .is_some_and(|name| name.eq_ignore_ascii_case(t))
        };
        if name_at(p + 1) {
            // The matched bytes are ASCII, so p + 1 + len is a char boundary.
            let after = &line[p + 1 + t.len()..];
            if after
                .chars()
                .next()
                .is_none_or(|c| is_js_space(c) || c == '>' || c == '/')
            {
                depth += 1;
            }
        } else if bytes.get(p + 1) == Some(&b'/') && name_at(p + 2) {
            let after = line[p + 2 + t.len()..].trim_start_matches(is_js_space);
            if after.starts_with('>') {
                depth -= 1;
            }
        }
    }
    depth
}

/// Per-tag prefix sums of [`tag_depth`] over the document's lines, and for
/// each prefix the next later prefix at or below it.
struct TagCloseIndex {
    /// `augmented[k]` = sum of depths of lines `0..k`.
    augmented: Vec<i64>,
    /// Smallest `m' > m` with `augmented[m'] <= augmented[m]`.
    next_at_or_below: Vec<Option<usize>>,
}

impl TagCloseIndex {
    fn build(lines: &[&str], tag: &str) -> Self {
        let mut augmented = Vec::with_capacity(lines.len() + 1);
        augmented.push(0);
        let mut running = 0;
        for line in lines {
            running += tag_depth(line, tag);
            augmented.push(running);
        }
        let mut next_at_or_below = vec![None; augmented.len()];
        let mut stack: Vec<usize> = Vec::new();
        for m in (0..augmented.len()).rev() {
            while stack
                .last()
                .is_some_and(|&top| augmented[top] > augmented[m])
            {
                stack.pop();
            }
            next_at_or_below[m] = stack.last().copied();
            stack.push(m);
        }
        Self {
            augmented,
            next_at_or_below,
        }
    }
}

/// Finds where balanced HTML blocks end; one index per tag name, built on
/// first use and shared by every opener of that tag in one document.
#[derive(Default)]
pub(crate) struct HtmlBlockEnds {
    by_tag: HashMap<String, TagCloseIndex>,
}

impl HtmlBlockEnds {
    /// The last line of a block that opens at `start` with `depth` unclosed
    /// `tag`s: the first later line after which the running depth returns to
    /// exactly the opener's baseline. `start` itself when the depth is not
    /// positive or never returns exactly (unclosed, or over-closed).
    pub(crate) fn block_end(
        &mut self,
        lines: &[&str],
        start: usize,
        tag: &str,
        depth: i64,
    ) -> usize {
        if depth <= 0 {
            return start;
        }
        let index = self
            .by_tag
            .entry(tag.to_owned())
            .or_insert_with(|| TagCloseIndex::build(lines, tag));
        match index.next_at_or_below.get(start).copied().flatten() {
            Some(m) if index.augmented[m] == index.augmented[start] => m - 1,
            _ => start,
        }
    }
}

/// Where an HTML block opened on line `i` ends (inclusive), per upstream's
/// three rules: a leading close tag runs to the next blank line; a void tag
/// runs until a line containing `>` (stopping at a blank line); any other tag
/// runs until it is balanced, or is the opening line alone.
pub(crate) fn html_block_extent(
    lines: &[&str],
    i: usize,
    open: &HtmlOpen,
    ends: &mut HtmlBlockEnds,
) -> usize {
    let blank = |k: usize| crate::text::js_trim(lines[k]).is_empty();
    let mut end = i;
    if open.is_close {
        while end + 1 < lines.len() && !blank(end + 1) {
            end += 1;
        }
    } else if is_void(&open.tag) {
        while !lines[end].contains('>') && end + 1 < lines.len() && !blank(end + 1) {
            end += 1;
        }
    } else {
        let depth = tag_depth(lines[i], &open.tag);
        end = ends.block_end(lines, i, &open.tag, depth);
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_lines_are_recognised_by_tag_and_boundary() {
        assert_eq!(
            html_block_open("<details>").map(|o| o.tag),
            Some("details".into())
        );
        assert!(html_block_open("</DIV>").is_some_and(|o| o.is_close && o.tag == "div"));
        assert!(html_block_open("<img src=x>").is_some());
        assert!(html_block_open("<p").is_some());
        assert!(html_block_open("<kbd>x</kbd>").is_none());
        assert!(html_block_open("<divx>").is_none());
        assert!(html_block_open("< div>").is_none());
    }

    #[test]
    fn depth_counts_opens_and_closes_case_insensitively() {
        assert_eq!(tag_depth("<div><DIV class=a></div >", "div"), 1);
        assert_eq!(tag_depth("<divider></div>", "div"), -1);
        assert_eq!(tag_depth("<div", "div"), 1);
    }

    #[test]
    fn balanced_end_uses_the_exact_baseline() {
        let lines = ["<div>", "<div>", "</div>", "x", "</div>", "after"];
        let mut ends = HtmlBlockEnds::default();
        assert_eq!(ends.block_end(&lines, 0, "div", 1), 4);
        assert_eq!(ends.block_end(&lines, 1, "div", 1), 2);
        // Over-closed: `</div></div>` drops below the baseline, so no block.
        let lines = ["<div>", "</div></div>"];
        assert_eq!(HtmlBlockEnds::default().block_end(&lines, 0, "div", 1), 0);
        let lines = ["<div>", "never closed"];
        assert_eq!(HtmlBlockEnds::default().block_end(&lines, 0, "div", 1), 0);
    }
}
