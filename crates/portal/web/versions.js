// The versions dialog of a review page: every version with its round,
// whether it was pushed as progress (flagged when its plan changed more
// than checklist marks: a progress push keeps an approval, so that is
// worth a look), what it changed (+N/−M lines against the one before), and
// an inline diff between any two of them.

import { diffLines, diffStats, hunks, linesOf } from "{{diff.js}}";
import { onlyChecklistMarksDiffer } from "{{plandoc-threads.js}}";

const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** "+3 −1" for `stats`. */
function counted({ added, removed }) {
  return added === 0 && removed === 0 ? "no change to the text" : `+${added} −${removed}`;
}

const SIGNS = { "+": ["add", "added: "], "-": ["del", "removed: "], " ": ["same", ""] };

/** Renders the diff of `from` to `to` (plans) into the dialog. */
function renderDiff(from, to, fromN, toN) {
  const ops = diffLines(linesOf(from), linesOf(to));
  const stats = diffStats(ops);
  $("diff-summary").textContent = fromN === toN
    ? `v${fromN} is the same version.`
    : `From v${fromN} to v${toN}: ${counted(stats)}${stats.added + stats.removed ? " lines" : ""}.`;
  const rows = [];
  for (const run of hunks(ops)) {
    if (!Array.isArray(run)) {
      rows.push(el("div", "fold", `… ${run.folded} unchanged line${run.folded === 1 ? "" : "s"}`));
      continue;
    }
    const [op, line] = run;
    const [className, spoken] = SIGNS[op];
    const row = el("div", className);
    if (spoken) row.append(el("span", "visually-hidden", spoken));
    row.append(el("span", "sign", op === " " ? " " : op === "-" ? "−" : "+"));
    row.lastChild.setAttribute("aria-hidden", "true");
    row.append(document.createTextNode(line || " "));
    rows.push(row);
  }
  $("diff-view").replaceChildren(...rows);
}

/** Opens the versions dialog for the review `view`; `planOf(n)` resolves
 * to version n's plan. Failures to fetch a version are said in the
 * dialog. */
export async function showVersions(view, planOf) {
  const versions = [...view.versions].sort((x, y) => x.n - y.n);
  const list = $("versions-list");
  const stats = new Map();
  list.replaceChildren(...versions.map((version) => {
    const li = el("li");
    li.append(el("strong", null, `v${version.n}`));
    li.append(el("span", "meta", ` · ${new Date(version.createdAt).toLocaleString()}${version.n === view.latest ? " · the latest" : ""}`));
    if ((version.round ?? 1) > 1) li.append(el("span", "round", ` · round ${version.round}`));
    if (version.progress) li.append(el("span", "progress", " · progress"));
    const changed = el("span", "changes", version.n === versions[0].n ? " · the first version" : " · …");
    stats.set(version.n, changed);
    li.append(changed);
    return li;
  }));
  const from = $("diff-from");
  const to = $("diff-to");
  const options = () => versions.map((v) => new Option(`v${v.n}`, String(v.n)));
  from.replaceChildren(...options());
  to.replaceChildren(...options());
  const last = versions[versions.length - 1].n;
  to.value = String(last);
  from.value = String(versions.length > 1 ? versions[versions.length - 2].n : last);
  $("diff-summary").textContent = "Loading the versions…";
  $("diff-view").replaceChildren();
  $("versions-dialog").showModal();
  const compare = async () => {
    const [a, b] = [Number(from.value), Number(to.value)];
    try {
      renderDiff(await planOf(a), await planOf(b), a, b);
    } catch (error) {
      $("diff-summary").textContent = error.message;
    }
  };
  from.onchange = compare;
  to.onchange = compare;
  await compare();
  for (let i = 1; i < versions.length; i++) {
    try {
      const [before, after] = [await planOf(versions[i - 1].n), await planOf(versions[i].n)];
      const ops = diffLines(linesOf(before), linesOf(after));
      const changed = stats.get(versions[i].n);
      changed.textContent = ` · ${counted(diffStats(ops))} against v${versions[i - 1].n}`;
      if (versions[i].progress && !onlyChecklistMarksDiffer(before, after)) {
        changed.append(el("strong", "flag", " · pushed as progress, but more than checklist marks changed"));
      }
    } catch (error) {
      stats.get(versions[i].n).textContent = ` · ${error.message}`;
    }
  }
}
