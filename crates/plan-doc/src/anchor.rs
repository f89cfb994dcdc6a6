//! Re-anchoring: shared annotations carry only their text, so after a load
//! each one is found again in the plan, by the stages below. Reviewers
//! select text in the *rendered* plan, so the search runs over two texts per
//! block: its source (`content`) and its rendered text
//! ([`Block::rendered_text`]: `**JWT**` reads `JWT`, `[docs](u)` reads
//! `docs`, `\*` reads `*`), in this order:
//!
//! 1. **exact in one block's source** (the first block containing it wins);
//! 2. **exact in one block's rendered text** ([`AnchorHow::Rendered`]);
//! 3. **across blocks**: in the blocks' sources concatenated with nothing
//!    between them, then in their rendered texts concatenated (what the
//!    page's `textContent` reads);
//! 4. **whitespace-normalised**: runs of whitespace become one space and the
//!    ends are trimmed on both sides, blocks joined by a line break, with an
//!    index map back; sources first, then rendered texts;
//! 5. **transformed**: upstream's plain-text transform (emoji shortcodes,
//!    smart punctuation) folded out of both sides, so curly quotes, dashes
//!    and `…` match what was typed as `"`, `--` and `...`, and `:rocket:`
//!    matches 🚀; the needle is also tried rendered itself (a quote of the
//!    markdown source). Steps 2–4 run again over these folded rendered texts.
//!
//! Within each step the first occurrence in document order wins, so
//! duplicated text always binds to its first occurrence. Whatever text
//! matched, the [`Anchor`] reports source offsets and lines: a rendered match
//! is mapped back through the rendered text's map, from the source of its
//! first character to the end of the source of its last one. Global comments
//! and annotations made on diff content are not anchored, as upstream skips
//! them.
//!
//! The work is bounded. Each text searched is prepared once per document
//! (joined, normalised, folded) along with a set of the 4-byte sequences it
//! holds, so a needle with a sequence the text lacks is known absent
//! without a scan (most text that is not in the plan); the rest is found
//! with one `memmem` scan per text; a text quoted by several annotations is
//! searched once. Scans are charged against a budget
//! ([`DEFAULT_SEARCH_BUDGET`] bytes per re-anchoring): once it is spent,
//! the annotations still to be searched are reported
//! [`AnchorHow::NotSearched`] instead of being searched, so a huge plan with
//! thousands of annotations that are not in it cannot keep a reader busy
//! for minutes.

use std::cell::OnceCell;
use std::collections::HashMap;

use memchr::memmem::Finder;
use serde::Serialize;
use share_codec::{Annotation, AnnotationType};

use crate::blocks::{Block, parse_blocks};
use crate::render::{RenderedText, fold_plain_text, render_inline};
use crate::text::{collapse_spaces, is_js_space, utf16_len};

/// How an annotation's text was found (the search step that found it; see
/// the module docs for the order). The JSON names are kebab-case (`"exact"`,
/// `"rendered"`, `"cross-block"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnchorHow {
    /// Verbatim in one block's source (`content`).
    Exact,
    /// Verbatim in one block's rendered text (the selection spans inline
    /// markup: `Use JWT tokens` in `Use **JWT** tokens`).
    Rendered,
    /// Verbatim, spanning two or more blocks: in the sources concatenated,
    /// or else in the rendered texts concatenated.
    CrossBlock,
    /// After collapsing whitespace on both sides, in the sources or else in
    /// the rendered texts (blocks joined by a line break).
    Normalized,
    /// After folding upstream's plain-text transform (smart punctuation,
    /// emoji shortcodes) out of both the needle and the rendered texts, or
    /// after rendering the needle itself.
    Transformed,
    /// Not in the plan (or the text is empty).
    NotFound,
    /// Not looked for (or not to the end): the re-anchoring's search budget
    /// was spent before its turn (see [`DEFAULT_SEARCH_BUDGET`]).
    NotSearched,
}

/// How many bytes of plan text one re-anchoring may scan in all: 8 GiB, a
/// few seconds of searching at most, some 1 600 full passes over a text of
/// a 5 MB plan. Text that is not in the plan is mostly ruled out without a
/// scan, and each distinct text is searched once, so real reviews stay far
/// below it.
pub const DEFAULT_SEARCH_BUDGET: u64 = 8 << 30;

/// Where an annotation's text sits in the plan. Offsets are byte offsets into
/// a block's `content` (always on `char` boundaries), also when the text was
/// found in the rendered text; lines are 1-based source lines (see
/// [`Block::line_at`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchor {
    /// Whether the text was found (`how != NotFound`).
    pub found: bool,
    /// Which search step found it.
    pub how: AnchorHow,
    /// The block the match starts in (`""` when not found).
    pub block_id: String,
    /// Where the match starts in that block's content.
    pub start_offset: usize,
    /// Where the match ends in the start block's content (exclusive); the
    /// content's length when the match continues into later blocks.
    pub end_offset: usize,
    /// The block the match ends in (the start block for one-block matches).
    pub end_block_id: String,
    /// Where the match ends in the end block's content (exclusive).
    pub end_block_offset: usize,
    /// Source line of the match's first character (0 when not found).
    pub start_line: usize,
    /// Source line of the match's last character (0 when not found).
    pub end_line: usize,
}

impl Anchor {
    fn not_found() -> Self {
        Self::missing(AnchorHow::NotFound)
    }

    fn missing(how: AnchorHow) -> Self {
        Self {
            found: false,
            how,
            block_id: String::new(),
            start_offset: 0,
            end_offset: 0,
            end_block_id: String::new(),
            end_block_offset: 0,
            start_line: 0,
            end_line: 0,
        }
    }
}

/// Annotations re-anchored against a plan, with the blocks they now refer to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reanchored {
    /// The plan's blocks.
    pub blocks: Vec<Block>,
    /// The annotations, in input order. Found ones have `block_id` set to the
    /// start block and `start_offset`/`end_offset` to the match in the
    /// block's source `content`, in UTF-16 code units (JavaScript string
    /// offsets); unfound ones have `block_id` `""` and offsets 0; skipped ones
    /// (global, diff content) are unchanged.
    pub annotations: Vec<Annotation>,
    /// Per annotation: `None` when skipped, else where its text was found.
    pub anchors: Vec<Option<Anchor>>,
}

impl Reanchored {
    /// How many annotations were not searched because the search budget ran
    /// out (they are also among [`Reanchored::not_found`]).
    pub fn not_searched(&self) -> usize {
        self.anchors
            .iter()
            .flatten()
            .filter(|a| a.how == AnchorHow::NotSearched)
            .count()
    }

    /// The annotations whose text was not found (or not searched): (index, annotation).
    pub fn not_found(&self) -> impl Iterator<Item = (usize, &Annotation)> {
        self.anchors
            .iter()
            .zip(&self.annotations)
            .enumerate()
            .filter(|(_, (anchor, _))| anchor.as_ref().is_some_and(|a| !a.found))
            .map(|(i, (_, ann))| (i, ann))
    }
}

/// Parses `markdown` and re-anchors `annotations` in it, within
/// [`DEFAULT_SEARCH_BUDGET`].
pub fn reanchor(markdown: &str, annotations: &[Annotation]) -> Reanchored {
    reanchor_with_budget(markdown, annotations, DEFAULT_SEARCH_BUDGET)
}

/// [`reanchor`] scanning at most about `budget` bytes of plan text (a search
/// under way when it runs out finishes its scan).
pub fn reanchor_with_budget(markdown: &str, annotations: &[Annotation], budget: u64) -> Reanchored {
    reanchor_blocks_with_budget(parse_blocks(markdown), annotations, budget)
}

/// Re-anchors `annotations` in already parsed blocks, within
/// [`DEFAULT_SEARCH_BUDGET`].
pub fn reanchor_blocks(blocks: Vec<Block>, annotations: &[Annotation]) -> Reanchored {
    reanchor_blocks_with_budget(blocks, annotations, DEFAULT_SEARCH_BUDGET)
}

fn reanchor_blocks_with_budget(
    blocks: Vec<Block>,
    annotations: &[Annotation],
    budget: u64,
) -> Reanchored {
    let anchors = anchor_annotations_with_budget(&blocks, annotations, budget);
    let annotations = annotations
        .iter()
        .zip(&anchors)
        .map(|(ann, anchor)| {
            let mut ann = ann.clone();
            match anchor {
                None => {}
                Some(a) if a.found => {
                    let content = blocks
                        .iter()
                        .find(|b| b.id == a.block_id)
                        .map_or("", |b| b.content.as_str());
                    ann.block_id.clone_from(&a.block_id);
                    ann.start_offset = utf16_offset(content, a.start_offset);
                    ann.end_offset = utf16_offset(content, a.end_offset);
                }
                Some(_) => {
                    ann.block_id.clear();
                    ann.start_offset = 0;
                    ann.end_offset = 0;
                }
            }
            ann
        })
        .collect();
    Reanchored {
        blocks,
        annotations,
        anchors,
    }
}

/// Anchors each annotation (`None` for skipped ones: global comments and
/// annotations with a diff context), within [`DEFAULT_SEARCH_BUDGET`].
pub fn anchor_annotations(blocks: &[Block], annotations: &[Annotation]) -> Vec<Option<Anchor>> {
    anchor_annotations_with_budget(blocks, annotations, DEFAULT_SEARCH_BUDGET)
}

/// [`anchor_annotations`] scanning at most about `budget` bytes of plan text;
/// the annotations whose turn comes after it is spent are
/// [`AnchorHow::NotSearched`].
pub fn anchor_annotations_with_budget(
    blocks: &[Block],
    annotations: &[Annotation],
    budget: u64,
) -> Vec<Option<Anchor>> {
    let index = SearchIndex::new(blocks);
    let mut budget = Budget { left: budget };
    let mut seen: HashMap<&str, Anchor> = HashMap::new();
    annotations
        .iter()
        .map(|ann| {
            is_anchored(ann).then(|| {
                let needle = ann.original_text.as_str();
                if let Some(anchor) = seen.get(needle) {
                    return anchor.clone();
                }
                let anchor = index.find(needle, &mut budget);
                seen.insert(needle, anchor.clone());
                anchor
            })
        })
        .collect()
}

/// Anchors one annotation (`None` when it is skipped). One search is
/// bounded by itself, so it has no budget.
pub fn anchor_annotation(blocks: &[Block], annotation: &Annotation) -> Option<Anchor> {
    is_anchored(annotation).then(|| find_text(blocks, &annotation.original_text))
}

/// Finds `needle` in the blocks (see the module docs for the search order).
/// An empty needle is never found.
pub fn find_text(blocks: &[Block], needle: &str) -> Anchor {
    SearchIndex::new(blocks).find(needle, &mut Budget { left: u64::MAX })
}

/// Upstream re-highlights every annotation that is not a global comment and
/// was not made on diff content.
fn is_anchored(ann: &Annotation) -> bool {
    ann.kind != Some(AnnotationType::GlobalComment)
        && ann.diff_context.as_deref().is_none_or(str::is_empty)
}

fn utf16_offset(content: &str, byte_offset: usize) -> u64 {
    let prefix = content.get(..byte_offset).unwrap_or(content);
    u64::try_from(utf16_len(prefix)).unwrap_or(u64::MAX)
}

/// Where a match sits in source terms: (block, byte offset in its content)
/// of the start, and of the exclusive end.
type Hit = ((usize, usize), (usize, usize));

/// One text per block (the sources, the rendered texts, or those folded),
/// prepared once for many searches.
struct Layer {
    /// Each block's text, with its map back to the block's content.
    texts: Vec<RenderedText>,
    /// The texts concatenated with nothing between them.
    joined: String,
    /// Where each block starts in `joined`.
    starts: Vec<usize>,
    /// Where each block starts in the texts joined by `\n`.
    spaced_starts: Vec<usize>,
    /// The `\n`-joined texts, whitespace-normalised.
    normalized: String,
    /// For each byte of `normalized`, the byte of the `\n`-joined text that
    /// produced it.
    normalized_map: Vec<usize>,
    /// The 4-byte sequences of `joined`.
    joined_grams: Grams,
    /// The 4-byte sequences of `normalized`.
    normalized_grams: Grams,
}

/// What one scan of a layer's joined texts found.
#[derive(Default)]
struct Verbatim {
    /// The first occurrence inside one block's text (the first block holding it).
    in_block: Option<Hit>,
    /// The first occurrence in the joined texts, across blocks or not.
    joined: Option<Hit>,
}

impl Layer {
    fn new(texts: Vec<RenderedText>) -> Self {
        let mut joined = String::new();
        let mut starts = Vec::with_capacity(texts.len());
        let mut spaced = String::new();
        let mut spaced_starts = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            starts.push(joined.len());
            joined.push_str(text.as_str());
            if i > 0 {
                spaced.push('\n');
            }
            spaced_starts.push(spaced.len());
            spaced.push_str(text.as_str());
        }
        let (normalized, normalized_map) = normalize_with_map(&spaced);
        Self {
            joined_grams: Grams::new(joined.as_bytes()),
            normalized_grams: Grams::new(normalized.as_bytes()),
            texts,
            joined,
            starts,
            spaced_starts,
            normalized,
            normalized_map,
        }
    }

    /// A match in this layer's texts, from (block, offset) to (block,
    /// exclusive offset), mapped to the blocks' sources.
    fn to_source(&self, (sb, so): (usize, usize), (eb, eo): (usize, usize)) -> Option<Hit> {
        let start = self.texts.get(sb)?.source_start(so)?;
        let end = self.texts.get(eb)?.source_end(eo)?;
        Some(((sb, start), (eb, end)))
    }

    /// One scan of the joined texts for `needle`: its first occurrence
    /// inside one block (that block's first, in the first block holding
    /// it) and its first occurrence at all. Each occurrence that crosses a
    /// block boundary before the first one inside a block restarts the scan
    /// one byte further.
    fn find_verbatim(&self, needle: &str, budget: &mut Budget) -> Result<Verbatim, OutOfBudget> {
        let mut found = Verbatim::default();
        if !self.joined_grams.may_contain(needle.as_bytes()) {
            return Ok(found);
        }
        let finder = Finder::new(needle);
        let mut from = 0;
        while let Some(at) = budget.scan(self.joined.as_bytes(), from, &finder)? {
            if from == 0 {
                let end = at + needle.len();
                found.joined =
                    self.to_source(locate(&self.starts, at), locate_end(&self.starts, end));
            }
            let (b, offset) = locate(&self.starts, at);
            if self
                .texts
                .get(b)
                .is_some_and(|t| offset + needle.len() <= t.len())
                && let Some(hit) = self.to_source((b, offset), (b, offset + needle.len()))
            {
                found.in_block = Some(hit);
                break;
            }
            from = at + 1;
        }
        Ok(found)
    }

    /// The first occurrence of an already normalised needle in the
    /// normalised `\n`-joined texts.
    fn find_normalized(
        &self,
        normalized_needle: &str,
        budget: &mut Budget,
    ) -> Result<Option<Hit>, OutOfBudget> {
        if !self
            .normalized_grams
            .may_contain(normalized_needle.as_bytes())
        {
            return Ok(None);
        }
        let finder = Finder::new(normalized_needle);
        let Some(at) = budget.scan(self.normalized.as_bytes(), 0, &finder)? else {
            return Ok(None);
        };
        Ok(self.normalized_hit(at, normalized_needle.len()))
    }

    /// The match of `len` bytes at `at` in `normalized`, mapped to the sources.
    fn normalized_hit(&self, at: usize, len: usize) -> Option<Hit> {
        let end = at + len;
        let last_char = self
            .normalized
            .get(..end)?
            .chars()
            .next_back()
            .map_or(1, char::len_utf8);
        let src_start = *self.normalized_map.get(at)?;
        let src_end = self.normalized_map.get(end - last_char)? + last_char;
        let start = locate(&self.spaced_starts, src_start);
        let end = locate_end(&self.spaced_starts, src_end);
        self.to_source(start, end)
    }
}

/// The bytes of text the searches of one re-anchoring may still scan.
struct Budget {
    left: u64,
}

/// The budget ran out before a search.
struct OutOfBudget;

impl Budget {
    /// The first occurrence of `finder`'s needle in `hay` at or after
    /// `from`, charging the bytes looked at (to the end of the match, or of
    /// `hay`). A scan is started only while some budget is left.
    fn scan(
        &mut self,
        hay: &[u8],
        from: usize,
        finder: &Finder<'_>,
    ) -> Result<Option<usize>, OutOfBudget> {
        if self.left == 0 {
            return Err(OutOfBudget);
        }
        let rest = hay.get(from..).unwrap_or_default();
        let found = finder.find(rest);
        let scanned = found.map_or(rest.len(), |at| at + finder.needle().len());
        self.left = self
            .left
            .saturating_sub(u64::try_from(scanned.max(1)).unwrap_or(u64::MAX));
        Ok(found.map(|at| from + at))
    }
}

/// Which 4-byte sequences a text holds, hashed into a bit set (four to
/// eight bits per byte of text, at most 32 MiB): a needle holding a sequence that is not in the
/// set is not in the text. Needles shorter than 4 bytes are never ruled out.
struct Grams {
    bits: Vec<u64>,
    shift: u32,
}

impl Grams {
    const LEN: usize = 4;

    fn new(text: &[u8]) -> Self {
        let bits = (text.len().saturating_mul(4))
            .clamp(1 << 12, 1 << 28)
            .next_power_of_two();
        let mut grams = Self {
            bits: vec![0; bits / 64],
            shift: 32 - bits.trailing_zeros(),
        };
        for window in text.windows(Self::LEN) {
            let bit = grams.bit(window);
            if let Some(word) = grams.bits.get_mut(bit / 64) {
                *word |= 1 << (bit % 64);
            }
        }
        grams
    }

    fn bit(&self, window: &[u8]) -> usize {
        let mut gram = [0u8; 4];
        gram.copy_from_slice(window);
        let hash = u32::from_le_bytes(gram).wrapping_mul(0x9E37_79B1);
        (hash >> self.shift) as usize
    }

    fn may_contain(&self, needle: &[u8]) -> bool {
        needle.windows(Self::LEN).all(|window| {
            let bit = self.bit(window);
            self.bits
                .get(bit / 64)
                .is_some_and(|word| word & (1 << (bit % 64)) != 0)
        })
    }
}

/// The blocks' texts, prepared once for many searches; the rendered and
/// folded layers are built on first use.
struct SearchIndex<'b> {
    blocks: &'b [Block],
    source: Layer,
    rendered: OnceCell<Layer>,
    folded: OnceCell<Layer>,
}

impl<'b> SearchIndex<'b> {
    fn new(blocks: &'b [Block]) -> Self {
        let source = blocks
            .iter()
            .map(|b| RenderedText::identity(&b.content))
            .collect();
        Self {
            blocks,
            source: Layer::new(source),
            rendered: OnceCell::new(),
            folded: OnceCell::new(),
        }
    }

    fn rendered(&self) -> &Layer {
        self.rendered
            .get_or_init(|| Layer::new(self.blocks.iter().map(Block::rendered_text).collect()))
    }

    fn folded(&self) -> &Layer {
        self.folded.get_or_init(|| {
            let folded = self
                .rendered()
                .texts
                .iter()
                .map(|text| text.compose(fold_plain_text(text.as_str())))
                .collect();
            Layer::new(folded)
        })
    }

    fn find(&self, needle: &str, budget: &mut Budget) -> Anchor {
        match self.search(needle, budget) {
            Ok(Some((how, hit))) => self.anchor(how, hit),
            Ok(None) => Anchor::not_found(),
            Err(OutOfBudget) => Anchor::missing(AnchorHow::NotSearched),
        }
    }

    /// Steps 1-5 (see the module docs) for a non-empty needle.
    fn search(
        &self,
        needle: &str,
        budget: &mut Budget,
    ) -> Result<Option<(AnchorHow, Hit)>, OutOfBudget> {
        if needle.is_empty() {
            return Ok(None);
        }
        let source = self.source.find_verbatim(needle, budget)?;
        if let Some(hit) = source.in_block {
            return Ok(Some((AnchorHow::Exact, hit)));
        }
        let rendered_layer = self.rendered();
        let rendered = rendered_layer.find_verbatim(needle, budget)?;
        if let Some(hit) = rendered.in_block {
            return Ok(Some((AnchorHow::Rendered, hit)));
        }
        if let Some(hit) = source.joined.or(rendered.joined) {
            return Ok(Some((AnchorHow::CrossBlock, hit)));
        }
        let normalized_needle = collapse_spaces(needle);
        if normalized_needle.is_empty() {
            return Ok(None);
        }
        for layer in [&self.source, rendered_layer] {
            if let Some(hit) = layer.find_normalized(&normalized_needle, budget)? {
                return Ok(Some((AnchorHow::Normalized, hit)));
            }
        }
        Ok(self
            .find_transformed(needle, budget)?
            .map(|hit| (AnchorHow::Transformed, hit)))
    }

    /// Step 5: the needle folded (and the needle rendered, then folded)
    /// against the folded rendered texts: in one block, across blocks, then
    /// whitespace-normalised.
    fn find_transformed(
        &self,
        needle: &str,
        budget: &mut Budget,
    ) -> Result<Option<Hit>, OutOfBudget> {
        let folded_needle = fold_plain_text(needle).as_str().to_owned();
        let rendered_needle = fold_plain_text(render_inline(needle).as_str())
            .as_str()
            .to_owned();
        let mut needles = vec![folded_needle];
        if !needles.contains(&rendered_needle) {
            needles.push(rendered_needle);
        }
        needles.retain(|n| !n.is_empty());
        let layer = self.folded();
        let mut joined = None;
        for n in &needles {
            let found = layer.find_verbatim(n, budget)?;
            if found.in_block.is_some() {
                return Ok(found.in_block);
            }
            joined = joined.or(found.joined);
        }
        if joined.is_some() {
            return Ok(joined);
        }
        for n in needles.iter().map(|n| collapse_spaces(n)) {
            if n.is_empty() {
                continue;
            }
            if let Some(hit) = layer.find_normalized(&n, budget)? {
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }

    fn anchor(&self, how: AnchorHow, ((sb, so), (eb, eo)): Hit) -> Anchor {
        let (Some(start_block), Some(end_block)) = (self.blocks.get(sb), self.blocks.get(eb))
        else {
            return Anchor::not_found();
        };
        // Source maps are monotonic; clamp anyway so a slice is always valid.
        let eo = eo.min(end_block.content.len());
        let so = so.min(start_block.content.len());
        let eo = if sb == eb { eo.max(so) } else { eo };
        let last_char = end_block.content[..eo]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i);
        Anchor {
            found: true,
            how,
            block_id: start_block.id.clone(),
            start_offset: so,
            end_offset: if sb == eb {
                eo
            } else {
                start_block.content.len()
            },
            end_block_id: end_block.id.clone(),
            end_block_offset: eo,
            start_line: start_block.line_at(so),
            end_line: end_block.line_at(last_char),
        }
    }
}

/// The block holding byte `pos` of a joined text, and the offset inside it
/// (empty blocks share their start with the next block, so take the last).
fn locate(starts: &[usize], pos: usize) -> (usize, usize) {
    let b = starts.partition_point(|&s| s <= pos).saturating_sub(1);
    (b, pos - starts[b])
}

/// [`locate`] for an exclusive end: the block holding the byte before it.
fn locate_end(starts: &[usize], end: usize) -> (usize, usize) {
    let (b, off) = locate(starts, end.saturating_sub(1));
    (b, off + 1)
}

/// `s` with whitespace runs collapsed to one space and the ends trimmed, and
/// for each output byte the input byte it came from.
fn normalize_with_map(s: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len());
    let mut pending_space = None;
    for (i, c) in s.char_indices() {
        if is_js_space(c) {
            pending_space.get_or_insert(i);
            continue;
        }
        if let Some(space) = pending_space.take()
            && !out.is_empty()
        {
            out.push(' ');
            map.push(space);
        }
        out.push(c);
        map.extend(std::iter::repeat_n(i, c.len_utf8()));
    }
    (out, map)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "# Auth plan\n\nAdd auth middleware to all\nprotected routes.\n\nAdd auth middleware again.\n\n- item one\n- item two\n\n```ts\nconst  x = 1;\n```\n";

    fn comment(text: &str) -> Annotation {
        Annotation {
            kind: Some(AnnotationType::Comment),
            original_text: text.to_owned(),
            text: Some("c".into()),
            ..Annotation::default()
        }
    }

    fn slice<'a>(blocks: &'a [Block], a: &Anchor) -> &'a str {
        let b = blocks.iter().find(|b| b.id == a.block_id).unwrap();
        &b.content[a.start_offset..a.end_offset]
    }

    #[test]
    fn exact_match_inside_one_block() {
        let blocks = parse_blocks(PLAN);
        let a = find_text(&blocks, "middleware to all\nprotected");
        assert_eq!(
            (a.how, a.block_id.as_str(), a.start_offset),
            (AnchorHow::Exact, "block-1", 9)
        );
        assert_eq!(slice(&blocks, &a), "middleware to all\nprotected");
        assert_eq!((a.start_line, a.end_line), (3, 4));
        assert_eq!(a.end_block_id, "block-1");
    }

    #[test]
    fn a_match_inside_a_block_wins_over_an_earlier_one_across_blocks() {
        // The joined sources read "abc abc": the first "bc" spans both blocks.
        let blocks = parse_blocks("ab\n\nc abc\n");
        let a = find_text(&blocks, "bc");
        assert_eq!(
            (a.how, a.block_id.as_str(), a.start_offset, a.end_offset),
            (AnchorHow::Exact, "block-1", 3, 5)
        );
        // Overlapping occurrences are all seen: "aa" crosses at 0, then is whole at 1.
        let blocks = parse_blocks("a\n\naa\n");
        let a = find_text(&blocks, "aa");
        assert_eq!(
            (a.how, a.block_id.as_str(), a.start_offset),
            (AnchorHow::Exact, "block-1", 0)
        );
        assert_eq!(find_text(&blocks, "aaa").how, AnchorHow::CrossBlock);
    }

    #[test]
    fn the_gram_index_never_rules_out_text_that_is_there() {
        let text = "Café 😀 plan — with  spaces\tand tabs";
        let grams = Grams::new(text.as_bytes());
        for start in 0..text.len() {
            for end in start + 1..=text.len() {
                assert!(grams.may_contain(&text.as_bytes()[start..end]));
            }
        }
        assert!(!grams.may_contain(b"rate limiting"));
        assert!(
            grams.may_contain(b"xyz"),
            "shorter than a gram: not ruled out"
        );
    }

    #[test]
    fn duplicate_text_binds_to_the_first_occurrence() {
        let blocks = parse_blocks(PLAN);
        let a = find_text(&blocks, "Add auth middleware");
        assert_eq!(
            (a.block_id.as_str(), a.start_offset, a.start_line),
            ("block-1", 0, 3)
        );
    }

    #[test]
    fn text_across_a_paragraph_boundary_is_found_in_the_joined_text() {
        let blocks = parse_blocks(PLAN);
        let a = find_text(&blocks, "routes.Add auth");
        assert_eq!(a.how, AnchorHow::CrossBlock);
        assert_eq!(
            (a.block_id.as_str(), a.end_block_id.as_str()),
            ("block-1", "block-2")
        );
        assert_eq!(slice(&blocks, &a), "routes.");
        assert_eq!(a.end_block_offset, "Add auth".len());
        assert_eq!((a.start_line, a.end_line), (4, 6));
    }

    #[test]
    fn text_across_list_items_with_a_line_break_is_found_normalised() {
        let blocks = parse_blocks(PLAN);
        let a = find_text(&blocks, "item one\nitem two");
        assert_eq!(a.how, AnchorHow::Normalized);
        assert_eq!(
            (a.block_id.as_str(), a.start_offset, a.end_offset),
            ("block-3", 0, 8)
        );
        assert_eq!(
            (a.end_block_id.as_str(), a.end_block_offset),
            ("block-4", 8)
        );
        assert_eq!((a.start_line, a.end_line), (8, 9));
        let glued = find_text(&blocks, "oneitem");
        assert_eq!(
            (glued.how, glued.block_id.as_str()),
            (AnchorHow::CrossBlock, "block-3")
        );
    }

    #[test]
    fn whitespace_differences_are_found_normalised() {
        let blocks = parse_blocks(PLAN);
        let a = find_text(&blocks, "  to all protected\n\troutes. ");
        assert_eq!(a.how, AnchorHow::Normalized);
        assert_eq!(slice(&blocks, &a), "to all\nprotected routes.");
        let code = find_text(&blocks, "const x = 1;");
        assert_eq!(
            (code.how, code.block_id.as_str(), code.start_line),
            (AnchorHow::Normalized, "block-5", 12)
        );
        assert_eq!(slice(&blocks, &code), "const  x = 1;");
    }

    #[test]
    fn missing_or_empty_text_is_not_found() {
        let blocks = parse_blocks(PLAN);
        assert_eq!(find_text(&blocks, "rate limiting"), Anchor::not_found());
        assert!(!find_text(&blocks, "").found);
        assert!(!find_text(&blocks, " \n ").found);
        assert!(!find_text(&[], "x").found);
    }

    #[test]
    fn global_comments_and_diff_annotations_are_skipped() {
        let global = Annotation {
            kind: Some(AnnotationType::GlobalComment),
            text: Some("overall".into()),
            ..Annotation::default()
        };
        let diff = Annotation {
            diff_context: Some("removed".into()),
            ..comment("item one")
        };
        let r = reanchor(
            PLAN,
            &[
                global.clone(),
                diff.clone(),
                comment("item two"),
                comment("nowhere"),
            ],
        );
        assert_eq!(r.anchors[0], None);
        assert_eq!(r.anchors[1], None);
        assert_eq!(r.annotations[0], global);
        assert_eq!(r.annotations[1], diff);
        assert_eq!(r.annotations[2].block_id, "block-4");
        assert_eq!(r.not_found().map(|(i, _)| i).collect::<Vec<_>>(), [3]);
        assert_eq!(r.annotations[3].block_id, "");
    }

    #[test]
    fn reanchor_writes_utf16_offsets_and_clears_stale_ids() {
        let stale = Annotation {
            block_id: "block-9".into(),
            start_offset: 7,
            ..comment("gone")
        };
        let r = reanchor("# Café 😀 plan\n", &[comment("plan"), stale]);
        assert_eq!(
            r.anchors[0].as_ref().map(|a| a.start_offset),
            Some("Café 😀 ".len())
        );
        assert_eq!(
            (r.annotations[0].start_offset, r.annotations[0].end_offset),
            (8, 12)
        );
        assert_eq!(
            (
                r.annotations[1].block_id.as_str(),
                r.annotations[1].start_offset
            ),
            ("", 0)
        );
        assert_eq!(
            anchor_annotation(&r.blocks, &comment("Café")).map(|a| a.how),
            Some(AnchorHow::Exact)
        );
    }

    #[test]
    fn normalised_map_points_at_the_original_bytes() {
        let (n, map) = normalize_with_map("  a \n é  b ");
        assert_eq!(n, "a é b");
        assert_eq!(map, [2, 3, 6, 6, 8, 10]);
    }

    /// The source text an anchor covers, blocks joined by `sep`.
    fn covered(blocks: &[Block], a: &Anchor, sep: &str) -> String {
        let sb = blocks.iter().position(|b| b.id == a.block_id).unwrap();
        let eb = blocks.iter().position(|b| b.id == a.end_block_id).unwrap();
        if sb == eb {
            return blocks[sb].content[a.start_offset..a.end_offset].to_owned();
        }
        let mut parts = vec![&blocks[sb].content[a.start_offset..]];
        parts.extend(blocks[sb + 1..eb].iter().map(|b| b.content.as_str()));
        parts.push(&blocks[eb].content[..a.end_block_offset]);
        parts.join(sep)
    }

    const RENDERED_PLAN: &str = "# Auth plan\n\nIntro line.\nUse **JWT** tokens for `api/*` routes.\n\n- Rotate **signing keys** daily\n- Store **refresh tokens** encrypted\n\nRead [the guide](https://x.test/guide) before starting.\nMatch \\*.rs files only.\n";

    #[test]
    fn a_selection_across_bold_markup_is_found_in_the_rendered_text() {
        let blocks = parse_blocks(RENDERED_PLAN);
        let a = find_text(&blocks, "Use JWT tokens");
        assert_eq!(
            (a.how, a.block_id.as_str()),
            (AnchorHow::Rendered, "block-1")
        );
        assert_eq!(slice(&blocks, &a), "Use **JWT** tokens");
        assert_eq!((a.start_offset, a.end_offset), (12, 30));
        assert_eq!((a.start_line, a.end_line), (4, 4));
        // The annotation gets UTF-16 offsets into the source, and the export
        // labels the block by its source lines.
        let r = reanchor(RENDERED_PLAN, &[comment("Use JWT tokens")]);
        let ann = &r.annotations[0];
        assert_eq!(
            (ann.block_id.as_str(), ann.start_offset, ann.end_offset),
            ("block-1", 12, 30)
        );
        assert_eq!(
            crate::line_label(&r.blocks, ann).as_deref(),
            Some("lines 3–4")
        );
        // Across a line of the same paragraph.
        let two_lines = find_text(&blocks, "Intro line.\nUse JWT");
        assert_eq!(
            (two_lines.how, two_lines.start_line, two_lines.end_line),
            (AnchorHow::Rendered, 3, 4)
        );
        assert_eq!(slice(&blocks, &two_lines), "Intro line.\nUse **JWT");
    }

    #[test]
    fn a_selection_over_a_code_span_is_found_without_its_backticks() {
        let blocks = parse_blocks(RENDERED_PLAN);
        let a = find_text(&blocks, "tokens for api/* routes");
        assert_eq!(a.how, AnchorHow::Rendered);
        assert_eq!(slice(&blocks, &a), "tokens for `api/*` routes");
        let inside = find_text(&blocks, "api/*");
        assert_eq!(
            (inside.how, slice(&blocks, &inside)),
            (AnchorHow::Exact, "api/*")
        );
    }

    #[test]
    fn a_selection_spanning_a_link_label_and_plain_text_is_found() {
        let blocks = parse_blocks(RENDERED_PLAN);
        let a = find_text(&blocks, "Read the guide before starting.");
        assert_eq!(
            (a.how, a.block_id.as_str()),
            (AnchorHow::Rendered, "block-4")
        );
        assert_eq!(
            slice(&blocks, &a),
            "Read [the guide](https://x.test/guide) before starting."
        );
        assert_eq!((a.start_line, a.end_line), (9, 9));
        let tail = find_text(&blocks, "guide before");
        assert_eq!(slice(&blocks, &tail), "guide](https://x.test/guide) before");
    }

    #[test]
    fn an_escaped_character_is_found_as_shown() {
        let blocks = parse_blocks(RENDERED_PLAN);
        let a = find_text(&blocks, "Match *.rs files");
        assert_eq!(a.how, AnchorHow::Rendered);
        assert_eq!(slice(&blocks, &a), "Match \\*.rs files");
        assert_eq!((a.start_line, a.end_line), (10, 10));
    }

    #[test]
    fn a_selection_across_bold_phrases_in_two_list_items_is_found() {
        let blocks = parse_blocks(RENDERED_PLAN);
        // As the page's text content reads it (items glued) …
        let glued = find_text(&blocks, "keys dailyStore refresh tokens");
        assert_eq!(glued.how, AnchorHow::CrossBlock);
        assert_eq!(
            (glued.block_id.as_str(), glued.end_block_id.as_str()),
            ("block-2", "block-3")
        );
        assert_eq!(
            covered(&blocks, &glued, "|"),
            "keys** daily|Store **refresh tokens"
        );
        assert_eq!((glued.start_line, glued.end_line), (6, 7));
        // … and as a selection reads it (a line break between the items).
        let spaced = find_text(&blocks, "signing keys daily\nStore refresh");
        assert_eq!(spaced.how, AnchorHow::Normalized);
        assert_eq!(
            covered(&blocks, &spaced, "|"),
            "signing keys** daily|Store **refresh"
        );
        assert_eq!((spaced.start_line, spaced.end_line), (6, 7));
        assert_eq!(spaced.end_offset, blocks[2].content.len());
    }

    #[test]
    fn exact_source_matches_win_over_earlier_rendered_ones() {
        let blocks = parse_blocks("Use **JWT** tokens.\n\nUse JWT tokens.\n");
        let a = find_text(&blocks, "Use JWT tokens");
        assert_eq!(
            (a.how, a.block_id.as_str(), a.start_line),
            (AnchorHow::Exact, "block-1", 3)
        );
        let markup = find_text(&blocks, "**JWT**");
        assert_eq!(
            (markup.how, markup.block_id.as_str()),
            (AnchorHow::Exact, "block-0")
        );
        // Among rendered matches, the first block wins.
        let blocks = parse_blocks("Use **JWT** now.\n\nUse `JWT` now.\n");
        let first = find_text(&blocks, "Use JWT now");
        assert_eq!(
            (first.how, first.block_id.as_str()),
            (AnchorHow::Rendered, "block-0")
        );
    }

    #[test]
    fn typographic_and_emoji_differences_are_found_transformed() {
        let blocks = parse_blocks(
            "# Notes\n\nSay \"hello\" -- wait... it's pages 3--5 :rocket:\n\nIt’s “done” — really\n",
        );
        // Selected from the page, where upstream typesets the text.
        let a = find_text(&blocks, "Say “hello” -- wait… it’s pages 3–5 🚀");
        assert_eq!(
            (a.how, a.block_id.as_str(), a.start_line),
            (AnchorHow::Transformed, "block-1", 3)
        );
        assert_eq!(
            slice(&blocks, &a),
            "Say \"hello\" -- wait... it's pages 3--5 :rocket:"
        );
        // Typed with straight punctuation against typographic source.
        let b = find_text(&blocks, "It's \"done\" --- really");
        assert_eq!(
            (b.how, b.block_id.as_str()),
            (AnchorHow::Transformed, "block-2")
        );
        assert_eq!(slice(&blocks, &b), "It’s “done” — really");
        // And with whitespace differences on top.
        let c = find_text(&blocks, "wait…\n  it’s");
        assert_eq!(
            (c.how, slice(&blocks, &c)),
            (AnchorHow::Transformed, "wait... it's")
        );
    }

    #[test]
    fn a_needle_quoting_markdown_source_is_found_rendered() {
        let blocks = parse_blocks("Use **JWT** `tokens`\nfor **all**  routes.\n");
        let a = find_text(&blocks, "Use JWT `tokens` for **all** routes");
        assert_eq!(a.how, AnchorHow::Transformed);
        assert_eq!(
            slice(&blocks, &a),
            "Use **JWT** `tokens`\nfor **all**  routes"
        );
    }

    #[test]
    fn table_cells_and_html_blocks_are_found_as_rendered() {
        let blocks = parse_blocks(
            "| Key | Value |\n|---|---|\n| `ttl` | **15** min |\n\n<details>\n<summary>More &amp; less</summary>\n</details>\n",
        );
        let cell = find_text(&blocks, "15 min");
        assert_eq!(
            (cell.how, cell.block_id.as_str(), cell.start_line),
            (AnchorHow::Rendered, "block-0", 3)
        );
        assert_eq!(slice(&blocks, &cell), "15** min");
        let html = find_text(&blocks, "More & less");
        assert_eq!(
            (html.how, html.block_id.as_str(), html.start_line),
            (AnchorHow::Rendered, "block-1", 6)
        );
        assert_eq!(slice(&blocks, &html), "More &amp; less");
    }

    #[test]
    fn anchors_serialise_the_new_steps_in_kebab_case() {
        let blocks = parse_blocks("Use **JWT** tokens\n");
        let json = serde_json::to_value(find_text(&blocks, "JWT tokens")).unwrap();
        assert_eq!(json["how"], "rendered");
        assert_eq!(json["startLine"], 1);
        assert_eq!(
            serde_json::to_value(AnchorHow::Transformed).unwrap(),
            "transformed"
        );
    }

    #[test]
    fn rendered_text_joined_across_blocks_can_match_before_normalising() {
        // `</div>` renders as nothing, so the page reads `code #` then a line
        // break: the needle is verbatim in the rendered text across blocks.
        let blocks = parse_blocks("# `code` #\n</div>\nnext\n");
        let a = find_text(&blocks, " #\n");
        assert_eq!(a.how, AnchorHow::CrossBlock);
        assert_eq!(
            (
                a.block_id.as_str(),
                a.start_offset,
                a.end_block_id.as_str(),
                a.end_block_offset
            ),
            ("block-0", 6, "block-1", 7)
        );
        assert_eq!((a.start_line, a.end_line), (1, 2));
    }
}
