// Times the portal's highlighter (a version of highlighter.js, once anchor.js) in headless
// Chromium on a large repetitive plan with many annotations that are not in
// it (issue 22, item 8). A measurement, not a test:
//
//   node crates/portal/browser-tests/anchor-timing.mjs ANCHOR_JS [MB] [ANNOTATIONS] [novel|recombined]
//
// ANCHOR_JS is the file to time (crates/portal/web/highlighter.js, or an
// older copy); the modules it names as `{{file}}`, and those they name in
// turn, are read from its directory.
// The plan is built of text nodes (heading, paragraph, two list items per
// section, a line break between elements) up to MB megabytes of text, and
// the markdown it shows is passed along (versions that take it use it).
// `novel` annotations quote text that is nowhere in the plan; `recombined`
// ones glue pieces of it so that every 4-character piece occurs and the
// whole does not. Prints the text size, the time `highlight` took, and what
// it returned. Chromium: PLANSHARE_TEST_CHROMIUM, default /usr/bin/chromium.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { chromium } from "playwright-core";

const [file, mb = "5", count = "2000", kind = "novel"] = process.argv.slice(2);
if (!file) {
  console.error("usage: anchor-timing.mjs ANCHOR_JS [MB] [ANNOTATIONS] [novel|recombined]");
  process.exit(2);
}
const dataUrl = (text) => `data:text/javascript;charset=utf-8,${encodeURIComponent(text)}`;
// One data: URL per module, so a module two others name is loaded once.
const urls = new Map();
const resolved = (path) => readFileSync(path, "utf8").replace(/\{\{([\w.-]+\.m?js)\}\}/g, (_, name) => {
  if (!urls.has(name)) urls.set(name, dataUrl(resolved(join(dirname(file), name))));
  return urls.get(name);
});
const source = resolved(file);
const browser = await chromium.launch({
  executablePath: process.env.PLANSHARE_TEST_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(0);
  const report = await page.evaluate(async ({ source, mb, count, kind }) => {
    const m = await import(source);
    const root = document.createElement("div");
    const add = (tag, text) => {
      const e = document.createElement(tag);
      e.textContent = text;
      root.append(e, "\n");
    };
    let length = 0;
    let markdown = "";
    while (length < mb * 1024 * 1024) {
      for (const [tag, text] of [["h2", "Step"], ["p", "The service retries failed writes with backoff and logs each attempt."],
        ["li", "check the queue depth"], ["li", "alert on errors"]]) {
        add(tag, text);
        length += text.length + 1;
      }
      markdown += "## Step\n\nThe service retries failed writes with backoff and logs each attempt.\n\n" +
        "- check the queue depth\n- alert on errors\n\n";
    }
    document.body.append(root);
    const rest = "service retries failed writes with backoff and logs each attempt";
    const annotations = [];
    for (let i = 0; i < count; i++) {
      const originalText = kind === "recombined"
        ? `${"check t".slice(i % 5)}he ${rest.slice(0, 20 + (Math.floor(i / 5) % (rest.length - 20)))}`
        : `reviewer note ${i}: this sentence was edited out`;
      annotations.push({ id: `a-${i}`, type: "COMMENT", originalText });
    }
    const started = performance.now();
    const result = m.PlanLocator ? m.highlight(root, annotations, { plan: markdown }) : m.highlight(root, annotations);
    const ms = performance.now() - started;
    const placed = result instanceof Set ? result : result.placed;
    return {
      textChars: root.textContent.length,
      annotations: count,
      kind,
      seconds: Math.round(ms) / 1000,
      placed: placed.size,
      notSearched: result.notSearched?.size ?? null,
    };
  }, { source: dataUrl(source), mb: Number(mb), count: Number(count), kind });
  console.log(JSON.stringify(report));
} finally {
  await browser.close();
}
