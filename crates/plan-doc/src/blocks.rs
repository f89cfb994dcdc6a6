//! The block model: plan markdown split into the flat list of blocks that
//! upstream's `parseMarkdownToBlocks` produces, with the same ids, types,
//! contents, levels and 1-based source lines.
//!
//! The parser is line-based and deliberately not CommonMark: it reproduces
//! upstream's boundaries exactly, because annotations name blocks by id
//! (`block-N`) and the feedback export labels them by line. Constructs
//! upstream does not recognise stay plain text here too: `+` list markers,
//! `~~~` fences, setext headings, indented code and `___` rules are
//! paragraphs.

use serde::{Deserialize, Serialize};

use crate::html::{HtmlBlockEnds, html_block_extent, html_block_open};
use crate::refs::{closes_fence, resolve_reference_links};
use crate::text::{is_js_space, js_trim, js_trim_start, leading_space_chars};

/// What a block is; the JSON names are upstream's `Block['type']`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockKind {
    /// Consecutive non-blank lines of text (contents keep the raw lines).
    Paragraph,
    /// An ATX heading: a line starting with `#` (`level` = number of `#`).
    Heading,
    /// `>` lines; consecutive ones merge unless a line starts a block marker.
    Blockquote,
    /// One item of a `-`, `*` or `1.` list (`level` = indent / 2).
    ListItem,
    /// A backtick-fenced code block (`language` from the info string).
    Code,
    /// A `---` or `***` line.
    Hr,
    /// Consecutive lines starting with `|`.
    Table,
    /// A raw HTML block opened by a block-level tag.
    Html,
    /// A `:::kind` … `:::` container.
    Directive,
    /// Display math: `$$ … $$` or `\[ … \]`.
    Math,
}

impl BlockKind {
    /// Upstream's name for the kind (`"list-item"`, `"hr"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Paragraph => "paragraph",
            Self::Heading => "heading",
            Self::Blockquote => "blockquote",
            Self::ListItem => "list-item",
            Self::Code => "code",
            Self::Hr => "hr",
            Self::Table => "table",
            Self::Html => "html",
            Self::Directive => "directive",
            Self::Math => "math",
        }
    }
}

/// The kind of a GitHub alert blockquote (`> [!NOTE]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertKind {
    /// `[!NOTE]`
    Note,
    /// `[!TIP]`
    Tip,
    /// `[!WARNING]`
    Warning,
    /// `[!CAUTION]`
    Caution,
    /// `[!IMPORTANT]`
    Important,
}

/// One block, in upstream's object shape (camelCase JSON, absent fields
/// omitted, keys in the order upstream's parser writes them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    /// `block-N`, N counting from 0 in document order.
    pub id: String,
    /// What the block is (`type` in JSON).
    #[serde(rename = "type")]
    pub kind: BlockKind,
    /// The block's text: markers stripped for headings, list items and
    /// quotes; the raw lines for paragraphs, tables and HTML; the lines
    /// between the fences for code and directives.
    pub content: String,
    /// Heading level (number of `#`), list indent level (leading spaces / 2,
    /// a tab counting 2 spaces), `Some(0)` for paragraphs, `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// Task list items: `Some(true)` for `[x]`/`[X]`, `Some(false)` for `[ ]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// List items with a numeric marker (`1.`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ordered: bool,
    /// The number of an ordered list item's marker (`5` for `5.`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordered_start: Option<u64>,
    /// Code blocks: the fence's info string, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Blockquotes whose first line is a GitHub alert marker; the marker line
    /// itself is not part of `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_kind: Option<AlertKind>,
    /// Directives: the lower-cased kind (`:::note` → `note`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directive_kind: Option<String>,
    /// 1-based position in the block list.
    pub order: usize,
    /// 1-based line of the block's first source line (counting frontmatter).
    pub start_line: usize,
    /// Source lines consumed, when that differs from the content's lines
    /// (display math).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_line_count: Option<usize>,
}

impl Block {
    fn new(kind: BlockKind, content: String, start_line: usize) -> Self {
        Self {
            id: String::new(),
            kind,
            content,
            level: None,
            checked: None,
            ordered: false,
            ordered_start: None,
            language: None,
            alert_kind: None,
            directive_kind: None,
            order: 0,
            start_line,
            source_line_count: None,
        }
    }

    /// The block's last source line, as upstream's feedback export computes
    /// it: `start + sourceLineCount − 1` when that is set; the start line for
    /// empty content; `start + n + 1` for code and directives (their fences);
    /// `start + n` for alerts (their marker line); otherwise `start + n − 1`,
    /// where n is the number of content lines.
    pub fn end_line(&self) -> usize {
        if let Some(count) = self.source_line_count.filter(|&c| c > 0) {
            return self.start_line + count - 1;
        }
        if self.content.is_empty() {
            return self.start_line;
        }
        let n = self.content.split('\n').count();
        match self.kind {
            BlockKind::Code | BlockKind::Directive => self.start_line + n + 1,
            _ if self.alert_kind.is_some() => self.start_line + n,
            _ => self.start_line + n - 1,
        }
    }

    /// Source lines before the first content line: the opening fence of code
    /// and directives, an alert's marker line, the bare `$$` of display math.
    pub(crate) fn content_line_offset(&self) -> usize {
        match self.kind {
            BlockKind::Code | BlockKind::Directive => 1,
            BlockKind::Blockquote if self.alert_kind.is_some() => 1,
            BlockKind::Math => {
                let n = self.content.split('\n').count();
                usize::from(self.source_line_count.unwrap_or(0) >= n + 2)
            }
            _ => 0,
        }
    }

    /// The source line of the byte `offset` in `content` (clamped to the
    /// block's lines). Exact for every kind but display math and list items
    /// whose continuation follows more than one blank line.
    pub fn line_at(&self, offset: usize) -> usize {
        let offset = offset.min(self.content.len());
        let newlines = self.content.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        (self.start_line + self.content_line_offset() + newlines)
            .min(self.end_line().max(self.start_line))
    }
}

/// Options for [`parse_blocks_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// Strip a leading `--- … ---` pair as YAML frontmatter (upstream's
    /// default). Turn off for plain-text sources where the delimiters are
    /// content; line numbers count the stripped lines either way.
    pub frontmatter: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self { frontmatter: true }
    }
}

/// Splits plan markdown into upstream's blocks (frontmatter stripped).
pub fn parse_blocks(markdown: &str) -> Vec<Block> {
    parse_blocks_with(markdown, ParseOptions::default())
}

/// [`parse_blocks`] with options.
pub fn parse_blocks_with(markdown: &str, options: ParseOptions) -> Vec<Block> {
    let (body, first_line) = if options.frontmatter {
        strip_frontmatter(markdown)
    } else {
        (markdown, 1)
    };
    // Definition lines are blanked in place, so line numbers stay put.
    let resolved = resolve_reference_links(body);
    Parser::new(&resolved, first_line).run()
}

/// Upstream's `extractFrontmatter`, reduced to what the block split needs:
/// the markdown after the frontmatter and the 1-based line it starts on.
fn strip_frontmatter(markdown: &str) -> (&str, usize) {
    let trimmed = js_trim_start(markdown);
    if !trimmed.starts_with("---") {
        return (markdown, 1);
    }
    let Some(close) = trimmed[3..].find("\n---").map(|i| i + 3) else {
        return (markdown, 1);
    };
    let raw_after = &trimmed[close + 4..];
    let after = js_trim_start(raw_after);
    let consumed = (markdown.len() - trimmed.len()) + close + 4 + (raw_after.len() - after.len());
    let line = markdown.as_bytes()[..consumed]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1;
    (after, line)
}

/// `^(\*|-|(\d+)\.)\s`: the byte length of marker plus its one whitespace
/// character, and the number of an ordered marker.
fn list_marker(trimmed: &str) -> Option<(usize, Option<u64>)> {
    let (marker_len, number) = if trimmed.starts_with(['*', '-']) {
        (1, None)
    } else {
        let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || trimmed.as_bytes().get(digits) != Some(&b'.') {
            return None;
        }
        let n = trimmed[..digits].parse::<u64>().unwrap_or(u64::MAX);
        (digits + 1, Some(n))
    };
    let space = trimmed[marker_len..]
        .chars()
        .next()
        .filter(|&c| is_js_space(c))?;
    Some((marker_len + space.len_utf8(), number))
}

/// `^(?:(?:\*|-|\d+\.)\s|#|```|>)`: quote content that starts a block of its
/// own and so is never merged with its neighbours.
fn starts_block_marker(s: &str) -> bool {
    list_marker(s).is_some() || s.starts_with('#') || s.starts_with("```") || s.starts_with('>')
}

/// `^\[!(NOTE|TIP|WARNING|CAUTION|IMPORTANT)\]\s*$` (case-insensitive).
fn alert_marker(s: &str) -> Option<AlertKind> {
    let rest = s.strip_prefix("[!")?;
    let close = rest.find(']')?;
    if !rest[close + 1..].chars().all(is_js_space) {
        return None;
    }
    match rest[..close].to_ascii_lowercase().as_str() {
        "note" => Some(AlertKind::Note),
        "tip" => Some(AlertKind::Tip),
        "warning" => Some(AlertKind::Warning),
        "caution" => Some(AlertKind::Caution),
        "important" => Some(AlertKind::Important),
        _ => None,
    }
}

/// `^:::\s*([a-zA-Z][a-zA-Z0-9-]*)\s*$`: the directive kind, lower-cased.
fn directive_open(trimmed: &str) -> Option<String> {
    let rest = trimmed.strip_prefix(":::")?.trim_start_matches(is_js_space);
    let len = rest
        .bytes()
        .enumerate()
        .take_while(|&(i, b)| {
            b.is_ascii_alphabetic() || (i > 0 && (b.is_ascii_digit() || b == b'-'))
        })
        .count();
    if len == 0 || !rest[len..].chars().all(is_js_space) {
        return None;
    }
    Some(rest[..len].to_ascii_lowercase())
}

/// A closed display-math block found at a line.
struct MathBlock<'a> {
    lines: Vec<&'a str>,
    close_line: usize,
    /// Text after the closing delimiter, parsed again as its own line.
    remainder: &'a str,
}

/// The line-based parser's state.
struct Parser<'a> {
    lines: Vec<&'a str>,
    first_line: usize,
    blocks: Vec<Block>,
    paragraph: Vec<&'a str>,
    paragraph_start: usize,
    html_ends: HtmlBlockEnds,
}

impl<'a> Parser<'a> {
    fn new(markdown: &'a str, first_line: usize) -> Self {
        Self {
            lines: markdown.split('\n').collect(),
            first_line,
            blocks: Vec::new(),
            paragraph: Vec::new(),
            paragraph_start: first_line,
            html_ends: HtmlBlockEnds::default(),
        }
    }

    fn push(&mut self, mut block: Block) {
        let n = self.blocks.len();
        block.id = format!("block-{n}");
        block.order = n + 1;
        self.blocks.push(block);
    }

    fn flush(&mut self) {
        if self.paragraph.is_empty() {
            return;
        }
        let mut block = Block::new(
            BlockKind::Paragraph,
            self.paragraph.join("\n"),
            self.paragraph_start,
        );
        block.level = Some(0);
        self.paragraph.clear();
        self.push(block);
    }

    fn run(mut self) -> Vec<Block> {
        let mut last_line_was_blank = false;
        let mut i = 0;
        while i < self.lines.len() {
            let prev_line_was_blank = std::mem::replace(&mut last_line_was_blank, false);
            let line = self.lines[i];
            let trimmed = js_trim(line);
            let line_no = i + self.first_line;

            if trimmed.starts_with('#') {
                self.flush();
                let level = trimmed.bytes().take_while(|&b| b == b'#').count();
                let text = js_trim_start(&trimmed[level..]);
                let mut block = Block::new(BlockKind::Heading, text.to_owned(), line_no);
                block.level = Some(u32::try_from(level).unwrap_or(u32::MAX));
                self.push(block);
            } else if trimmed == "---" || trimmed == "***" {
                self.flush();
                self.push(Block::new(BlockKind::Hr, String::new(), line_no));
            } else if let Some((marker_len, number)) = list_marker(trimmed) {
                self.flush();
                self.list_item(line, trimmed, marker_len, number, line_no);
            } else if trimmed.starts_with('>') {
                self.flush();
                self.blockquote(trimmed, prev_line_was_blank, line_no);
            } else if trimmed.starts_with("```") {
                self.flush();
                i = self.code(i, trimmed, line_no);
            } else if let Some(math) = self.math(i, trimmed) {
                self.flush();
                let mut block = Block::new(BlockKind::Math, math.lines.join("\n"), line_no);
                block.source_line_count = Some(math.close_line - i + 1);
                self.push(block);
                i = math.close_line;
                if !math.remainder.is_empty() {
                    // Reprocess the text after the closing delimiter as a line.
                    self.lines[i] = math.remainder;
                    continue;
                }
            } else if trimmed.starts_with('|') {
                self.flush();
                let start = i;
                while i + 1 < self.lines.len() && js_trim(self.lines[i + 1]).starts_with('|') {
                    i += 1;
                }
                let content = self.lines[start..=i].join("\n");
                self.push(Block::new(BlockKind::Table, content, line_no));
            } else if let Some(kind) = directive_open(trimmed) {
                self.flush();
                let start = i + 1;
                let mut end = start;
                while i + 1 < self.lines.len() {
                    i += 1;
                    if js_trim(self.lines[i]) == ":::" {
                        break;
                    }
                    end = i + 1;
                }
                let content = self.lines[start..end.max(start)].join("\n");
                let mut block = Block::new(BlockKind::Directive, content, line_no);
                block.directive_kind = Some(kind);
                self.push(block);
            } else if let Some(open) = html_block_open(trimmed) {
                self.flush();
                let end = html_block_extent(&self.lines, i, &open, &mut self.html_ends);
                let content = self.lines[i..=end].join("\n");
                i = end;
                self.push(Block::new(BlockKind::Html, content, line_no));
            } else if trimmed.is_empty() {
                self.flush();
                last_line_was_blank = true;
            } else if self.is_list_continuation(line, prev_line_was_blank) {
                let sep = if prev_line_was_blank { "\n\n" } else { "\n" };
                if let Some(item) = self.blocks.last_mut() {
                    item.content.push_str(sep);
                    item.content.push_str(trimmed);
                }
            } else {
                if self.paragraph.is_empty() {
                    self.paragraph_start = line_no;
                }
                self.paragraph.push(line);
            }
            i += 1;
        }
        self.flush();
        self.blocks
    }

    fn list_item(
        &mut self,
        line: &str,
        trimmed: &str,
        marker_len: usize,
        number: Option<u64>,
        line_no: usize,
    ) {
        let indent: usize = line
            .chars()
            .take_while(|&c| is_js_space(c))
            .map(|c| if c == '\t' { 2 } else { 1 })
            .sum();
        let mut content = &trimmed[marker_len..];
        let mut checked = None;
        let b = content.as_bytes();
        if b.len() >= 3 && b[0] == b'[' && matches!(b[1], b' ' | b'x' | b'X') && b[2] == b']' {
            checked = Some(b[1] != b' ');
            content = js_trim_start(&content[3..]);
        }
        let mut block = Block::new(BlockKind::ListItem, content.to_owned(), line_no);
        block.level = Some(u32::try_from(indent / 2).unwrap_or(u32::MAX));
        block.checked = checked;
        block.ordered = number.is_some();
        block.ordered_start = number;
        self.push(block);
    }

    fn blockquote(&mut self, trimmed: &str, prev_line_was_blank: bool, line_no: usize) {
        let stripped = js_trim_start(&trimmed[1..]);
        if let Some(prev) = self.blocks.last_mut()
            && prev.kind == BlockKind::Blockquote
            && !prev_line_was_blank
        {
            // Alerts own their body; other quotes merge unless either side
            // starts a block marker.
            let merge = prev.alert_kind.is_some()
                || (!starts_block_marker(stripped) && !starts_block_marker(&prev.content));
            if merge {
                if !prev.content.is_empty() {
                    prev.content.push('\n');
                }
                prev.content.push_str(stripped);
                return;
            }
        }
        let alert = alert_marker(stripped);
        let content = if alert.is_some() {
            String::new()
        } else {
            stripped.to_owned()
        };
        let mut block = Block::new(BlockKind::Blockquote, content, line_no);
        block.alert_kind = alert;
        self.push(block);
    }

    /// A fenced code block opening at line `i`; returns the closing fence's
    /// line (or the line count when the fence never closes).
    fn code(&mut self, i: usize, trimmed: &str, line_no: usize) -> usize {
        let fence_len = trimmed.bytes().take_while(|&b| b == b'`').count();
        let language = js_trim(&trimmed[fence_len..]);
        let mut end = i + 1;
        while end < self.lines.len() && !closes_fence(self.lines[end], fence_len) {
            end += 1;
        }
        let content = self.lines[i + 1..end].join("\n");
        let mut block = Block::new(BlockKind::Code, content, line_no);
        block.language = (!language.is_empty()).then(|| language.to_owned());
        self.push(block);
        end
    }

    /// Display math opening at line `i` (`$$` or `\[`), only when its closing
    /// delimiter exists before the next blank line.
    fn math(&self, i: usize, trimmed: &'a str) -> Option<MathBlock<'a>> {
        let (open, close) = if trimmed.starts_with("$$") {
            ("$$", "$$")
        } else if trimmed.starts_with("\\[") {
            ("\\[", "\\]")
        } else {
            return None;
        };
        let after_open = &trimmed[open.len()..];
        if let Some(at) = after_open.find(close) {
            let body = js_trim(&after_open[..at]);
            return Some(MathBlock {
                lines: if body.is_empty() {
                    Vec::new()
                } else {
                    vec![body]
                },
                close_line: i,
                remainder: js_trim(&after_open[at + close.len()..]),
            });
        }
        let first = js_trim(after_open);
        let mut lines = if first.is_empty() {
            Vec::new()
        } else {
            vec![first]
        };
        for (j, &line) in self.lines.iter().enumerate().skip(i + 1) {
            if js_trim(line).is_empty() {
                return None;
            }
            if let Some(at) = line.find(close) {
                let before = &line[..at];
                if !js_trim(before).is_empty() {
                    lines.push(before);
                }
                return Some(MathBlock {
                    lines,
                    close_line: j,
                    remainder: js_trim(&line[at + close.len()..]),
                });
            }
            lines.push(line);
        }
        None
    }

    /// An indented line right after a list item continues it: one or more
    /// leading spaces when tight, two or more after a blank line.
    fn is_list_continuation(&self, line: &str, prev_line_was_blank: bool) -> bool {
        self.paragraph.is_empty()
            && self
                .blocks
                .last()
                .is_some_and(|b| b.kind == BlockKind::ListItem)
            && leading_space_chars(line) >= if prev_line_was_blank { 2 } else { 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (kind, content, start line) of every block.
    fn shape(md: &str) -> Vec<(BlockKind, String, usize)> {
        parse_blocks(md)
            .into_iter()
            .map(|b| (b.kind, b.content, b.start_line))
            .collect()
    }

    use BlockKind::*;

    fn s(kind: BlockKind, content: &str, line: usize) -> (BlockKind, String, usize) {
        (kind, content.to_owned(), line)
    }

    #[test]
    fn ids_and_orders_count_in_document_order() {
        let blocks = parse_blocks("# A\n\ntext\n\n- x\n");
        let ids: Vec<_> = blocks.iter().map(|b| (b.id.as_str(), b.order)).collect();
        assert_eq!(ids, [("block-0", 1), ("block-1", 2), ("block-2", 3)]);
    }

    #[test]
    fn atx_headings_take_level_from_hashes_and_need_no_space() {
        let blocks = parse_blocks("# One\n  ### Three ###\n#tag\n####### seven");
        let got: Vec<_> = blocks
            .iter()
            .map(|b| (b.content.as_str(), b.level, b.start_line))
            .collect();
        assert_eq!(
            got,
            [
                ("One", Some(1), 1),
                ("Three ###", Some(3), 2),
                ("tag", Some(1), 3),
                ("seven", Some(7), 4)
            ]
        );
        assert!(blocks.iter().all(|b| b.kind == Heading));
    }

    #[test]
    fn paragraphs_join_raw_lines_until_a_blank_line() {
        assert_eq!(
            shape("first line\n  second line  \n\n\nthird\n"),
            [
                s(Paragraph, "first line\n  second line  ", 1),
                s(Paragraph, "third", 5)
            ]
        );
        assert_eq!(parse_blocks("p")[0].level, Some(0));
    }

    #[test]
    fn a_heading_or_rule_interrupts_a_paragraph() {
        assert_eq!(
            shape("text\n# H\nmore\n---\nend"),
            [
                s(Paragraph, "text", 1),
                s(Heading, "H", 2),
                s(Paragraph, "more", 3),
                s(Hr, "", 4),
                s(Paragraph, "end", 5)
            ]
        );
    }

    #[test]
    fn list_items_are_one_block_each_with_indent_levels() {
        let blocks = parse_blocks("- a\n* b\n  - c\n\t- d\n    1. e\n10. f\n+ g\n-no");
        let got: Vec<_> = blocks
            .iter()
            .map(|b| {
                (
                    b.kind,
                    b.content.as_str(),
                    b.level,
                    b.ordered_start,
                    b.start_line,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (ListItem, "a", Some(0), None, 1),
                (ListItem, "b", Some(0), None, 2),
                (ListItem, "c", Some(1), None, 3),
                (ListItem, "d", Some(1), None, 4),
                (ListItem, "e", Some(2), Some(1), 5),
                (ListItem, "f", Some(0), Some(10), 6),
                // `+` is not a list marker upstream.
                (Paragraph, "+ g\n-no", Some(0), None, 7),
            ]
        );
        assert!(blocks[4].ordered && !blocks[0].ordered);
    }

    #[test]
    fn task_list_checkboxes_set_checked() {
        let blocks = parse_blocks("- [ ] todo\n- [x] done\n- [X]  shout\n- [y] no\n1. [x] n");
        let got: Vec<_> = blocks
            .iter()
            .map(|b| (b.content.as_str(), b.checked))
            .collect();
        assert_eq!(
            got,
            [
                ("todo", Some(false)),
                ("done", Some(true)),
                ("shout", Some(true)),
                ("[y] no", None),
                ("n", Some(true))
            ]
        );
    }

    #[test]
    fn indented_lines_continue_a_list_item() {
        assert_eq!(
            shape("- item\n  more\n\n  loose\n\n not loose\nafter"),
            [
                s(ListItem, "item\nmore\n\nloose", 1),
                s(Paragraph, " not loose\nafter", 6)
            ]
        );
    }

    #[test]
    fn fenced_code_keeps_lines_and_language() {
        let blocks = parse_blocks("```rust\nfn x() {}\n\n  y\n```\nafter\n````\n```\n````\n```");
        assert_eq!(blocks[0].kind, Code);
        assert_eq!(blocks[0].content, "fn x() {}\n\n  y");
        assert_eq!(blocks[0].language.as_deref(), Some("rust"));
        assert_eq!((blocks[0].start_line, blocks[0].end_line()), (1, 5));
        assert_eq!(
            shape("```rust\nfn x() {}\n\n  y\n```\nafter")[1],
            s(Paragraph, "after", 6)
        );
        // A longer fence is only closed by a fence at least as long.
        assert_eq!(
            (
                blocks[2].content.as_str(),
                blocks[2].language.as_deref(),
                blocks[2].start_line
            ),
            ("```", None, 7)
        );
        // An unclosed fence runs to the end.
        assert_eq!((blocks[3].content.as_str(), blocks[3].start_line), ("", 10));
    }

    #[test]
    fn tilde_fences_are_not_code_upstream() {
        assert_eq!(
            shape("~~~py\nx = 1\n~~~"),
            [s(Paragraph, "~~~py\nx = 1\n~~~", 1)]
        );
    }

    #[test]
    fn quotes_merge_consecutive_lines_until_a_blank_or_marker() {
        assert_eq!(
            shape("> one\n> two\n\n> three\n> - item\n> tail\n>> nested"),
            [
                s(Blockquote, "one\ntwo", 1),
                s(Blockquote, "three", 4),
                s(Blockquote, "- item", 5),
                s(Blockquote, "tail", 6),
                s(Blockquote, "> nested", 7),
            ]
        );
    }

    #[test]
    fn github_alerts_tag_the_quote_and_own_their_body() {
        let blocks = parse_blocks("> [!warning]\n> - careful\n> # x\n\n> [!NOTE] inline");
        assert_eq!(blocks[0].alert_kind, Some(AlertKind::Warning));
        assert_eq!(blocks[0].content, "- careful\n# x");
        assert_eq!((blocks[0].start_line, blocks[0].end_line()), (1, 3));
        assert_eq!(
            (blocks[1].alert_kind, blocks[1].content.as_str()),
            (None, "[!NOTE] inline")
        );
        assert_eq!(parse_blocks("> [!TIP]")[0].end_line(), 1);
    }

    #[test]
    fn tables_collect_consecutive_pipe_lines_raw() {
        assert_eq!(
            shape("| a | b |\n|---|---|\n  | 1 | 2 |\nnot table | x\n"),
            [
                s(Table, "| a | b |\n|---|---|\n  | 1 | 2 |", 1),
                s(Paragraph, "not table | x", 4)
            ]
        );
    }

    #[test]
    fn horizontal_rules_are_three_dashes_or_stars_only() {
        assert_eq!(
            shape("text\n\n***\n___\n- - -"),
            [
                s(Paragraph, "text", 1),
                s(Hr, "", 3),
                s(Paragraph, "___", 4),
                s(ListItem, "- -", 5)
            ]
        );
    }

    #[test]
    fn html_blocks_run_to_the_balancing_close_tag() {
        assert_eq!(
            shape(
                "<details>\n<summary>S</summary>\n\nbody\n</details>\nafter\n<img\n  src=x>\n</div>\nx\n\ny"
            ),
            [
                s(
                    Html,
                    "<details>\n<summary>S</summary>\n\nbody\n</details>",
                    1
                ),
                s(Paragraph, "after", 6),
                s(Html, "<img\n  src=x>", 7),
                s(Html, "</div>\nx", 9),
                s(Paragraph, "y", 12),
            ]
        );
        // Unclosed: the opening line alone.
        assert_eq!(
            shape("<div>\ntext"),
            [s(Html, "<div>", 1), s(Paragraph, "text", 2)]
        );
        // Inline tags stay paragraphs.
        assert_eq!(shape("<kbd>x</kbd>"), [s(Paragraph, "<kbd>x</kbd>", 1)]);
    }

    #[test]
    fn directives_run_to_the_closing_colons() {
        let blocks = parse_blocks(":::Note\nbody\nmore\n:::\nafter");
        assert_eq!(blocks[0].kind, Directive);
        assert_eq!(blocks[0].directive_kind.as_deref(), Some("note"));
        assert_eq!(blocks[0].content, "body\nmore");
        assert_eq!((blocks[0].start_line, blocks[0].end_line()), (1, 4));
        assert_eq!(blocks[1].start_line, 5);
        assert_eq!(parse_blocks(":::tip\n:::")[0].content, "");
    }

    #[test]
    fn display_math_needs_its_closing_delimiter() {
        let blocks = parse_blocks("$$\nx^2\n$$\n$$a$$ tail\n$$100k for infra\n\n\\[\ny\n\\]");
        let got: Vec<_> = blocks
            .iter()
            .map(|b| {
                (
                    b.kind,
                    b.content.as_str(),
                    b.start_line,
                    b.source_line_count,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (Math, "x^2", 1, Some(3)),
                (Math, "a", 4, Some(1)),
                // The text after a closing `$$` is parsed again; an unclosed
                // `$$` is ordinary text.
                (Paragraph, "tail\n$$100k for infra", 4, None),
                (Math, "y", 7, Some(3)),
            ]
        );
        assert_eq!(blocks[0].end_line(), 3);
    }

    #[test]
    fn frontmatter_is_stripped_and_lines_still_count_it() {
        let blocks = parse_blocks("---\ntitle: x\n---\n\n# Plan\n");
        assert_eq!(blocks.len(), 1);
        assert_eq!(
            (blocks[0].content.as_str(), blocks[0].start_line),
            ("Plan", 5)
        );
        let kept = parse_blocks_with("---\na: b\n---\ntext", ParseOptions { frontmatter: false });
        assert_eq!(kept[0].kind, Hr);
        assert_eq!(kept[1].start_line, 2);
    }

    #[test]
    fn reference_definitions_resolve_and_blank_without_moving_lines() {
        assert_eq!(
            shape("See [docs].\n\n[docs]: https://x.test\nnext"),
            [
                s(Paragraph, "See [docs](https://x.test).", 1),
                s(Paragraph, "next", 4)
            ]
        );
    }

    #[test]
    fn crlf_lines_keep_their_carriage_returns_in_raw_content() {
        let blocks = parse_blocks("# T\r\n\r\npara\r\nline\r\n");
        assert_eq!(blocks[0].content, "T");
        assert_eq!(blocks[1].content, "para\r\nline\r");
        assert_eq!(blocks[1].start_line, 3);
    }

    #[test]
    fn a_byte_order_mark_is_whitespace() {
        assert_eq!(shape("\u{feff}# Title"), [s(Heading, "Title", 1)]);
    }

    #[test]
    fn json_shape_matches_upstream_keys() {
        let blocks = parse_blocks("- [x] a\n\n```ts\nx\n```\n\n> [!TIP]\n> t");
        let json = serde_json::to_string(&blocks).unwrap();
        assert_eq!(
            json,
            r#"[{"id":"block-0","type":"list-item","content":"a","level":0,"checked":true,"order":1,"startLine":1},{"id":"block-1","type":"code","content":"x","language":"ts","order":2,"startLine":3},{"id":"block-2","type":"blockquote","content":"t","alertKind":"tip","order":3,"startLine":7}]"#
        );
        let back: Vec<Block> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, blocks);
    }
}
