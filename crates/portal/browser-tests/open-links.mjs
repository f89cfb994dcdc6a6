// Opens share links in headless Chromium and reports what the portal shows.
//
// Input (stdin, JSON): { "chromium": "/usr/bin/chromium", "screenshots"?: [{ "url",
//   "path", "colorScheme": "light"|"dark", "width", "height" }],
//   "links": [{ "url", "plan"?, "annotations"?, "highlighted"?, "marks"?: { annotation id: its text },
//   "heading"?, "error"?, "hostile"? }] }
// For each link: load it, wait until the portal has decided (plan shown or
// error shown), then check that every word of the plan's markdown is in the
// rendered plan, in order, and compare the number of annotations or the
// error text. Any Content-Security-Policy violation is a failure. Also records every request the page makes to another origin
// and any request carrying the fragment's key. Output (stdout, JSON):
// { "opened": n, "failures": [...], "foreignRequests": [...], "keyLeaks": [...] }.
// Exit status 0 only when there are no failures, foreign requests or leaks.

import { chromium } from "playwright-core";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

/** The first word of `markdown` not found in `rendered` after the previous one. */
function missingWords(markdown, rendered) {
  const words = (text) => text.match(/[\p{L}\p{N}]+/gu) ?? [];
  const shown = words(rendered);
  let at = 0;
  for (const word of words(markdown)) {
    const found = shown.indexOf(word, at);
    if (found < 0) return word;
    at = found + 1;
  }
  return null;
}

const browser = await chromium.launch({
  executablePath: input.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const failures = [];
const foreignRequests = [];
const keyLeaks = [];
try {
  for (const link of input.links) {
    const page = await browser.newPage();
    const origin = new URL(link.url).origin;
    const key = new URLSearchParams(new URL(link.url).hash.slice(1)).get("key");
    page.on("request", (request) => {
      const url = request.url();
      if (new URL(url).origin !== origin) foreignRequests.push(url);
      const headers = JSON.stringify(request.headers());
      if (key && (url.includes(key) || headers.includes(key) || (request.postData() ?? "").includes(key))) {
        keyLeaks.push(url);
      }
    });
    const errors = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    page.on("dialog", async (dialog) => {
      errors.push(`a script opened a dialog: ${dialog.message()}`);
      await dialog.dismiss();
    });
    await page.addInitScript(() => {
      window.__violations = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    await page.goto(link.url);
    await page.waitForFunction(() => {
      const status = document.getElementById("status");
      return status && status.textContent !== "Loading…";
    }, null, { timeout: 15000 });
    const shown = await page.evaluate(() => ({
      plan: document.getElementById("plan").textContent,
      annotations: document.querySelectorAll("#annotation-list li").length,
      error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
      href: location.href,
      violations: window.__violations,
      heading: document.querySelector("#plan h1")?.textContent ?? null,
      alerts: [...document.querySelectorAll("#plan blockquote.alert .alert-title")].map((t) => t.textContent),
      highlighted: new Set([...document.querySelectorAll("#plan mark[data-bind-id]")].map((m) => m.dataset.bindId)).size,
      marks: [...document.querySelectorAll("#plan mark[data-bind-id]")].reduce((all, m) => {
        all[m.dataset.bindId] = (all[m.dataset.bindId] ?? "") + m.textContent;
        return all;
      }, {}),
      scripts: document.querySelectorAll("#plan script, #plan iframe, #plan object, #plan embed, #plan [onerror], #plan [onload]").length,
    }));
    const fail = (what) => failures.push({ url: link.url.slice(0, 120), what, shown: { ...shown, plan: shown.plan.slice(0, 200) } });
    if (link.error !== undefined) {
      if (shown.error !== link.error) fail(`error text: expected ${JSON.stringify(link.error)}`);
    } else {
      if (shown.error !== null) fail(`unexpected error ${JSON.stringify(shown.error)}`);
      const missing = missingWords(link.plan, shown.plan);
      if (missing) fail(`plan text: "${missing}" not rendered (in order)`);
      if (shown.annotations !== link.annotations) fail(`annotations: expected ${link.annotations}, shown ${shown.annotations}`);
      if (shown.href.includes("#")) fail("the fragment was not dropped from the address bar");
      if (link.heading !== undefined && shown.heading !== link.heading) fail(`heading: expected ${JSON.stringify(link.heading)}`);
      if (link.highlighted !== undefined && shown.highlighted !== link.highlighted) {
        fail(`highlighted annotations: expected ${link.highlighted}, shown ${shown.highlighted}`);
      }
      // What each highlight covers is its annotation's text (whitespace aside).
      const squash = (text) => text.replace(/\s+/g, " ").trim();
      for (const [id, text] of Object.entries(link.marks ?? {})) {
        if (squash(shown.marks[id] ?? "") !== squash(text)) {
          fail(`highlight ${id}: expected ${JSON.stringify(text)}, covers ${JSON.stringify(shown.marks[id] ?? null)}`);
        }
      }
      if (link.alerts !== undefined && JSON.stringify(shown.alerts) !== JSON.stringify(link.alerts)) {
        fail(`alerts: expected ${JSON.stringify(link.alerts)}, shown ${JSON.stringify(shown.alerts)}`);
      }
      if (shown.scripts) fail(`${shown.scripts} script-capable nodes in the rendered plan`);
    }
    if (errors.length) fail(`page errors: ${errors.join("; ")}`);
    // A hostile link may trip the CSP (the second layer, blocking); any
    // other link must not.
    if (shown.violations.length && !link.hostile) fail(`CSP violations: ${shown.violations.join("; ")}`);
    await page.close();
  }
  // Screenshots (test artifacts): a rendered plan in each colour scheme and size.
  for (const shot of input.screenshots ?? []) {
    const context = await browser.newContext({
      viewport: { width: shot.width, height: shot.height },
      colorScheme: shot.colorScheme,
    });
    const page = await context.newPage();
    await page.goto(shot.url);
    await page.waitForFunction(() => document.querySelectorAll("#plan mark").length > 0, null, { timeout: 15000 });
    await page.screenshot({ path: shot.path, fullPage: true });
    await context.close();
  }
} finally {
  await browser.close();
}
// Exit once the report has gone out: exiting straight after a write to a
// pipe cuts it at 64 KiB.
process.stdout.write(JSON.stringify({ opened: input.links.length, failures, foreignRequests, keyLeaks }) + "\n", () => process.exit(failures.length || foreignRequests.length || keyLeaks.length ? 1 : 0));
