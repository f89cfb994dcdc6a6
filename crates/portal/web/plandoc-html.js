// Raw HTML blocks in plan markdown: which lines open one (a known block
// tag), and where it ends, counting nested tags of the same name. Ported
// from `crates/plan-doc/src/html.rs`; used by the block parser and the
// reference-link pass. Pure: no DOM, no imports.

const HTML_BLOCK_TAGS = new Set(["details", "summary", "div", "section", "article", "aside", "header", "footer",
  "blockquote", "pre", "table", "thead", "tbody", "tr", "td", "th", "ul", "ol", "li", "p", "img", "video", "picture"]);
const VOID_TAGS = new Set(["img", "br", "hr", "source", "input", "wbr", "area", "col", "embed"]);

/** A trimmed line opening a raw HTML block: `{tag, isClose}` or null. */
export function htmlBlockOpen(trimmed) {
  const m = /^<(\/?)([a-zA-Z][a-zA-Z0-9]*)(?:\s|>|\/|$)/.exec(trimmed);
  const tag = m?.[2].toLowerCase();
  return m && HTML_BLOCK_TAGS.has(tag) ? { tag, isClose: m[1] === "/" } : null;
}

/** Opening `<tag` minus closing `</tag>` occurrences in a line. */
function tagDepth(line, tag) {
  return (line.match(new RegExp(`<${tag}(?:\\s|>|\\/|$)`, "gi")) ?? []).length -
    (line.match(new RegExp(`<\\/${tag}\\s*>`, "gi")) ?? []).length;
}

/** Where balanced HTML blocks end: per tag, prefix sums of the lines'
 * depths and for each prefix the next later one at or below it (built on
 * first use, over the lines as they are then). */
export class HtmlBlockEnds {
  constructor() {
    this.byTag = new Map();
  }

  /** The last line of a block opening at `start` with `depth` unclosed
   * `tag`s, or `start` when the depth never returns exactly to its base. */
  blockEnd(lines, start, tag, depth) {
    if (depth <= 0) return start;
    let index = this.byTag.get(tag);
    if (!index) {
      const sums = [0];
      for (const line of lines) sums.push(sums.at(-1) + tagDepth(line, tag));
      const next = new Array(sums.length).fill(-1);
      const stack = [];
      for (let m = sums.length - 1; m >= 0; m--) {
        while (stack.length && sums[stack.at(-1)] > sums[m]) stack.pop();
        next[m] = stack.length ? stack.at(-1) : -1;
        stack.push(m);
      }
      index = { sums, next };
      this.byTag.set(tag, index);
    }
    const m = index.next[start];
    return m >= 0 && index.sums[m] === index.sums[start] ? m - 1 : start;
  }
}

/** The last line (inclusive) of an HTML block opened on line `i`: a close
 * tag runs to the next blank line, a void tag to its `>`, any other tag
 * until it is balanced (else the opening line alone). */
export function htmlBlockExtent(lines, i, open, ends) {
  const blank = (k) => !lines[k].trim();
  let end = i;
  if (open.isClose) {
    while (end + 1 < lines.length && !blank(end + 1)) end++;
  } else if (VOID_TAGS.has(open.tag)) {
    while (!lines[end].includes(">") && end + 1 < lines.length && !blank(end + 1)) end++;
  } else {
    end = ends.blockEnd(lines, i, open.tag, tagDepth(lines[i], open.tag));
  }
  return end;
}
