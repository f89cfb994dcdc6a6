// Line diffs between two versions of a plan (Myers' O(ND) algorithm on
// the lines between the common start and end), and the runs of them a page
// shows: changed lines with a little context, long unchanged runs folded.
// No DOM.

/** Past this many differing lines the middle is shown as replaced whole,
 * which keeps a diff of two unrelated 200 KB plans quick. */
const MOST_EDITS = 1000;

/** The lines of `text` (a last empty line after a final newline dropped). */
export function linesOf(text) {
  const lines = String(text).split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** The shortest edit script between `a` and `b` (arrays of lines) as
 * `[op, line]` pairs, op `" "` kept, `"-"` removed, `"+"` added. */
export function diffLines(a, b) {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const out = [];
  for (let i = 0; i < start; i++) out.push([" ", a[i]]);
  out.push(...middle(a.slice(start, endA), b.slice(start, endB)));
  for (let i = endA; i < a.length; i++) out.push([" ", a[i]]);
  return out;
}

/** Myers' greedy forward search, then a walk back along the kept
 * frontiers. */
function middle(a, b) {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((line) => ["+", line]);
  if (m === 0) return a.map((line) => ["-", line]);
  const most = Math.min(n + m, MOST_EDITS);
  const offset = most + 1;
  let v = new Int32Array(2 * most + 3);
  const trace = [];
  let found = -1;
  for (let d = 0; d <= most && found < 0; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return [...a.map((line) => ["-", line]), ...b.map((line) => ["+", line])];
  const ops = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    v = trace[d];
    const k = x - y;
    const down = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]);
    const prevK = down ? k + 1 : k - 1;
    const prevX = v[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      ops.push([" ", a[x]]);
    }
    if (down) ops.push(["+", b[--y]]);
    else ops.push(["-", a[--x]]);
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    ops.push([" ", a[x]]);
  }
  return ops.reverse();
}

/** How many lines `ops` add and remove. */
export function diffStats(ops) {
  let added = 0;
  let removed = 0;
  for (const [op] of ops) {
    if (op === "+") added++;
    else if (op === "-") removed++;
  }
  return { added, removed };
}

/** `ops` as the runs a page shows: changed lines with `context` kept lines
 * around them, and `{ folded: n }` in place of longer unchanged runs. */
export function hunks(ops, context = 3) {
  const shown = [];
  let kept = [];
  const flush = (last) => {
    const head = shown.length === 0 ? 0 : context;
    const tail = last ? 0 : context;
    if (kept.length <= head + tail + 1) {
      shown.push(...kept);
    } else {
      shown.push(...kept.slice(0, head), { folded: kept.length - head - tail }, ...kept.slice(kept.length - tail));
    }
    kept = [];
  };
  for (const op of ops) {
    if (op[0] === " ") {
      kept.push(op);
      continue;
    }
    flush(false);
    shown.push(op);
  }
  flush(true);
  return shown;
}
