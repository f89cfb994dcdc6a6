// Step progress of checklist plans: the plan's steps, how many are done,
// and which is current, for the portal's `n/m` meter. A port of plan-doc's
// `plan_steps` (crates/plan-doc/src/steps.rs, whose module documentation
// states the rules), so the portal and `planshare open --format json` give
// the same answer; the differential test `crates/plan-doc/tests/js_ports.rs`
// holds it to plan-doc. Pure: no DOM, no imports. Linear in the plan's size:
// no regular expression runs over a plan's line.

const SPACE = 32;
const TAB = 9;
const HASH = 35;
const BACKTICK = 96;
const TILDE = 126;

const isBlank = (c) => c === SPACE || c === TAB;
const isDigit = (c) => c >= 48 && c <= 57;

/** Length of the run of the character code `ch` at `s[i]`. */
function runOf(s, i, ch) {
  let j = i;
  while (s.charCodeAt(j) === ch) j++;
  return j - i;
}

/** An ATX heading (after the indentation): `{ level, text }` or null. */
function heading(rest) {
  const level = runOf(rest, 0, HASH);
  if (level < 1 || level > 6) return null;
  let text = rest.slice(level);
  if (text !== "" && !isBlank(text.charCodeAt(0))) return null;
  text = text.trim();
  // A closing run of `#`: alone, or after a space or tab.
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === HASH) end--;
  if (end < text.length && (end === 0 || isBlank(text.charCodeAt(end - 1)))) {
    text = text.slice(0, end).trim();
  }
  return { level, text };
}

const STATES = { " ": "pending", "-": "in-progress", "~": "in-progress", x: "done", X: "done" };

/** A task item (after the indentation): `{ state, text }` or null. */
function taskItem(rest) {
  const c = rest.charCodeAt(0);
  let marker;
  if (c === 45 || c === 42 || c === 43) {
    marker = 1; // - * +
  } else {
    let digits = 0;
    while (isDigit(rest.charCodeAt(digits))) digits++;
    const after = rest.charCodeAt(digits);
    if (digits < 1 || digits > 9 || (after !== 46 && after !== 41)) return null; // . )
    marker = digits + 1;
  }
  let gap = 0;
  while (isBlank(rest.charCodeAt(marker + gap))) gap++;
  if (gap === 0) return null;
  const box = marker + gap;
  if (rest[box] !== "[" || rest[box + 2] !== "]") return null;
  const state = Object.hasOwn(STATES, rest[box + 1]) ? STATES[rest[box + 1]] : undefined;
  if (state === undefined) return null;
  if (box + 3 < rest.length && rest.charCodeAt(box + 3) !== SPACE) return null;
  return { state, text: rest.slice(box + 3).trim() };
}

/**
 * The steps of a checklist plan: `null` when it has no task item, else
 * `{ total, done, current, items: [{ text, state, line }] }` with `state`
 * "pending", "in-progress" or "done", `line` 1-based, and `current` the
 * index of the first step in progress, else of the first pending one, else
 * null.
 */
export function planSteps(markdown) {
  const items = []; // { indent, step }
  const headings = []; // { level, before }
  const stepsHeadings = []; // { level, before, at }
  let fenceChar = 0;
  let fenceLen = 0;
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i];
    if (line.endsWith("\r")) line = line.slice(0, -1);
    const start = line.trimStart();
    if (fenceLen > 0) {
      if (runOf(start, 0, fenceChar) >= fenceLen) fenceLen = 0;
      continue;
    }
    const first = start.charCodeAt(0);
    if (first === BACKTICK || first === TILDE) {
      const len = runOf(start, 0, first);
      if (len >= 3) {
        fenceChar = first;
        fenceLen = len;
        continue;
      }
    }
    let indent = 0;
    let at = 0;
    for (; at < line.length; at++) {
      const c = line.charCodeAt(at);
      if (c === SPACE) indent += 1;
      else if (c === TAB) indent += 4;
      else break;
    }
    const rest = line.slice(at);
    const h = heading(rest);
    if (h) {
      if (/^steps$/i.test(h.text)) {
        stepsHeadings.push({ level: h.level, before: items.length, at: headings.length });
      }
      headings.push({ level: h.level, before: items.length });
      continue;
    }
    const task = taskItem(rest);
    if (task) items.push({ indent, step: { text: task.text, state: task.state, line: i + 1 } });
  }
  if (items.length === 0) return null;
  let from = 0;
  let to = items.length;
  for (const s of stepsHeadings) {
    let end = items.length;
    for (let j = s.at + 1; j < headings.length; j++) {
      if (headings[j].level <= s.level) {
        end = headings[j].before;
        break;
      }
    }
    if (end > s.before) {
      from = s.before;
      to = end;
      break;
    }
  }
  let shallowest = Infinity;
  for (let k = from; k < to; k++) shallowest = Math.min(shallowest, items[k].indent);
  const steps = [];
  for (let k = from; k < to; k++) if (items[k].indent === shallowest) steps.push(items[k].step);
  const done = steps.filter((s) => s.state === "done").length;
  let current = steps.findIndex((s) => s.state === "in-progress");
  if (current < 0) current = steps.findIndex((s) => s.state === "pending");
  return { total: steps.length, done, current: current < 0 ? null : current, items: steps };
}
