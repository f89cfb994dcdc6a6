// The block parser of the portal's "Copy feedback" and highlighter: plan
// markdown cut into upstream's blocks (headings, paragraphs, list items,
// quotes, code, tables, math, raw HTML …) with the source line each starts
// on. Ported from `crates/plan-doc/src/blocks.rs`; the differential test
// `crates/plan-doc/tests/js_ports.rs` checks the two give the same blocks.
// Offsets are UTF-16 code units. Pure: no DOM.

import { count } from "{{plandoc-text.js}}";
import { HtmlBlockEnds, htmlBlockExtent, htmlBlockOpen } from "{{plandoc-html.js}}";
import { closesFence, resolveReferenceLinks } from "{{plandoc-refs.js}}";

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
