// The portal's feedback export (web/plandoc-export.js and the ports it uses) in headless Chromium,
// against expectations computed in Rust (plan-doc, as the CLI uses it).
//
// Input (stdin, JSON): { "chromium", "base",
//   "vectors"?: [{ "name", "input": { "markdown"?, "blocks"?, "annotations", "globalAttachments"? }, "output" }],
//   "corpus"?: [{ "name", "markdown", "blocks" }],
//   "links"?: [{ "name", "url", "expected" }] }
// - vectors (upstream's `export_annotations`): `parseBlocks(markdown)`
//   deep-equals `blocks`, and `exportAnnotations(blocks, annotations,
//   globalAttachments)` equals `output`;
// - corpus: `parseBlocks(markdown)` deep-equals plan-doc's blocks;
// - links: open the link, wait for the portal to decide, click "Copy
//   feedback" and compare `#feedback-text` with the CLI's text (also what
//   reached the clipboard).
// Output (stdout, JSON): { "checked": {vectors, corpus, links, copied}, "failures": [...] };
// exit status 0 only when there are no failures.

import { chromium } from "playwright-core";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

/** JSON with object keys sorted, for deep comparison. */
const canonical = (value) => JSON.stringify(value, (_, v) =>
  (v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v));

/** A line diff of `expected` → `actual` (`-` expected only, `+` actual
 * only; escapes shown), the changed lines with two lines of context. */
function diff(expected, actual) {
  const a = expected.split("\n");
  const b = actual.split("\n");
  const lcs = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const show = (line) => line.replace(/[\u0000-\u001f\u007f]/g, (c) => JSON.stringify(c).slice(1, -1));
  const out = [];
  for (let i = 0, j = 0; i < a.length || j < b.length; ) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push(`  ${show(a[i])}`);
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push(`+ ${show(b[j++])}`);
    } else {
      out.push(`- ${show(a[i++])}`);
    }
  }
  const keep = out.map((_, k) => out.slice(Math.max(0, k - 2), k + 3).some((l) => !l.startsWith("  ")));
  const shown = [];
  out.forEach((line, k) => {
    if (keep[k]) shown.push(line);
    else if (k === 0 || keep[k - 1]) shown.push("  …");
  });
  return shown.join("\n");
}

const browser = await chromium.launch({
  executablePath: input.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const failures = [];
const checked = { vectors: 0, corpus: 0, links: 0, copied: 0 };
try {
  const context = await browser.newContext({ permissions: ["clipboard-read", "clipboard-write"] });
  // The module itself, for the vectors and the corpus.
  if (input.vectors?.length || input.corpus?.length) {
    const page = await context.newPage();
    await page.goto(`${input.base}/`);
    const got = await page.evaluate(async ({ vectors, corpus }) => {
      const m = await import(document.querySelector("script[type=module]").src);
      const attempt = (f) => {
        try {
          return { ok: f() };
        } catch (error) {
          return { error: String(error?.stack ?? error) };
        }
      };
      return {
        vectors: vectors.map(({ input }) => ({
          blocks: input.markdown === undefined ? null : attempt(() => m.parseBlocks(input.markdown)),
          output: attempt(() => m.exportAnnotations(input.blocks, input.annotations, input.globalAttachments)),
        })),
        corpus: corpus.map(({ markdown }) => attempt(() => m.parseBlocks(markdown))),
      };
    }, { vectors: input.vectors ?? [], corpus: input.corpus ?? [] });
    (input.vectors ?? []).forEach((vector, k) => {
      const { blocks, output } = got.vectors[k];
      checked.vectors++;
      if (blocks && canonical(blocks.ok) !== canonical(vector.input.blocks)) {
        failures.push({ vector: vector.name, what: "parseBlocks", expected: vector.input.blocks, got: blocks });
      }
      if (output.ok !== vector.output) {
        failures.push({ vector: vector.name, what: "exportAnnotations", error: output.error,
          diff: output.ok === undefined ? undefined : diff(vector.output, output.ok) });
      }
    });
    (input.corpus ?? []).forEach((plan, k) => {
      const blocks = got.corpus[k];
      checked.corpus++;
      if (canonical(blocks.ok) !== canonical(plan.blocks)) {
        const at = (plan.blocks ?? []).findIndex((b, i) => canonical(b) !== canonical(blocks.ok?.[i]));
        failures.push({ plan: plan.name, what: "parseBlocks differs from plan_doc::parse_blocks", markdown: plan.markdown,
          error: blocks.error, firstDifference: at, rust: plan.blocks[at], js: blocks.ok?.[at],
          counts: { rust: plan.blocks.length, js: blocks.ok?.length } });
      }
    });
    await page.close();
  }
  // "Copy feedback" through the page, per link.
  for (const link of input.links ?? []) {
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(link.url);
    await page.waitForFunction(() => {
      const status = document.getElementById("status");
      return status && status.textContent !== "Loading…";
    }, null, { timeout: 15000 });
    await page.click("#copy-feedback");
    await page.waitForFunction(() => document.getElementById("feedback-note").textContent !== "", null, { timeout: 5000 })
      .catch(() => errors.push("the feedback dialog never said whether it copied"));
    const shown = await page.evaluate(async () => ({
      text: document.getElementById("feedback-text").value,
      open: document.getElementById("feedback-dialog").open,
      note: document.getElementById("feedback-note").textContent,
      clipboard: await navigator.clipboard.readText().catch((e) => `(unreadable: ${e})`),
    }));
    checked.links++;
    const fail = (what, extra) => failures.push({ link: link.name, what, ...extra });
    if (!shown.open) fail("the feedback dialog did not open");
    if (shown.text !== link.expected) fail("feedback text differs from the CLI's (- CLI, + portal)", { diff: diff(link.expected, shown.text) });
    if (shown.note === "Copied to the clipboard.") {
      checked.copied++;
      if (shown.clipboard !== shown.text) fail("the clipboard holds other text", { clipboard: shown.clipboard });
    }
    if (errors.length) fail(`page errors: ${errors.join("; ")}`);
    await page.close();
  }
} finally {
  await browser.close();
}
// Exit once the report has gone out: exiting straight after a write to a
// pipe cuts it at 64 KiB.
process.stdout.write(JSON.stringify({ checked, failures }, null, 1) + "\n", () => process.exit(failures.length ? 1 : 0));
