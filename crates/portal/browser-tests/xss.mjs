// The share portal against hostile content in headless Chromium, run by
// services/server/tests/browser/xss.rs (the labels F1–F11 below are its
// test names: f1_…, f2_…).
//
// Every page runs with spies installed before its own scripts (alert,
// confirm, prompt and print record their calls, a `securitypolicyviolation`
// listener records violations; both report through a Playwright binding, so
// frames report too, and a real dialog is recorded as well), and with every
// request routed: a request to an origin not in `allowed` is recorded and
// aborted; while the checks click links, navigations of the page are
// recorded and answered 204 (no navigation), so the page stays.
//
// Input (stdin, JSON): { "chromium", "check", "allowed": [origin], ... } with
// `check` one of:
// - "corpus": { "mode": "sanitised" | "csp-only", "control"?: bool,
//   "engine"?: "native" | "dompurify", "cases": [{ "name", "url", "payload" }] }
//   — open each link (the payload in every field of the share), check the
//   DOM, click every link and button in the plan. "sanitised" (F1): no
//   spy call, no script-capable node in the plan, no `on*` attribute
//   anywhere, no id or name in the plan that shadows a property of the
//   document or a form or is an id of the page's own elements, every URL
//   in the plan http(s), mailto or relative (data:image/* on img), no
//   foreign request, every text field shown literally. "csp-only" (F2,
//   the sanitiser switched off): no spy call and no foreign request; with `control`, every case is first
//   opened once more with the CSP header removed, and each payload that
//   then runs script must have caused at least one CSP violation.
//   With `engine`, the page must sanitise with that engine: "native" is
//   the browser's own sanitizer, "dompurify" the fallback, taken by
//   removing the Sanitizer API from the page before its scripts run.
// - "reviews": { "cases": [{ "name", "url", "annotations": [{meta, quote, text}],
//   "links"?: [name], "replies"?: [{who, said}] }] } — F12: review pages with
//   the payload in the plan, its annotations, a writer's name, comments and
//   replies: the "sanitised" DOM criteria, no spy call or foreign request,
//   the annotations and the threads' replies listed exactly as given (text,
//   never markup) and, with `links`, the owner's links dialog naming each
//   writer as text.
// - "csp": { "targets": [{ "origin", "connect": [origin] }] } — F3: the CSP
//   of every portal answer, directive by directive, and csp_evaluator.
// - "key": { "url", "key", "outbound" } — F5: open an encrypted short link,
//   make a new short link of it, follow an outbound link; no request carries
//   either key (base64url, base64, hex, raw bytes) or a Referer.
// - "raw": { "urls": [url] } — F6: navigate to API answers; report their
//   headers and what ran.
// - "errors": { "cases": [{ "name", "url", "opens"? }], "error", "marker" } —
//   F8, F11: each link shows `error`, renders nothing of the plan (`marker`
//   nowhere in the page), throws nothing, runs nothing, asks no foreign
//   origin; a case with `opens` is the control and must show the plan.
//
// Output (stdout, JSON): { "failures": [...], ... per check }. Exit status 0
// only when there are no failures.

import { chromium } from "playwright-core";
import { CspEvaluator } from "csp_evaluator/dist/evaluator.js";
import { CspParser } from "csp_evaluator/dist/parser.js";
import { Severity } from "csp_evaluator/dist/finding.js";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

const LOADING = "Loading…";
const failures = [];
const fail = (where, what, detail) => failures.push({ where, what, ...(detail === undefined ? {} : { detail }) });

/** What one page did; the handlers below write into the current one. */
function freshLog() {
  return {
    spies: [],
    dialogs: [],
    violations: [],
    foreign: [],
    requests: [],
    navigations: [],
    popups: [],
    pageErrors: [],
  };
}

/** A browser context with the spies and the request router installed.
 * `session.log` is what the current page did; `session.clicking` makes
 * page navigations answer 204 (recorded in `log.navigations`). */
async function session(browser, { allowed, stripCsp = false, recordHeaders = false, withoutSanitizerApi = false }) {
  const context = await browser.newContext();
  const s = { context, log: freshLog(), clicking: false, page: null, recordHeaders };
  await context.exposeBinding("__xssReport", ({ frame }, kind, detail) => {
    const entry = { frame: frame?.url()?.slice(0, 80) ?? "", ...detail };
    if (kind === "spy") s.log.spies.push(entry);
    else s.log.violations.push(entry);
  });
  if (withoutSanitizerApi) {
    await context.addInitScript(() => {
      delete globalThis.Sanitizer;
      delete Document.parseHTML;
      delete Element.prototype.setHTML;
    });
  }
  await context.addInitScript(() => {
    const report = (kind, detail) => {
      try {
        window.__xssReport?.(kind, detail);
      } catch {
        // The binding is gone (the page is closing).
      }
    };
    for (const name of ["alert", "confirm", "prompt", "print"]) {
      const spy = (...args) => {
        report("spy", { call: name, args: args.map(String) });
        return name === "confirm" ? false : null;
      };
      try {
        Object.defineProperty(window, name, { value: spy, writable: false, configurable: false });
      } catch {
        window[name] = spy;
      }
    }
    document.addEventListener("securitypolicyviolation", (e) => report("violation", {
      directive: e.effectiveDirective,
      blocked: e.blockedURI,
      sample: e.sample,
      source: e.sourceFile ? `${e.sourceFile.split("/").pop()}:${e.lineNumber}` : "",
    }), true);
  });
  await context.route("**/*", async (route) => {
    const request = route.request();
    const url = request.url();
    let parsed;
    try {
      parsed = new URL(url);
    } catch {
      return route.continue();
    }
    if (parsed.protocol === "data:" || parsed.protocol === "blob:") return route.continue();
    const headers = s.recordHeaders ? await request.allHeaders() : request.headers();
    const entry = { url, method: request.method(), headers, body: request.postDataBuffer()?.toString("base64") ?? null };
    s.log.requests.push(entry);
    if (s.clicking && request.isNavigationRequest() && s.page && request.frame() === s.page.mainFrame()) {
      s.log.navigations.push(entry);
      return route.fulfill({ status: 204 });
    }
    if (!allowed.includes(parsed.origin)) {
      s.log.foreign.push(url);
      return route.abort("blockedbyclient");
    }
    if (stripCsp && request.resourceType() === "document") {
      const response = await route.fetch();
      const stripped = { ...response.headers() };
      delete stripped["content-security-policy"];
      return route.fulfill({ response, headers: stripped });
    }
    return route.continue();
  });
  context.on("page", async (page) => {
    if (s.page && page !== s.page) {
      s.log.popups.push(page.url());
      await page.close().catch(() => {});
    }
  });
  return s;
}

/** A new page in `s`, with its own log; `s.log` is the returned log. */
async function newPage(s) {
  s.log = freshLog();
  s.clicking = false;
  s.page = null;
  const page = await s.context.newPage();
  s.page = page;
  const log = s.log;
  page.on("pageerror", (error) => log.pageErrors.push(String(error).slice(0, 300)));
  page.on("dialog", async (dialog) => {
    log.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    await dialog.dismiss().catch(() => {});
  });
  return page;
}

/** Loads `url` and waits until the portal has decided (plan or error). */
async function open(page, url) {
  await page.goto(url);
  await page.waitForFunction(
    (loading) => {
      const status = document.getElementById("status");
      return status && status.textContent !== loading;
    },
    LOADING,
    { timeout: 15000 },
  );
  // Late events: image errors, frames, handlers of inserted nodes.
  await page.waitForTimeout(250);
}

/** Clicks every link and button of the plan (navigations answer 204). */
async function clickEverything(s, page) {
  s.clicking = true;
  const targets = await page.$$("#plan a, #plan area, #plan button, #plan input[type=submit], #plan input[type=image]");
  for (const target of targets) {
    try {
      if (!(await target.isVisible())) throw new Error("not visible");
      await target.click({ force: true, timeout: 1000, noWaitAfter: true });
    } catch {
      // Not visible (an empty link): the script way follows it just the same.
      await target.evaluate((node) => node.click()).catch(() => {});
    }
    await page.waitForTimeout(50);
  }
  await page.waitForTimeout(200);
  s.clicking = false;
  return targets.length;
}

/** What the page shows, for the corpus criteria. */
function inspect(page) {
  return page.evaluate(() => {
    const plan = document.getElementById("plan");
    const banned = [...plan.querySelectorAll("script, iframe, frame, frameset, object, embed, base, form, meta[http-equiv]")]
      .map((n) => n.nodeName.toLowerCase());
    const handlers = [];
    for (const node of document.querySelectorAll("*")) {
      for (const attr of node.attributes) {
        if (/^on/i.test(attr.name)) handlers.push(`${node.nodeName.toLowerCase()}[${attr.name}]${plan.contains(node) ? " in #plan" : ""}`);
      }
    }
    const URL_ATTRS = new Set(["href", "xlink:href", "src", "srcset", "action", "formaction", "poster", "background", "data", "ping", "cite", "longdesc", "lowsrc"]);
    const urls = [];
    for (const node of plan.querySelectorAll("*")) {
      for (const attr of node.attributes) {
        const name = attr.name.toLowerCase();
        if (!URL_ATTRS.has(name)) continue;
        const values = name === "srcset" ? attr.value.split(",").map((v) => v.trim().split(/\s+/)[0]) : [attr.value];
        for (const value of values) {
          let scheme;
          try {
            scheme = new URL(value, document.baseURI).protocol;
          } catch {
            scheme = null; // not a URL: nothing to follow
          }
          urls.push({ tag: node.nodeName.toLowerCase(), attr: name, value: value.slice(0, 120), scheme });
        }
      }
    }
    // DOM clobbering: an id or name in the plan that shadows a property of
    // the document or of a form.
    const shadowed = (value) => value in Document.prototype || value in HTMLDocument.prototype
      || value in HTMLFormElement.prototype;
    const clobbers = [...plan.querySelectorAll("[id], [name]")]
      .flatMap((n) => ["id", "name"].map((a) => [n, a, n.getAttribute(a)]))
      .filter(([, , value]) => value !== null && shadowed(value))
      .map(([n, a, value]) => `${n.nodeName.toLowerCase()}[${a}=${value}]`);
    // An id the page's own elements hold, taken by the plan.
    for (const n of plan.querySelectorAll("[id]")) {
      if ([...document.querySelectorAll(`[id="${CSS.escape(n.id)}"]`)].some((o) => !plan.contains(o) && o !== plan)) {
        clobbers.push(`${n.nodeName.toLowerCase()}[id=${n.id}] (the page's own)`);
      }
    }
    // A review thread's reply box is the page's own form (a field, a
    // checkbox and its label), holding no text of the review; a resolved
    // thread folds into a <details>.
    const listed = [...document.querySelectorAll("#annotation-list *, #attachment-list *")]
      .filter((n) => !n.closest(".reply-box"))
      .map((n) => n.nodeName)
      .filter((name) => !["LI", "DIV", "Q", "P", "BUTTON", "DETAILS", "SUMMARY"].includes(name));
    const error = document.getElementById("error");
    return {
      banned,
      handlers,
      clobbers,
      urls,
      listed,
      status: document.getElementById("status").textContent,
      error: error.hidden ? null : error.textContent,
      plan: plan.textContent.slice(0, 200),
      annotations: [...document.querySelectorAll("#annotation-list li")].map((li) => ({
        meta: li.querySelector(".meta")?.textContent ?? null,
        quote: li.querySelector("q")?.textContent ?? null,
        text: li.querySelector("p")?.textContent ?? null,
        images: [...li.querySelectorAll(".meta")].slice(1).map((n) => n.textContent),
      })),
      attachments: [...document.querySelectorAll("#attachment-list li")].map((li) => li.textContent),
      replies: [...document.querySelectorAll("#annotation-list .reply")].map((r) => ({
        who: r.querySelector(".who")?.textContent ?? null,
        said: r.querySelector(".said")?.textContent ?? null,
      })),
      href: location.href,
    };
  });
}

/** Opens one corpus case and returns what happened. */
async function corpusCase(s, c, { click = true } = {}) {
  const page = await newPage(s);
  const log = s.log;
  let shown = null;
  let clicked = 0;
  let engine = null;
  try {
    await open(page, c.url);
    shown = await inspect(page);
    engine = await page.evaluate(() =>
      typeof Sanitizer === "function" && typeof Element.prototype.setHTML === "function" ? "native" : "dompurify");
    if (click) clicked = await clickEverything(s, page);
  } catch (error) {
    log.pageErrors.push(`harness: ${String(error).split("\n")[0]}`);
  }
  await page.close();
  // Images inside elements the sanitiser removes (see the corpus): asked
  // for only when the plan's HTML was parsed into a live document.
  const probes = log.requests.filter((r) => r.url.includes("/inert-probe")).map((r) => r.url);
  return { name: c.name, shown, clicked, engine, ...log, requests: undefined, probes, ran: log.spies.length + log.dialogs.length };
}

/** The F1 criteria for one case. */
function checkSanitised(c, r, { literal = true } = {}) {
  const where = r.name;
  if (!r.shown) return fail(where, "the page did not open", r.pageErrors);
  const { shown } = r;
  if (shown.error !== null) fail(where, `error shown: ${shown.error}`);
  if (shown.banned.length) fail(where, "script-capable nodes in the plan", shown.banned);
  if (shown.handlers.length) fail(where, "on* attributes in the document", shown.handlers);
  if (shown.clobbers.length) fail(where, "ids or names in the plan that shadow the document's or a form's properties", shown.clobbers);
  const badUrls = shown.urls.filter((u) =>
    u.scheme !== null
    && !["http:", "https:", "mailto:"].includes(u.scheme)
    && !(u.tag === "img" && u.attr === "src" && /^\s*data:image\//i.test(u.value)));
  if (badUrls.length) fail(where, "URLs in the plan with a scheme other than http(s)/mailto", badUrls);
  const badNavigations = r.navigations.filter((n) => !/^https?:/.test(n.url));
  if (badNavigations.length) fail(where, "a click navigated to a non-http(s) URL", badNavigations.map((n) => n.url));
  // Parsed inert: nothing of the plan's HTML loads or meets the CSP as
  // script before the sanitiser has made it safe.
  if (r.probes?.length) fail(where, "the plan's HTML was parsed into a live document: removed elements started loading", r.probes);
  const asScript = (r.violations ?? []).filter((v) => /^script-src/.test(v.directive ?? ""));
  if (asScript.length) fail(where, "the plan's HTML met the CSP as script: it was not parsed inert", asScript);
  if (literal) checkLiteral(c, r);
}

/** F12: a review page (owner or reviewer) with the payload in the plan,
 * its annotations, a writer's name, comments and replies: the F1 criteria,
 * each listed annotation exactly as `c.annotations` says ({meta, quote,
 * text}), with `c.replies` each reply as it says ({who, said}), and with
 * `c.links`, the owner's links dialog naming each as text. */
async function reviewCase(s, c) {
  const page = await newPage(s);
  const log = s.log;
  let shown = null;
  let links = null;
  let clicked = 0;
  try {
    await open(page, c.url);
    shown = await inspect(page);
    clicked = await clickEverything(s, page);
    if (c.links) {
      await page.click("#review-links");
      await page.waitForTimeout(100);
      links = await page.$$eval("#links-list li .who", (nodes) => nodes.map((n) => ({ text: n.textContent, elements: n.children.length })));
      const inDialog = await inspect(page);
      shown.handlers.push(...inDialog.handlers);
    }
  } catch (error) {
    log.pageErrors.push(`harness: ${String(error).split("\n")[0]}`);
  }
  await page.close();
  const r = { name: c.name, shown, clicked, links, ...log, requests: undefined, ran: log.spies.length + log.dialogs.length };
  checkQuiet(r.name, r);
  if (!shown) return fail(r.name, "the page did not open", r.pageErrors);
  checkSanitised(c, r, { literal: false });
  if (shown.listed.length) fail(r.name, "markup in the annotation or attachment lists", shown.listed);
  const got = shown.annotations.map(({ meta, quote, text }) => ({ meta, quote, text }));
  if (JSON.stringify(got) !== JSON.stringify(c.annotations)) fail(r.name, "the annotations are not shown literally", { got, want: c.annotations });
  const pairs = (replies) => JSON.stringify(replies.map(({ who, said }) => [who, said]));
  if (c.replies && pairs(shown.replies) !== pairs(c.replies)) {
    fail(r.name, "the replies are not shown literally", { got: shown.replies, want: c.replies });
  }
  if (c.links && JSON.stringify(links) !== JSON.stringify(c.links.map((text) => ({ text, elements: 0 })))) {
    fail(r.name, "the links dialog does not name the writers literally", links);
  }
  if (r.pageErrors.length) fail(r.name, "page errors", r.pageErrors);
  return r;
}

async function reviews(browser) {
  const s = await session(browser, { allowed: input.allowed });
  const cases = [];
  for (const c of input.cases) cases.push(await reviewCase(s, c));
  await s.context.close();
  return { cases: cases.map(({ name, clicked }) => ({ name, clicked })) };
}

/** Every text field shows the payload as text, never as markup. */
function checkLiteral(c, r) {
  const where = r.name;
  const { shown } = r;
  if (!shown) return;
  if (shown.listed.length) fail(where, "markup in the annotation or attachment lists", shown.listed);
  const p = c.payload;
  const [comment, global, deletion] = shown.annotations;
  const ok = shown.annotations.length === 3
    && comment.meta === `Comment — ${p}`
    && comment.quote === p
    && comment.text === p
    && comment.images.includes(`${p} — ${p}`)
    && global.meta === `Comment on the plan — ${p}`
    && global.text === p
    && deletion.meta === `Deletion — ${p}`
    && deletion.quote === p
    && shown.attachments.includes(`${p} — ${p}`);
  if (!ok) fail(where, "a text field does not show the payload literally", { annotations: shown.annotations, attachments: shown.attachments });
}

/** Failures every check shares: script ran, a foreign origin was asked, a
 * popup opened. */
function checkQuiet(where, log) {
  if (log.spies.length) fail(where, "a spied function was called", log.spies);
  if (log.dialogs.length) fail(where, "a dialog opened", log.dialogs);
  if (log.foreign.length) fail(where, "requests to another origin", log.foreign);
  if (log.popups.length) fail(where, "a popup opened", log.popups);
}

async function corpus(browser) {
  const s = await session(browser, { allowed: input.allowed, withoutSanitizerApi: input.engine === "dompurify" });
  const cases = [];
  for (const c of input.cases) {
    const r = await corpusCase(s, c);
    checkQuiet(r.name, r);
    if (input.engine && r.engine !== input.engine) fail(r.name, `sanitised with ${r.engine}, not ${input.engine}`);
    if (input.mode === "sanitised") checkSanitised(c, r);
    else checkLiteral(c, r);
    cases.push(r);
  }
  await s.context.close();
  const report = { cases };
  if (input.control) {
    // The same links without the CSP (and without the sanitiser): what
    // would run if the CSP were the only thing missing.
    const control = await session(browser, { allowed: input.allowed, stripCsp: true });
    const executed = [];
    for (const [i, c] of input.cases.entries()) {
      const r = await corpusCase(control, c);
      if (r.ran) {
        executed.push(c.payload);
        if (!cases[i].violations.length) {
          fail(c.name, "runs script without the CSP, but caused no CSP violation with it", { withoutCsp: r.spies.concat(r.dialogs) });
        }
      }
    }
    await control.context.close();
    report.executedWithoutCsp = executed;
    report.sanitizerOff = cases.some((r) => r.shown?.handlers.some((h) => h.endsWith(" in #plan")));
    if (!report.sanitizerOff) fail("control", "no handler attribute reached the plan: the sanitiser was not off");
  }
  return report;
}

/** The CSP as directive → sources. */
function directives(csp) {
  const map = new Map();
  for (const part of csp.split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) map.set(name.toLowerCase(), sources);
  }
  return map;
}

async function csp() {
  const targets = [];
  for (const target of input.targets) {
    const html = await (await fetch(`${target.origin}/`, { headers: { accept: "text/html" } })).text();
    const asset = /src="(\/assets\/[^"]+)"/.exec(html)?.[1];
    if (!asset) fail(target.origin, "no script asset in index.html");
    const paths = ["/", "/p/AbCdEf123456", "/config.json", asset].filter(Boolean);
    const policies = new Set();
    for (const path of paths) {
      const response = await fetch(`${target.origin}${path}`, { headers: { accept: "text/html" } });
      const value = response.headers.get("content-security-policy");
      if (!value) fail(`${target.origin}${path}`, "no Content-Security-Policy");
      else policies.add(value);
    }
    if (policies.size !== 1) fail(target.origin, "portal answers carry different CSPs", [...policies]);
    const policy = [...policies][0] ?? "";
    const d = directives(policy);
    const where = `${target.origin} CSP`;
    const exactly = (name, expected) => {
      const got = d.get(name);
      if (!got || got.join(" ") !== expected) fail(where, `${name} must be ${expected}`, got ?? null);
    };
    exactly("default-src", "'none'");
    exactly("object-src", "'none'");
    exactly("base-uri", "'none'");
    exactly("form-action", "'none'");
    exactly("frame-ancestors", "'none'");
    exactly("require-trusted-types-for", "'script'");
    const script = d.get("script-src") ?? [];
    if (!script.includes("'self'")) fail(where, "script-src must allow 'self'", script);
    const loose = script.filter((src) => src !== "'self'" && !/^'(nonce|sha256|sha384|sha512)-/.test(src));
    if (loose.length) fail(where, "script-src allows more than 'self' (or nonces/hashes)", loose);
    const img = d.get("img-src") ?? [];
    const remote = img.filter((src) => !["'self'", "data:", "blob:"].includes(src));
    if (remote.length) fail(where, "img-src allows remote images (beacons)", remote);
    const connect = [...(d.get("connect-src") ?? [])].sort();
    const expected = ["'self'", ...target.connect].sort();
    if (JSON.stringify(connect) !== JSON.stringify(expected)) fail(where, `connect-src must be ${expected.join(" ")}`, connect);
    const findings = new CspEvaluator(new CspParser(policy).csp).evaluate().map((f) => ({
      severity: Severity[f.severity],
      directive: f.directive,
      value: f.value ?? null,
      description: f.description,
    }));
    const high = findings.filter((f) => f.severity === "HIGH");
    if (high.length) fail(where, "csp_evaluator reports HIGH findings", high);
    targets.push({ origin: target.origin, policy, findings });
  }
  return { targets };
}

/** The forms a key could leak in. */
function keyForms(key) {
  const raw = Buffer.from(key, "base64url");
  const b64 = raw.toString("base64");
  const text = [key, b64, b64.replace(/=+$/, ""), encodeURIComponent(b64), raw.toString("hex"), raw.toString("hex").toUpperCase()];
  return { raw, text: [...new Set(text)] };
}

function carries(request, forms) {
  const body = request.body ? Buffer.from(request.body, "base64") : Buffer.alloc(0);
  // A fragment is never sent; drop it from what Playwright reports.
  const url = request.url.split("#")[0];
  let decoded = url;
  try {
    decoded = decodeURIComponent(url);
  } catch {
    // Not percent-decodable: the URL as it is.
  }
  const headers = JSON.stringify(request.headers);
  return forms.text.some((f) => url.includes(f) || decoded.includes(f) || headers.includes(f) || body.includes(f))
    || body.includes(forms.raw)
    || Buffer.from(headers, "latin1").includes(forms.raw);
}

async function keyCheck(browser) {
  const s = await session(browser, { allowed: input.allowed, recordHeaders: true });
  const page = await newPage(s);
  const log = s.log;
  await open(page, input.url);
  const opened = await page.evaluate(() => ({
    error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
    href: location.href,
    plan: document.getElementById("plan").textContent.length,
  }));
  if (opened.error !== null || !opened.plan) fail("key", "the short link did not open", opened);
  if (opened.href.includes(input.key)) fail("key", "the key stays in the address bar", opened.href);
  // Share again as a short link: a new key, made and kept in the page.
  await page.click("#share");
  await page.waitForSelector("#share-short:not([hidden])", { timeout: 5000 });
  await page.click("#share-short");
  await page.waitForFunction(() => /\/p\/[A-Za-z0-9]+#key=/.test(document.getElementById("share-link").value), null, { timeout: 10000 });
  const link = await page.inputValue("#share-link");
  const newKey = new URLSearchParams(new URL(link).hash.slice(1)).get("key");
  await page.keyboard.press("Escape");
  // Follow the plan's outbound link (answered 204, so nothing leaves).
  s.clicking = true;
  await page.click(`#plan a[href="${input.outbound}"]`, { noWaitAfter: true });
  await page.waitForTimeout(500);
  s.clicking = false;
  await page.close();
  checkQuiet("key", { ...log, foreign: log.foreign.filter((u) => !u.startsWith(input.outbound)) });
  const keys = [input.key, newKey].filter(Boolean);
  if (keys.length !== 2) fail("key", "no new short link was made", link);
  for (const key of keys) {
    const forms = keyForms(key);
    const leaks = log.requests.filter((r) => carries(r, forms)).map((r) => r.url.split("#")[0]);
    if (leaks.length) fail("key", `requests carry the key ${key.slice(0, 6)}…`, leaks);
  }
  const referers = log.requests.filter((r) => Object.keys(r.headers).some((h) => h.toLowerCase() === "referer"));
  if (referers.length) fail("key", "requests carry a Referer", referers.map((r) => `${r.url} ← ${r.headers.referer}`));
  if (!log.navigations.some((n) => n.url === input.outbound)) fail("key", "the outbound link was not followed", log.navigations.map((n) => n.url));
  const posts = log.requests.filter((r) => r.method === "POST").length;
  return {
    requests: log.requests.map((r) => ({ method: r.method, url: r.url.split("#")[0], headers: Object.keys(r.headers) })),
    posts,
    newLink: link.replace(/#.*/, "#…"),
  };
}

async function raw(browser) {
  const s = await session(browser, { allowed: input.allowed });
  const answers = [];
  for (const url of input.urls) {
    const page = await newPage(s);
    const log = s.log;
    const response = await page.goto(url);
    await page.waitForTimeout(300);
    const headers = await response.allHeaders();
    const body = await page.evaluate(() => ({
      text: document.body?.innerText ?? "",
      scripts: document.scripts.length,
    }));
    await page.close();
    checkQuiet(url, log);
    answers.push({ url, status: response.status(), headers, ...body, violations: log.violations });
  }
  await s.context.close();
  return { answers };
}

async function errors(browser) {
  const s = await session(browser, { allowed: input.allowed });
  const cases = [];
  for (const c of input.cases) {
    const page = await newPage(s);
    const log = s.log;
    let shown = null;
    try {
      await open(page, c.url);
      shown = await page.evaluate((marker) => ({
        error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
        plan: document.getElementById("plan").textContent,
        planNodes: document.getElementById("plan").childNodes.length,
        annotations: document.querySelectorAll("#annotation-list li").length,
        marker: marker ? document.documentElement.outerHTML.includes(marker) : false,
      }), input.marker ?? null);
    } catch (error) {
      log.pageErrors.push(`harness: ${String(error).split("\n")[0]}`);
    }
    await page.close();
    checkQuiet(c.name, log);
    if (!shown) fail(c.name, "the page did not open", log.pageErrors);
    else if (c.opens) {
      // The control: the same key on untouched data shows the plan.
      if (shown.error !== null || !shown.marker) fail(c.name, "the untampered link did not open", shown);
    } else {
      if (shown.error !== input.error) fail(c.name, `error text: expected ${JSON.stringify(input.error)}`, shown.error);
      if (shown.plan !== "" || shown.planNodes !== 0 || shown.annotations !== 0) fail(c.name, "something of the plan was rendered", shown);
      if (shown.marker) fail(c.name, "the plaintext is in the page");
    }
    if (log.pageErrors.length) fail(c.name, "page errors", log.pageErrors);
    cases.push({ name: c.name, shown, violations: log.violations });
  }
  await s.context.close();
  return { cases };
}

const browser = await chromium.launch({
  executablePath: input.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let report;
try {
  const checks = { corpus, csp, key: keyCheck, raw, errors, reviews };
  const check = checks[input.check];
  if (!check) throw new Error(`unknown check ${input.check}`);
  report = await check(browser);
} finally {
  await browser.close();
}
// Exit once the report has gone out: exiting straight after a write to a
// pipe cuts it at 64 KiB.
process.stdout.write(JSON.stringify({ ...report, failures }) + "\n", () => process.exit(failures.length ? 1 : 0));
