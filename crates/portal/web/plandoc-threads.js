// A review's threads from its writers' comment sets, and the progress-push
// check: the port of plan-doc's threads.rs and progress.rs (the rules are
// written there). The differential test crates/plan-doc/tests/js_ports.rs
// holds the two to the same answers on generated comment sets and plans.

/** Compares two strings by code points (Rust's byte order of UTF-8). */
function cmp(a, b) {
  const x = [...a], y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d) return d < 0 ? -1 : 1;
  }
  return x.length - y.length < 0 ? -1 : x.length === y.length ? 0 : 1;
}

/** Compares tuples of numbers and strings, element by element. */
function cmpKeys(a, b) {
  for (let i = 0; i < a.length; i++) {
    const d = typeof a[i] === "number" ? Math.sign(a[i] - b[i]) : cmp(a[i], b[i]);
    if (d) return d;
  }
  return 0;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const text = (v) => (typeof v === "string" ? v : undefined);
const whole = (v) => (typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= MAX_SAFE ? v : undefined);
const list = (set, key) => (set && typeof set === "object" && Array.isArray(set[key]) ? set[key] : []);

/** An entry of `replies` or `states`, each field kept when it has its type. */
function entry(value) {
  const v = value && typeof value === "object" && !Array.isArray(value) ? value : {};
  return { id: text(v.id), to: text(v.to), text: text(v.text), state: text(v.state), at: whole(v.at), addressed: whole(v.addressed) };
}

/** Whether a client may make `id` a thread id: 8–64 characters, no dot,
 * no control character. */
export function isThreadId(id) {
  const chars = [...id];
  return chars.length >= 8 && chars.length <= 64 && !chars.some((c) => c === "." || /\p{Cc}/u.test(c));
}

/** Whether the writer `writer` with `role` may resolve or reopen `thread`. */
export function mayChangeState(thread, writer, role) {
  return thread.writer === writer || role === "owner" || role === "approver";
}

/** The threads of `sets`: `[{writer, role, name, version, roots: [{quote,
 * text}], set}]`, `set` being the decrypted comment set (its `ids`,
 * `replies` and `states` are read). Answers threads as threads.rs does:
 * `{id, writer, author, role, version, quote, text, state, stateBy?,
 * addressed?, replies: [{id, writer, author, role, text, at, addressed?}]}`. */
export function threadsOf(sets) {
  const order = sets.map((s) => ({
    ...s,
    ids: list(s.set, "ids").map((v) => text(v) ?? null),
    replies: list(s.set, "replies").map(entry),
    states: list(s.set, "states").map(entry),
  })).sort((a, b) => cmp(a.writer, b.writer));
  const holder = new Map();
  order.forEach((set, w) => {
    for (let i = 0; i < set.roots.length; i++) {
      const id = set.ids[i];
      if (typeof id !== "string" || !isThreadId(id)) continue;
      const rank = [set.role !== "owner" ? 1 : 0, w, i];
      const held = holder.get(id);
      if (!held || cmpKeys(rank, held) < 0) holder.set(id, rank);
    }
  });
  const threads = [];
  const byId = new Map();
  order.forEach((set, w) => {
    set.roots.forEach((root, i) => {
      const claimed = typeof set.ids[i] === "string" && isThreadId(set.ids[i]) ? set.ids[i] : null;
      const held = claimed === null ? null : holder.get(claimed);
      const id = held && held[1] === w && held[2] === i ? claimed : `${set.writer}.${i}`;
      byId.set(id, threads.length);
      threads.push({
        id, writer: set.writer, author: set.name, role: set.role, version: set.version,
        quote: root.quote, text: root.text, state: "open", replies: [],
      });
    });
  });
  const newest = new Map();
  for (const set of order) {
    set.states.forEach((change, p) => {
      const { to, state, at } = change;
      if (to === undefined || state === undefined || at === undefined) return;
      if (state !== "resolved" && state !== "open") return;
      const t = byId.get(to);
      if (t === undefined) return;
      if (!mayChangeState(threads[t], set.writer, set.role)) return;
      const key = [at, set.writer, p];
      const held = newest.get(t);
      if (!held || cmpKeys(key, held.key) > 0) newest.set(t, { key, state, by: set.name });
    });
    for (const reply of set.replies) {
      const { id, to, text: said, at } = reply;
      if (id === undefined || to === undefined || said === undefined || at === undefined || said === "") continue;
      const t = byId.get(to);
      if (t === undefined) continue;
      const answer = { id, writer: set.writer, author: set.name, role: set.role, text: said, at };
      if (set.role === "owner" && reply.addressed !== undefined) answer.addressed = reply.addressed;
      threads[t].replies.push(answer);
    }
  }
  for (const [t, { state, by }] of newest) {
    threads[t].state = state;
    threads[t].stateBy = by;
  }
  for (const thread of threads) {
    thread.replies.sort((a, b) => cmpKeys([a.at, a.writer, a.id], [b.at, b.writer, b.id]));
    const addressed = [...thread.replies].reverse().find((r) => r.addressed !== undefined);
    if (addressed) thread.addressed = addressed.addressed;
  }
  return threads;
}

/** The byte offset of a task-list item's mark in `line`, or -1. */
function markAt(line) {
  let i = 0;
  while (i < line.length && (line[i] === " " || line[i] === "\t")) i++;
  const c = line[i];
  if (c === "-" || c === "*" || c === "+") i++;
  else if (c >= "0" && c <= "9") {
    const start = i;
    while (i < line.length && line[i] >= "0" && line[i] <= "9") i++;
    if (i - start > 9 || (line[i] !== "." && line[i] !== ")")) return -1;
    i++;
  } else return -1;
  const afterMarker = i;
  while (i < line.length && (line[i] === " " || line[i] === "\t")) i++;
  if (i === afterMarker) return -1;
  if (line[i] !== "[" || line[i + 2] !== "]") return -1;
  if (![" ", "x", "X"].includes(line[i + 1])) return -1;
  const next = line[i + 3];
  return next === undefined || next === " " || next === "\t" || next === "\r" ? i + 1 : -1;
}

/** Whether `next` differs from `old` only in checklist marks (`- [ ]` ↔
 * `- [x]`): a progress push. */
export function onlyChecklistMarksDiffer(old, next) {
  const a = old.split("\n"), b = next.split("\n");
  if (a.length !== b.length) return false;
  return a.every((x, n) => {
    const y = b[n];
    if (x === y) return true;
    const i = markAt(x), j = markAt(y);
    return i >= 0 && i === j && x.slice(0, i) === y.slice(0, j) && x.slice(i + 1) === y.slice(j + 1);
  });
}
