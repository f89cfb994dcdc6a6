// The review page with threads, in headless Chromium (issue 45): how long a
// reply takes from its Send on one page to showing on another open page,
// and how long a page takes from navigation to every thread drawn.
//
//   node page.mjs reply CHROMIUM '<author link>' '<watcher link>' [N]
//   node page.mjs load CHROMIUM '<link>' THREADS REPLIES '<reference link>' REFERENCE_THREADS [RUNS]
//
// `reply`: page A (the author of a thread) replies N times (default 50),
// one at a time; page B follows the review. Each latency is from the
// moment A's "Send reply" is clicked to the moment B's DOM holds the reply
// (a MutationObserver in B; both clocks are performance.timeOrigin + now()
// on one machine). Prints median, p99 and max in ms.
//
// `load`: RUNS (default 5) fresh loads of `link`, each timed from
// navigation start to the moment the page lists THREADS thread cards and
// REPLIES replies; the same for `reference link`, a review with the same
// annotations and no replies or thread ids (REFERENCE_THREADS cards).
// Prints the medians and their ratio.
//
// Uses playwright-core from crates/portal/browser-tests/node_modules.

import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(fileURLToPath(new URL("../../crates/portal/browser-tests/", import.meta.url)));
const { chromium } = require("playwright-core");

const [mode, executablePath, ...rest] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const now = (page) => page.evaluate(() => performance.timeOrigin + performance.now());

try {
  if (mode === "reply") {
    const [authorLink, watcherLink, n = "50"] = rest;
    const a = await (await browser.newContext()).newPage();
    const b = await (await browser.newContext()).newPage();
    await Promise.all([a.goto(authorLink), b.goto(watcherLink)]);
    await Promise.all([a, b].map((p) => p.waitForSelector("#annotation-list li.thread")));
    await b.evaluate(() => {
      window.__seen = {};
      new MutationObserver(() => {
        for (const said of document.querySelectorAll("#annotation-list .reply .said")) {
          const t = said.textContent;
          if (t.startsWith("lat-") && !(t in window.__seen)) window.__seen[t] = performance.timeOrigin + performance.now();
        }
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    const latencies = [];
    for (let i = 0; i < Number(n); i++) {
      const label = `lat-${i}`;
      const box = a.locator("#annotation-list textarea").first();
      if (!(await box.isVisible().catch(() => false))) {
        await a.locator('#annotation-list button[aria-label^="Reply to"]').first().click();
      }
      await box.fill(label);
      const sent = await a.evaluate(() => {
        const button = [...document.querySelectorAll("#annotation-list button")].find((x) => x.textContent === "Send reply");
        const t = performance.timeOrigin + performance.now();
        button.click();
        return t;
      });
      await b.waitForFunction((l) => l in window.__seen, label, { timeout: 30_000 });
      const seen = await b.evaluate((l) => window.__seen[l], label);
      latencies.push(seen - sent);
      // The author's own page has taken the reply before the next one.
      await a.waitForFunction((l) => [...document.querySelectorAll("#annotation-list .reply .said")].some((x) => x.textContent === l), label);
    }
    console.log(JSON.stringify({
      replies: latencies.length,
      medianMs: +percentile(latencies, 50).toFixed(1),
      p99Ms: +percentile(latencies, 99).toFixed(1),
      maxMs: +Math.max(...latencies).toFixed(1),
    }));
  } else if (mode === "load") {
    const [link, threads, replies, reference, referenceThreads, runs = "5"] = rest;
    const time = async (url, cards, answers) => {
      const out = [];
      for (let r = 0; r < Number(runs); r++) {
        const page = await (await browser.newContext()).newPage();
        await page.goto(url);
        await page.waitForFunction(([c, n]) =>
          document.querySelectorAll("#annotation-list li.thread, #annotation-list > li").length >= c
          && document.querySelectorAll("#annotation-list .reply").length >= n, [Number(cards), Number(answers)], { timeout: 120_000, polling: "raf" });
        out.push(await page.evaluate(() => performance.now()));
        await page.context().close();
      }
      return percentile(out, 50);
    };
    const withThreads = await time(link, threads, replies);
    const plain = await time(reference, referenceThreads, 0);
    console.log(JSON.stringify({
      threadsMs: +withThreads.toFixed(0),
      referenceMs: +plain.toFixed(0),
      ratio: +(withThreads / plain).toFixed(2),
    }));
  } else {
    throw new Error("mode: reply or load");
  }
} finally {
  await browser.close();
}
