// Re-finding annotations in the rendered plan (shared/WIRE.md §7): the
// first text node holding the text whole, else the first occurrence across
// nodes, else whitespace-normalised; each covered slice is wrapped in a
// `<mark>` bound to its annotation. First occurrence wins.

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
 * its characters the index of the original one. */
function normalise(text) {
  let out = "";
  const map = [];
  let space = false;
  for (let i = 0; i < text.length; i++) {
    if (/\s/.test(text[i])) {
      space = out.length > 0;
    } else {
      if (space) {
        out += " ";
        map.push(i - 1);
        space = false;
      }
      out += text[i];
      map.push(i);
    }
  }
  return { out, map };
}

/** Where `needle` is in the indexed text, as `[from, to)`, or null.
 * `normalised` gives the whitespace-normalised text (computed once by the
 * caller when many needles are looked up). */
export function findRange(index, needle, normalised = () => normalise(index.text)) {
  if (!needle) return null;
  for (const { node, start } of index.nodes) {
    const at = node.data.indexOf(needle);
    if (at >= 0) return [start + at, start + at + needle.length];
  }
  const across = index.text.indexOf(needle);
  if (across >= 0) return [across, across + needle.length];
  const hay = normalised();
  const pin = normalise(needle).out;
  const at = pin ? hay.out.indexOf(pin) : -1;
  return at >= 0 ? [hay.map[at], hay.map[at + pin.length - 1] + 1] : null;
}

/** Wraps the text in `[from, to)` in `<mark>`s bound to `annotation`. */
function wrap(index, [from, to], annotation) {
  const marks = [];
  for (const { node, start } of index.nodes) {
    const end = start + node.data.length;
    if (end <= from || start >= to) continue;
    const a = Math.max(from, start) - start;
    const b = Math.min(to, end) - start;
    if (a === b) continue;
    if (b < node.data.length) node.splitText(b);
    const target = a > 0 ? node.splitText(a) : node;
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
 * that were placed. Every annotation is looked up in the text as rendered
 * (one index for all of them), then the ranges are wrapped from the end of
 * the text backwards: splitting a node leaves the part before it where the
 * index has it, so the index stays right for every earlier range. A range
 * overlapping one already wrapped gets a fresh index. */
export function highlight(root, annotations) {
  const placed = new Set();
  const index = textIndex(root);
  let normalised = null;
  const found = [];
  for (const annotation of annotations) {
    if (!placeable(annotation)) continue;
    const range = findRange(index, annotation.originalText, () => (normalised ??= normalise(index.text)));
    if (!range) {
      console.warn(`annotation ${annotation.id}: its text is not in the plan`);
      continue;
    }
    found.push({ annotation, range });
  }
  found.sort((a, b) => b.range[0] - a.range[0]);
  let live = index;
  let wrappedFrom = Infinity;
  for (const { annotation, range } of found) {
    if (range[1] > wrappedFrom) live = textIndex(root);
    if (wrap(live, range, annotation).length) placed.add(annotation.id);
    wrappedFrom = Math.min(wrappedFrom, range[0]);
  }
  return placed;
}
