//! Rendered text: what upstream's viewer shows for a block, as the page's
//! `textContent` reads it, with a map from every rendered byte back to the
//! block's `content`.
//!
//! Reviewers select text in the rendered plan, so an annotation's
//! `originalText` is rendered text: `Use **JWT** tokens` was selected as
//! `Use JWT tokens`. The inline scanner here follows upstream's
//! `InlineMarkdown` rule for rule, in its order, so the same characters come
//! out:
//!
//! - `**strong**`, `*em*`, `***both***`, `_em_` (not inside words) and
//!   `~~strike~~` lose their markers (the inside is scanned again);
//! - `` `code` `` loses its backticks (the inside is literal);
//! - `[label](url)` shows its label *literally* (upstream does not scan link
//!   labels for markup); reference links were resolved into this form by the
//!   block parser; `[[target|label]]` wiki links show the label (or target);
//! - `![alt](src)` shows nothing: an `<img>` has no text content;
//! - `<https://x>` and `<a@b.c>` show the address; `<scheme:x>` stays literal;
//! - backslash escapes of upstream's set (`` \ * _ ` [ ] ~ ! . ( ) - # > + | { } & $ ``)
//!   show the character alone (other backslashes stay);
//! - inline math (`$x$`, `\(x\)`) shows its TeX (KaTeX's own output is not
//!   reproducible text);
//! - a hard line break (two spaces or a backslash before a newline) is a
//!   `<br>`, which has no text content; `<!-- comments -->` show nothing.
//!
//! Three rules upstream's viewer does not have are added, because other
//! renderers of the same plan (CommonMark ones) show them so; a selection
//! made in upstream's viewer, which shows them as typed, is still found by
//! the literal source search or by rendering the needle itself (see the
//! search order in `anchor.rs`):
//! `__strong__` loses its markers, inline HTML tags show nothing, and HTML
//! character references (`&amp;`, `&#8212;`, `&#x2014;`) show their character.
//!
//! Blocks render as upstream's block renderer lays them out: inline markup
//! for paragraphs, headings and list items; quote paragraphs (split at blank
//! lines) one after the other; alert and directive bodies as upstream's prose
//! body (list markers dropped); table cells in order with the pipes and
//! padding gone and the `|---|` row skipped; raw HTML blocks with their tags
//! dropped and character references decoded; code and math verbatim; rules
//! empty. Text the page only shows between elements (paragraph breaks, cell
//! borders) is not text content, so it is not in the rendered text either.

use std::ops::Range;

use crate::blocks::{Block, BlockKind};
use crate::text::{is_js_space, js_trim};

/// How far a bracketed or angle-bracketed construct (links, images, wiki
/// links, autolinks, tags) may run looking for its end, in bytes. Their scans
/// depend on where they start, so thousands of unclosed `[` would otherwise
/// be quadratic; real ones are far shorter. Delimiter pairs (`**`, `_`, `` ` ``,
/// `~~`, `-->`) need no bound: their closing searches are cached per run.
const MAX_INLINE_SPAN: usize = 4096;

/// Text derived from a block's content (its rendered text, or a further
/// transform of it), with each byte's source range in the content.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RenderedText {
    text: String,
    /// For each byte of `text`, the byte range of the source it came from;
    /// `None` when `text` is the source itself.
    spans: Option<Vec<(usize, usize)>>,
}

impl RenderedText {
    /// The source shown as it is (code, math).
    pub(crate) fn identity(source: &str) -> Self {
        Self {
            text: source.to_owned(),
            spans: None,
        }
    }

    /// The rendered text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Length of the rendered text in bytes.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether nothing is rendered.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The source bytes a non-empty range of the rendered text came from:
    /// from the start of the first character's source to the end of the last
    /// one's, so markup *inside* the range is included and markup around it is
    /// not (`JWT` in `**JWT**` maps to `JWT`; `Use JWT` in `Use **JWT**` maps
    /// to `Use **JWT`). `None` when the range is empty, out of bounds or not
    /// on character boundaries.
    pub fn source_range(&self, range: Range<usize>) -> Option<Range<usize>> {
        let valid = range.start < range.end
            && self.text.is_char_boundary(range.start)
            && self.text.is_char_boundary(range.end)
            && range.end <= self.text.len();
        if !valid {
            return None;
        }
        Some(self.source_start(range.start)?..self.source_end(range.end)?)
    }

    /// Source offset where the rendered byte `at` starts.
    pub(crate) fn source_start(&self, at: usize) -> Option<usize> {
        match &self.spans {
            None => (at <= self.text.len()).then_some(at),
            Some(spans) => spans.get(at).map(|s| s.0),
        }
    }

    /// Source offset where the rendered text before `end` ends (`end > 0`).
    pub(crate) fn source_end(&self, end: usize) -> Option<usize> {
        match &self.spans {
            None => (end <= self.text.len()).then_some(end),
            Some(spans) => spans.get(end.checked_sub(1)?).map(|s| s.1),
        }
    }

    /// `inner`, a text derived from this one (its spans index `self.text`),
    /// with its spans mapped on to this text's source.
    pub(crate) fn compose(&self, inner: Self) -> Self {
        let Some(inner_spans) = inner.spans else {
            return Self {
                text: inner.text,
                spans: self.spans.clone(),
            };
        };
        if self.spans.is_none() {
            return Self {
                text: inner.text,
                spans: Some(inner_spans),
            };
        }
        let spans = inner_spans
            .into_iter()
            .map(|(s, e)| {
                let start = self.source_start(s).unwrap_or(0);
                let end = self.source_end(e).unwrap_or(start).max(start);
                (start, end)
            })
            .collect();
        Self {
            text: inner.text,
            spans: Some(spans),
        }
    }
}

/// Builds a [`RenderedText`] character by character.
#[derive(Default)]
struct Builder {
    text: String,
    spans: Vec<(usize, usize)>,
}

impl Builder {
    /// `c`, which came from the source bytes `start..end`.
    fn push(&mut self, c: char, start: usize, end: usize) {
        self.text.push(c);
        self.spans
            .extend(std::iter::repeat_n((start, end), c.len_utf8()));
    }

    /// `s` shown as it is, found at source offset `at`.
    fn literal(&mut self, s: &str, at: usize) {
        for (i, c) in s.char_indices() {
            self.push(c, at + i, at + i + c.len_utf8());
        }
    }

    /// `s` standing for the source bytes `start..end` as a whole.
    fn replaced(&mut self, s: &str, start: usize, end: usize) {
        for c in s.chars() {
            self.push(c, start, end);
        }
    }

    fn finish(self) -> RenderedText {
        RenderedText {
            text: self.text,
            spans: Some(self.spans),
        }
    }
}

/// Renders inline markdown the way upstream's viewer shows it (see the
/// module docs), with the map back to `markdown`.
pub fn render_inline(markdown: &str) -> RenderedText {
    let mut out = Builder::default();
    Inline {
        src: markdown,
        out: &mut out,
    }
    .run(0, markdown.len());
    out.finish()
}

impl Block {
    /// The block's text as upstream's viewer renders it (see
    /// [`render_inline`] for the inline rules), mapped back to `content`.
    pub fn rendered_text(&self) -> RenderedText {
        let content = self.content.as_str();
        match self.kind {
            BlockKind::Paragraph | BlockKind::Heading | BlockKind::ListItem => {
                render_inline(content)
            }
            BlockKind::Blockquote if self.alert_kind.is_some() => prose_body(content),
            BlockKind::Directive => prose_body(content),
            BlockKind::Blockquote => quote_paragraphs(content),
            BlockKind::Table => table_cells(content),
            BlockKind::Html => html_text(content),
            BlockKind::Code | BlockKind::Math | BlockKind::Hr => RenderedText::identity(content),
        }
    }
}

/// A quote's paragraphs (split at runs of blank lines), one after another.
fn quote_paragraphs(content: &str) -> RenderedText {
    let mut out = Builder::default();
    let mut inline = Inline {
        src: content,
        out: &mut out,
    };
    let mut start = 0;
    while let Some(i) = content[start..].find("\n\n") {
        let sep = start + i;
        inline.run(start, sep);
        start = sep + content[sep..].bytes().take_while(|&b| b == b'\n').count();
    }
    inline.run(start, content.len());
    out.finish()
}

/// Upstream's `renderProseBody` for alert and directive bodies: blank lines
/// end a paragraph; `- x`, `* x` and `1. x` lines are list items, shown
/// without their markers; paragraph lines are rendered together.
fn prose_body(content: &str) -> RenderedText {
    let mut out = Builder::default();
    let mut inline = Inline {
        src: content,
        out: &mut out,
    };
    let mut para: Option<Range<usize>> = None;
    let mut at = 0;
    for line in content.split('\n') {
        let line_start = at;
        at += line.len() + 1;
        if js_trim(line).is_empty() {
            if let Some(p) = para.take() {
                inline.run(p.start, p.end);
            }
            continue;
        }
        if let Some(item) = prose_list_item(line) {
            if let Some(p) = para.take() {
                inline.run(p.start, p.end);
            }
            inline.run(line_start + item, line_start + line.len());
        } else {
            let end = line_start + line.len();
            para = Some(para.map_or(line_start..end, |p| p.start..end));
        }
    }
    if let Some(p) = para {
        inline.run(p.start, p.end);
    }
    out.finish()
}

/// `^\s*(\*|-|\d+\.)\s+(.*)$`: where the item's text starts in the line.
fn prose_list_item(line: &str) -> Option<usize> {
    let lead = line.len() - line.trim_start_matches(is_js_space).len();
    let rest = &line[lead..];
    let marker = if rest.starts_with(['*', '-']) {
        1
    } else {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || rest.as_bytes().get(digits) != Some(&b'.') {
            return None;
        }
        digits + 1
    };
    let after = &rest[marker..];
    let text = after.trim_start_matches(is_js_space);
    let spaces = after.len() - text.len();
    // `.` stops at line terminators and `$` is the end of the input.
    if spaces == 0 || text.contains(['\r', '\u{2028}', '\u{2029}']) {
        return None;
    }
    Some(lead + marker + spaces)
}

/// Upstream's `parseTableContent`: each cell trimmed, `\|` unescaped and
/// rendered inline; the `|---|` separator rows skipped.
fn table_cells(content: &str) -> RenderedText {
    let mut out = Builder::default();
    let mut at = 0;
    let mut first = true;
    for line in content.split('\n') {
        let line_start = at;
        at += line.len() + 1;
        let trimmed = js_trim(line);
        if trimmed.is_empty() {
            continue;
        }
        // The header row is parsed untrimmed; the others trimmed.
        let (row, row_start) = if first {
            (line, line_start)
        } else {
            if trimmed
                .chars()
                .all(|c| matches!(c, '|' | '-' | ':') || is_js_space(c))
            {
                continue;
            }
            (
                trimmed,
                line_start + (line.len() - line.trim_start_matches(is_js_space).len()),
            )
        };
        first = false;
        for cell in table_row_cells(row) {
            let mut cell_text = Builder::default();
            let raw = &row[cell.clone()];
            let mut i = 0;
            while i < raw.len() {
                let abs = row_start + cell.start + i;
                if raw[i..].starts_with("\\|") {
                    cell_text.push('|', abs, abs + 2);
                    i += 2;
                } else if let Some(c) = raw[i..].chars().next() {
                    cell_text.push(c, abs, abs + c.len_utf8());
                    i += c.len_utf8();
                } else {
                    break;
                }
            }
            let cell_text = cell_text.finish();
            let rendered = cell_text.compose(render_inline(cell_text.as_str()));
            if let Some(spans) = rendered.spans {
                out.text.push_str(&rendered.text);
                out.spans.extend(spans);
            }
        }
    }
    out.finish()
}

/// The trimmed cells of a row: one leading and one trailing `|` dropped, then
/// split at every `|` not preceded by a backslash.
fn table_row_cells(row: &str) -> Vec<Range<usize>> {
    let start = usize::from(row.starts_with('|'));
    let end = if row.len() > start && row.ends_with('|') {
        row.len() - 1
    } else {
        row.len()
    };
    let mut cells = Vec::new();
    let mut cell_start = start;
    let bytes = row.as_bytes();
    for i in start..end {
        if bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\') {
            cells.push(cell_start..i);
            cell_start = i + 1;
        }
    }
    cells.push(cell_start..end);
    cells
        .into_iter()
        .map(|r| {
            let cell = &row[r.clone()];
            let lead = cell.len() - cell.trim_start_matches(is_js_space).len();
            let kept = js_trim(cell).len();
            r.start + lead..r.start + lead + kept
        })
        .collect()
}

/// A raw HTML block's text: tags and comments dropped, character references
/// decoded.
fn html_text(content: &str) -> RenderedText {
    let mut out = Builder::default();
    // A comment opened after the last `-->` never closes: skip the search.
    let last_close = content.rfind("-->");
    let mut i = 0;
    while let Some(c) = content[i..].chars().next() {
        let rest = &content[i..];
        if c == '<' {
            let comment = last_close
                .is_some_and(|close| close >= i + 4)
                .then(|| html_comment(rest))
                .flatten();
            if let Some(n) = comment.or_else(|| html_tag(rest)) {
                i += n;
                continue;
            }
        } else if c == '&'
            && let Some((decoded, n)) = char_reference(rest)
        {
            out.push(decoded, i, i + n);
            i += n;
            continue;
        }
        out.push(c, i, i + c.len_utf8());
        i += c.len_utf8();
    }
    out.finish()
}

/// JavaScript's `\w`.
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `rest` cut to the inline scan bound (on a character boundary).
fn bounded(rest: &str) -> &str {
    if rest.len() <= MAX_INLINE_SPAN {
        return rest;
    }
    let mut end = MAX_INLINE_SPAN;
    while !rest.is_char_boundary(end) {
        end -= 1;
    }
    &rest[..end]
}

/// Upstream's `InlineMarkdown` scanner over one piece of the source.
struct Inline<'a, 'b> {
    src: &'a str,
    out: &'b mut Builder,
}

/// Characters where upstream's scanner stops a plain run to try its rules
/// again (`&` added for character references).
fn is_special(c: char) -> bool {
    matches!(
        c,
        '*' | '_' | '`' | '[' | '!' | '~' | '\\' | '<' | '#' | '@' | '$' | '&'
    )
}

/// The closing searches of one run, each cached: a run only moves forward,
/// so the next occurrence found from one position is still the next one
/// from any later position before it, and every search is linear overall.
struct Closers<'a> {
    src: &'a str,
    end: usize,
    cache: [Option<(usize, Option<usize>)>; Closer::COUNT],
}

/// What [`Closers`] looks for.
#[derive(Clone, Copy)]
enum Closer {
    /// A literal delimiter (`~~`, `***`, `**`, `*`, `` ` ``, `-->`, and the
    /// characters a bracketed construct cannot end without).
    Str(usize, &'static str),
    /// A closing `_` or `__` (last inner character not `_` or whitespace,
    /// no word character after it).
    Underscore(usize, &'static str),
    /// `\)` not preceded by a backslash.
    MathClose(usize),
}

impl Closer {
    const COUNT: usize = 14;
    const STRIKE: Self = Self::Str(0, "~~");
    const STRONG_EM: Self = Self::Str(1, "***");
    const STRONG: Self = Self::Str(2, "**");
    const EM: Self = Self::Str(3, "*");
    const CODE: Self = Self::Str(4, "`");
    const COMMENT: Self = Self::Str(5, "-->");
    const UNDERSCORE_STRONG: Self = Self::Underscore(6, "__");
    const UNDERSCORE_EM: Self = Self::Underscore(7, "_");
    const BRACKET: Self = Self::Str(8, "]");
    const DOUBLE_BRACKET: Self = Self::Str(9, "]]");
    const ANGLE: Self = Self::Str(10, ">");
    const AT: Self = Self::Str(11, "@");
    const PAREN_MATH: Self = Self::MathClose(12);
    const PAREN: Self = Self::Str(13, ")");

    fn slot(self) -> usize {
        match self {
            Self::Str(slot, _) | Self::Underscore(slot, _) | Self::MathClose(slot) => slot,
        }
    }

    /// The delimiter of a pair.
    fn delim(self) -> &'static str {
        match self {
            Self::Str(_, d) | Self::Underscore(_, d) => d,
            Self::MathClose(_) => "\\)",
        }
    }
}

impl<'a> Closers<'a> {
    fn new(src: &'a str, end: usize) -> Self {
        Self {
            src,
            end,
            cache: [None; Closer::COUNT],
        }
    }

    /// Where the first `closer` at or after `from` starts.
    fn next(&mut self, closer: Closer, from: usize) -> Option<usize> {
        let slot = closer.slot();
        if let Some(Some((cached_from, found))) = self.cache.get(slot).copied()
            && from >= cached_from
            && found.is_none_or(|at| at >= from)
        {
            return found;
        }
        let found = self.search(closer, from);
        if let Some(entry) = self.cache.get_mut(slot) {
            *entry = Some((from, found));
        }
        found
    }

    fn search(&self, closer: Closer, from: usize) -> Option<usize> {
        let hay = self.src.get(from..self.end)?;
        match closer {
            Closer::Str(_, delim) => hay.find(delim).map(|i| from + i),
            Closer::MathClose(_) => {
                let mut at = 0;
                while let Some(i) = hay[at..].find("\\)") {
                    let q = from + at + i;
                    if q == 0 || self.src.as_bytes()[q - 1] != b'\\' {
                        return Some(q);
                    }
                    at += i + 1;
                }
                None
            }
            Closer::Underscore(_, delim) => {
                let mut last = self.src[..from].chars().next_back();
                for (i, c) in hay.char_indices() {
                    let valid_last = last.is_some_and(|l| l != '_' && !is_js_space(l));
                    if valid_last && hay[i..].starts_with(delim) {
                        let after = hay[i + delim.len()..].chars().next();
                        if !after.is_some_and(is_word) {
                            return Some(from + i);
                        }
                    }
                    last = Some(c);
                }
                None
            }
        }
    }
}

impl Inline<'_, '_> {
    /// Renders `src[start..end]` as one `InlineMarkdown` call.
    fn run(&mut self, start: usize, end: usize) {
        let src = self.src;
        let mut closers = Closers::new(src, end);
        let mut pos = start;
        let mut prev: Option<char> = None;
        // The next hard line break at or after `pos` (start, length).
        let mut hard_break: Option<Option<(usize, usize)>> = None;
        while pos < end {
            let rem = &src[pos..end];
            if let Some((consumed, last)) = self.rule(pos, rem, prev, &mut closers) {
                pos += consumed;
                prev = Some(last);
                continue;
            }
            if hard_break.is_some_and(|b| b.is_some_and(|(at, _)| at < pos)) {
                hard_break = None;
            }
            let next_break = *hard_break
                .get_or_insert_with(|| find_hard_break(rem).map(|(at, len)| (pos + at, len)));
            if let Some((at, len)) = next_break {
                // Upstream renders the text before the break on its own.
                self.run(pos, at);
                pos = at + len;
                prev = Some('\n');
                hard_break = None;
                continue;
            }
            let first = rem.chars().next().map_or(1, char::len_utf8);
            let chunk = rem[first..]
                .find(is_special)
                .map_or(rem.len(), |i| first + i);
            self.out.literal(&rem[..chunk], pos);
            prev = rem[..chunk].chars().next_back().or(prev);
            pos += chunk;
        }
    }

    /// `D([\s\S]+?)D` at `pos` for the delimiter of `closer`: where the
    /// inside ends (absolute) and the construct's length.
    fn pair(
        &self,
        pos: usize,
        rem: &str,
        closer: Closer,
        closers: &mut Closers<'_>,
    ) -> Option<(usize, usize)> {
        let delim = closer.delim();
        let body = rem.strip_prefix(delim)?;
        let first = body.chars().next()?;
        if matches!(closer, Closer::Underscore(..)) && (first == '_' || is_js_space(first)) {
            return None;
        }
        let close = closers.next(closer, pos + delim.len() + first.len_utf8())?;
        Some((close, close + delim.len() - pos))
    }

    /// The first of upstream's anchored rules that matches at `rem` (plus
    /// the added ones), after emitting its text: (bytes consumed, the
    /// scanner's new previous character).
    fn rule(
        &mut self,
        pos: usize,
        rem: &str,
        prev: Option<char>,
        closers: &mut Closers<'_>,
    ) -> Option<(usize, char)> {
        let after_word = prev.is_some_and(is_word);
        let first = rem.chars().next()?;
        match first {
            '<' => {
                if rem.starts_with("<!--")
                    && let Some(close) = closers.next(Closer::COMMENT, pos + 4)
                {
                    return Some((close + 3 - pos, '>'));
                }
                // Everything else here ends with a `>`.
                closers.next(Closer::ANGLE, pos + 1)?;
                let email = closers.next(Closer::AT, pos + 1).is_some();
                if let Some((inner, n)) = autolink(rem, email) {
                    self.out.literal(&rem[inner.clone()], pos + inner.start);
                    return Some((n, '>'));
                }
                if let Some(n) = custom_autolink(rem) {
                    self.out.literal(&rem[..n], pos);
                    return Some((n, '>'));
                }
                // Added: inline HTML tags have no text of their own.
                if let Some(n) = html_tag(rem) {
                    return Some((n, '>'));
                }
            }
            '\\' => {
                if rem.starts_with("\\(")
                    && let Some(close) = closers.next(Closer::PAREN_MATH, pos + 2)
                    && !js_trim(&rem[2..close - pos]).is_empty()
                {
                    self.out.literal(&rem[2..close - pos], pos + 2);
                    return Some((close + 2 - pos, ')'));
                }
                let escaped = rem[1..].chars().next()?;
                if "\\*_`[]~!.()-#>+|{}&$".contains(escaped) {
                    self.out.push(escaped, pos, pos + 1 + escaped.len_utf8());
                    return Some((1 + escaped.len_utf8(), escaped));
                }
            }
            '$' => {
                if prev != Some('$')
                    && let Some((tex, n)) = dollar_math(rem)
                {
                    self.out.literal(&rem[tex.clone()], pos + tex.start);
                    return Some((n, '$'));
                }
            }
            'h' if !after_word => {
                if let Some(n) = bare_url(rem) {
                    self.out.literal(&rem[..n], pos);
                    let last = rem[..n].chars().next_back()?;
                    return Some((n, last));
                }
            }
            '~' => {
                if let Some((inner_end, n)) = self.pair(pos, rem, Closer::STRIKE, closers) {
                    self.run(pos + 2, inner_end);
                    return Some((n, '~'));
                }
            }
            '*' => {
                for closer in [Closer::STRONG_EM, Closer::STRONG, Closer::EM] {
                    if let Some((inner_end, n)) = self.pair(pos, rem, closer, closers) {
                        self.run(pos + closer.delim().len(), inner_end);
                        return Some((n, '*'));
                    }
                }
            }
            '_' if !after_word => {
                // `__strong__` is added; upstream only has `_em_`.
                for closer in [Closer::UNDERSCORE_STRONG, Closer::UNDERSCORE_EM] {
                    if let Some((inner_end, n)) = self.pair(pos, rem, closer, closers) {
                        self.run(pos + closer.delim().len(), inner_end);
                        return Some((n, '_'));
                    }
                }
            }
            '`' => {
                let close = closers.next(Closer::CODE, pos + 1)?;
                if close > pos + 1 {
                    self.out.literal(&rem[1..close - pos], pos + 1);
                    return Some((close + 1 - pos, '`'));
                }
            }
            '[' => {
                // Links and wiki links both end with a `]`.
                closers.next(Closer::BRACKET, pos + 1)?;
                if closers.next(Closer::DOUBLE_BRACKET, pos + 2).is_some()
                    && let Some((shown, n)) = wiki_link(rem)
                {
                    self.out.literal(&rem[shown.clone()], pos + shown.start);
                    return Some((n, ']'));
                }
                if closers.next(Closer::PAREN, pos + 1).is_some()
                    && let Some((label, n)) = link(rem)
                {
                    self.out.literal(&rem[label.clone()], pos + label.start);
                    return Some((n, ')'));
                }
            }
            '!' => {
                if rem.starts_with("![")
                    && closers.next(Closer::BRACKET, pos + 2).is_some()
                    && closers.next(Closer::PAREN, pos + 2).is_some()
                    && let Some(n) = image(rem)
                {
                    return Some((n, ')'));
                }
            }
            '&' => {
                // Added: character references show their character.
                if let Some((decoded, n)) = char_reference(rem) {
                    self.out.push(decoded, pos, pos + n);
                    return Some((n, ';'));
                }
            }
            _ => {}
        }
        None
    }
}

/// `^<!--[\s\S]*?-->`: its length.
fn html_comment(rem: &str) -> Option<usize> {
    let body = rem.strip_prefix("<!--")?;
    body.find("-->").map(|i| 4 + i + 3)
}

/// `^<(https?:\/\/[^>]+)>` or `^<([^@>\s]+@[^>\s]+)>`: the address and the
/// length.
fn autolink(rem: &str, email: bool) -> Option<(Range<usize>, usize)> {
    let body = bounded(&rem[1..]);
    let scheme = if body.starts_with("https://") {
        8
    } else if body.starts_with("http://") {
        7
    } else {
        0
    };
    if scheme > 0 {
        let close = body[scheme..].find('>')?;
        if close == 0 {
            return None;
        }
        return Some((1..1 + scheme + close, scheme + close + 2));
    }
    if !email {
        return None;
    }
    let at = body.find(|c: char| c == '@' || c == '>' || is_js_space(c))?;
    if at == 0 || !body[at..].starts_with('@') {
        return None;
    }
    let domain = &body[at + 1..];
    let len = domain
        .find(|c: char| c == '>' || is_js_space(c))
        .unwrap_or(domain.len());
    if len == 0 || !domain[len..].starts_with('>') {
        return None;
    }
    let end = at + 1 + len;
    Some((1..1 + end, end + 2))
}

/// `^<([A-Za-z][A-Za-z0-9.+-]{0,31}:[^\s<>]*)>`: its length (shown literally).
fn custom_autolink(rem: &str) -> Option<usize> {
    let body = bounded(&rem[1..]);
    let scheme = body
        .bytes()
        .enumerate()
        .take_while(|&(i, b)| {
            b.is_ascii_alphabetic()
                || (i > 0 && (b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-')))
        })
        .count();
    if !(1..=32).contains(&scheme) || !body[scheme..].starts_with(':') {
        return None;
    }
    let rest = &body[scheme + 1..];
    let len = rest
        .find(|c: char| c == '<' || c == '>' || is_js_space(c))
        .unwrap_or(rest.len());
    rest[len..]
        .starts_with('>')
        .then_some(1 + scheme + 1 + len + 1)
}

/// An HTML open tag (`<a href="x">`, `<br/>`) or close tag (`</a>`): its
/// length.
fn html_tag(rem: &str) -> Option<usize> {
    let b = bounded(rem).as_bytes();
    let is_space =
        |c: Option<&u8>| c.is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c'));
    let closing = b.get(1) == Some(&b'/');
    let mut i = if closing { 2 } else { 1 };
    if !b.get(i)?.is_ascii_alphabetic() {
        return None;
    }
    while b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'-')
    {
        i += 1;
    }
    if closing {
        while is_space(b.get(i)) {
            i += 1;
        }
        return (b.get(i) == Some(&b'>')).then_some(i + 1);
    }
    loop {
        let before_space = i;
        while is_space(b.get(i)) {
            i += 1;
        }
        match b.get(i)? {
            b'>' => return Some(i + 1),
            b'/' if b.get(i + 1) == Some(&b'>') => return Some(i + 2),
            _ => {}
        }
        // An attribute needs whitespace before its name.
        let c = *b.get(i)?;
        if i == before_space || !(c.is_ascii_alphabetic() || c == b'_' || c == b':') {
            return None;
        }
        while b
            .get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'-'))
        {
            i += 1;
        }
        let after_name = i;
        while is_space(b.get(i)) {
            i += 1;
        }
        if b.get(i) != Some(&b'=') {
            i = after_name;
            continue;
        }
        i += 1;
        while is_space(b.get(i)) {
            i += 1;
        }
        match b.get(i)? {
            q @ (b'"' | b'\'') => {
                let close = b[i + 1..].iter().position(|c| c == q)?;
                i += close + 2;
            }
            _ => {
                let start = i;
                while b.get(i).is_some_and(|c| {
                    !matches!(
                        c,
                        b' ' | b'\t'
                            | b'\n'
                            | b'\r'
                            | b'\x0c'
                            | b'"'
                            | b'\''
                            | b'='
                            | b'<'
                            | b'>'
                            | b'`'
                    )
                }) {
                    i += 1;
                }
                if i == start {
                    return None;
                }
            }
        }
    }
}

/// `$…$` inline math (not `$$`, not money like `$5-$10`): the TeX's range
/// and the length.
fn dollar_math(rem: &str) -> Option<(Range<usize>, usize)> {
    if rem.starts_with("$$") {
        return None;
    }
    let b = bounded(rem).as_bytes();
    let mut i = 1;
    let end = loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'$' => break i,
            _ => i += 1,
        }
    };
    if end <= 1 {
        return None;
    }
    let tex = &rem[1..end];
    let money = tex
        .trim_start_matches(is_js_space)
        .starts_with(|c: char| c.is_ascii_digit())
        && rem[end + 1..].starts_with(|c: char| c.is_ascii_digit());
    (!money && can_render_spaced_dollar_math(tex)).then_some((1..end, end + 1))
}

/// Upstream's `canRenderSpacedDollarMath`: TeX padded with spaces only
/// counts when it looks like math.
fn can_render_spaced_dollar_math(tex: &str) -> bool {
    let trimmed = js_trim(tex);
    if trimmed.is_empty() {
        return false;
    }
    if !tex.starts_with(is_js_space) && !tex.ends_with(is_js_space) {
        return true;
    }
    let command = trimmed
        .split('\\')
        .skip(1)
        .any(|s| s.starts_with(|c: char| c.is_ascii_alphabetic()));
    command
        || trimmed.contains(['=', '^', '_', '{', '}', '+', '-', '*', '/', '<', '>', '|'])
        || (trimmed.len() == 1 && trimmed.starts_with(|c: char| c.is_ascii_alphabetic()))
}

/// `^https?:\/\/[^\s<>"']+` with upstream's `trimUrlTail`: the URL's length.
fn bare_url(rem: &str) -> Option<usize> {
    let scheme = if rem.starts_with("https://") {
        8
    } else if rem.starts_with("http://") {
        7
    } else {
        return None;
    };
    let tail = rem[scheme..]
        .find(|c: char| is_js_space(c) || matches!(c, '<' | '>' | '"' | '\''))
        .unwrap_or(rem.len() - scheme);
    if tail == 0 {
        return None;
    }
    let url = trim_url_tail(&rem[..scheme + tail]);
    (!url.is_empty()).then_some(url.len())
}

/// Upstream's `trimUrlTail`: trailing sentence punctuation is not part of a
/// bare URL, but a closing bracket that balances an opener is.
fn trim_url_tail(mut url: &str) -> &str {
    let balanced = |u: &str, close: char, open: char| {
        u.chars().filter(|&c| c == open).count() >= u.chars().filter(|&c| c == close).count()
    };
    while let Some(last) = url.chars().next_back() {
        if !".,;:!?)]}>\"'".contains(last) {
            break;
        }
        if (last == ')' && balanced(url, ')', '('))
            || (last == ']' && balanced(url, ']', '['))
            || (last == '}' && balanced(url, '}', '{'))
        {
            break;
        }
        url = &url[..url.len() - 1];
    }
    url
}

/// `^\[\[([^\]|]+)(?:\|([^\]]+))?\]\]`: the shown text (the trimmed label,
/// else the trimmed target) and the length.
fn wiki_link(rem: &str) -> Option<(Range<usize>, usize)> {
    let body = bounded(rem.strip_prefix("[[")?);
    let target_len = body.find([']', '|'])?;
    if target_len == 0 {
        return None;
    }
    let target = 2..2 + target_len;
    let (label, close) = if body[target_len..].starts_with('|') {
        let label_body = &body[target_len + 1..];
        let label_len = label_body.find(']')?;
        if label_len == 0 {
            return None;
        }
        let start = 2 + target_len + 1;
        (Some(start..start + label_len), start + label_len)
    } else {
        (None, 2 + target_len)
    };
    if !rem[close..].starts_with("]]") {
        return None;
    }
    let trimmed = |r: Range<usize>| {
        let s = &rem[r.clone()];
        let lead = s.len() - s.trim_start_matches(is_js_space).len();
        r.start + lead..r.start + lead + js_trim(s).len()
    };
    let shown = label
        .map(trimmed)
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| trimmed(target));
    Some((shown, close + 2))
}

/// `^!\[([^\]]*)\]\(([^)]+)\)`: the image's length (it shows no text).
fn image(rem: &str) -> Option<usize> {
    let body = bounded(rem.strip_prefix("![")?);
    let alt = body.find(']')?;
    let src = body[alt..].strip_prefix("](")?;
    let close = src.find(')')?;
    (close > 0).then_some(2 + alt + 2 + close + 1)
}

/// Upstream's link scan: a bracketed label (balanced, backslash skips a
/// character) then a parenthesised destination (balanced, no line break),
/// both non-empty. Returns the label's range and the length.
fn link(rem: &str) -> Option<(Range<usize>, usize)> {
    let b = bounded(rem).as_bytes();
    let mut i = 1;
    let mut depth = 1;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() => {
                i += 2;
                continue;
            }
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 || b.get(i + 1) != Some(&b'(') {
        return None;
    }
    let label_end = i;
    let mut j = i + 2;
    let mut parens = 1;
    while j < b.len() {
        match b[j] {
            b'\\' if j + 1 < b.len() => {
                j += 2;
                continue;
            }
            b'(' => parens += 1,
            b')' => {
                parens -= 1;
                if parens == 0 {
                    break;
                }
            }
            b'\n' => return None,
            _ => {}
        }
        j += 1;
    }
    if parens != 0 || label_end == 1 || j == i + 2 {
        return None;
    }
    Some((1..label_end, j + 1))
}

/// ` {2,}\n` or `\\\n`, the first one anywhere in `rem`: (offset, length).
fn find_hard_break(rem: &str) -> Option<(usize, usize)> {
    let b = rem.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b'\n') => return Some((i, 2)),
            b' ' => {
                let run = b[i..].iter().take_while(|&&c| c == b' ').count();
                if run >= 2 && b.get(i + run) == Some(&b'\n') {
                    return Some((i, run + 1));
                }
                i += run;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// An HTML character reference at the start of `rem` (`&amp;`, `&#38;`,
/// `&#x26;`): the character and the reference's length. Named references
/// outside the common set stay literal.
pub(crate) fn char_reference(rem: &str) -> Option<(char, usize)> {
    let body = rem.strip_prefix('&')?;
    let semi = body.bytes().take(34).position(|b| b == b';')?;
    let name = &body[..semi];
    let c = if let Some(num) = name.strip_prefix('#') {
        let (digits, radix, max) = match num.strip_prefix(['x', 'X']) {
            Some(hex) => (hex, 16, 6),
            None => (num, 10, 7),
        };
        if digits.is_empty() || digits.len() > max || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        let code = u32::from_str_radix(digits, radix).ok()?;
        char::from_u32(code)
            .filter(|&c| c != '\0')
            .unwrap_or('\u{fffd}')
    } else {
        named_reference(name)?
    };
    Some((c, 1 + semi + 1))
}

/// The common named character references.
fn named_reference(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "ensp" => '\u{2002}',
        "emsp" => '\u{2003}',
        "thinsp" => '\u{2009}',
        "zwnj" => '\u{200c}',
        "zwj" => '\u{200d}',
        "shy" => '\u{ad}',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "sbquo" => '‚',
        "ldquo" => '“',
        "rdquo" => '”',
        "bdquo" => '„',
        "laquo" => '«',
        "raquo" => '»',
        "lsaquo" => '‹',
        "rsaquo" => '›',
        "bull" => '•',
        "middot" => '·',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "deg" => '°',
        "plusmn" => '±',
        "times" => '×',
        "divide" => '÷',
        "minus" => '−',
        "le" => '≤',
        "ge" => '≥',
        "ne" => '≠',
        "asymp" => '≈',
        "equiv" => '≡',
        "infin" => '∞',
        "larr" => '←',
        "rarr" => '→',
        "uarr" => '↑',
        "darr" => '↓',
        "harr" => '↔',
        "lArr" => '⇐',
        "rArr" => '⇒',
        "hArr" => '⇔',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "sect" => '§',
        "para" => '¶',
        "dagger" => '†',
        "Dagger" => '‡',
        "permil" => '‰',
        "prime" => '′',
        "Prime" => '″',
        "frac12" => '½',
        "frac14" => '¼',
        "frac34" => '¾',
        "sup2" => '²',
        "sup3" => '³',
        "micro" => 'µ',
        "iexcl" => '¡',
        "iquest" => '¿',
        "check" => '✓',
        "cross" => '✗',
        "star" => '☆',
        "starf" => '★',
        "hearts" => '♥',
        _ => return None,
    })
}

/// Upstream's plain-text transform (emoji shortcodes, then smart
/// punctuation), folded so that either side of a comparison may have had it
/// applied: known `:shortcodes:` become their emoji, and curly quotes,
/// dashes and the ellipsis become the ASCII they are typed as (`“”` → `"`,
/// `‘’` → `'`, `—` → `---`, `–` → `--`, `…` → `...`). Emoji variation
/// selectors (U+FE0F) are dropped. Mapped back to `s`.
pub(crate) fn fold_plain_text(s: &str) -> RenderedText {
    let mut out = Builder::default();
    let mut i = 0;
    while let Some(c) = s[i..].chars().next() {
        let n = c.len_utf8();
        match c {
            ':' => {
                if let Some(len) = shortcode_len(&s[i..]) {
                    match emoji(&s[i + 1..i + len - 1]) {
                        Some(e) => out.replaced(&e.replace('\u{fe0f}', ""), i, i + len),
                        None => out.literal(&s[i..i + len], i),
                    }
                    i += len;
                    continue;
                }
                out.push(c, i, i + n);
            }
            '\u{fe0f}' => {}
            '“' | '”' | '„' | '‟' | '″' => out.push('"', i, i + n),
            '‘' | '’' | '‚' | '‛' | '′' => out.push('\'', i, i + n),
            '…' => out.replaced("...", i, i + n),
            '—' => out.replaced("---", i, i + n),
            '–' => out.replaced("--", i, i + n),
            _ => out.push(c, i, i + n),
        }
        i += n;
    }
    out.finish()
}

/// `^:([a-z_]+):`: its length.
fn shortcode_len(rem: &str) -> Option<usize> {
    let name = rem[1..]
        .bytes()
        .take_while(|b| b.is_ascii_lowercase() || *b == b'_')
        .count();
    (name > 0 && rem.as_bytes().get(1 + name) == Some(&b':')).then_some(name + 2)
}

/// Upstream's `EMOJI_MAP`.
fn emoji(code: &str) -> Option<&'static str> {
    Some(match code {
        "smile" => "😄",
        "heart" => "❤️",
        "thumbsup" => "👍",
        "thumbsdown" => "👎",
        "fire" => "🔥",
        "star" => "⭐",
        "tada" => "🎉",
        "rocket" => "🚀",
        "bug" => "🐛",
        "sparkles" => "✨",
        "warning" => "⚠️",
        "white_check_mark" => "✅",
        "x" => "❌",
        "eyes" => "👀",
        "wave" => "👋",
        "thinking" => "🤔",
        "ok" => "🆗",
        "construction" => "🚧",
        "boom" => "💥",
        "gear" => "⚙️",
        "hourglass" => "⏳",
        "zap" => "⚡",
        "lock" => "🔒",
        "unlock" => "🔓",
        "memo" => "📝",
        "book" => "📖",
        "package" => "📦",
        "hammer" => "🔨",
        "checkered_flag" => "🏁",
        "question" => "❓",
        "exclamation" => "❗",
        "bulb" => "💡",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::parse_blocks;

    fn shown(md: &str) -> String {
        render_inline(md).as_str().to_owned()
    }

    /// The source of the first occurrence of `needle` in `md`'s rendering.
    fn source_of<'a>(md: &'a str, needle: &str) -> &'a str {
        let r = render_inline(md);
        let at = r.as_str().find(needle).unwrap();
        &md[r.source_range(at..at + needle.len()).unwrap()]
    }

    #[test]
    fn emphasis_markers_are_dropped_and_the_inside_is_rendered_again() {
        let md = "a **b** *c* ***d*** _e_ __f__ ~~g~~ **h _i_ `j`**";
        assert_eq!(shown(md), "a b c d e f g h i j");
        assert_eq!(source_of(md, "b c d"), "b** *c* ***d");
        assert_eq!(source_of(md, "d"), "d");
        assert_eq!(source_of(md, "h i j"), "h _i_ `j");
    }

    #[test]
    fn unmatched_and_intraword_markers_stay_literal() {
        assert_eq!(
            shown("snake_case_name and x__y__z"),
            "snake_case_name and x__y__z"
        );
        // `__strong__` is the added rule (CommonMark's); upstream shows it as typed.
        assert_eq!(shown("call __init__ now"), "call init now");
        assert_eq!(shown("2 * 3 and a ~ b and x_"), "2 * 3 and a ~ b and x_");
        assert_eq!(shown("_ spaced _ and **"), "_ spaced _ and **");
        // Upstream's `*` rule takes any text up to the next star.
        assert_eq!(shown("2 * 3 * 4"), "2  3  4");
    }

    #[test]
    fn code_spans_lose_their_backticks_and_keep_their_inside_literal() {
        let md = "run `cargo test -p **x**` now";
        assert_eq!(shown(md), "run cargo test -p **x** now");
        assert_eq!(source_of(md, "run cargo"), "run `cargo");
        assert_eq!(source_of(md, "**x**"), "**x**");
        // Only single-backtick spans (upstream's rule).
        assert_eq!(shown("``x``"), "`x`");
        assert_eq!(shown("a ` b"), "a ` b");
    }

    #[test]
    fn links_show_their_label_literally() {
        let md = "see [the docs](https://x.test/a_(b)) now";
        assert_eq!(shown(md), "see the docs now");
        assert_eq!(source_of(md, "docs now"), "docs](https://x.test/a_(b)) now");
        assert_eq!(source_of(md, "the docs"), "the docs");
        // Upstream does not scan link labels for markup.
        assert_eq!(
            shown("[**b**](u) [a [nested] one](u)"),
            "**b** a [nested] one"
        );
        // Not links: empty label or destination, a line break in the destination.
        assert_eq!(shown("[](u) [x]() [y](a\nb)"), "[](u) [x]() [y](a\nb)");
    }

    #[test]
    fn reference_links_render_as_their_text() {
        let blocks = parse_blocks(
            "See [the docs][d] and ![logo][img].\n\n[d]: https://x.test\n[img]: l.png",
        );
        let r = blocks[0].rendered_text();
        assert_eq!(r.as_str(), "See the docs and .");
        // Unresolved references stay literal, as upstream shows them.
        assert_eq!(shown("See [x][nope]."), "See [x][nope].");
    }

    #[test]
    fn images_show_nothing_and_wiki_links_their_label() {
        assert_eq!(shown("a ![alt text](i.png) b"), "a  b");
        assert_eq!(
            shown("[[plan|the plan]] and [[ notes ]]"),
            "the plan and notes"
        );
        assert_eq!(source_of("[[plan|the plan]]", "the plan"), "the plan");
    }

    #[test]
    fn autolinks_show_the_address() {
        let md = "<https://x.test/a> or <me@x.test> or <foo:bar>";
        assert_eq!(shown(md), "https://x.test/a or me@x.test or <foo:bar>");
        assert_eq!(source_of(md, "https://x.test/a or"), "https://x.test/a> or");
        // A bare URL is taken whole, so markup inside it stays.
        assert_eq!(
            shown("https://x.test/*a*_b_ end."),
            "https://x.test/*a*_b_ end."
        );
    }

    #[test]
    fn backslash_escapes_show_the_character() {
        let md = r"\*not em\* \_ \# \[x\] \\ \q";
        assert_eq!(shown(md), r"*not em* _ # [x] \ \q");
        assert_eq!(source_of(md, "*not"), r"\*not");
        let r = render_inline(md);
        assert_eq!(r.source_range(0..1), Some(0..2));
    }

    #[test]
    fn character_references_show_their_character() {
        let md = "AT&amp;T &lt;b&gt; &#8212; &#x2014; &#0; &bogus; & x";
        assert_eq!(shown(md), "AT&T <b> — — \u{fffd} &bogus; & x");
        assert_eq!(source_of(md, "AT&T"), "AT&amp;T");
        assert_eq!(source_of(md, "—"), "&#8212;");
    }

    #[test]
    fn inline_html_tags_and_comments_show_nothing() {
        let md = "a <kbd>Ctrl</kbd> b <br/> c <span class=\"x y\" data-n=1>d</span><!-- note -->e";
        assert_eq!(shown(md), "a Ctrl b  c de");
        assert_eq!(source_of(md, "Ctrl b"), "Ctrl</kbd> b");
        // Not tags.
        assert_eq!(
            shown("a < b > c, <3, <!-- open"),
            "a < b > c, <3, <!-- open"
        );
    }

    #[test]
    fn hard_line_breaks_have_no_text() {
        let md = "one  \ntwo\\\nthree\nfour";
        assert_eq!(shown(md), "onetwothree\nfour");
        assert_eq!(source_of(md, "onetwo"), "one  \ntwo");
    }

    #[test]
    fn inline_math_shows_its_tex() {
        assert_eq!(
            shown(r"$x^2$ and \(y\) cost $5-$10 or $ 5 $"),
            "x^2 and y cost $5-$10 or $ 5 $"
        );
    }

    #[test]
    fn block_kinds_render_as_upstream_lays_them_out() {
        let md = "| Key | Value |\n|---|---|\n| `ttl` | **15** min \\| max |\n\n> one\n>\n> **two**\n\n> [!NOTE]\n> - first\n> text\n\n<p>A &amp; <b>B</b></p>\n\n```\n**raw**\n```\n\n---";
        let blocks = parse_blocks(md);
        let shown: Vec<String> = blocks
            .iter()
            .map(|b| b.rendered_text().as_str().to_owned())
            .collect();
        assert_eq!(
            shown,
            [
                "KeyValuettl15 min | max",
                "onetwo",
                "firsttext",
                "A & B",
                "**raw**",
                ""
            ]
        );
        let table = blocks[0].rendered_text();
        let at = table.as_str().find("15 min | max").unwrap();
        let range = table.source_range(at..at + "15 min | max".len()).unwrap();
        assert_eq!(&blocks[0].content[range], "15** min \\| max");
    }

    #[test]
    fn source_ranges_need_a_non_empty_range_on_char_boundaries() {
        let r = render_inline("**é**x");
        assert_eq!(r.as_str(), "éx");
        assert_eq!(r.source_range(0..2), Some(2..4));
        assert_eq!(r.source_range(0..3), Some(2..7));
        assert_eq!(r.source_range(1..2), None);
        assert_eq!(r.source_range(2..2), None);
        assert_eq!(r.source_range(0..9), None);
        assert_eq!((r.len(), r.is_empty()), (3, false));
        assert!(render_inline("![x](y)").is_empty());
    }

    #[test]
    fn the_plain_text_fold_undoes_smart_punctuation_and_emoji_shortcodes() {
        let f = fold_plain_text("“It’s” — 3–5… :rocket: ❤️ :nope: :x:");
        assert_eq!(f.as_str(), "\"It's\" --- 3--5... 🚀 ❤ :nope: ❌");
        assert_eq!(f.source_range(0..1), Some(0..3));
        let at = f.as_str().find('🚀').unwrap();
        assert_eq!(f.source_range(at..at + 4), Some(26..34));
    }

    #[test]
    fn hostile_input_stays_linear_enough() {
        let units = [
            " _a", "[", "[a](", "![a](", "**x", "<!--", "`", "~~a", "<a ", "$a", r"\(", "&#",
        ];
        for unit in units {
            let md = unit.repeat(20_000);
            let started = std::time::Instant::now();
            let r = render_inline(&md);
            assert!(r.len() <= md.len());
            assert!(
                started.elapsed().as_secs() < 2,
                "{unit}: {:?}",
                started.elapsed()
            );
        }
    }
}
