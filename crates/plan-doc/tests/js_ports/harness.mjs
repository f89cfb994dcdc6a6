// Runs the portal's JavaScript ports of plan-doc (crates/portal/web:
// plandoc-*.js — block parser, rendered text, re-anchoring, feedback
// export, step progress, review threads and progress pushes — and highlighter.js — the highlighter's locate
// and place)
// under Node, for the differential
// test `crates/plan-doc/tests/js_ports.rs`. No browser, no DOM.
//
//   node harness.mjs WEB_DIR
//
// The web files name each other as `{{file}}` (the portal's build gives
// them hashed names); they are copied to a temporary directory with those
// placeholders made relative imports. Then each line on stdin is a JSON
// batch `{"cases": [{"markdown", "needles": [..], "annotations": [..]}]}`,
// and each answer a line `{"results": [{"blocks", "anchors", "feedback"}]}`
// (or `{"error"}` when a case throws): the blocks of `parseBlocks`, per
// needle the highlighter's answer (`anchor` as plandoc-anchor.js's `findText`
// gives it; `placed`, where it was placed on a page showing plan-doc's
// rendered text; `shown`, what it highlights on a page showing the plan as
// the portal renders it), `feedbackText(markdown, annotations)` and
// `planSteps(markdown)` (`steps`). A case with `"stepsOnly": true` answers
// `{"steps"}` alone; `{"threads": sets}` answers `{"threads"}` (plandoc-
// threads.js's `threadsOf`), `{"progress": [old, new]}` answers
// `{"progress"}` (`onlyChecklistMarksDiffer`).

import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const web = process.argv[2];
const dir = mkdtempSync(join(tmpdir(), "planshare-js-ports-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
for (const name of readdirSync(web).filter((n) => /\.(js|mjs)$/.test(n))) {
  const source = readFileSync(join(web, name), "utf8").replace(/\{\{([\w.-]+\.m?js)\}\}/g, "./$1");
  writeFileSync(join(dir, name), source);
}
const port = (name) => import(pathToFileURL(join(dir, name)));
const blocksJs = await port("plandoc-blocks.js");
const renderJs = await port("plandoc-render.js");
const exportJs = await port("plandoc-export.js");
const highlighter = await port("highlighter.js");
const steps = await port("plandoc-steps.js");
const threadsJs = await port("plandoc-threads.js");
const { marked } = await import(pathToFileURL(join(dir, "marked.esm.js")));

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", nbsp: "\u00a0" };

/** The text a browser shows for marked's HTML: tags dropped, the entities
 * marked writes decoded. (The page also sanitises and restyles alerts; for
 * what the generated plans hold, its text is this.) */
function pageText(markdown) {
  const html = marked.parse(markdown, { gfm: true, async: false });
  return html
    .replace(/<!--[\s\S]*?-->/g, "")
    .replace(/<[^>]*>/g, "")
    .replace(/&(#x[0-9a-fA-F]+|#[0-9]+|\w+);/g, (m, name) => {
      if (name.startsWith("#x")) return String.fromCodePoint(parseInt(name.slice(2), 16));
      if (name.startsWith("#")) return String.fromCodePoint(parseInt(name.slice(1), 10));
      return ENTITIES[name] ?? renderJs.renderInline(m).text;
    });
}

function run({ markdown, needles, annotations, stepsOnly, threads, progress }) {
  if (stepsOnly) return { steps: steps.planSteps(markdown) };
  if (threads) return { threads: threadsJs.threadsOf(threads) };
  if (progress) return { progress: threadsJs.onlyChecklistMarksDiffer(progress[0], progress[1]) };
  const blocks = blocksJs.parseBlocks(markdown);
  // Two pages: the plan as plan-doc renders it (its blocks' rendered texts
  // joined by line breaks), where every match that shows text must be
  // placed, at the CLI's occurrence; and as the portal renders it.
  const model = blocks.map((b) => renderJs.renderedText(b).text).join("\n");
  const page = pageText(markdown);
  const onModel = new highlighter.PlanLocator(model, markdown);
  const onPage = new highlighter.PlanLocator(page, markdown);
  const anchors = needles.map((needle) => {
    const { anchor: found, range } = onModel.locate(needle);
    const shown = onPage.locate(needle).range;
    return { ...found, placed: range, shown: shown && page.slice(shown[0], shown[1]) };
  });
  return {
    blocks,
    anchors,
    feedback: exportJs.feedbackText(markdown, annotations),
    steps: steps.planSteps(markdown),
    model,
    page,
  };
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const { cases } = JSON.parse(line);
  const results = cases.map((c) => {
    try {
      return run(c);
    } catch (error) {
      return { error: `${error?.stack ?? error}` };
    }
  });
  process.stdout.write(`${JSON.stringify({ results })}\n`);
}
