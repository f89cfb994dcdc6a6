// Times the portal in headless Chromium: from navigation start to every
// annotation highlighted (the app's `planshare:highlighted` performance
// mark), and to the end of the first frame painted after that
// (`planshare:painted`: the browser's style, layout and paint of the plan
// included), for each link, `runs` times, each in a fresh browser context
// (no cache shared between runs).
//
// Then, with `paint`, the time from a reviewer's comment being stored to
// it being painted on an open review page: the page (`paint.url`, the
// owner's) is opened once; each body of `paint.bodies` is PUT to
// `paint.endpoint` with the reviewer's token, one after the other, and the
// page reports when its comment (`text`) is listed with its highlight — at
// the next animation frame after that, when the browser paints. Both
// clocks are the machine's wall clock (performance.timeOrigin + now()).
//
// With `profileDir`, the last run of each link also records a CPU profile
// of the page (Chromium's sampling profiler, from navigation to the mark)
// into `<profileDir>/<link name>.cpuprofile`, for DevTools' Performance
// panel, and prints the functions with the most self time to stderr.
//
// Input (stdin, JSON): { "chromium", "runs", "links": [{ "name", "url" }],
//   "profileDir"?, "paint"?: { "url", "endpoint", "token", "bodies": [{ "body", "text" }] } }
// Output (stdout, JSON): { "results": [{ "name", "runs": [{ "highlightedMs", "paintedMs", "decodedMs", "renderedMs",
//   "domContentLoadedMs", "marks", "annotations" }] }], "paint"?: { "latenciesMs": [...] } }

import { writeFileSync } from "node:fs";
import { join } from "node:path";
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
let paint;

const now = () => performance.timeOrigin + performance.now();

/** Times each comment of `setup.bodies` from its PUT's 200 to painted. */
async function paintLatencies(setup) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(setup.url);
  await page.waitForFunction(() => performance.getEntriesByName("planshare:highlighted").length > 0, null, { timeout: 60000 });
  const latenciesMs = [];
  for (const { body, text } of setup.bodies) {
    // Resolves with the wall-clock time of the first frame after the
    // comment is listed and highlighted.
    const seen = page.evaluate((text) => new Promise((resolve) => {
      const shown = () => {
        const item = [...document.querySelectorAll("#annotation-list li")].find((li) => li.textContent.includes(text));
        return item !== undefined && document.querySelector(`#plan mark[data-bind-id="${CSS.escape(item.dataset.annotationId)}"]`) !== null;
      };
      const done = () => requestAnimationFrame(() => resolve(performance.timeOrigin + performance.now()));
      if (shown()) return done();
      const watch = new MutationObserver(() => {
        if (!shown()) return;
        watch.disconnect();
        done();
      });
      watch.observe(document.getElementById("annotation-list"), { childList: true, subtree: true });
    }), text);
    // The page's observer is in place before the comment is sent.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(resolve)));
    const response = await fetch(setup.endpoint, {
      method: "PUT",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${setup.token}` },
      body,
    });
    const stored = now();
    if (response.status !== 200) throw new Error(`PUT comments: HTTP ${response.status} ${await response.text()}`);
    const painted = await Promise.race([seen, new Promise((_, reject) => setTimeout(() => reject(new Error(`"${text}" not painted within 20 s`)), 20000))]);
    latenciesMs.push(Math.round((painted - stored) * 10) / 10);
    // Let the page's long poll ask again before the next comment.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  await context.close();
  return { latenciesMs };
}
/** The `top` functions of a CPU profile by self time, as lines. */
function hottest(profile, top = 25) {
  const self = new Map();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const dt = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const { callFrame: f } = byId.get(profile.samples[i]);
    const name = `${f.functionName || "(anonymous)"} ${f.url.split("/").pop()}:${f.lineNumber + 1}`;
    self.set(name, (self.get(name) ?? 0) + (dt[i] ?? 0) / 1000);
  }
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, ms]) => `${ms.toFixed(1).padStart(8)} ms  ${name}`);
}

try {
  for (const link of input.links) {
    const runs = [];
    for (let i = 0; i < input.runs; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const profiling = input.profileDir && i === input.runs - 1;
      let cdp;
      if (profiling) {
        cdp = await context.newCDPSession(page);
        await cdp.send("Profiler.enable");
        await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
        await cdp.send("Profiler.start");
      }
      await page.goto(link.url);
      await page.waitForFunction(() => performance.getEntriesByName("planshare:painted").length > 0
        || !document.getElementById("error").hidden, null, { timeout: 60000 });
      if (profiling) {
        const { profile } = await cdp.send("Profiler.stop");
        const file = join(input.profileDir, `${link.name.replace(/[^a-z0-9]+/gi, "-")}.cpuprofile`);
        writeFileSync(file, JSON.stringify(profile));
        process.stderr.write(`${link.name}: CPU profile in ${file}; most self time:\n${hottest(profile).join("\n")}\n`);
      }
      const run = await page.evaluate(() => ({
        highlightedMs: performance.getEntriesByName("planshare:highlighted")[0]?.startTime ?? null,
        paintedMs: performance.getEntriesByName("planshare:painted")[0]?.startTime ?? null,
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
  if (input.paint) paint = await paintLatencies(input.paint);
} finally {
  await browser.close();
}
// Exit once the report has gone out: exiting straight after a write to a
// pipe cuts it at 64 KiB.
process.stdout.write(JSON.stringify({ results, paint }) + "\n", () => process.exit(failed ? 1 : 0));
