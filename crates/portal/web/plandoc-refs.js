// Reference-style links (`[text][id]` with an `[id]: url` definition line)
// turned into inline links before the plan is cut into blocks, with the
// used definitions blanked so no line number moves; also which lines are
// fenced code or raw HTML, which the pass leaves alone. Ported from
// `crates/plan-doc/src/refs.rs`. Pure: no DOM.

import { collapseSpaces } from "{{plandoc-text.js}}";
import { HtmlBlockEnds, htmlBlockExtent, htmlBlockOpen } from "{{plandoc-html.js}}";

const normalizeLabel = (label) => collapseSpaces(label).toLowerCase();
const DEFINITION = /^ {0,3}\[([^\]]{1,999})\]:[ \t]*(?:<([^>]*)>|(\S+))[ \t]*(?:"[^"]*"|'[^']*'|\([^)]*\))?[ \t]*\r?$/;
const CODE_OR_REFERENCE = /(`+)[^\n]{0,5000}?\1|(!?)\[([^\]]{1,999})\](\[([^\]]{0,999})\])?/g;

/** `[text][id]`, `[text][]`, `[text]` and their `![…]` forms resolved into
 * inline links when a definition names them; used definition lines are
 * blanked in place, so line numbers never move. Code and HTML untouched. */
export function resolveReferenceLinks(markdown) {
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

/** `^\s*`{n,}`: a line that closes a fence opened with `n` backticks. */
export const closesFence = (line, n) => /^\s*(`*)/.exec(line)[1].length >= n;

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
