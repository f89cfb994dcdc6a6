// Times each step of the portal's render and highlight for one plan, cold,
// in headless Chromium: the portal's own modules are loaded into a fresh
// page per run and each step is timed with performance.now(). A
// measurement, not a test (loadtests/JOURNAL.md, "Portal (2026-12-06,
// evening)"):
//
//   node crates/portal/browser-tests/step-timing.mjs PAYLOAD [RUNS] [WEB_DIR]
//
// PAYLOAD is a file holding either a share payload as JSON (`{ "p":
// markdown, "a": [[type, text, …], …] }`, WIRE format) or an unencrypted
// hash link (`https://…/#<base64url of the deflated payload>`). WEB_DIR is
// the portal's web folder to time (default crates/portal/web; point it at a
// copy to compare a change). Prints the median and every run of each step.
// Chromium: PLANSHARE_TEST_CHROMIUM, default /usr/bin/chromium.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { inflateRawSync } from "node:zlib";
import { chromium } from "playwright-core";

const [file, runs = "7", webDir = "crates/portal/web"] = process.argv.slice(2);
if (!file) {
  console.error("usage: step-timing.mjs PAYLOAD [RUNS] [WEB_DIR]");
  process.exit(2);
}

/** The payload of a JSON file or of a hash link. */
function payloadOf(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) return JSON.parse(trimmed);
  const fragment = trimmed.split("#")[1]?.split("?")[0];
  if (!fragment) throw new Error("PAYLOAD holds neither JSON nor a link with a #fragment");
  return JSON.parse(inflateRawSync(Buffer.from(fragment, "base64url")).toString("utf8"));
}
const payload = payloadOf(readFileSync(file, "utf8"));

// Each module as a data: URL, the modules it names as `{{file}}` resolved
// the same way (one URL per file, so each module is loaded once).
const urls = new Map();
const moduleUrl = (name) => {
  if (!urls.has(name)) {
    const source = readFileSync(join(webDir, name), "utf8")
      .replace(/\{\{([\w.-]+\.m?js)\}\}/g, (_, inner) => moduleUrl(inner));
    urls.set(name, `data:text/javascript;charset=utf-8,${encodeURIComponent(source)}`);
  }
  return urls.get(name);
};
const modules = {
  render: moduleUrl("plan-view.js"),
  anchor: moduleUrl("highlighter.js"),
  marked: moduleUrl("marked.esm.js"),
  sanitize: moduleUrl("sanitize.js"),
};
const css = readFileSync(join(webDir, "app.css"), "utf8");

const browser = await chromium.launch({
  executablePath: process.env.PLANSHARE_TEST_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
const all = [];
try {
  for (let run = 0; run < Number(runs); run++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.setContent(`<!doctype html><style>${css}</style><main><article id="plan" class="plan"></article></main>`);
    all.push(await page.evaluate(async ({ modules, plan, rows }) => {
      const times = {};
      let last = performance.now();
      const step = (name) => {
        const now = performance.now();
        times[name] = Math.round((now - last) * 10) / 10;
        last = now;
      };
      const render = await import(modules.render);
      const anchor = await import(modules.anchor);
      const { marked } = await import(modules.marked);
      const { sanitizedFragment } = await import(modules.sanitize);
      await render.ready;
      step("modules (data: URLs)");
      const root = document.getElementById("plan");
      const html = marked.parse(plan, { gfm: true, async: false });
      step("marked");
      const fragment = sanitizedFragment(html);
      step("sanitiser");
      root.replaceChildren(fragment);
      render.renderAlerts(root);
      render.labelTasks(root);
      step("insert, alerts, task labels");
      render.renderCode(root);
      step("code highlighting");
      const index = anchor.textIndex(root);
      step("page text index");
      const locator = new anchor.PlanLocator(index.text, plan);
      step("block parse + search index");
      locator.index.source.joinedGrams;
      step("source sequence set");
      locator.index.rendered;
      step("rendered layer");
      locator.index.rendered.joinedGrams;
      step("rendered sequence set");
      const budget = { left: anchor.SEARCH_BUDGET };
      const texts = new Set(rows.filter((row) => row[0] !== "G").map((row) => String(row[1] ?? "")));
      const found = [...texts].map((text) => [text, locator.index.find(text, budget)]);
      step(`lookups (${texts.size})`);
      const scannedByLookups = anchor.SEARCH_BUDGET - budget.left;
      let placed = 0;
      for (const [text, where] of found) if (where.found && locator.place(where, text, budget)) placed++;
      step("placing");
      times["placed"] = placed;
      times["units scanned: lookups"] = scannedByLookups;
      times["units scanned: placing"] = anchor.SEARCH_BUDGET - budget.left - scannedByLookups;
      return times;
    }, { modules, plan: String(payload.p ?? ""), rows: Array.isArray(payload.a) ? payload.a : [] }));
    await context.close();
  }
} finally {
  await browser.close();
}
for (const name of Object.keys(all[0])) {
  const values = all.map((times) => times[name]).sort((a, b) => a - b);
  console.log(`${name.padEnd(30)} median ${String(values[values.length >> 1]).padStart(9)}   [${values.join(", ")}]`);
}
