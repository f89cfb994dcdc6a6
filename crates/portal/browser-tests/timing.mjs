// Times the portal in headless Chromium: from navigation start to every
// annotation highlighted (the app's `planshare:highlighted` performance
// mark), for each link, `runs` times, each in a fresh browser context (no
// cache shared between runs).
//
// Input (stdin, JSON): { "chromium", "runs", "links": [{ "name", "url" }] }
// Output (stdout, JSON): { "results": [{ "name", "runs": [{ "highlightedMs", "decodedMs", "renderedMs",
//   "domContentLoadedMs", "marks", "annotations" }] }] }

import { chromium } from "playwright-core";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

const browser = await chromium.launch({
  executablePath: input.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const results = [];
let failed = false;
try {
  for (const link of input.links) {
    const runs = [];
    for (let i = 0; i < input.runs; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(link.url);
      await page.waitForFunction(() => performance.getEntriesByName("planshare:highlighted").length > 0
        || !document.getElementById("error").hidden, null, { timeout: 60000 });
      const run = await page.evaluate(() => ({
        highlightedMs: performance.getEntriesByName("planshare:highlighted")[0]?.startTime ?? null,
        decodedMs: performance.getEntriesByName("planshare:decoded")[0]?.startTime ?? null,
        renderedMs: performance.getEntriesByName("planshare:rendered")[0]?.startTime ?? null,
        domContentLoadedMs: performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd,
        marks: new Set([...document.querySelectorAll("#plan mark[data-bind-id]")].map((m) => m.dataset.bindId)).size,
        annotations: document.querySelectorAll("#annotation-list li").length,
        error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
      }));
      if (run.error || run.highlightedMs === null) failed = true;
      runs.push(run);
      await context.close();
    }
    results.push({ name: link.name, runs });
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify({ results }) + "\n");
process.exit(failed ? 1 : 0);
