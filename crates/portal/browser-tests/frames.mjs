// Code highlighting and raw-HTML isolation in headless Chromium (run by
// services/server/tests/browser/frames.rs).
//
// Input (stdin, JSON): { "chromium": "/usr/bin/chromium",
//   "code"?: { "url", "blocks": [{ "language": "rust"|null, "source" }],
//              "annotations": ["text inside a code block", …] },
//   "html"?: { "url", "pasteId", "key", "canary": "http://127.0.0.2:<port>" } }
//
// code: the link's plan has the given fenced blocks, in order. Each block
// with a language is highlighted (token spans, class hljs, token colours
// differ from the code's), one without stays plain; every block's text is
// exactly its source; each annotation is highlighted (mark[data-bind-id])
// inside a code block with exactly its text; no CSP violation, page error
// or dialog.
//
// html: the link is a raw-HTML short link whose document tries everything a
// hostile document could (its own scripts, handlers, refresh, links, forms,
// frames, remote CSS and images). Checks: the iframe's sandbox lacks
// allow-same-origin/top-navigation/popups/forms/modals; none of the
// document's script ran; its inline CSS applies; then, as if a script of
// the document did run (Playwright evaluates in the frame), each attempt —
// parent.location.hash, top.location = …, localStorage, document.cookie,
// fetch('/api/paste/…'), window.open, form submit, link clicks, string
// timers, script elements, innerHTML, inline handlers — throws or is
// blocked; the top page stays
// where it is, no popup opens, the frame stays on /frame; every answered
// request is the portal's own (the paste fetched once); the key is in
// nothing the frame can read nor in any request.
//
// Output (stdout, JSON): { "failures": [...], "code"?: {...}, "html"?: {...} };
// exit status 0 only without failures.

import { chromium } from "playwright-core";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

const failures = [];
const report = { failures };
const fail = (where, what, detail) => failures.push({ where, what, ...(detail === undefined ? {} : { detail }) });

const browser = await chromium.launch({
  executablePath: input.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

/** A fresh page that records errors, dialogs, popups, CSP violations (in
 * every frame that runs scripts) and requests. */
async function openPage(context, where) {
  const page = await context.newPage();
  const seen = { errors: [], popups: [], requests: [], responses: [], mainUrls: [] };
  page.on("pageerror", (error) => seen.errors.push(String(error)));
  page.on("dialog", async (dialog) => {
    fail(where, `a script opened a dialog: ${dialog.message()}`);
    await dialog.dismiss();
  });
  context.on("page", (other) => other !== page && seen.popups.push(other.url()));
  page.on("popup", (popup) => seen.popups.push(popup.url()));
  page.on("request", (request) => seen.requests.push({ url: request.url(), headers: request.headers(), body: request.postData() ?? "" }));
  page.on("response", (response) => seen.responses.push(response.url()));
  page.on("framenavigated", (frame) => frame === page.mainFrame() && seen.mainUrls.push(frame.url()));
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    window.__messages = [];
    addEventListener("message", (e) => window.__messages.push(e.data));
  });
  return { page, seen };
}

// --- Code highlighting -----------------------------------------------------

async function checkCode(spec) {
  const where = "code";
  const context = await browser.newContext();
  const { page, seen } = await openPage(context, where);
  await page.goto(spec.url);
  await page.waitForFunction(() => document.getElementById("status")?.textContent !== "Loading…", null, { timeout: 15000 });
  const shown = await page.evaluate(() => ({
    error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
    blocks: [...document.querySelectorAll("#plan pre > code")].map((code) => {
      const keyword = code.querySelector("[class^='hljs-']");
      return {
        className: code.className,
        text: code.textContent,
        tokens: code.querySelectorAll("span[class^='hljs-']").length,
        tokenColour: keyword ? getComputedStyle(keyword).color : null,
        codeColour: getComputedStyle(code).color,
        otherElements: [...code.querySelectorAll("*")].filter((n) => n.tagName !== "SPAN" && n.tagName !== "MARK").length,
        marks: [...code.querySelectorAll("mark[data-bind-id]")].map((m) => ({ id: m.dataset.bindId, text: m.textContent })),
      };
    }),
    marks: [...document.querySelectorAll("#plan mark[data-bind-id]")].map((m) => ({ id: m.dataset.bindId, text: m.textContent, inCode: !!m.closest("pre > code") })),
    violations: window.__violations,
  }));
  report.code = shown;
  if (shown.error) fail(where, `error shown: ${shown.error}`);
  if (shown.blocks.length !== spec.blocks.length) fail(where, `expected ${spec.blocks.length} code blocks, found ${shown.blocks.length}`);
  spec.blocks.forEach((block, i) => {
    const got = shown.blocks[i];
    if (!got) return;
    // marked ends a code block's text with one newline.
    if (got.text !== `${block.source}\n`) fail(where, `block ${i}: text changed`, { expected: block.source, got: got.text });
    if (got.otherElements) fail(where, `block ${i}: markup other than spans and marks`);
    if (block.language) {
      if (!got.className.split(/\s+/).includes("hljs")) fail(where, `block ${i} (${block.language}): not highlighted`, got.className);
      if (got.tokens < 3) fail(where, `block ${i} (${block.language}): only ${got.tokens} token spans`);
      if (!got.tokenColour || got.tokenColour === got.codeColour) fail(where, `block ${i}: tokens have no colour of their own (highlight.css)`);
    } else if (got.tokens || got.className.includes("hljs")) {
      fail(where, `block ${i} (no language): highlighted anyway`, got.className);
    }
  });
  for (const text of spec.annotations) {
    const marks = shown.marks.filter((m) => m.inCode);
    const ids = [...new Set(marks.map((m) => m.id))];
    const found = ids.some((id) => marks.filter((m) => m.id === id).map((m) => m.text).join("") === text);
    if (!found) fail(where, `annotation ${JSON.stringify(text)} not highlighted inside a code block`, shown.marks);
  }
  if (shown.violations.length) fail(where, "CSP violations", shown.violations);
  if (seen.errors.length) fail(where, "page errors", seen.errors);
  const origin = new URL(spec.url).origin;
  const foreign = seen.requests.filter((r) => new URL(r.url).origin !== origin).map((r) => r.url);
  if (foreign.length) fail(where, "requests to another origin", foreign);
  await context.close();
}

// --- Raw HTML ----------------------------------------------------------------

/** What a script of the plan could try, run inside the frame (as if one
 * had run). Every entry: { threw, value }. */
function attack({ canary, pasteId }) {
  const results = {};
  const tries = [
    ["parentLocationHash", () => parent.location.hash],
    ["parentLocationHref", () => parent.location.href],
    ["setParentLocationHash", () => { parent.location.hash = "#pwned"; }],
    ["parentDocument", () => parent.document.location.href],
    ["topLocation", () => { top.location = `${canary}/top`; }],
    ["topLocationHref", () => { top.location.href = `${canary}/top-href`; }],
    ["localStorage", () => localStorage.getItem("planshare.author")],
    ["sessionStorage", () => sessionStorage.length],
    ["indexedDB", () => indexedDB.open("planshare")],
    ["readCookie", () => document.cookie],
    ["writeCookie", () => { document.cookie = "stolen=1"; return document.cookie; }],
    ["fetchPaste", () => fetch(`/api/paste/${pasteId}`).then((r) => r.status)],
    ["fetchCanary", () => fetch(`${canary}/fetch`, { mode: "no-cors" }).then((r) => r.type)],
    ["xhrPaste", () => new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("GET", `/api/paste/${pasteId}`);
      xhr.onload = () => resolve(xhr.status);
      xhr.onerror = () => reject(new Error("xhr blocked"));
      xhr.send();
    })],
    ["image", () => new Promise((resolve, reject) => {
      const img = new Image();
      img.onload = () => resolve("loaded");
      img.onerror = () => reject(new Error("image blocked"));
      img.src = `${canary}/image`;
    })],
    ["sendBeacon", () => navigator.sendBeacon(`${canary}/beacon`, "x")],
    ["windowOpen", () => window.open(`${canary}/popup`)],
    ["formSubmit", () => document.getElementById("form").submit()],
    ["formRequestSubmit", () => document.getElementById("form").requestSubmit()],
    ["clickLink", () => document.getElementById("out").click()],
    ["clickBlankLink", () => document.getElementById("blank").click()],
    // (Direct eval cannot be tried from here: DevTools evaluation is
    // exempt from the CSP. A string timer and a script element are not.)
    ["stringTimer", () => setTimeout("window.__ran = 'string timer'", 0)],
    ["dynamicScript", () => {
      const script = document.createElement("script");
      script.textContent = "window.__ran = 'dynamic script'";
      document.body.append(script);
    }],
    ["innerHTML", () => { document.body.insertAdjacentHTML("beforeend", "<b id=injected>x</b>"); }],
    ["inlineHandler", () => {
      const img = document.createElement("img");
      img.setAttribute("onerror", "window.__ran = 'dynamic handler'");
      img.src = "data:,not-an-image";
      document.body.append(img);
    }],
    ["nestedFrame", () => {
      const frame = document.createElement("iframe");
      frame.src = "/";
      document.body.append(frame);
    }],
    ["postToParent", () => parent.postMessage({ type: "planshare-frame-html", html: "<b>spoof</b>" }, "*")],
    // Asking the page for the HTML again gets nothing: it is handed over once.
    ["replayReady", () => new Promise((resolve) => {
      let answers = 0;
      addEventListener("message", (e) => e.source === parent && answers++);
      parent.postMessage("planshare-frame-ready", "*");
      setTimeout(() => resolve(answers), 300);
    })],
  ];
  const settle = (name, run) => {
    try {
      return Promise.resolve(run()).then(
        (value) => (results[name] = { threw: false, value: value === undefined ? null : String(value) }),
        (error) => (results[name] = { threw: true, value: `${error?.name}: ${error?.message}` }),
      );
    } catch (error) {
      results[name] = { threw: true, value: `${error?.name}: ${error?.message}` };
      return null;
    }
  };
  return Promise.all(tries.map(([name, run]) => settle(name, run)))
    .then(() => new Promise((resolve) => setTimeout(resolve, 300)))
    .then(() => ({
      results,
      ran: window.__ran ?? null,
      injected: !!document.getElementById("injected"),
      // Everything the frame can read about where it is.
      readable: [location.href, document.referrer, window.name, document.documentElement.outerHTML,
        [...(location.ancestorOrigins ?? [])].join(" "), document.baseURI].join("\n"),
    }));
}

async function checkHtml(spec) {
  const where = "html";
  const context = await browser.newContext();
  const { page, seen } = await openPage(context, where);
  const origin = new URL(spec.url).origin;
  await page.goto(spec.url);
  await page.waitForSelector("#plan iframe", { timeout: 15000 });
  const pathOf = (url) => {
    try {
      return new URL(url).pathname;
    } catch {
      return null;
    }
  };
  const frameOf = () => page.frames().find((f) => f.parentFrame() === page.mainFrame() && pathOf(f.url()) === "/frame");
  const deadline = Date.now() + 15000;
  while (!frameOf() && Date.now() < deadline) await page.waitForTimeout(50);
  const frame = frameOf();
  if (!frame) {
    fail(where, "no /frame document");
    await context.close();
    return;
  }
  await frame.waitForSelector("h1", { timeout: 15000 });
  // Give the document's own attempts (refresh, scripts, loads) time to fail.
  await page.waitForTimeout(1500);

  const element = await page.evaluate(() => {
    const iframe = document.querySelector("#plan iframe");
    return {
      sandbox: iframe.getAttribute("sandbox"),
      tokens: [...iframe.sandbox],
      src: iframe.getAttribute("src"),
      srcdoc: iframe.hasAttribute("srcdoc"),
      width: iframe.getBoundingClientRect().width,
      planWidth: document.getElementById("plan").getBoundingClientRect().width,
      height: iframe.getBoundingClientRect().height,
    };
  });
  const before = await frame.evaluate(() => ({
    origin: self.origin,
    ran: window.__ran ?? null,
    title: document.title,
    h1Colour: getComputedStyle(document.querySelector("h1")).color,
    styledWeight: getComputedStyle(document.getElementById("styled")).fontWeight,
    noscriptShown: !!document.getElementById("ns"),
    scripts: document.querySelectorAll("script:not([src^='/assets/frame.'])").length,
    handlers: [...document.querySelectorAll("*")].filter((n) => [...n.attributes].some((a) => a.name.startsWith("on"))).length,
    violations: window.__violations ?? [],
  }));
  const topBefore = page.url();
  const attacked = await frame.evaluate(attack, { canary: spec.canary, pasteId: spec.pasteId });
  await page.waitForTimeout(1500);
  const after = await page.evaluate(() => ({
    href: location.href,
    messages: window.__messages,
    violations: window.__violations,
    planFrames: document.querySelectorAll("#plan iframe").length,
  }));
  const frameNow = frameOf();
  const frameAfter = frameNow
    ? await frameNow.evaluate(() => ({ href: location.href, ran: window.__ran ?? null, violations: window.__violations ?? [] }))
    : null;
  report.html = { element, before, attacked: attacked.results, after, frameAfter, popups: seen.popups, mainUrls: seen.mainUrls };

  // The sandbox.
  for (const token of ["allow-same-origin", "allow-top-navigation", "allow-top-navigation-by-user-activation",
    "allow-top-navigation-to-custom-protocols", "allow-popups", "allow-popups-to-escape-sandbox", "allow-forms", "allow-modals"]) {
    if (element.tokens.includes(token)) fail(where, `iframe sandbox has ${token}`);
  }
  if (element.sandbox === null) fail(where, "iframe is not sandboxed");
  if (element.srcdoc) fail(where, "iframe uses srcdoc (inherits the page's CSP)");
  if (element.width < element.planWidth - 4) fail(where, "iframe is not full width", element);
  if (element.height < 300) fail(where, "iframe is too short", element);
  // The document: shown with its CSS, none of its script ran.
  if (before.origin !== "null") fail(where, `frame origin is ${before.origin}, not opaque`);
  if (before.ran !== null) fail(where, `a script of the document ran: ${before.ran}`);
  if (before.h1Colour !== "rgb(1, 2, 3)") fail(where, `inline <style> did not apply (h1 ${before.h1Colour})`);
  if (before.styledWeight !== "700") fail(where, `style attribute did not apply (${before.styledWeight})`);
  if (!before.noscriptShown) fail(where, "<noscript> content not shown");
  if (before.scripts) fail(where, `${before.scripts} script elements left in the frame`);
  if (before.handlers) fail(where, `${before.handlers} elements with handlers left in the frame`);
  // Every attempt throws or is blocked.
  const r = attacked.results;
  const mustThrow = ["parentLocationHash", "parentLocationHref", "setParentLocationHash", "parentDocument",
    "localStorage", "sessionStorage", "indexedDB", "readCookie", "writeCookie", "fetchPaste", "fetchCanary",
    "xhrPaste", "image", "innerHTML", "topLocation", "topLocationHref", "stringTimer", "dynamicScript",
    "inlineHandler"];
  for (const name of mustThrow) {
    if (!r[name]?.threw) fail(where, `${name} did not throw`, r[name]);
  }
  if (!r.windowOpen?.threw && r.windowOpen?.value !== "null") fail(where, "window.open returned a window", r.windowOpen);
  if (r.replayReady?.value !== "0") fail(where, "the page handed the HTML over again", r.replayReady);
  // sendBeacon may report "queued": the CSP blocks the request itself (the
  // canary, checked by the caller, must see no connection).
  if (attacked.ran !== null || frameAfter?.ran) fail(where, `an injected handler ran: ${attacked.ran ?? frameAfter?.ran}`);
  if (attacked.injected) fail(where, "innerHTML inserted markup without Trusted Types");
  // Nothing moved: top page, frame, no popups.
  if (after.href !== topBefore || /pwned|top/.test(after.href)) fail(where, `the top page navigated: ${after.href}`);
  if (seen.mainUrls.some((u) => u.startsWith(spec.canary) || u.includes("pwned"))) fail(where, "the top page navigated", seen.mainUrls);
  if (!frameAfter || pathOf(frameAfter.href) !== "/frame") fail(where, `the frame navigated away: ${frameAfter?.href}`);
  if (seen.popups.length) fail(where, "a popup opened", seen.popups);
  if (after.planFrames !== 1) fail(where, `${after.planFrames} frames in the plan`);
  // The page got only the loader's protocol messages; the spoofed one changed nothing.
  const strange = after.messages.filter((m) => m !== "planshare-frame-ready" && m?.type !== "planshare-frame-height" && m?.type !== "planshare-frame-html");
  if (strange.length) fail(where, "unexpected messages reached the page", strange);
  // The top page itself has no violations (all blocked attempts are the frame's).
  if (after.violations.length) fail(where, "CSP violations on the portal page", after.violations);
  if (seen.errors.length) fail(where, "page errors", seen.errors);
  // Requests: only the portal's own were answered.
  const allowed = (url) => {
    const u = new URL(url);
    if (u.origin !== origin) return false;
    return u.pathname === `/p/${spec.pasteId}` || u.pathname === "/frame" || u.pathname === "/config.json"
      || u.pathname.startsWith("/assets/") || u.pathname === `/api/paste/${spec.pasteId}`;
  };
  const answered = seen.responses.filter((url) => !allowed(url));
  if (answered.length) fail(where, "requests other than the portal's own were answered", answered);
  const pasteReads = seen.responses.filter((url) => new URL(url).pathname === `/api/paste/${spec.pasteId}`).length;
  if (pasteReads !== 1) fail(where, `the paste was fetched ${pasteReads} times (the portal's own fetch only)`);
  const toCanary = seen.responses.filter((url) => url.startsWith(spec.canary));
  if (toCanary.length) fail(where, "the canary answered", toCanary);
  // The key: in nothing the frame can read, in no request.
  const key = spec.key;
  if (attacked.readable.includes(key) || JSON.stringify(attacked.results).includes(key)) fail(where, "the key is readable from the frame");
  const leaks = seen.requests.filter((q) => q.url.includes(key) || JSON.stringify(q.headers).includes(key) || q.body.includes(key));
  if (leaks.length) fail(where, "a request carried the key", leaks.map((q) => q.url));
  report.html.frameViolations = [...before.violations, ...(frameAfter?.violations ?? [])].length;
  await context.close();
}

try {
  if (input.code) await checkCode(input.code);
  if (input.html) await checkHtml(input.html);
} catch (error) {
  fail("harness", String(error?.stack ?? error));
} finally {
  await browser.close();
}
// Exit once the report has gone out: exiting straight after a write to a
// pipe cuts it at 64 KiB.
process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(failures.length ? 1 : 0));
