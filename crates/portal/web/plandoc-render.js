// The text a block shows once rendered, as upstream's viewer renders it:
// inline markdown (emphasis, code, links, images, math, autolinks, HTML
// tags and comments, character references, emoji shortcodes) reduced to
// plain text, each code unit mapped back to its range in the block's
// source; and upstream's typography fold (smart quotes, dashes). Ported
// from `crates/plan-doc/src/render.rs`; re-anchoring searches these texts.
// Pure: no DOM.

import { charLen, count, isSpace, isWord } from "{{plandoc-text.js}}";

/** Text derived from a block's content, with each code unit's source range
 * `[from[k], to[k])` in the content (`from` null: the text is the source). */
export class Mapped {
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
