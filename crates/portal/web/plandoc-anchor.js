// Re-anchoring: where in the plan's blocks an annotation's quoted text is,
// found the way `planshare open` finds it, so the feedback export names the
// same lines and the portal's highlighter (highlighter.js) marks the same
// occurrence. Ported from `crates/plan-doc/src/anchor.rs`, including its
// bounds on the work a hostile plan can cause.
//
// Five steps, the first that finds the text wins, and within a step the
// first occurrence in document order: (1) verbatim in one block's source;
// (2) verbatim in one block's rendered text; (3) verbatim across blocks, in
// the sources joined with nothing between them, then in the rendered texts
// joined so; (4) whitespace-normalised (runs of whitespace as one space,
// ends trimmed, blocks joined by a line break), sources then rendered
// texts; (5) upstream's plain-text transform (emoji shortcodes, smart
// punctuation) folded out of the needle and of the rendered texts, the
// needle also rendered itself, and steps 2–4 again over those.
//
// The work is bounded as in plan-doc: each layer's texts are joined once,
// with a set of their short sequences (plan-doc's of 4 bytes, here of 4 and
// 8 units: text holding a sequence the layer lacks is absent without a
// scan), and every scan is charged to a budget
// (`{ left }`, in UTF-16 code units): a search that would start once it is
// spent throws NOT_SEARCHED.

import { collapseSpaces } from "{{plandoc-text.js}}";
import { Mapped, foldPlainText, renderInline, renderedText } from "{{plandoc-render.js}}";

/** Code units of plan text one re-anchoring may scan in all (about a
 * second of `indexOf`; hundreds of passes over a 5 MB plan). Text that is
 * not in the plan is mostly ruled out without a scan, and a text quoted by
 * several annotations is searched once. */
export const SEARCH_BUDGET = 2 ** 30;

/** Thrown by a search that would scan past its budget. */
export const NOT_SEARCHED = Symbol("not searched");

/** `text.indexOf(needle, from)`, charging the units looked at (to the end
 * of the match, or of the text) to `budget`; throws NOT_SEARCHED when
 * nothing is left before the scan. */
export function scanText(text, needle, from, budget) {
  if (budget.left <= 0) throw NOT_SEARCHED;
  const at = text.indexOf(needle, from);
  budget.left -= Math.max(1, at < 0 ? text.length - from : at + needle.length - from);
  return at;
}

/** 31^3 and 31^7 modulo 2^32: the weight of a sequence's first unit in
 * the polynomial hash of a 4- and an 8-unit sequence. */
const WEIGHT_4 = 29791;
const WEIGHT_8 = 1742810335;

/** The 4- and 8-unit sequences of a text, hashed into one bit set (about
 * eight bits per unit, at most 32 MiB): a needle holding a sequence that
 * is not in the set is not in the text. A needle of eight units or more is
 * checked by its 8-unit sequences (a text lacking one of its 4-unit
 * sequences lacks every 8-unit one around it, and prose shares far fewer
 * of them: a quote of the rendered text, `the plan` where the source has
 * `the **plan**`, is ruled out of the source without a scan), a shorter
 * one by its 4-unit sequences; shorter still, never ruled out. The hashes
 * roll: one multiplication per unit and sequence length. */
export class Grams {
  constructor(text) {
    let bits = 1 << 12;
    while (bits < text.length * 8 && bits < 2 ** 28) bits *= 2;
    this.shift = 32 - Math.log2(bits);
    const words = new Uint32Array(bits / 32);
    const shift = this.shift;
    let h4 = 0;
    let h8 = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      h4 = (Math.imul(h4 - Math.imul(i >= 4 ? text.charCodeAt(i - 4) : 0, WEIGHT_4), 31) + c) | 0;
      h8 = (Math.imul(h8 - Math.imul(i >= 8 ? text.charCodeAt(i - 8) : 0, WEIGHT_8), 31) + c) | 0;
      if (i >= 3) {
        const bit = Math.imul(h4, 0x9e3779b1) >>> shift;
        words[bit >>> 5] |= 1 << (bit & 31);
      }
      if (i >= 7) {
        const bit = Math.imul(h8 ^ 0x5bd1e995, 0x85ebca6b) >>> shift;
        words[bit >>> 5] |= 1 << (bit & 31);
      }
    }
    this.words = words;
  }

  mayContain(needle) {
    const { words, shift } = this;
    const long = needle.length >= 8;
    const size = long ? 8 : 4;
    const weight = long ? WEIGHT_8 : WEIGHT_4;
    let h = 0;
    for (let i = 0; i < needle.length; i++) {
      h = (Math.imul(h - Math.imul(i >= size ? needle.charCodeAt(i - size) : 0, weight), 31) + needle.charCodeAt(i)) | 0;
      if (i < size - 1) continue;
      const bit = long ? Math.imul(h ^ 0x5bd1e995, 0x85ebca6b) >>> shift : Math.imul(h, 0x9e3779b1) >>> shift;
      if (!(words[bit >>> 5] & (1 << (bit & 31)))) return false;
    }
    return true;
  }
}

/** Whether the UTF-16 unit `c` is whitespace to `\s`. */
export function isSpaceCode(c) {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 ||
    c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** `s` with whitespace runs as one space and trimmed, and for each unit of
 * the result the unit of `s` it came from (a space: the run's first). */
export function normalizeWithMap(s) {
  const out = collapseSpaces(s);
  const map = new Int32Array(out.length);
  let i = 0;
  while (i < s.length && isSpaceCode(s.charCodeAt(i))) i++;
  for (let j = 0; j < out.length; j++) {
    map[j] = i;
    if (isSpaceCode(s.charCodeAt(i))) {
      while (i < s.length && isSpaceCode(s.charCodeAt(i))) i++;
    } else {
      i++;
    }
  }
  return { out, map };
}

/** The block holding position `pos` of a joined text and the offset in it
 * (empty blocks share their start with the next one: take the last). */
function locate(starts, pos) {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] <= pos) lo = mid + 1;
    else hi = mid;
  }
  const b = Math.max(lo - 1, 0);
  return [b, pos - starts[b]];
}

/** `locate` for an exclusive end: the block holding the unit before it. */
function locateEnd(starts, end) {
  const [b, off] = locate(starts, Math.max(end - 1, 0));
  return [b, off + 1];
}

/** One text per block (sources, rendered or folded), prepared for search.
 * A hit is `[[startBlock, startOffset], [endBlock, endOffset]]` in the
 * blocks' sources. */
class Layer {
  constructor(texts) {
    this.texts = texts;
    this.joined = "";
    this.starts = [];
    this.spacedStarts = [];
    this.spaced = "";
    texts.forEach((t, i) => {
      this.starts.push(this.joined.length);
      this.joined += t.text;
      if (i > 0) this.spaced += "\n";
      this.spacedStarts.push(this.spaced.length);
      this.spaced += t.text;
    });
  }

  /** A layer whose texts read the same as this one's (with other maps to
   * the source), so its derived texts and sequence sets serve this one. */
  sameTextAs(other) {
    if (other.joined === this.joined && other.spaced === this.spaced) this.twin = other;
    return this;
  }

  get joinedGrams() {
    return (this._joinedGrams ??= this.twin?.joinedGrams ?? new Grams(this.joined));
  }

  /** The `\n`-joined texts whitespace-normalised, with the map back. */
  get normalized() {
    return (this._normalized ??= this.twin?.normalized ?? normalizeWithMap(this.spaced));
  }

  get normalizedGrams() {
    return (this._normalizedGrams ??= this.twin?.normalizedGrams ?? new Grams(this.normalized.out));
  }

  /** Whether a normalised needle may be in the normalised texts, as far as
   * the joined texts tell: normalising changes only whitespace, so each of
   * the needle's sequences without a space is in the joined texts
   * if it is in the normalised ones. Rules out most absent text without
   * building the normalised texts. */
  mayHoldNormalized(needle) {
    for (const piece of needle.split(" ")) {
      if (piece.length >= 4 && !this.joinedGrams.mayContain(piece)) return false;
    }
    return true;
  }

  toSource([sb, so], [eb, eo]) {
    const start = this.texts[sb]?.sourceStart(so) ?? null;
    const end = this.texts[eb]?.sourceEnd(eo) ?? null;
    return start === null || end === null ? null : [[sb, start], [eb, end]];
  }

  /** One scan of the joined texts: `{ inBlock, joined }`, the first
   * occurrence inside one block (the first block holding it) and the first
   * occurrence at all. An occurrence across a block boundary before the
   * first one inside a block restarts the scan one unit further. */
  findVerbatim(needle, budget) {
    const found = { inBlock: null, joined: null };
    if (!this.joinedGrams.mayContain(needle)) return found;
    for (let from = 0, at; (at = scanText(this.joined, needle, from, budget)) >= 0; from = at + 1) {
      if (from === 0) found.joined = this.toSource(locate(this.starts, at), locateEnd(this.starts, at + needle.length));
      const [b, offset] = locate(this.starts, at);
      if (offset + needle.length <= this.texts[b].text.length) {
        const hit = this.toSource([b, offset], [b, offset + needle.length]);
        if (hit) {
          found.inBlock = hit;
          break;
        }
      }
    }
    return found;
  }

  /** The first occurrence of a normalised needle in the normalised texts. */
  findNormalized(needle, budget) {
    if (!this.mayHoldNormalized(needle) || !this.normalizedGrams.mayContain(needle)) return null;
    const { out, map } = this.normalized;
    const at = scanText(out, needle, 0, budget);
    if (at < 0) return null;
    const start = locate(this.spacedStarts, map[at]);
    return this.toSource(start, locateEnd(this.spacedStarts, map[at + needle.length - 1] + 1));
  }
}

/** The blocks' texts for many searches; the rendered and folded layers are
 * built on first use. */
export class SearchIndex {
  constructor(blocks) {
    this.blocks = blocks;
    this.source = new Layer(blocks.map((b) => new Mapped(b.content)));
  }

  get rendered() {
    return (this._rendered ??= new Layer(this.blocks.map(renderedText)));
  }

  get folded() {
    this._folded ??= new Layer(this.rendered.texts.map((t) => t.compose(foldPlainText(t.text)))).sameTextAs(this.rendered);
    return this._folded;
  }

  /** The five steps for `needle` within `budget` (`{ left }`): `{ how,
   * hit }` or null; throws NOT_SEARCHED when the budget runs out. */
  search(needle, budget = { left: Infinity }) {
    if (!needle) return null;
    const source = this.source.findVerbatim(needle, budget);
    if (source.inBlock) return { how: "exact", hit: source.inBlock };
    const rendered = this.rendered.findVerbatim(needle, budget);
    if (rendered.inBlock) return { how: "rendered", hit: rendered.inBlock };
    const joined = source.joined ?? rendered.joined;
    if (joined) return { how: "cross-block", hit: joined };
    const normalized = collapseSpaces(needle);
    if (!normalized) return null;
    for (const layer of [this.source, this.rendered]) {
      const hit = layer.findNormalized(normalized, budget);
      if (hit) return { how: "normalized", hit };
    }
    const hit = this.findTransformed(needle, budget);
    return hit && { how: "transformed", hit };
  }

  /** Step 5: the needle folded (and rendered, then folded) against the
   * folded rendered texts: in one block, across blocks, then normalised. */
  findTransformed(needle, budget) {
    const needles = [foldPlainText(needle).text];
    const rendered = foldPlainText(renderInline(needle).text).text;
    if (rendered !== needles[0]) needles.push(rendered);
    const tries = needles.filter(Boolean);
    const layer = this.folded;
    let joined = null;
    for (const n of tries) {
      const found = layer.findVerbatim(n, budget);
      if (found.inBlock) return found.inBlock;
      joined ??= found.joined;
    }
    if (joined) return joined;
    for (const n of tries.map(collapseSpaces)) {
      if (!n) continue;
      const hit = layer.findNormalized(n, budget);
      if (hit) return hit;
    }
    return null;
  }

  /** Where `needle` is: `{found, how, blockId, startOffset, endOffset,
   * endBlockId, endBlockOffset}` (offsets into block contents); `how` is
   * "not-found", or "not-searched" when `budget` ran out first. */
  find(needle, budget = { left: Infinity }) {
    let found;
    try {
      found = this.search(needle, budget);
    } catch (error) {
      if (error !== NOT_SEARCHED) throw error;
      return missing("not-searched");
    }
    return found ? this.anchor(found.how, found.hit) : missing("not-found");
  }

  anchor(how, [[sb, so], [eb, eo]]) {
    const start = this.blocks[sb];
    const end = this.blocks[eb];
    if (!start || !end) return missing("not-found");
    const startOffset = Math.min(so, start.content.length);
    let endOffset = Math.min(eo, end.content.length);
    if (sb === eb) endOffset = Math.max(endOffset, startOffset);
    return {
      found: true, how, blockId: start.id, startOffset,
      endOffset: sb === eb ? endOffset : start.content.length,
      endBlockId: end.id, endBlockOffset: endOffset,
    };
  }
}

const missing = (how) => ({
  found: false, how, blockId: "", startOffset: 0, endOffset: 0, endBlockId: "", endBlockOffset: 0,
});

/** Global comments and annotations on diff content are never placed. */
const isPlaced = (a) => a.type !== "GLOBAL_COMMENT" && !a.diffContext;

/** Where `needle` is in the blocks (see `SearchIndex.find`), unbounded. */
export function findText(blocks, needle) {
  return new SearchIndex(blocks).find(needle);
}

/** Copies of the annotations, each re-found in the blocks by its
 * `originalText` within `budget` (code units scanned in all): `blockId`,
 * `startOffset` and `endOffset` set, or `""` and 0 when not found or not
 * searched (it then sorts first, without a line label). A text quoted by
 * several annotations is searched once. Global comments and diff
 * annotations are returned unchanged. */
export function anchorAnnotations(blocks, annotations, budget = SEARCH_BUDGET) {
  const index = new SearchIndex(blocks);
  const left = { left: budget };
  const seen = new Map();
  return annotations.map((annotation) => {
    if (!isPlaced(annotation)) return { ...annotation };
    const text = annotation.originalText ?? "";
    if (!seen.has(text)) seen.set(text, index.find(text, left));
    const { blockId, startOffset, endOffset } = seen.get(text);
    return { ...annotation, blockId, startOffset, endOffset };
  });
}
