// The feedback text of "Copy feedback": the plan split into upstream's
// blocks, each annotation re-found in them, and upstream's
// `exportAnnotations` text, byte for byte. A port of the Rust crate
// `plan-doc` (blocks.rs, refs.rs, html.rs, render.rs, anchor.rs, export.rs)
// as `planshare open --format feedback` uses it, so the portal and the CLI
// give the same text for the same link; the portal's highlighter
// (anchor.js) re-finds annotations with the same search. Pure: no DOM.
//
// Offsets are JavaScript string offsets (UTF-16 code units) throughout;
// plan-doc works in UTF-8 bytes and converts, which finds the same
// matches. `plan-doc`'s linear-time index structures are kept where a
// hostile plan could otherwise make the search quadratic. The differential
// test `crates/plan-doc/tests/js_ports.rs` holds this module to plan-doc on
// generated plans and annotations.

/** Upstream's default document title. */
export const DEFAULT_TITLE = "Plan Feedback";
/** Upstream's default name for what was reviewed. */
export const DEFAULT_SUBJECT = "plan";

const isSpace = (c) => c !== undefined && c !== "" && /\s/.test(c);
const isWord = (c) => c !== undefined && c !== "" && /\w/.test(c);
/** `s.trim()` with whitespace runs as one space. */
export const collapseSpaces = (s) => s.trim().replace(/\s+/g, " ");
const count = (s, c) => s.split(c).length - 1;
/** Length of the character starting at `i` (2 for a surrogate pair). */
const charLen = (s, i) => (/[\ud800-\udbff]/.test(s[i] ?? "") && /[\udc00-\udfff]/.test(s[i + 1] ?? "") ? 2 : 1);

// --- Blocks (plan-doc blocks.rs) -------------------------------------------

/** Splits plan markdown into upstream's blocks: `{id, type, content, level?,
 * checked?, ordered?, orderedStart?, language?, alertKind?, directiveKind?,
 * order, startLine, sourceLineCount?}`, frontmatter stripped (its lines
 * still count). Line-based and deliberately not CommonMark. */
export function parseBlocks(markdown, { frontmatter = true } = {}) {
  const [body, firstLine] = frontmatter ? stripFrontmatter(markdown) : [markdown, 1];
  const lines = resolveReferenceLinks(body).split("\n");
  const blocks = [];
  const ends = new HtmlBlockEnds();
  let paragraph = [];
  let paragraphStart = firstLine;
  const push = (type, content, startLine, fields = {}) => {
    blocks.push({ type, content, startLine, ...fields });
  };
  const flush = () => {
    if (paragraph.length) push("paragraph", paragraph.join("\n"), paragraphStart, { level: 0 });
    paragraph = [];
  };
  let lastBlank = false;
  for (let i = 0; i < lines.length; ) {
    const prevBlank = lastBlank;
    lastBlank = false;
    const line = lines[i];
    const trimmed = line.trim();
    const lineNo = i + firstLine;
    let marker, math, directive, html;
    if (trimmed.startsWith("#")) {
      flush();
      const level = /^#*/.exec(trimmed)[0].length;
      push("heading", trimmed.slice(level).trimStart(), lineNo, { level });
    } else if (trimmed === "---" || trimmed === "***") {
      flush();
      push("hr", "", lineNo);
    } else if ((marker = listMarker(trimmed))) {
      flush();
      let indent = 0;
      for (const c of /^\s*/.exec(line)[0]) indent += c === "\t" ? 2 : 1;
      let content = trimmed.slice(marker.length);
      let checked;
      if (/^\[[ xX]\]/.test(content)) {
        checked = content[1] !== " ";
        content = content.slice(3).trimStart();
      }
      const fields = { level: Math.floor(indent / 2), checked };
      if (marker.number !== undefined) Object.assign(fields, { ordered: true, orderedStart: marker.number });
      push("list-item", content, lineNo, fields);
    } else if (trimmed.startsWith(">")) {
      flush();
      const stripped = trimmed.slice(1).trimStart();
      const prev = blocks.at(-1);
      // Alerts own their body; other quotes merge unless either side starts a block marker.
      if (prev?.type === "blockquote" && !prevBlank &&
          (prev.alertKind !== undefined || (!startsBlockMarker(stripped) && !startsBlockMarker(prev.content)))) {
        prev.content += (prev.content ? "\n" : "") + stripped;
      } else {
        const alertKind = /^\[!(note|tip|warning|caution|important)\]\s*$/i.exec(stripped)?.[1].toLowerCase();
        push("blockquote", alertKind ? "" : stripped, lineNo, { alertKind });
      }
    } else if (trimmed.startsWith("```")) {
      flush();
      const fence = /^`*/.exec(trimmed)[0].length;
      const language = trimmed.slice(fence).trim() || undefined;
      let end = i + 1;
      while (end < lines.length && !closesFence(lines[end], fence)) end++;
      push("code", lines.slice(i + 1, end).join("\n"), lineNo, { language });
      i = end;
    } else if ((math = displayMath(lines, i, trimmed))) {
      flush();
      push("math", math.lines.join("\n"), lineNo, { sourceLineCount: math.closeLine - i + 1 });
      i = math.closeLine;
      if (math.remainder) {
        // The text after the closing delimiter is parsed again as a line.
        lines[i] = math.remainder;
        continue;
      }
    } else if (trimmed.startsWith("|")) {
      flush();
      const start = i;
      while (i + 1 < lines.length && lines[i + 1].trim().startsWith("|")) i++;
      push("table", lines.slice(start, i + 1).join("\n"), lineNo);
    } else if ((directive = /^:::\s*([a-zA-Z][a-zA-Z0-9-]*)\s*$/.exec(trimmed))) {
      flush();
      const start = i + 1;
      let end = start;
      while (i + 1 < lines.length) {
        i++;
        if (lines[i].trim() === ":::") break;
        end = i + 1;
      }
      push("directive", lines.slice(start, end).join("\n"), lineNo, { directiveKind: directive[1].toLowerCase() });
    } else if ((html = htmlBlockOpen(trimmed))) {
      flush();
      const end = htmlBlockExtent(lines, i, html, ends);
      push("html", lines.slice(i, end + 1).join("\n"), lineNo);
      i = end;
    } else if (!trimmed) {
      flush();
      lastBlank = true;
    } else if (!paragraph.length && blocks.at(-1)?.type === "list-item" &&
               /^\s*/.exec(line)[0].length >= (prevBlank ? 2 : 1)) {
      // An indented line right after a list item continues it.
      blocks.at(-1).content += (prevBlank ? "\n\n" : "\n") + trimmed;
    } else {
      if (!paragraph.length) paragraphStart = lineNo;
      paragraph.push(line);
    }
    i++;
  }
  flush();
  return blocks.map(({ type, content, startLine, ...f }, n) => {
    const block = { id: `block-${n}`, type, content };
    for (const key of ["level", "checked", "ordered", "orderedStart", "language", "alertKind", "directiveKind"]) {
      if (f[key] !== undefined) block[key] = f[key];
    }
    Object.assign(block, { order: n + 1, startLine });
    if (f.sourceLineCount !== undefined) block.sourceLineCount = f.sourceLineCount;
    return block;
  });
}

/** The markdown after a leading `--- … ---` frontmatter, and the 1-based
 * line it starts on. */
function stripFrontmatter(markdown) {
  const trimmed = markdown.trimStart();
  if (!trimmed.startsWith("---")) return [markdown, 1];
  const close = trimmed.indexOf("\n---", 3);
  if (close < 0) return [markdown, 1];
  const rawAfter = trimmed.slice(close + 4);
  const after = rawAfter.trimStart();
  const consumed = markdown.length - trimmed.length + close + 4 + (rawAfter.length - after.length);
  return [after, count(markdown.slice(0, consumed), "\n") + 1];
}

/** `^(\*|-|(\d+)\.)\s`: the marker's length with its space, and an ordered
 * marker's number. */
function listMarker(trimmed) {
  const m = /^(?:[*-]|(\d+)\.)\s/.exec(trimmed);
  return m && { length: m[0].length, number: m[1] === undefined ? undefined : Number(m[1]) };
}

/** Quote content that starts a block of its own (never merged). */
const startsBlockMarker = (s) => Boolean(listMarker(s)) || /^(?:#|```|>)/.test(s);

/** `^\s*`{n,}`: a line that closes a fence opened with `n` backticks. */
const closesFence = (line, n) => /^\s*(`*)/.exec(line)[1].length >= n;

/** Display math opening at line `i` (`$$` or `\[`), only when its closing
 * delimiter comes before the next blank line. */
function displayMath(lines, i, trimmed) {
  const [open, close] = trimmed.startsWith("$$") ? ["$$", "$$"] : trimmed.startsWith("\\[") ? ["\\[", "\\]"] : [];
  if (!open) return null;
  const afterOpen = trimmed.slice(open.length);
  const at = afterOpen.indexOf(close);
  if (at >= 0) {
    const body = afterOpen.slice(0, at).trim();
    return { lines: body ? [body] : [], closeLine: i, remainder: afterOpen.slice(at + close.length).trim() };
  }
  const first = afterOpen.trim();
  const body = first ? [first] : [];
  for (let j = i + 1; j < lines.length; j++) {
    const line = lines[j];
    if (!line.trim()) return null;
    const end = line.indexOf(close);
    if (end >= 0) {
      if (line.slice(0, end).trim()) body.push(line.slice(0, end));
      return { lines: body, closeLine: j, remainder: line.slice(end + close.length).trim() };
    }
    body.push(line);
  }
  return null;
}

// --- Raw HTML blocks (plan-doc html.rs) -------------------------------------

const HTML_BLOCK_TAGS = new Set(["details", "summary", "div", "section", "article", "aside", "header", "footer",
  "blockquote", "pre", "table", "thead", "tbody", "tr", "td", "th", "ul", "ol", "li", "p", "img", "video", "picture"]);
const VOID_TAGS = new Set(["img", "br", "hr", "source", "input", "wbr", "area", "col", "embed"]);

/** A trimmed line opening a raw HTML block: `{tag, isClose}` or null. */
function htmlBlockOpen(trimmed) {
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
class HtmlBlockEnds {
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
function htmlBlockExtent(lines, i, open, ends) {
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

// --- Reference links (plan-doc refs.rs) -------------------------------------

const normalizeLabel = (label) => collapseSpaces(label).toLowerCase();
const DEFINITION = /^ {0,3}\[([^\]]{1,999})\]:[ \t]*(?:<([^>]*)>|(\S+))[ \t]*(?:"[^"]*"|'[^']*'|\([^)]*\))?[ \t]*\r?$/;
const CODE_OR_REFERENCE = /(`+)[^\n]{0,5000}?\1|(!?)\[([^\]]{1,999})\](\[([^\]]{0,999})\])?/g;

/** `[text][id]`, `[text][]`, `[text]` and their `![…]` forms resolved into
 * inline links when a definition names them; used definition lines are
 * blanked in place, so line numbers never move. Code and HTML untouched. */
function resolveReferenceLinks(markdown) {
  if (!markdown.includes("[")) return markdown;
  const lines = markdown.split("\n");
  const guarded = protectedLines(lines);
  const defs = new Map();
  const defLabel = new Array(lines.length);
  // A definition cannot interrupt a paragraph.
  let canStart = true;
  lines.forEach((line, i) => {
    if (guarded[i]) {
      canStart = true;
      return;
    }
    const blank = !line.trim();
    const m = canStart && !blank ? DEFINITION.exec(line) : null;
    if (!m) {
      canStart = blank;
    } else if (!m[1].startsWith("^") && defs.size < 20000) {
      const label = normalizeLabel(m[1]);
      const dest = m[2] ?? m[3];
      if (label && dest && !defs.has(label)) defs.set(label, dest);
      defLabel[i] = label;
    }
  });
  if (!defs.size) return markdown;
  const used = new Set();
  const resolved = lines.map((line, i) => {
    if (guarded[i] || defLabel[i] !== undefined || !line.includes("[")) return line;
    return line.replace(CODE_OR_REFERENCE, (match, code, bang, text, second, label, at) => {
      if (code !== undefined) return match;
      let ref = label || text;
      if (second === undefined) {
        // An inline link, or a task-list checkbox, is no reference.
        if (line[at + match.length] === "(") return match;
        if (/^[ xX]$/.test(text) && /^\s*(?:[-*+]|\d+[.)])\s+$/.test(line.slice(0, at))) return match;
        ref = text;
      }
      const key = normalizeLabel(ref);
      if (!defs.has(key)) return match;
      used.add(key);
      return `${bang}[${text}](${defs.get(key)})`;
    });
  });
  return resolved
    .map((line, i) => (defLabel[i] !== undefined && used.has(defLabel[i]) ? (line.endsWith("\r") ? "\r" : "") : line))
    .join("\n");
}

/** Lines the parser shows as fenced code or raw HTML. */
function protectedLines(lines) {
  const guarded = new Array(lines.length).fill(false);
  const ends = new HtmlBlockEnds();
  let fence = 0;
  for (let i = 0; i < lines.length; i++) {
    if (fence) {
      guarded[i] = true;
      if (closesFence(lines[i], fence)) fence = 0;
      continue;
    }
    const trimmed = lines[i].trim();
    if (trimmed.startsWith("```")) {
      fence = /^`*/.exec(trimmed)[0].length;
      guarded[i] = true;
      continue;
    }
    const open = htmlBlockOpen(trimmed);
    if (open) {
      const end = htmlBlockExtent(lines, i, open, ends);
      guarded.fill(true, i, end + 1);
      i = end;
    }
  }
  return guarded;
}

// --- Rendered text (plan-doc render.rs) --------------------------------------

/** Text derived from a block's content, with each code unit's source range
 * `[from[k], to[k])` in the content (`from` null: the text is the source). */
class Mapped {
  constructor(text, from = null, to = null) {
    Object.assign(this, { text, from, to });
  }

  /** Source offset where the text's unit `at` starts. */
  sourceStart(at) {
    if (!this.from) return at <= this.text.length ? at : null;
    return this.from[at] ?? null;
  }

  /** Source offset where the text before `end` ends. */
  sourceEnd(end) {
    if (!this.from) return end <= this.text.length ? end : null;
    return end > 0 ? (this.to[end - 1] ?? null) : null;
  }

  /** `inner`, derived from this text, mapped on to this text's source. */
  compose(inner) {
    if (!inner.from) return new Mapped(inner.text, this.from, this.to);
    if (!this.from) return inner;
    const from = inner.from.map((s) => this.sourceStart(s) ?? 0);
    const to = inner.to.map((e, k) => Math.max(this.sourceEnd(e) ?? from[k], from[k]));
    return new Mapped(inner.text, from, to);
  }
}

/** Builds a Mapped text piece by piece. */
class Builder {
  constructor() {
    Object.assign(this, { text: "", from: [], to: [] });
  }

  /** `s` standing for the source `[start, end)` as a whole. */
  replaced(s, start, end) {
    this.text += s;
    for (let k = 0; k < s.length; k++) {
      this.from.push(start);
      this.to.push(end);
    }
  }

  /** `s` shown as it is, found at source offset `at`. */
  literal(s, at) {
    this.text += s;
    for (let k = 0; k < s.length; k++) {
      this.from.push(at + k);
      this.to.push(at + k + 1);
    }
  }

  append(mapped) {
    this.text += mapped.text;
    for (let k = 0; k < mapped.text.length; k++) {
      this.from.push(mapped.from[k]);
      this.to.push(mapped.to[k]);
    }
  }

  /** `mapped`, derived from a text of `length` units found at source
   * offset `at`, mapped on to the source (as `compose` maps it). */
  appendAt(mapped, at, length) {
    this.text += mapped.text;
    for (let k = 0; k < mapped.text.length; k++) {
      const s = mapped.from ? mapped.from[k] : k;
      const e = mapped.to ? mapped.to[k] : k + 1;
      const from = s < length ? at + s : 0;
      this.from.push(from);
      this.to.push(e > 0 && e <= length ? Math.max(at + e, from) : from);
    }
  }

  finish() {
    return new Mapped(this.text, this.from, this.to);
  }
}

/** Inline markdown as upstream's viewer shows it (the page's textContent),
 * mapped back to the source: emphasis, strike and code markers dropped,
 * links show their label, images nothing, escapes their character, inline
 * HTML tags nothing, character references their character. */
export function renderInline(markdown) {
  const out = new Builder();
  new Inline(markdown, out).run(0, markdown.length);
  return out.finish();
}

/** A block's rendered text, laid out as upstream's block renderer does. */
export function renderedText(block) {
  const content = block.content;
  switch (block.type) {
    case "paragraph":
    case "heading":
    case "list-item":
      return renderInline(content);
    case "blockquote":
      return block.alertKind != null ? proseBody(content) : quoteParagraphs(content);
    case "directive":
      return proseBody(content);
    case "table":
      return tableCells(content);
    case "html":
      return htmlText(content);
    default:
      return new Mapped(content);
  }
}

/** A quote's paragraphs (split at blank lines), one after another. */
function quoteParagraphs(content) {
  const out = new Builder();
  const inline = new Inline(content, out);
  let start = 0;
  for (let sep; (sep = content.indexOf("\n\n", start)) >= 0; ) {
    inline.run(start, sep);
    start = sep + /^\n*/.exec(content.slice(sep))[0].length;
  }
  inline.run(start, content.length);
  return out.finish();
}

/** Alert and directive bodies: blank lines end a paragraph; `- x`, `* x`
 * and `1. x` lines are items shown without their markers. */
function proseBody(content) {
  const out = new Builder();
  const inline = new Inline(content, out);
  let para = null;
  let at = 0;
  const flushPara = () => para && inline.run(para[0], para[1]);
  for (const line of content.split("\n")) {
    const lineStart = at;
    at += line.length + 1;
    const item = /^\s*(?:[*-]|\d+\.)\s+(.*)$/.exec(line);
    if (!line.trim() || item) {
      flushPara();
      para = null;
      if (item) inline.run(lineStart + line.length - item[1].length, lineStart + line.length);
    } else {
      para = [para ? para[0] : lineStart, lineStart + line.length];
    }
  }
  flushPara();
  return out.finish();
}

/** A table's cells in order: each trimmed, `\|` unescaped and rendered
 * inline; `|---|` rows after the header skipped. */
function tableCells(content) {
  const out = new Builder();
  let at = 0;
  let first = true;
  for (const line of content.split("\n")) {
    const lineStart = at;
    at += line.length + 1;
    const trimmed = line.trim();
    if (!trimmed || (!first && /^[|\-:\s]*$/.test(trimmed))) continue;
    const [row, rowStart] = first ? [line, lineStart] : [trimmed, lineStart + line.length - line.trimStart().length];
    first = false;
    for (const [a, b] of tableRowCells(row)) {
      const raw = row.slice(a, b);
      if (!raw.includes("\\|")) {
        // Nothing to unescape: the cell is its own source, `rowStart + a` on.
        out.appendAt(renderInline(raw), rowStart + a, raw.length);
        continue;
      }
      const cell = new Builder();
      for (let i = a; i < b; ) {
        const abs = rowStart + i;
        if (row.startsWith("\\|", i) && i + 2 <= b) {
          cell.replaced("|", abs, abs + 2);
          i += 2;
        } else {
          cell.literal(row[i], abs);
          i++;
        }
      }
      const text = cell.finish();
      out.append(text.compose(renderInline(text.text)));
    }
  }
  return out.finish();
}

/** A row's trimmed cell ranges: one leading and one trailing `|` dropped,
 * then split at every `|` not after a backslash. */
function tableRowCells(row) {
  const start = row.startsWith("|") ? 1 : 0;
  const end = row.length > start && row.endsWith("|") ? row.length - 1 : row.length;
  const cells = [];
  let cellStart = start;
  for (let i = start; i < end; i++) {
    if (row[i] === "|" && (i === 0 || row[i - 1] !== "\\")) {
      cells.push([cellStart, i]);
      cellStart = i + 1;
    }
  }
  cells.push([cellStart, end]);
  return cells.map(([a, b]) => {
    const cell = row.slice(a, b);
    const lead = cell.length - cell.trimStart().length;
    return [a + lead, a + lead + cell.trim().length];
  });
}

/** A raw HTML block's text: tags and comments dropped, references decoded. */
function htmlText(content) {
  const out = new Builder();
  // A comment opened after the last `-->` never closes: skip the search.
  const lastClose = content.lastIndexOf("-->");
  for (let i = 0; i < content.length; ) {
    const c = content[i];
    if (c === "<") {
      const rest = content.slice(i);
      const n = (lastClose >= i + 4 ? htmlComment(rest) : null) ?? htmlTag(rest);
      if (n !== null) {
        i += n;
        continue;
      }
    } else if (c === "&") {
      const ref = charReference(content.slice(i, i + 40));
      if (ref) {
        out.replaced(ref[0], i, i + ref[1]);
        i += ref[1];
        continue;
      }
    }
    out.literal(c, i);
    i++;
  }
  return out.finish();
}

/** How far a bracketed or angle-bracketed construct may run looking for its
 * end: 4096 UTF-8 bytes, as plan-doc bounds it. */
function bounded(s) {
  if (s.length <= 1365) return s;
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const n = c < 0x80 ? 1 : c < 0x800 ? 2 : charLen(s, i) === 2 ? 4 : 3;
    if (bytes + n > 4096) return s.slice(0, i);
    bytes += n;
    if (n === 4) i++;
  }
  return s;
}

/** Delimiters a closing search looks for, by name. */
const DELIMS = { strike: "~~", strongEm: "***", strong: "**", em: "*", code: "`", comment: "-->",
  bracket: "]", doubleBracket: "]]", angle: ">", at: "@", paren: ")", uStrong: "__", uEm: "_", math: "\\)" };

/** The closing searches of one run, each cached: a run only moves forward,
 * so the next occurrence from one position stays the next one from any
 * later position before it. */
class Closers {
  constructor(src, end) {
    Object.assign(this, { src, end, cache: {} });
  }

  /** Where the first `name` delimiter at or after `from` starts (before
   * the run's end), or null. */
  next(name, from) {
    const hit = this.cache[name];
    if (hit && from >= hit.from && (hit.found === null || hit.found >= from)) return hit.found;
    const found = this.search(name, from);
    this.cache[name] = { from, found };
    return found;
  }

  search(name, from) {
    const { src, end } = this;
    const delim = DELIMS[name];
    if (from > end) return null;
    if (name === "uStrong" || name === "uEm") {
      // The last inner character is not `_` or a space; no word character after.
      for (let i = from; i + delim.length <= end; i++) {
        const last = src[i - 1];
        if (last !== undefined && last !== "_" && !isSpace(last) && src.startsWith(delim, i) &&
            !(i + delim.length < end && isWord(src[i + delim.length]))) {
          return i;
        }
      }
      return null;
    }
    for (let at = from; ; ) {
      const q = src.indexOf(delim, at);
      if (q < 0 || q + delim.length > end) return null;
      // `\)` closes inline math only when not escaped itself.
      if (name !== "math" || q === 0 || src[q - 1] !== "\\") return q;
      at = q + 1;
    }
  }
}

/** Upstream's inline scanner over pieces of one source, writing to `out`. */
class Inline {
  constructor(src, out) {
    Object.assign(this, { src, out });
  }

  /** Renders `src[start, end)` as one scanner call. */
  run(start, end) {
    const src = this.src;
    const closers = new Closers(src, end);
    let pos = start;
    let prev;
    // The next hard line break at or after `pos`: undefined = not searched.
    let hardBreak;
    while (pos < end) {
      const rem = src.slice(pos, end);
      const hit = this.rule(pos, rem, prev, closers);
      if (hit) {
        pos += hit[0];
        prev = hit[1];
        continue;
      }
      if (hardBreak && hardBreak[0] < pos) hardBreak = undefined;
      if (hardBreak === undefined) {
        const found = findHardBreak(rem);
        hardBreak = found && [pos + found[0], found[1]];
      }
      if (hardBreak) {
        // The text before the break is rendered on its own.
        this.run(pos, hardBreak[0]);
        pos = hardBreak[0] + hardBreak[1];
        prev = "\n";
        hardBreak = undefined;
        continue;
      }
      const first = charLen(rem, 0);
      const special = rem.slice(first).search(/[*_`[!~\\<#@$&]/);
      const chunk = special < 0 ? rem.length : first + special;
      this.out.literal(rem.slice(0, chunk), pos);
      prev = rem[chunk - 1];
      pos += chunk;
    }
  }

  /** `D([\s\S]+?)D` at `pos` for delimiter `name`: [inside end, length]. */
  pair(pos, rem, name, closers) {
    const delim = DELIMS[name];
    if (!rem.startsWith(delim) || rem.length === delim.length) return null;
    const first = rem[delim.length];
    if ((name === "uStrong" || name === "uEm") && (first === "_" || isSpace(first))) return null;
    const close = closers.next(name, pos + delim.length + charLen(rem, delim.length));
    return close === null ? null : [close, close + delim.length - pos];
  }

  /** The first rule that matches at `rem`, after writing its text:
   * [units consumed, the scanner's new previous character], or null. */
  rule(pos, rem, prev, closers) {
    const out = this.out;
    switch (rem[0]) {
      case "<": {
        if (rem.startsWith("<!--")) {
          const close = closers.next("comment", pos + 4);
          if (close !== null) return [close + 3 - pos, ">"];
        }
        // Everything else here ends with a `>`.
        if (closers.next("angle", pos + 1) === null) return null;
        const auto = autolink(rem, closers.next("at", pos + 1) !== null);
        if (auto) {
          out.literal(rem.slice(1, auto[0]), pos + 1);
          return [auto[1], ">"];
        }
        const custom = customAutolink(rem);
        if (custom !== null) {
          out.literal(rem.slice(0, custom), pos);
          return [custom, ">"];
        }
        const tag = htmlTag(rem);
        return tag === null ? null : [tag, ">"];
      }
      case "\\": {
        if (rem.startsWith("\\(")) {
          const close = closers.next("math", pos + 2);
          if (close !== null && rem.slice(2, close - pos).trim()) {
            out.literal(rem.slice(2, close - pos), pos + 2);
            return [close + 2 - pos, ")"];
          }
        }
        const escaped = rem[1];
        if (escaped !== undefined && "\\*_`[]~!.()-#>+|{}&$".includes(escaped)) {
          out.replaced(escaped, pos, pos + 2);
          return [2, escaped];
        }
        return null;
      }
      case "$": {
        const math = prev === "$" ? null : dollarMath(rem);
        if (!math) return null;
        out.literal(rem.slice(1, math[0]), pos + 1);
        return [math[1], "$"];
      }
      case "h": {
        const n = isWord(prev) ? null : bareUrl(rem);
        if (n === null) return null;
        out.literal(rem.slice(0, n), pos);
        return [n, rem[n - 1]];
      }
      case "~":
      case "*":
      case "_": {
        if (rem[0] === "_" && isWord(prev)) return null;
        const names = { "~": ["strike"], "*": ["strongEm", "strong", "em"], _: ["uStrong", "uEm"] }[rem[0]];
        for (const name of names) {
          const hit = this.pair(pos, rem, name, closers);
          if (hit) {
            this.run(pos + DELIMS[name].length, hit[0]);
            return [hit[1], rem[0]];
          }
        }
        return null;
      }
      case "`": {
        const close = closers.next("code", pos + 1);
        if (close === null || close <= pos + 1) return null;
        out.literal(rem.slice(1, close - pos), pos + 1);
        return [close + 1 - pos, "`"];
      }
      case "[": {
        // Links and wiki links both end with a `]`.
        if (closers.next("bracket", pos + 1) === null) return null;
        const wiki = closers.next("doubleBracket", pos + 2) !== null ? wikiLink(rem) : null;
        if (wiki) {
          out.literal(rem.slice(wiki[0], wiki[1]), pos + wiki[0]);
          return [wiki[2], "]"];
        }
        const found = closers.next("paren", pos + 1) !== null ? link(rem) : null;
        if (!found) return null;
        out.literal(rem.slice(1, found[0]), pos + 1);
        return [found[1], ")"];
      }
      case "!": {
        const ok = rem.startsWith("![") && closers.next("bracket", pos + 2) !== null &&
          closers.next("paren", pos + 2) !== null;
        const n = ok ? image(rem) : null;
        return n === null ? null : [n, ")"];
      }
      case "&": {
        const ref = charReference(rem.slice(0, 40));
        if (!ref) return null;
        out.replaced(ref[0], pos, pos + ref[1]);
        return [ref[1], ";"];
      }
      default:
        return null;
    }
  }
}

/** `^<!--[\s\S]*?-->`: its length. */
function htmlComment(rem) {
  if (!rem.startsWith("<!--")) return null;
  const close = rem.indexOf("-->", 4);
  return close < 0 ? null : close + 3;
}

/** `<https://…>` or `<a@b.c>`: [end of the shown address, length]. */
function autolink(rem, email) {
  const body = bounded(rem.slice(1));
  const scheme = body.startsWith("https://") ? 8 : body.startsWith("http://") ? 7 : 0;
  if (scheme) {
    const close = body.indexOf(">", scheme);
    return close > scheme ? [1 + close, close + 2] : null;
  }
  if (!email) return null;
  const m = /^[^@>\s]+@[^>\s]+>/.exec(body);
  return m ? [m[0].length, m[0].length + 1] : null;
}

/** `<scheme:x>` (shown literally): its length. */
function customAutolink(rem) {
  const m = /^[A-Za-z][A-Za-z0-9.+-]{0,31}:[^\s<>]*>/.exec(bounded(rem.slice(1)));
  return m ? m[0].length + 1 : null;
}

/** An HTML open tag (`<a href="x">`, `<br/>`) or close tag (`</a>`): its length. */
function htmlTag(rem) {
  const b = bounded(rem);
  const space = (i) => i < b.length && " \t\n\r\f".includes(b[i]);
  const closing = b[1] === "/";
  let i = closing ? 2 : 1;
  if (!/[A-Za-z]/.test(b[i] ?? "")) return null;
  while (/[A-Za-z0-9-]/.test(b[i] ?? "")) i++;
  if (closing) {
    while (space(i)) i++;
    return b[i] === ">" ? i + 1 : null;
  }
  for (;;) {
    const beforeSpace = i;
    while (space(i)) i++;
    if (i >= b.length) return null;
    if (b[i] === ">") return i + 1;
    if (b[i] === "/" && b[i + 1] === ">") return i + 2;
    // An attribute needs whitespace before its name.
    if (i === beforeSpace || !/[A-Za-z_:]/.test(b[i])) return null;
    while (/[A-Za-z0-9_.:-]/.test(b[i] ?? "")) i++;
    const afterName = i;
    while (space(i)) i++;
    if (b[i] !== "=") {
      i = afterName;
      continue;
    }
    i++;
    while (space(i)) i++;
    if (i >= b.length) return null;
    if (b[i] === '"' || b[i] === "'") {
      const close = b.indexOf(b[i], i + 1);
      if (close < 0) return null;
      i = close + 1;
    } else {
      const start = i;
      while (i < b.length && !" \t\n\r\f\"'=<>`".includes(b[i])) i++;
      if (i === start) return null;
    }
  }
}

/** `$…$` inline math (not `$$`, not money like `$5-$10`): [TeX end, length]. */
function dollarMath(rem) {
  if (rem.startsWith("$$")) return null;
  const b = bounded(rem);
  let end = 1;
  for (; b[end] !== "$"; end += b[end] === "\\" ? 2 : 1) {
    if (end >= b.length) return null;
  }
  if (end <= 1) return null;
  const tex = rem.slice(1, end);
  const money = /^\s*[0-9]/.test(tex) && /^[0-9]/.test(rem.slice(end + 1));
  return !money && canRenderSpacedDollarMath(tex) ? [end, end + 1] : null;
}

/** TeX padded with spaces only counts when it looks like math. */
function canRenderSpacedDollarMath(tex) {
  const trimmed = tex.trim();
  if (!trimmed) return false;
  if (!isSpace(tex[0]) && !isSpace(tex.at(-1))) return true;
  return /\\[a-zA-Z]/.test(trimmed) || /[=^_{}+\-*/<>|]/.test(trimmed) || /^[a-zA-Z]$/.test(trimmed);
}

/** A bare `http(s)://` URL without trailing sentence punctuation (a closing
 * bracket that balances an opener stays): its length. */
function bareUrl(rem) {
  const m = /^https?:\/\/[^\s<>"']+/.exec(rem);
  if (!m) return null;
  let url = m[0];
  for (let last = url.at(-1); ".,;:!?)]}>\"'".includes(last); last = url.at(-1)) {
    const open = { ")": "(", "]": "[", "}": "{" }[last];
    if (open && count(url, open) >= count(url, last)) break;
    url = url.slice(0, -1);
  }
  return url ? url.length : null;
}

/** `[[target|label]]`: [shown start, shown end, length]; shows the trimmed
 * label, else the trimmed target. */
function wikiLink(rem) {
  if (!rem.startsWith("[[")) return null;
  const body = bounded(rem.slice(2));
  const targetEnd = body.search(/[\]|]/);
  if (targetEnd <= 0) return null;
  const target = [2, 2 + targetEnd];
  let label = null;
  if (body[targetEnd] === "|") {
    const close = body.indexOf("]", targetEnd + 1);
    if (close <= targetEnd + 1) return null;
    label = [3 + targetEnd, 2 + close];
  }
  const close = (label ?? target)[1];
  if (!rem.startsWith("]]", close)) return null;
  const trimmed = ([a, b]) => {
    const text = rem.slice(a, b);
    const lead = text.length - text.trimStart().length;
    return [a + lead, a + lead + text.trim().length];
  };
  const shown = label && trimmed(label)[1] > trimmed(label)[0] ? trimmed(label) : trimmed(target);
  return [shown[0], shown[1], close + 2];
}

/** `![alt](src)`: its length (an image has no text). */
function image(rem) {
  const m = /^!\[[^\]]*\]\([^)]+\)/.exec(rem.slice(0, 2) + bounded(rem.slice(2)));
  return m ? m[0].length : null;
}

/** A link: a balanced bracketed label then a balanced parenthesised
 * destination without line breaks, both non-empty (a backslash skips a
 * character): [label end, length]. */
function link(rem) {
  const b = bounded(rem);
  let i = 1;
  for (let depth = 1; i < b.length; i++) {
    if (b[i] === "\\" && i + 1 < b.length) i++;
    else if (b[i] === "[") depth++;
    else if (b[i] === "]" && --depth === 0) break;
  }
  if (i >= b.length || b[i + 1] !== "(") return null;
  let j = i + 2;
  for (let parens = 1; j < b.length; j++) {
    if (b[j] === "\\" && j + 1 < b.length) j++;
    else if (b[j] === "(") parens++;
    else if (b[j] === ")" && --parens === 0) break;
    else if (b[j] === "\n") return null;
  }
  return j >= b.length || i === 1 || j === i + 2 ? null : [i, j + 1];
}

/** The first ` {2,}\n` or `\\\n` in `rem`: [offset, length]. */
function findHardBreak(rem) {
  const m = /\\\n| {2,}\n/.exec(rem);
  return m ? [m.index, m[0].length] : null;
}

const NAMED_REFERENCES = {
  amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", ensp: "\u2002", emsp: "\u2003",
  thinsp: "\u2009", zwnj: "\u200c", zwj: "\u200d", shy: "\u00ad", ndash: "–", mdash: "—", hellip: "…",
  lsquo: "‘", rsquo: "’", sbquo: "‚", ldquo: "“", rdquo: "”", bdquo: "„", laquo: "«", raquo: "»",
  lsaquo: "‹", rsaquo: "›", bull: "•", middot: "·", copy: "©", reg: "®", trade: "™", deg: "°",
  plusmn: "±", times: "×", divide: "÷", minus: "−", le: "≤", ge: "≥", ne: "≠", asymp: "≈", equiv: "≡",
  infin: "∞", larr: "←", rarr: "→", uarr: "↑", darr: "↓", harr: "↔", lArr: "⇐", rArr: "⇒", hArr: "⇔",
  euro: "€", pound: "£", yen: "¥", cent: "¢", sect: "§", para: "¶", dagger: "†", Dagger: "‡",
  permil: "‰", prime: "′", Prime: "″", frac12: "½", frac14: "¼", frac34: "¾", sup2: "²", sup3: "³",
  micro: "µ", iexcl: "¡", iquest: "¿", check: "✓", cross: "✗", star: "☆", starf: "★", hearts: "♥",
};

/** A character reference at the start of `rem` (`&amp;`, `&#38;`,
 * `&#x26;`): [character, length]. Uncommon names stay literal. */
function charReference(rem) {
  const m = /^&(?:#[xX]([0-9a-fA-F]{1,6})|#([0-9]{1,7})|([^;]{0,33}));/.exec(rem);
  if (!m) return null;
  if (m[3] !== undefined) return Object.hasOwn(NAMED_REFERENCES, m[3]) ? [NAMED_REFERENCES[m[3]], m[0].length] : null;
  const code = m[1] !== undefined ? parseInt(m[1], 16) : parseInt(m[2], 10);
  const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
  return [valid ? String.fromCodePoint(code) : "\ufffd", m[0].length];
}

const EMOJI = {
  smile: "😄", heart: "❤️", thumbsup: "👍", thumbsdown: "👎", fire: "🔥", star: "⭐", tada: "🎉",
  rocket: "🚀", bug: "🐛", sparkles: "✨", warning: "⚠️", white_check_mark: "✅", x: "❌", eyes: "👀",
  wave: "👋", thinking: "🤔", ok: "🆗", construction: "🚧", boom: "💥", gear: "⚙️", hourglass: "⏳",
  zap: "⚡", lock: "🔒", unlock: "🔓", memo: "📝", book: "📖", package: "📦", hammer: "🔨",
  checkered_flag: "🏁", question: "❓", exclamation: "❗", bulb: "💡",
};
const FOLDED = { "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"', "‘": "'", "’": "'", "‚": "'", "‛": "'",
  "′": "'", "…": "...", "—": "---", "–": "--", "\ufe0f": "" };

/** Upstream's plain-text transform folded out: known `:shortcodes:` become
 * their emoji, curly quotes, dashes and `…` the ASCII they are typed as;
 * variation selectors dropped. Mapped back to `s`. */
export function foldPlainText(s) {
  const special = /[:\u201c\u201d\u201e\u201f\u2033\u2018\u2019\u201a\u201b\u2032\u2026\u2014\u2013\ufe0f]/g;
  // Nothing to fold: the text is its own source.
  if (!special.test(s)) return new Mapped(s);
  const out = new Builder();
  const shortcode = /:([a-z_]+):/y;
  for (let i = 0; i < s.length; ) {
    special.lastIndex = i;
    const next = special.exec(s)?.index ?? s.length;
    if (next > i) {
      out.literal(s.slice(i, next), i);
      i = next;
      continue;
    }
    shortcode.lastIndex = i;
    const code = s[i] === ":" ? shortcode.exec(s) : null;
    if (code) {
      const emoji = Object.hasOwn(EMOJI, code[1]) ? EMOJI[code[1]] : null;
      if (emoji) out.replaced(emoji.replaceAll("\ufe0f", ""), i, i + code[0].length);
      else out.literal(code[0], i);
      i += code[0].length;
    } else if (Object.hasOwn(FOLDED, s[i])) {
      out.replaced(FOLDED[s[i]], i, i + 1);
      i++;
    } else {
      out.literal(s[i], i);
      i++;
    }
  }
  return out.finish();
}

// --- Re-anchoring (plan-doc anchor.rs) ---------------------------------------
//
// Five steps, the first that finds the text wins, and within a step the
// first occurrence in document order: (1) verbatim in one block's source;
// (2) verbatim in one block's rendered text; (3) verbatim across blocks, in
// the sources joined with nothing between them, then in the rendered texts
// joined so; (4) whitespace-normalised (runs of whitespace as one space,
// ends trimmed, blocks joined by a line break), sources then rendered
// texts; (5) upstream's plain-text transform (emoji shortcodes, smart
// punctuation) folded out of the needle and of the rendered texts, the
// needle also rendered itself, and steps 2–4 again over those. `anchor.js`
// runs the same search for the portal's highlights.
//
// The work is bounded as in plan-doc: each layer's texts are joined once,
// with a set of their short sequences (plan-doc's of 4 bytes, here of 4 and
// 8 units: text holding a sequence the layer lacks is absent without a
// scan), and every scan is charged to a budget
// (`{ left }`, in UTF-16 code units): a search that would start once it is
// spent throws NOT_SEARCHED.

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

// --- Export (plan-doc export.rs) ---------------------------------------------

/** A block's last source line, as upstream's export computes it. */
export function endLine(block) {
  const start = block.startLine;
  if (block.sourceLineCount > 0) return start + block.sourceLineCount - 1;
  if (!block.content) return start;
  const n = count(block.content, "\n") + 1;
  if (block.type === "code" || block.type === "directive") return start + n + 1;
  return block.alertKind != null ? start + n : start + n - 1;
}

/** `line L` or `lines A–B` for an annotation, or null (no block, a global
 * comment, a diff block, an unknown id). */
export function lineLabel(blocks, annotation) {
  const id = annotation.blockId ?? "";
  if (!id || annotation.type === "GLOBAL_COMMENT" || id.startsWith("diff-block-")) return null;
  const block = blocks.find((b) => b.id === id);
  if (!block) return null;
  const end = endLine(block);
  return end <= block.startLine ? `line ${block.startLine}` : `lines ${block.startLine}\u2013${end}`;
}

/** Upstream's `exportAnnotations`: the feedback text, sorted by block then
 * offset (annotations without a block first). Missing texts read
 * `undefined`, as upstream writes them; an annotation of unknown type
 * exports as a comment. */
export function exportAnnotations(blocks, annotations, globalAttachments = [], title = DEFAULT_TITLE, subject = DEFAULT_SUBJECT) {
  blocks ??= [];
  globalAttachments ??= [];
  if (!annotations.length && !globalAttachments.length) return "No changes detected.";
  const blockIndex = (a) => blocks.findIndex((b) => b.id === (a.blockId ?? ""));
  const sorted = annotations
    .map((a) => [blockIndex(a), a.startOffset ?? 0, a])
    .sort((x, y) => x[0] - y[0] || x[1] - y[1])
    .map((entry) => entry[2]);
  let out = `# ${title}\n\n`;
  if (globalAttachments.length) {
    out += "## Reference Images\nPlease review these reference images (use the Read tool to view):\n";
    globalAttachments.forEach((img, i) => (out += `${i + 1}. [${img.name}] \`${img.path}\`\n`));
    out += "\n";
  }
  if (annotations.length) {
    const n = annotations.length;
    out += `I've reviewed this ${subject} and have ${n} piece${n > 1 ? "s" : ""} of feedback:\n\n`;
  }
  const labels = new Map();
  sorted.forEach((a, i) => {
    out += `## ${i + 1}. `;
    const label = lineLabel(blocks, a);
    if (a.diffContext) out += "[In diff content] ";
    else if (label) out += `(${label}) `;
    out += body(a, subject);
    if (a.images?.length) {
      out += "**Attached images:**\n";
      for (const img of a.images) out += `- [${img.name}] \`${img.path}\`\n`;
    }
    out += "\n";
    if (a.isQuickLabel && a.text) labels.set(a.text, (labels.get(a.text) ?? 0) + 1);
  });
  out += "---\n";
  if (labels.size) {
    out += "\n## Label Summary\n\n";
    for (const [text, n] of labels) out += `- **${text}**: ${n}\n`;
    out += "\n";
  }
  return out;
}

/** One annotation's text after its `## i. ` heading and line label. */
function body(a, subject) {
  const text = a.text ?? "undefined";
  const original = a.originalText ?? "";
  const comment = (t) => {
    if (!a.isQuickLabel) return `Feedback on: "${original}"\n> ${t}\n`;
    return `[${t}] Feedback on: "${original}"\n${a.quickLabelTip ? `> ${a.quickLabelTip}\n` : ""}`;
  };
  switch (a.type) {
    case "DELETION":
      return `Remove this\n\`\`\`\n${original}\n\`\`\`\n> I don't want this in the ${subject}.\n`;
    case "COMMENT":
      return comment(text);
    case "GLOBAL_COMMENT":
      return `General feedback about the ${subject}\n> ${text}\n`;
    case "INSERTION":
      return `Add this\n\`\`\`\n${text}\n\`\`\`\n`;
    case "REPLACEMENT":
      return `Change this\n**From:**\n\`\`\`\n${original}\n\`\`\`\n**To:**\n\`\`\`\n${text}\n\`\`\`\n`;
    default:
      // Upstream's single-entry export reads a missing text as "" here.
      return comment(a.isQuickLabel ? text : (a.text ?? ""));
  }
}

/** The feedback text for a plan and the portal's annotations: what
 * `planshare open --format feedback` prints for the same link. Like the
 * CLI's decoding, a global comment carries no diff context. */
export function feedbackText(markdown, annotations, attachments = []) {
  const blocks = parseBlocks(markdown);
  const decoded = annotations.map((a) => (a.type === "GLOBAL_COMMENT" && a.diffContext ? { ...a, diffContext: undefined } : a));
  return exportAnnotations(blocks, anchorAnnotations(blocks, decoded), attachments);
}
