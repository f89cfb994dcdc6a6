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

/** Where `needle` is in the indexed text, as `[from, to)`, or null. */
export function findRange(index, needle) {
  if (!needle) return null;
  for (const { node, start } of index.nodes) {
    const at = node.data.indexOf(needle);
    if (at >= 0) return [start + at, start + at + needle.length];
  }
  const across = index.text.indexOf(needle);
  if (across >= 0) return [across, across + needle.length];
  const hay = normalise(index.text);
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
  for (const mark of root.querySelectorAll("mark[data-bind-id]")) {
    mark.replaceWith(...mark.childNodes);
  }
  root.normalize();
}

/** Re-finds each annotation in `root` and highlights it; returns the ids
 * that were placed. */
export function highlight(root, annotations) {
  const placed = new Set();
  for (const annotation of annotations) {
    if (!placeable(annotation)) continue;
    const index = textIndex(root);
    const range = findRange(index, annotation.originalText);
    if (!range) {
      console.warn(`annotation ${annotation.id}: its text is not in the plan`);
      continue;
    }
    if (wrap(index, range, annotation).length) placed.add(annotation.id);
  }
  return placed;
}
