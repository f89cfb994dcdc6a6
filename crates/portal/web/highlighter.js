// Re-finding annotations in the plan and highlighting them on the page.
//
// An annotation carries only the text a reviewer selected, so each one is
// looked for again. `planshare open` decides where an annotation is with
// plan-doc's five steps (verbatim in one block's source; verbatim in one
// block's rendered text; across blocks; whitespace-normalised; with
// upstream's typography and emoji transform folded out of both sides), and
// the portal must agree with it: text the CLI finds is highlighted, at the
// occurrence the CLI names. The page alone cannot give that answer. It
// shows marked's rendering, not the source, so a quote of the markdown
// (`**JWT**`) is not on it; it has no block boundaries in plan-doc's sense,
// so "in one block" and "across blocks" cannot be told apart; and marked
// renders a few constructs differently from upstream's viewer, whose
// rendering plan-doc models. So the portal takes the plan's markdown too:
//
// 1. Locate (pure, no DOM): the markdown is split into upstream's blocks and
//    searched with the search the feedback export uses (plandoc-blocks.js
//    and plandoc-anchor.js, ports of plan-doc held to it by
//    `crates/plan-doc/tests/js_ports.rs`). This gives the step, the blocks
//    and the source offsets `planshare open` gives, so the two can only
//    disagree where the ports do.
// 2. Place (pure, over the page's text as one string): the match is looked
//    for on the page as what it shows — its rendered text, else its source
//    text, else the annotation's own text — first verbatim, then with all
//    whitespace dropped on both sides (the page puts line breaks between
//    elements where plan-doc's rendered text has nothing, and the other
//    way round), then with typography and emoji folded as well (marked
//    shows `--` and `:rocket:` as typed). A text that occurs more than once
//    is placed at the same occurrence (its rank among the occurrences, in
//    the form compared) as the CLI's match holds in plan-doc's rendered
//    text, so duplicates bind where the CLI says.
// 3. Highlight (the DOM layer): the page's text nodes are indexed once, and
//    each placed range is wrapped in `<mark>`s bound to its annotation.
//
// Without markdown (a page built some other way) the page's text is
// searched as one block: the same steps, less the ones that need a source.
// An annotation that is found but whose match shows on the page as none of
// those texts (a quote of markup alone, or a construct marked renders
// otherwise) cannot be highlighted; it is reported apart (`unshown`).
//
// The work is bounded: the plan's layers are prepared once per pass (joined
// text, a set of short sequences that rules out most absent text without
// a scan), a text quoted by several annotations is looked up once, and
// every scan — locating and placing — is charged to one budget
// (SEARCH_BUDGET code units); annotations whose turn comes after it is
// spent are reported as not searched.

import { NOT_SEARCHED, SEARCH_BUDGET, SearchIndex, isSpaceCode, scanText } from "{{plandoc-anchor.js}}";
import { parseBlocks } from "{{plandoc-blocks.js}}";
import { foldPlainText } from "{{plandoc-render.js}}";

export { SEARCH_BUDGET };

// --- Locate and place (pure) -------------------------------------------------

/** `s` without its whitespace, and for each unit of the result the unit
 * of `s` it is. */
function squeezeWithMap(s) {
  const out = s.replace(/\s+/g, "");
  const map = new Int32Array(out.length);
  for (let i = 0, j = 0; j < out.length; i++) {
    if (!isSpaceCode(s.charCodeAt(i))) map[j++] = i;
  }
  return { out, map };
}

/** The forms texts are compared in when they do not match verbatim, both
 * without whitespace (the page and the plan's blocks put different
 * whitespace between elements: none, or line breaks): as they are, and with
 * typography and emoji folded (as the search's last step folds them). */
const FORMS = [
  { folded: false, of: (s) => ({ text: s, sourceStart: (k) => k, sourceEnd: (k) => k }) },
  { folded: true, of: foldPlainText },
];

/** `text` in a form, with for each unit of the result the range of `text`
 * it stands for. */
function inForm(form, text) {
  const mapped = form.of(text);
  const { out, map } = squeezeWithMap(mapped.text);
  return { out, start: (k) => mapped.sourceStart(map[k]), end: (k) => mapped.sourceEnd(map[k] + 1) };
}

/** How many occurrences of `needle` in `text` start before `pos`. */
function occurrencesBefore(text, needle, pos, budget) {
  let n = 0;
  for (let from = 0, at; from < pos && (at = scanText(text, needle, from, budget)) >= 0 && at < pos; from = at + 1) n++;
  return n;
}

/** The `rank`-th occurrence (from 0) of `needle` in `text`, or the last one
 * when there are fewer; -1 when there is none. */
function occurrence(text, needle, rank, budget) {
  let last = -1;
  for (let from = 0, n = 0, at; n <= rank && (at = scanText(text, needle, from, budget)) >= 0; from = at + 1, n++) {
    last = at;
  }
  return last;
}

/** A plan to find annotations in, and the page that shows it. `pageText`
 * is the page's text as one string (its text nodes in order); `markdown`
 * the plan's source, or null to search the page's text alone. Pure. */
export class PlanLocator {
  constructor(pageText, markdown = null) {
    this.pageText = pageText;
    this.pageOnly = markdown === null;
    this.blocks = this.pageOnly ? [{ id: "page", type: "code", content: pageText }] : parseBlocks(markdown);
    this.index = new SearchIndex(this.blocks);
    /** Each block id's first block. */
    this.blockAt = new Map();
    this.blocks.forEach((b, i) => {
      if (!this.blockAt.has(b.id)) this.blockAt.set(b.id, i);
    });
  }

  /** The page's text in a form (see FORMS), computed on first use. */
  page(form) {
    this._page ??= new Map();
    if (!this._page.has(form)) this._page.set(form, inForm(form, this.pageText));
    return this._page.get(form);
  }

  /** Re-finds `needle` within `budget` (`{ left }`): `{ anchor, range }`,
   * where `anchor` is the search's answer (`{found, how, blockId,
   * startOffset, endOffset, endBlockId, endBlockOffset}`, as
   * plandoc-anchor.js's `findText`; `how` is "not-searched" when the
   * budget ran out) and `range` is `[from, to)` in the page's text, or null when the
   * match could not be placed on the page. */
  locate(needle, budget = { left: Infinity }) {
    const anchor = this.index.find(needle, budget);
    if (!anchor.found) return { anchor, range: null };
    if (this.pageOnly) return { anchor, range: [anchor.startOffset, anchor.endBlockOffset] };
    try {
      return { anchor, range: this.place(anchor, needle, budget) };
    } catch (error) {
      if (error !== NOT_SEARCHED) throw error;
      return { anchor: { ...anchor, found: false, how: "not-searched" }, range: null };
    }
  }

  /** The blocks an anchor covers, each as [block index, from, to) in its content. */
  covered(anchor) {
    const sb = this.blockAt.get(anchor.blockId) ?? -1;
    const eb = this.blockAt.get(anchor.endBlockId) ?? -1;
    const parts = [];
    for (let b = sb; b <= eb; b++) {
      const from = b === sb ? anchor.startOffset : 0;
      const to = b === eb ? anchor.endBlockOffset : this.blocks[b].content.length;
      parts.push([b, from, to]);
    }
    return parts;
  }

  /** What the match shows: each covered block's rendered units whose source
   * lies inside the match, blocks joined by a line break. */
  shownText(anchor) {
    return this.covered(anchor)
      .map(([b, from, to]) => {
        const text = this.index.rendered.texts[b];
        if (!text.from) return text.text.slice(from, to);
        let shown = "";
        for (let k = 0; k < text.text.length; k++) {
          if (text.from[k] >= from && text.to[k] <= to) shown += text.text[k];
        }
        return shown;
      })
      .join("\n");
  }

  /** The match's source text, blocks joined by a line break. */
  sourceText(anchor) {
    return this.covered(anchor)
      .map(([b, from, to]) => this.blocks[b].content.slice(from, to))
      .join("\n");
  }

  /** The plan's rendered text (upstream's rendering, as plan-doc models
   * it; its blocks joined with nothing between them) in a form, computed
   * on first use: `{ out, map }`, the map giving each unit's position in
   * the joined text. */
  model(form) {
    this._model ??= new Map();
    if (!this._model.has(form)) {
      const layer = form.folded ? this.index.folded : this.index.rendered;
      this._model.set(form, squeezeWithMap(layer.joined));
    }
    return this._model.get(form);
  }

  /** Where the match starts in the plan's rendered text in a form. */
  startIn(form, anchor) {
    const layer = form.folded ? this.index.folded : this.index.rendered;
    const b = this.blockAt.get(anchor.blockId) ?? -1;
    const text = layer.texts[b];
    let k = 0;
    while (k < text.text.length && text.sourceStart(k) < anchor.startOffset) k++;
    const pos = layer.starts[b] + k;
    const { map } = this.model(form);
    let lo = 0;
    let hi = map.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (map[mid] < pos) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** `[from, to)` in the page's text for a found anchor, or null: for each
   * of what it shows, its source and the needle, the first verbatim
   * occurrence on the page when the match is the first occurrence in the
   * plan, else the occurrence of the same rank in each form (FORMS). */
  place(anchor, needle, budget) {
    const tries = [...new Set([this.shownText(anchor), this.sourceText(anchor), needle])].filter((t) => t.trim());
    for (const text of tries) {
      for (const form of FORMS) {
        const pin = squeezeWithMap(form.of(text).text).out;
        if (!pin) continue;
        const rank = occurrencesBefore(this.model(form).out, pin, this.startIn(form, anchor), budget);
        if (rank === 0 && !form.folded) {
          const at = scanText(this.pageText, text, 0, budget);
          if (at >= 0) return [at, at + text.length];
        }
        const page = this.page(form);
        const at = occurrence(page.out, pin, rank, budget);
        if (at >= 0) return [page.start(at), page.end(at + pin.length - 1)];
      }
    }
    return null;
  }
}

// --- The page (DOM) ----------------------------------------------------------

/** The text nodes of `root` and where each starts in their concatenation. */
export function textIndex(root) {
  const nodes = [];
  let text = "";
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    nodes.push({ node, start: text.length });
    text += node.data;
  }
  return { nodes, text };
}

/** The index of the text node holding character `pos` of the indexed text
 * (empty nodes share their start with the next one: the last one wins). */
function nodeAt(nodes, pos) {
  let lo = 0;
  let hi = nodes.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (nodes[mid].start <= pos) lo = mid + 1;
    else hi = mid;
  }
  return Math.max(0, lo - 1);
}

/** Wraps the text in `[from, to)` in `<mark>`s bound to `annotation`, and
 * keeps `index` right: each split node's parts take its place in the list
 * (a mark moves a node, it does not add or remove one). */
function wrap(index, [from, to], annotation) {
  const marks = [];
  const nodes = index.nodes;
  for (let i = nodeAt(nodes, from); i < nodes.length && nodes[i].start < to; i++) {
    const { node, start } = nodes[i];
    const end = start + node.data.length;
    if (end <= from) continue;
    const a = Math.max(from, start) - start;
    const b = Math.min(to, end) - start;
    if (a === b) continue;
    const parts = [];
    if (b < node.data.length) parts.push({ node: node.splitText(b), start: start + b });
    const target = a > 0 ? node.splitText(a) : node;
    parts.unshift({ node: target, start: start + a });
    if (a > 0) parts.unshift({ node, start });
    nodes.splice(i, 1, ...parts);
    i += parts.length - 1;
    const mark = document.createElement("mark");
    mark.className = `annotation-highlight ${annotation.type === "DELETION" ? "deletion" : "comment"}`;
    mark.dataset.bindId = annotation.id;
    target.parentNode.insertBefore(mark, target);
    mark.appendChild(target);
    marks.push(mark);
  }
  return marks;
}

/** Whether an annotation is placed in the text at all (global comments and
 * diff annotations are not). */
export function placeable(annotation) {
  return annotation.type !== "GLOBAL_COMMENT" && !annotation.diffContext;
}

/** Removes every highlight from `root`, leaving its text as it was. */
export function clearHighlights(root) {
  const marks = root.querySelectorAll("mark[data-bind-id]");
  if (!marks.length) return;
  for (const mark of marks) mark.replaceWith(...mark.childNodes);
  root.normalize();
}

/** Warns once about the annotations `ids` (the first ten named). */
function warn(ids, what) {
  const list = [...ids];
  if (!list.length) return;
  const more = list.length > 10 ? ` and ${list.length - 10} more` : "";
  console.warn(`${list.length} annotation${list.length === 1 ? "" : "s"}: ${what} (${list.slice(0, 10).join(", ")}${more})`);
}

/** Re-finds each annotation and highlights it in `root`, the rendered
 * plan. Options: `plan`, the plan's markdown (without it the page's text is
 * searched alone), and `budget` (code units scanned in all; a number in
 * place of the options is taken as the budget). Returns the ids that were
 * placed, those not searched because the budget was spent before their
 * turn, and those found in the plan but not shown on the page (`unshown`).
 * One index serves every lookup and every wrap (wrapping keeps it right),
 * and a text quoted by several annotations is looked up once. */
export function highlight(root, annotations, options = {}) {
  const { plan = null, budget = SEARCH_BUDGET } = typeof options === "number" ? { budget: options } : options;
  const placed = new Set();
  const notSearched = new Set();
  const unshown = new Set();
  const index = textIndex(root);
  const locator = new PlanLocator(index.text, plan);
  const left = { left: budget };
  const looked = new Map();
  const found = [];
  const notFound = [];
  for (const annotation of annotations) {
    if (!placeable(annotation)) continue;
    const text = annotation.originalText ?? "";
    let result = looked.get(text);
    if (result === undefined) {
      result = locator.locate(text, left);
      looked.set(text, result);
    }
    const { anchor, range } = result;
    if (anchor.how === "not-searched") {
      notSearched.add(annotation.id);
    } else if (!anchor.found) {
      notFound.push(annotation.id);
    } else if (!range || range[0] >= range[1]) {
      unshown.add(annotation.id);
    } else {
      found.push({ annotation, range });
    }
  }
  // One line per kind: a console message costs far more than a lookup.
  warn(notSearched, "not searched, the search budget is spent");
  warn(notFound, "the text is not in the plan");
  warn(unshown, "found in the plan, but it shows as no text on the page");
  found.sort((a, b) => b.range[0] - a.range[0]);
  for (const { annotation, range } of found) {
    if (wrap(index, range, annotation).length) placed.add(annotation.id);
  }
  return { placed, notSearched, unshown };
}
