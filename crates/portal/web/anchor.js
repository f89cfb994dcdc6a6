// Re-finding annotations in the rendered plan (shared/WIRE.md §7): the
// first text node holding the text whole, else the first occurrence across
// nodes, else whitespace-normalised; each covered slice is wrapped in a
// `<mark>` bound to its annotation. First occurrence wins. The work is
// bounded: the plan's text is indexed once per pass, lookups scan it with
// `indexOf` against a budget, and annotations past the budget are reported
// as not searched.

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

/** `text` with whitespace runs as one space and trimmed, and for each of
 * its characters the index of the original one (a space maps to the last
 * whitespace character of its run). */
function normalise(text) {
  let out = "";
  const map = [];
  const runs = /\S+/g;
  for (let run; (run = runs.exec(text)); ) {
    if (out) {
      out += " ";
      map.push(run.index - 1);
    }
    out += run[0];
    for (let i = 0; i < run[0].length; i++) map.push(run.index + i);
  }
  return { out, map };
}

/** Characters of plan text one highlighting pass may scan in all: about a
 * second of `indexOf`, hundreds of passes over a 5 MB plan. Text that is
 * not in the plan is mostly ruled out without a scan (see `Grams`), and a
 * text quoted by several annotations is looked up once; the annotations
 * whose turn comes after the budget is spent are not searched. */
export const SEARCH_BUDGET = 2 ** 30;

/** Thrown by a lookup that would scan past the budget. */
const NOT_SEARCHED = Symbol("not searched");

/** The 4-character sequences of a text, hashed into a bit set (four to eight
 * bits per character, at most 32 MiB): a needle holding a sequence that is
 * not in the set is not in the text. Shorter needles are never ruled out. */
class Grams {
  constructor(text) {
    let bits = 1 << 12;
    while (bits < text.length * 4 && bits < 2 ** 28) bits *= 2;
    this.shift = 32 - Math.log2(bits);
    this.words = new Uint32Array(bits / 32);
    for (let i = 0; i + 4 <= text.length; i++) {
      const bit = this.bit(text, i);
      this.words[bit >>> 5] |= 1 << (bit & 31);
    }
  }

  bit(text, i) {
    let h = Math.imul(text.charCodeAt(i), 0x9e3779b1) ^ text.charCodeAt(i + 1);
    h = Math.imul(h, 0x85ebca6b) ^ text.charCodeAt(i + 2);
    h = Math.imul(h, 0xc2b2ae35) ^ text.charCodeAt(i + 3);
    return Math.imul(h, 0x9e3779b1) >>> this.shift;
  }

  mayContain(needle) {
    for (let i = 0; i + 4 <= needle.length; i++) {
      const bit = this.bit(needle, i);
      if (!(this.words[bit >>> 5] & (1 << (bit & 31)))) return false;
    }
    return true;
  }
}

/** `text.indexOf(needle, from)`, charging the characters looked at to
 * `budget` (`{ left }`); throws NOT_SEARCHED once it is spent. */
function scan(text, needle, from, budget) {
  if (budget.left <= 0) throw NOT_SEARCHED;
  const at = text.indexOf(needle, from);
  budget.left -= Math.max(1, at < 0 ? text.length - from : at + needle.length - from);
  return at;
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

/** Where `needle` is in the indexed text, as `[from, to)`, or null: the
 * first text node holding it whole, else its first occurrence across
 * nodes, else whitespace-normalised. `normalised` gives the
 * whitespace-normalised text (computed once by the caller when many needles
 * are looked up); `budget` (`{ left }`, characters) bounds the scanning, and
 * the lookup throws when it is spent. One scan of the text answers the
 * first two questions: occurrences that cross a node boundary before the
 * first one inside a node restart it one character further. */
export function findRange(index, needle, normalised = () => normalise(index.text), budget = { left: Infinity }) {
  if (!needle) return null;
  index.grams ??= new Grams(index.text);
  if (index.grams.mayContain(needle)) {
    let first = -1;
    for (let from = 0, at; (at = scan(index.text, needle, from, budget)) >= 0; from = at + 1) {
      if (first < 0) first = at;
      const { node, start } = index.nodes[nodeAt(index.nodes, at)];
      if (at - start + needle.length <= node.data.length) return [at, at + needle.length];
    }
    if (first >= 0) return [first, first + needle.length];
  }
  const hay = normalised();
  const pin = normalise(needle).out;
  if (!pin) return null;
  hay.grams ??= new Grams(hay.out);
  if (!hay.grams.mayContain(pin)) return null;
  const at = scan(hay.out, pin, 0, budget);
  return at >= 0 ? [hay.map[at], hay.map[at + pin.length - 1] + 1] : null;
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

/** Re-finds each annotation in `root` and highlights it; returns the ids
 * that were placed and those that were not searched because `budget`
 * (characters scanned in all) was spent before their turn. One index serves
 * every lookup and every wrap (wrapping keeps it right), and a text quoted
 * by several annotations is looked up once. */
export function highlight(root, annotations, budget = SEARCH_BUDGET) {
  const placed = new Set();
  const notSearched = new Set();
  const index = textIndex(root);
  let normalised = null;
  const left = { left: budget };
  const looked = new Map();
  const found = [];
  for (const annotation of annotations) {
    if (!placeable(annotation)) continue;
    const text = annotation.originalText;
    let range = looked.get(text);
    if (range === undefined) {
      try {
        range = findRange(index, text, () => (normalised ??= normalise(index.text)), left);
      } catch (error) {
        if (error !== NOT_SEARCHED) throw error;
        range = NOT_SEARCHED;
      }
      looked.set(text, range);
    }
    if (range === NOT_SEARCHED) {
      console.warn(`annotation ${annotation.id}: not searched, the search budget is spent`);
      notSearched.add(annotation.id);
    } else if (!range) {
      console.warn(`annotation ${annotation.id}: its text is not in the plan`);
    } else {
      found.push({ annotation, range });
    }
  }
  found.sort((a, b) => b.range[0] - a.range[0]);
  for (const { annotation, range } of found) {
    if (wrap(index, range, annotation).length) placed.add(annotation.id);
  }
  return { placed, notSearched };
}
