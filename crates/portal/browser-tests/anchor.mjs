// The highlighter (highlighter.js): the portal's own module, driven in the page
// on a large repetitive plan made of text nodes (its work is bounded), and
// the real page opening a link whose annotations hold typeset text.
//
// Input (stdin, JSON): { "chromium", "base", "sections", "absent", "copies",
//   "recombined", "budgetScans", "typeset"?: { "url", "expected" } }: a plan
//   of `sections` sections (its markdown and a page of text nodes showing
//   it); case "absent": `absent` annotations whose text is not in the plan,
//   one found by each step that applies (in one block, across blocks,
//   whitespace-normalised), and `copies` annotations quoting the plan's
//   last line, highlighted within a budget of `budgetScans` passes over the
//   text; case "recombined": `recombined` texts (at most 126, all different)
//   that are not in the plan but whose every 8-character piece is, within
//   the same budget. Case "typeset": open `url` and read what each annotation's marks cover
//   (`expected`: id → text, null for not highlighted).
// Output (stdout, JSON): { "textLength", "absent": { "placed", "notSearched",
//   "notFound", "wrongMarks", "sameWithDefaultBudget" }, "recombined": {
//   "hows": ["not-found" | "not-searched" | "placed", …] }, "typeset"?: {
//   "marks", "notFound", "failures" } }.

import { chromium } from "playwright-core";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

const browser = await chromium.launch({
  executablePath: input.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  await page.goto(`${input.base}/`);
  const report = await page.evaluate(async (input) => {
    const m = await import(document.querySelector("script[type=module]").src);
    /** The plan's markdown, and a fresh page showing it: per section a
     * heading, a paragraph and two list items, a line break between
     * elements (as rendered HTML has), then a last line. */
    const markdown = "## Step\n\nThe service retries failed writes with backoff and logs each attempt.\n\n" +
      "- check the queue depth\n- alert on errors\n- primary gateway retries writes\n" +
      "- backup gateway retries reads from replicas\n\n";
    const source = `${markdown.repeat(input.sections)}Signed off after the review.\n`;
    const plan = () => {
      const root = document.createElement("div");
      const add = (tag, text) => {
        const e = document.createElement(tag);
        e.textContent = text;
        root.append(e, "\n");
      };
      for (let i = 0; i < input.sections; i++) {
        add("h2", "Step");
        add("p", "The service retries failed writes with backoff and logs each attempt.");
        add("li", "check the queue depth");
        add("li", "alert on errors");
        add("li", "primary gateway retries writes");
        add("li", "backup gateway retries reads from replicas");
      }
      add("p", "Signed off after the review.");
      return root;
    };
    const comment = (id, originalText) => ({ id, type: "COMMENT", originalText });
    const textLength = plan().textContent.length;
    const budget = input.budgetScans * textLength;

    const found = [
      ["in-node", "logs each attempt", "logs each attempt"],
      ["across", "depth\nalert on", "depth\nalert on"],
      ["normalised", "queue depth   alert", "queue depth\nalert"],
    ];
    const annotations = [];
    for (let i = 0; i < input.absent; i++) annotations.push(comment(`absent-${i}`, `reviewer note ${i}: edited out`));
    for (const [id, text] of found) annotations.push(comment(id, text));
    for (let i = 0; i < input.copies; i++) annotations.push(comment(`copy-${i}`, "Signed off after the review"));
    const marks = (root) => {
      const shown = {};
      for (const mark of root.querySelectorAll("mark[data-bind-id]")) {
        shown[mark.dataset.bindId] = (shown[mark.dataset.bindId] ?? "") + mark.textContent;
      }
      return shown;
    };
    const root = plan();
    const result = m.highlight(root, annotations, { plan: source, budget });
    const shown = marks(root);
    const expected = Object.fromEntries(found.map(([id, , covers]) => [id, covers]));
    for (let i = 0; i < input.copies; i++) expected[`copy-${i}`] = "Signed off after the review";
    const wrongMarks = Object.entries(expected)
      .filter(([id, covers]) => shown[id] !== covers)
      .map(([id, covers]) => ({ id, expected: covers, got: shown[id] ?? null }));
    const again = m.highlight(plan(), annotations, { plan: source });
    const absent = {
      placed: result.placed.size,
      notSearched: result.notSearched.size,
      notFound: annotations.filter((a) => !result.placed.has(a.id) && !result.notSearched.has(a.id)).length,
      wrongMarks,
      sameWithDefaultBudget: [...again.placed].join() === [...result.placed].join() && again.notSearched.size === 0,
    };

    // The primary line's start and the backup line's end: every 8-unit
    // piece is in the plan (the two share " gateway retries "), the whole
    // is not, so each must be scanned for.
    const reads = "reads from replicas";
    const recombined = [];
    for (let i = 0; i < input.recombined; i++) {
      const text = `${"primary".slice(i % 7)} gateway retries ${reads.slice(0, 2 + (Math.floor(i / 7) % (reads.length - 1)))}`;
      recombined.push(comment(`r-${i}`, text));
    }
    const budgeted = m.highlight(plan(), recombined, { plan: source, budget });
    const hows = recombined.map((a) =>
      budgeted.placed.has(a.id) ? "placed" : budgeted.notSearched.has(a.id) ? "not-searched" : "not-found");
    const unbounded = m.highlight(plan(), recombined, { plan: source });
    return {
      textLength,
      absent,
      recombined: { hows, placedUnbounded: unbounded.placed.size, notSearchedUnbounded: unbounded.notSearched.size },
    };
  }, input);
  if (input.typeset) {
    const shown = await browser.newPage();
    await shown.goto(input.typeset.url);
    await shown.waitForFunction(() => {
      const status = document.getElementById("status");
      return status && /annotation/.test(status.textContent);
    }, null, { timeout: 15000 });
    const got = await shown.evaluate(() => ({
      marks: [...document.querySelectorAll("#plan mark[data-bind-id]")].reduce((all, m) => {
        all[m.dataset.bindId] = (all[m.dataset.bindId] ?? "") + m.textContent;
        return all;
      }, {}),
      notFound: [...document.querySelectorAll("#annotation-list li.not-found")].map((li) => li.dataset.annotationId),
    }));
    const failures = Object.entries(input.typeset.expected)
      .filter(([id, covers]) => (got.marks[id] ?? null) !== covers)
      .map(([id, covers]) => ({ id, expected: covers, got: got.marks[id] ?? null }));
    report.typeset = { ...got, failures };
  }
  process.stdout.write(JSON.stringify(report));
} finally {
  await browser.close();
}
