//! Re-anchoring: shared annotations carry only their text, so after a load
//! each one is found again in the plan (`shared/WIRE.md` §7). The search runs
//! over the blocks' contents in the order upstream's portal searches the
//! rendered page:
//!
//! 1. **exact**, inside one block (the first block containing it wins);
//! 2. **across blocks**, in the blocks' contents concatenated with nothing
//!    between them (what the page's `textContent` reads);
//! 3. **whitespace-normalised**: runs of whitespace become one space and the
//!    ends are trimmed on both sides, blocks joined by a line break, with an
//!    index map back to the original text.
//!
//! The first occurrence in document order wins, so duplicated text always
//! binds to its first occurrence. Global comments and annotations made on
//! diff content are not anchored, as upstream skips them.

use serde::Serialize;
use share_codec::{Annotation, AnnotationType};

use crate::blocks::{Block, parse_blocks};
use crate::text::{collapse_spaces, is_js_space, utf16_len};

/// How an annotation's text was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnchorHow {
    /// Verbatim inside one block.
    Exact,
    /// Verbatim, spanning two or more blocks.
    CrossBlock,
    /// After collapsing whitespace on both sides.
    Normalized,
    /// Not in the plan (or the text is empty).
    NotFound,
}

/// Where an annotation's text sits in the plan. Offsets are byte offsets into
/// a block's `content` (always on `char` boundaries); lines are 1-based
/// source lines (see [`Block::line_at`]).
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
        Self {
            found: false,
            how: AnchorHow::NotFound,
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
    /// start block and `start_offset`/`end_offset` to the match in UTF-16
    /// code units (JavaScript string offsets, as upstream's editor stores
    /// them); unfound ones have `block_id` `""` and offsets 0; skipped ones
    /// (global, diff content) are unchanged.
    pub annotations: Vec<Annotation>,
    /// Per annotation: `None` when skipped, else where its text was found.
    pub anchors: Vec<Option<Anchor>>,
}

impl Reanchored {
    /// The annotations whose text was not found: (index, annotation).
    pub fn not_found(&self) -> impl Iterator<Item = (usize, &Annotation)> {
        self.anchors
            .iter()
            .zip(&self.annotations)
            .enumerate()
            .filter(|(_, (anchor, _))| anchor.as_ref().is_some_and(|a| !a.found))
            .map(|(i, (_, ann))| (i, ann))
    }
}

/// Parses `markdown` and re-anchors `annotations` in it.
pub fn reanchor(markdown: &str, annotations: &[Annotation]) -> Reanchored {
    reanchor_blocks(parse_blocks(markdown), annotations)
}

/// Re-anchors `annotations` in already parsed blocks.
pub fn reanchor_blocks(blocks: Vec<Block>, annotations: &[Annotation]) -> Reanchored {
    let anchors = anchor_annotations(&blocks, annotations);
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
/// annotations with a diff context).
pub fn anchor_annotations(blocks: &[Block], annotations: &[Annotation]) -> Vec<Option<Anchor>> {
    let index = SearchIndex::new(blocks);
    annotations
        .iter()
        .map(|ann| is_anchored(ann).then(|| index.find(&ann.original_text)))
        .collect()
}

/// Anchors one annotation (`None` when it is skipped).
pub fn anchor_annotation(blocks: &[Block], annotation: &Annotation) -> Option<Anchor> {
    is_anchored(annotation).then(|| find_text(blocks, &annotation.original_text))
}

/// Finds `needle` in the blocks (see the module docs for the search order).
/// An empty needle is never found.
pub fn find_text(blocks: &[Block], needle: &str) -> Anchor {
    SearchIndex::new(blocks).find(needle)
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

/// The blocks' text, prepared once for many searches.
struct SearchIndex<'b> {
    blocks: &'b [Block],
    /// Contents concatenated with nothing between them.
    joined: String,
    /// Where each block starts in `joined`.
    starts: Vec<usize>,
    /// Where each block starts in the contents joined by `\n`.
    spaced_starts: Vec<usize>,
    /// The `\n`-joined contents, whitespace-normalised.
    normalized: String,
    /// For each byte of `normalized`, the byte of the `\n`-joined text that
    /// produced it.
    normalized_map: Vec<usize>,
}

impl<'b> SearchIndex<'b> {
    fn new(blocks: &'b [Block]) -> Self {
        let mut joined = String::new();
        let mut starts = Vec::with_capacity(blocks.len());
        let mut spaced = String::new();
        let mut spaced_starts = Vec::with_capacity(blocks.len());
        for (i, block) in blocks.iter().enumerate() {
            starts.push(joined.len());
            joined.push_str(&block.content);
            if i > 0 {
                spaced.push('\n');
            }
            spaced_starts.push(spaced.len());
            spaced.push_str(&block.content);
        }
        let (normalized, normalized_map) = normalize_with_map(&spaced);
        Self {
            blocks,
            joined,
            starts,
            spaced_starts,
            normalized,
            normalized_map,
        }
    }

    fn find(&self, needle: &str) -> Anchor {
        if needle.is_empty() {
            return Anchor::not_found();
        }
        for (b, block) in self.blocks.iter().enumerate() {
            if let Some(at) = block.content.find(needle) {
                return self.anchor(AnchorHow::Exact, (b, at), (b, at + needle.len()));
            }
        }
        if let Some(at) = self.joined.find(needle) {
            let start = locate(&self.starts, at);
            let end = locate_end(&self.starts, at + needle.len());
            return self.anchor(AnchorHow::CrossBlock, start, end);
        }
        let normalized_needle = collapse_spaces(needle);
        if normalized_needle.is_empty() {
            return Anchor::not_found();
        }
        if let Some(at) = self.normalized.find(&normalized_needle) {
            let end = at + normalized_needle.len();
            let last_char = self.normalized[..end]
                .chars()
                .next_back()
                .map_or(1, char::len_utf8);
            let src_start = self.normalized_map[at];
            let src_end = self.normalized_map[end - last_char] + last_char;
            let start = locate(&self.spaced_starts, src_start);
            let end = locate_end(&self.spaced_starts, src_end);
            return self.anchor(AnchorHow::Normalized, start, end);
        }
        Anchor::not_found()
    }

    fn anchor(&self, how: AnchorHow, (sb, so): (usize, usize), (eb, eo): (usize, usize)) -> Anchor {
        let start_block = &self.blocks[sb];
        let end_block = &self.blocks[eb];
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
}
