// Drives the portal like a reviewer: opens a link, selects text and adds
// comments and deletions, sets an author, shares (hash or short link),
// imports a teammate's link, copies feedback, tabs to controls, prints.
//
// Input (stdin, JSON): { "chromium", "parallel"?, "sessions": [{ "url", "actions": [action…],
//   "allowOrigins"?: [origins besides the page's it may request] }] }
// Actions: {"author": name} · {"comment": [quote, text]} · {"delete": quote} ·
//   {"global": text} · {"remove": index} · {"share": true} (hash link) ·
//   {"short": true} (short link through the paste API) · {"import": link} ·
//   {"feedback": true} · {"keyboardShare": true} · {"print": pdfPath} ·
//   {"shortThenDelete": true} (short link, then "Delete this link" in the share
//   dialog; outputs JSON {link, note}) · {"goto": "last"|url} (opens the last link
//   made in this run, or url, in the same browser; outputs JSON {error, detail,
//   deleteVisible}) · {"deleteOpened": true} ("Delete this link" in the bar;
//   outputs JSON {note, status, deleteVisible}) · {"oversized": bytes} and
//   {"longUrl": chars} (a create with that big a body, a read with that long
//   a query, sent by the page to its paste API; output "<status> <error>"
//   or "network error: …") · {"keys": [key…], "in"?: "#id"} (presses keys; outputs
//   JSON {focused, dialog, status}) · {"closeDialog": true} · {"help": true}
//   (`?`; outputs the listed shortcuts) · {"outline": true|n} (outputs JSON
//   {entries, reached}; n clicks entry n) · {"steps": true} (outputs the step
//   meter as JSON, or null) · {"screenshot": path, "dark"?, "width"?} ·
//   {"axe": true, "dark"?: bool} (axe-core on the page as it is, in the dark or light
//   colour scheme; outputs JSON {violations: [{id, impact, help, nodes: [first targets]}]}) ·
//   {"click": selector} (clicks it, e.g. "#share" to leave the share dialog open) ·
//   {"callback": "approve"|"feedback"} (presses the bot callback button, waits for
//   the answer) and {"callbackState": true}: both output JSON {visible, note, disabled} ·
//   {"versions": true|[from, to]} (the versions dialog, left open; outputs JSON {list (each version's line without
//   its date), summary, lines (class and text of each diff row)}) ·
//   {"edit": [n, text]} (edits the n-th listed comment) · {"undo": true} (outputs the undo line, then undoes) ·
//   {"reviewSend": true} ("Send comments"; outputs the note) · {"showNews": true} · {"annotationsNow": true}
//   (outputs the listed annotations' meta and text as JSON) · {"reload": true}
//   (outputs the status) · {"type": [quote|null, text]} (a comment typed, not saved) ·
//   {"dialogText": true} (outputs JSON {open, quote, text} of the comment dialog) ·
//   {"waitFile": path} · the owner's {"addLink": true, "qr"?} (outputs the new link; with qr, JSON {link, qr}),
//   {"startReview": true, "reviewers"?: n} ("Start a review" on a share page; outputs JSON
//   {started, note (the first and the last note), links, qr, open}; "goto": "last" then opens the owner link),
//   {"revokeLink": n} (outputs the note), {"requestChanges": text} (outputs the state line) · {"signal": path} (writes
//   the file, so the test knows the page is ready) · {"waitText": [selector, text],
//   "timeout"?} (outputs the ms it took) · {"pasteLink": url} (the url pasted into the open
//   page's address bar; outputs JSON {state, ownerTools, address, error}) · {"layout": true|width}
//   (outputs JSON {window, page, tables: [{box, content, scrolls}]}) · {"textOf": selector}
//   (its text, or null when hidden) · threads (a card is named by a piece of its quote or
//   text): {"reply": [card, text], "addressed"?} (Reply, typed, Send reply; outputs the
//   note) · {"typeReply": [card, text]} (typed, not sent) · {"threadAction": [card,
//   "Resolve"|"Reopen"]} (outputs the note) · {"threads": true} (outputs JSON, per card with
//   a thread: {meta, root, replies: ["Name: text"], actions, folded, typed}) ·
//   {"selectHighlight": quote} (clicks the quote's highlight; outputs JSON {selected (the
//   selected card's meta), inView (the card within the window)}) · {"approve": true}
//   (outputs the note once answered) · {"focused": true} (outputs what has the focus: its tag
//   and the heading of the card it is in). Input "hostRules": Chromium host resolver rules;
//   "ignoreHttpsErrors": accept a test server's self-signed certificate. A review link's token (`t`) must appear in no
//   request URL or body (it goes in Authorization), as the key must appear nowhere.
// Output (stdout, JSON): { "sessions": [{ "outputs": [per action: string|null],
//   "annotations": [{ "meta", "quote", "text" }], "highlighted": n, "error", "errorDetail" }],
//   "failures": [...], "foreignRequests": [...], "keyLeaks": [...] }
// Exit status 0 only when there are no failures, foreign requests or key leaks.

import { access, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import jsQR from "jsqr";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

const browser = await chromium.launch({
  executablePath: input.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    // `hostRules`: names that resolve to this machine without being
    // localhost (a team host over plain HTTP, which is not a secure context).
    ...(input.hostRules ? [`--host-resolver-rules=${input.hostRules}`] : [])],
});
const failures = [];
const foreignRequests = [];
const keyLeaks = [];
const sessions = [];

/** Selects the first occurrence of `quote` inside one text node of #plan. */
async function select(page, quote) {
  const found = await page.evaluate((quote) => {
    const plan = document.getElementById("plan");
    const walker = document.createTreeWalker(plan, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.data.indexOf(quote);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + quote.length);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      return true;
    }
    return false;
  }, quote);
  if (!found) throw new Error(`"${quote}" is not in the rendered plan`);
  await page.waitForSelector("#selection-tools:not([hidden])", { timeout: 5000 });
}

/** The side panel's card of a thread whose quote or text holds `name`. */
function threadCard(page, name) {
  return page.locator("#annotation-list > li.thread", { has: page.locator("q, p", { hasText: name }) }).first();
}

/** Clears the review bar's note, does `what`, and outputs the note once
 * it says something other than `pending`. */
async function noteAfter(page, what, pending = ["Sending…"]) {
  await page.evaluate(() => (document.getElementById("review-note").textContent = ""));
  await what();
  await page.waitForFunction((pending) => {
    const note = document.getElementById("review-note").textContent;
    return note !== "" && !pending.includes(note);
  }, pending, { timeout: 15000 });
  return page.textContent("#review-note");
}

/** axe-core's source, read on the first {"axe"} action. */
let axeSource = null;

/** The last link a share action made in this session. */
let lastLink = null;

/** Keys and tokens of review links the page made in this run: like the
 * session link's, none may appear in a request URL or body (a key not in
 * headers either). */
const minted = [];

function mint(link) {
  const params = new URLSearchParams(new URL(link).hash.slice(1));
  for (const [name, value] of params) {
    if ((name === "key" || name === "t") && value && !minted.some((m) => m.value === value)) {
      minted.push({ value, inHeaders: name === "key" });
    }
  }
}

/** The links shown as cards in `dialog` (owner first), minted as secrets. */
async function cardLinks(page, dialog) {
  const links = await page.$$eval(`${dialog} .link-card textarea`, (fields) => fields.map((f) => f.value));
  links.forEach(mint);
  return links;
}

/** Draws the QR code of card `n` of `dialog` as the page drew it (its SVG
 * path of dark modules) into pixels, and reads it back with jsQR, as a
 * phone's camera would: the decoded text, or null. */
async function readQr(page, dialog, n) {
  const card = page.locator(`${dialog} .link-card`).nth(n);
  await card.locator("button", { hasText: "Show QR code" }).click();
  await card.locator("svg.qr").waitFor({ timeout: 10000 });
  const { modules, d, viewBox } = await card.locator("svg.qr").evaluate((svg) => ({
    modules: Number(svg.dataset.modules),
    d: svg.querySelector("path").getAttribute("d"),
    viewBox: svg.getAttribute("viewBox"),
  }));
  const side = Number(viewBox.split(" ")[2]);
  if (!(side > modules)) throw new Error(`a QR code of ${modules} modules in a ${side}-module square has no quiet zone`);
  const scale = 6;
  const width = side * scale;
  const pixels = new Uint8ClampedArray(width * width * 4).fill(255);
  for (const [, x, y] of d.matchAll(/M(\d+) (\d+)h1v1h-1z/g)) {
    for (let dy = 0; dy < scale; dy++) {
      for (let dx = 0; dx < scale; dx++) {
        const at = ((Number(y) * scale + dy) * width + Number(x) * scale + dx) * 4;
        pixels[at] = pixels[at + 1] = pixels[at + 2] = 0;
      }
    }
  }
  return jsQR(pixels, width, width)?.data ?? null;
}

/** Confirms the open delete dialog; returns its note once the request ended. */
async function confirmDelete(page) {
  await page.waitForSelector("#delete-dialog[open]", { timeout: 5000 });
  await page.click("#delete-confirm");
  await page.waitForFunction(() => {
    const note = document.getElementById("delete-note").textContent;
    return note !== "" && !note.startsWith("Deleting");
  }, null, { timeout: 15000 });
  const note = await page.textContent("#delete-note");
  await page.click("#delete-cancel");
  return note;
}

/** The page's paste API, as the portal's configuration names it. */
async function pageFetch(page, what, size) {
  return page.evaluate(async ({ what, size }) => {
    const config = await (await fetch("/config.json")).json();
    const api = (config.pasteApiUrl || location.origin).replace(/\/+$/, "");
    try {
      const response = what === "oversized"
        ? await fetch(`${api}/api/paste`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: `{"data":"${"A".repeat(size)}"}`,
        })
        : await fetch(`${api}/api/paste/AAAAAAAAAAAAAAAA?pad=${"a".repeat(size)}`);
      const body = await response.json().catch(() => ({}));
      return `${response.status} ${body.error ?? ""}`;
    } catch (error) {
      return `network error: ${error}`;
    }
  }, { what, size });
}

async function act(page, action) {
  if (action.pasteLink !== undefined) {
    // A link pasted into the address bar of this open page: when only the
    // fragment differs, no new page loads by itself. Waits until a page
    // has loaded from it; outputs JSON {state, ownerTools, address, error}.
    const before = await page.evaluate(() => performance.timeOrigin);
    await page.goto(action.pasteLink);
    for (let tries = 0; ; tries++) {
      try {
        await page.waitForFunction((t) => performance.timeOrigin !== t
          && document.getElementById("status")?.textContent !== "Loading…", before, { timeout: 15000 });
        break;
      } catch (error) {
        if (tries >= 5 || !/context was destroyed|navigat/i.test(String(error))) throw error;
      }
    }
    return JSON.stringify(await page.evaluate(() => ({
      state: document.getElementById("review-state").textContent,
      ownerTools: !document.getElementById("owner-tools").hidden,
      address: location.href,
      error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
    })));
  }
  if (action.layout) {
    // How wide the page is against the window, and whether each table of
    // the plan scrolls in its own box; `layout: width` sets the window first.
    if (typeof action.layout === "number") await page.setViewportSize({ width: action.layout, height: 800 });
    return JSON.stringify(await page.evaluate(() => ({
      window: window.innerWidth,
      page: document.documentElement.scrollWidth,
      tables: [...document.querySelectorAll("#plan table")].map((t) => ({
        box: t.clientWidth, content: t.scrollWidth, scrolls: getComputedStyle(t).overflowX,
      })),
      code: [...document.querySelectorAll("#plan pre")].map((t) => ({
        box: t.clientWidth, content: t.scrollWidth, scrolls: getComputedStyle(t).overflowX,
      })),
    })));
  }
  if (action.reply !== undefined || action.typeReply !== undefined) {
    const [name, text] = action.reply ?? action.typeReply;
    const card = threadCard(page, name);
    const box = card.locator(".reply-box textarea");
    if (!(await box.isVisible())) await card.locator("button[data-thread-action=reply]").click();
    await box.fill(text);
    if (action.typeReply !== undefined) return null;
    if (action.addressed) await card.locator(".reply-box input[type=checkbox]").check();
    return noteAfter(page, () => card.locator(".reply-box button", { hasText: "Send reply" }).click());
  }
  if (action.threadAction !== undefined) {
    const [name, label] = action.threadAction;
    const card = threadCard(page, name);
    const fold = card.locator("details.thread-fold");
    if (await fold.count() && !(await fold.evaluate((d) => d.open))) await fold.locator("summary").click();
    return noteAfter(page, () => card.locator(".thread-tools button", { hasText: label }).click());
  }
  if (action.threads) {
    return JSON.stringify(await page.$$eval("#annotation-list > li.thread", (items) => items.map((li) => ({
      meta: li.querySelector(".meta")?.textContent ?? "",
      root: li.querySelector(":scope > p")?.textContent ?? li.querySelector(":scope > q")?.textContent ?? "",
      replies: [...li.querySelectorAll(".reply")].map((r) => `${r.querySelector(".who").textContent}: ${r.querySelector(".said").textContent}`),
      actions: [...li.querySelectorAll(".thread-tools button")].map((b) => b.textContent),
      folded: li.querySelector("details.thread-fold") ? !li.querySelector("details.thread-fold").open : false,
      typed: li.querySelector(".reply-box textarea")?.value ?? "",
    }))));
  }
  if (action.selectHighlight !== undefined) {
    await page.locator("#plan mark[data-bind-id]", { hasText: action.selectHighlight }).first().click();
    return JSON.stringify(await page.evaluate(() => {
      const card = document.querySelector("#annotation-list > li.selected");
      const box = card?.getBoundingClientRect();
      return {
        selected: card?.querySelector(".meta")?.textContent ?? null,
        // (Within a pixel: a card scrolled to the window's edge may end a fraction past it.)
        inView: !!box && box.top >= -1 && box.bottom <= innerHeight + 1 && box.left >= -1 && box.right <= innerWidth + 1,
      };
    }));
  }
  if (action.focused) {
    return page.evaluate(() => {
      const at = document.activeElement;
      return `${at?.tagName.toLowerCase()} in ${at?.closest("#annotation-list > li")?.querySelector(".meta")?.textContent ?? "no card"}`;
    });
  }
  if (action.approve) {
    return noteAfter(page, () => page.click("#review-approve"), ["Approving…"]);
  }
  if (action.textOf !== undefined) {
    // The text of an element, or null when it is hidden or missing.
    return page.evaluate((selector) => {
      const node = document.querySelector(selector);
      return node && !node.closest("[hidden]") ? node.textContent.trim() : null;
    }, action.textOf);
  }
  if (action.author !== undefined) {
    await page.fill("#author", action.author);
    return null;
  }
  if (action.comment) {
    await select(page, action.comment[0]);
    await page.click("#add-comment");
    await page.fill("#comment-text", action.comment[1]);
    await page.click("#comment-form button[value=save]");
    return null;
  }
  if (action.delete !== undefined) {
    await select(page, action.delete);
    await page.click("#add-deletion");
    return null;
  }
  if (action.global !== undefined) {
    await page.click("#global-comment");
    await page.fill("#comment-text", action.global);
    await page.click("#comment-form button[value=save]");
    return null;
  }
  if (action.edit !== undefined) {
    // `edit: [n, text]`: "Edit" on the n-th listed annotation, its text
    // replaced by `text`, saved.
    const [n, text] = action.edit;
    await page.locator("#annotation-list li").nth(n).locator("button", { hasText: "Edit" }).click();
    await page.fill("#comment-text", text);
    await page.click("#comment-save");
    return null;
  }
  if (action.undo) {
    // "Undo" after a removal; outputs what the undo line said.
    const said = await page.textContent("#undo-text");
    await page.click("#undo-button");
    return said;
  }
  if (action.remove !== undefined) {
    await page.locator("#annotation-list li").nth(action.remove).locator("button.remove").click();
    return null;
  }
  if (action.share) {
    await page.click("#share");
    await page.waitForFunction(() => document.getElementById("share-link").value !== "");
    const link = await page.inputValue("#share-link");
    await page.click("#share-dialog button[value=close]");
    lastLink = link;
    return link;
  }
  if (action.shortThenDelete) {
    await page.click("#share");
    await page.waitForSelector("#share-short:not([hidden])", { timeout: 5000 });
    await page.click("#share-short");
    await page.waitForSelector("#share-delete:not([hidden])", { timeout: 10000 });
    const link = await page.inputValue("#share-link");
    await page.click("#share-delete");
    const note = await confirmDelete(page);
    await page.click("#share-dialog button[value=close]");
    lastLink = link;
    return JSON.stringify({ link, note });
  }
  if (action.goto !== undefined) {
    await page.goto(action.goto === "last" ? lastLink : action.goto);
    await page.waitForFunction(() => {
      const status = document.getElementById("status");
      return status && status.textContent !== "Loading…";
    }, null, { timeout: 15000 });
    return JSON.stringify(await page.evaluate(() => ({
      error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
      detail: document.getElementById("error-detail")?.textContent ?? null,
      deleteVisible: !document.getElementById("delete-link").hidden,
    })));
  }
  if (action.deleteOpened) {
    await page.click("#delete-link");
    const note = await confirmDelete(page);
    return JSON.stringify({
      note,
      status: await page.textContent("#status"),
      deleteVisible: await page.isVisible("#delete-link"),
    });
  }
  if (action.oversized !== undefined) return pageFetch(page, "oversized", action.oversized);
  if (action.longUrl !== undefined) return pageFetch(page, "longUrl", action.longUrl);
  if (action.short) {
    await page.click("#share");
    await page.waitForSelector("#share-short:not([hidden])", { timeout: 5000 });
    await page.click("#share-short");
    await page.waitForFunction(() => {
      const note = document.getElementById("share-note").textContent;
      return note !== "" && !note.startsWith("Creating");
    }, null, { timeout: 10000 });
    const link = await page.inputValue("#share-link");
    const note = await page.textContent("#share-note");
    await page.click("#share-dialog button[value=close]");
    if (!link.includes("/p/")) throw new Error(`no short link: ${note}`);
    lastLink = link;
    return link;
  }
  if (action.import !== undefined) {
    await page.click("#import");
    await page.fill("#import-link", action.import);
    await page.click("#import-form button[value=import]");
    await page.waitForFunction(() => document.getElementById("import-note").textContent !== "", null, { timeout: 15000 });
    const note = await page.textContent("#import-note");
    await page.click("#import-dialog button[value=close]");
    return note;
  }
  if (action.feedback) {
    await page.click("#copy-feedback");
    const text = await page.inputValue("#feedback-text");
    await page.click("#feedback-dialog button[value=close]");
    return text;
  }
  if (action.keyboardShare) {
    // Share is reachable with Tab alone and opens with Enter.
    await page.evaluate(() => document.activeElement?.blur());
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press("Tab");
      if (await page.evaluate(() => document.activeElement?.id === "share")) {
        await page.keyboard.press("Enter");
        await page.waitForFunction(() => document.getElementById("share-link").value !== "");
        const link = await page.inputValue("#share-link");
        await page.keyboard.press("Escape");
        return link;
      }
    }
    throw new Error("Share is not reachable with the Tab key");
  }
  if (action.print !== undefined) {
    await page.emulateMedia({ media: "print" });
    const shown = await page.evaluate(() => ({
      bar: getComputedStyle(document.querySelector("header.bar")).display,
      plan: getComputedStyle(document.getElementById("plan")).display,
      text: document.getElementById("plan").innerText.length,
    }));
    await page.pdf({ path: action.print, format: "A4" });
    await page.emulateMedia({ media: "screen" });
    if (shown.bar !== "none" || shown.plan === "none" || shown.text === 0) {
      throw new Error(`print view: ${JSON.stringify(shown)}`);
    }
    return JSON.stringify(shown);
  }
  if (action.keys !== undefined) {
    // Presses each key with the focus on the page itself (or, with
    // `in: "#id"`, in that element); outputs what then has the focus and
    // which dialog is open.
    if (action.in) await page.focus(action.in);
    else await page.evaluate(() => document.activeElement?.blur());
    for (const key of action.keys) await page.keyboard.press(key);
    return JSON.stringify(await page.evaluate(() => ({
      focused: document.activeElement?.closest("li")?.querySelector(".meta")?.textContent
        ?? document.activeElement?.id ?? null,
      dialog: document.querySelector("dialog[open]")?.id ?? null,
      status: document.getElementById("status").textContent,
    })));
  }
  if (action.closeDialog) {
    await page.keyboard.press("Escape");
    return null;
  }
  if (action.help) {
    // `?` lists the shortcuts on offer.
    await page.evaluate(() => document.activeElement?.blur());
    await page.keyboard.press("?");
    await page.waitForSelector("#help-dialog[open]", { timeout: 5000 });
    const rows = await page.$$eval("#help-list > div", (divs) =>
      divs.map((d) => `${[...d.querySelectorAll("kbd")].map((k) => k.textContent).join("/")} ${d.querySelector("dd").textContent}`));
    await page.click("#help-dialog button[value=close]");
    return JSON.stringify(rows);
  }
  if (action.outline !== undefined) {
    // The outline's entries; with a number, clicks that entry and reports
    // whether its heading is then at the top of the window.
    const entries = await page.evaluate(() => {
      const nav = document.getElementById("outline");
      return nav.hidden ? null : [...nav.querySelectorAll("li")].map((li) => `${li.className} ${li.textContent}`);
    });
    let reached = null;
    if (typeof action.outline === "number") {
      await page.locator("#outline-list button").nth(action.outline).click();
      reached = await page.evaluate((n) => {
        const text = document.querySelectorAll("#outline-list button")[n].textContent;
        const heading = [...document.querySelectorAll("#plan h1, #plan h2, #plan h3")].find((h) => h.textContent.trim() === text);
        const top = heading.getBoundingClientRect().top;
        return top >= -2 && top < innerHeight / 3;
      }, action.outline);
    }
    return JSON.stringify({ entries, reached });
  }
  if (action.steps) {
    return JSON.stringify(await page.evaluate(() => {
      const section = document.getElementById("steps");
      if (section.hidden) return null;
      const meter = document.getElementById("steps-meter");
      return {
        count: document.getElementById("steps-count").textContent,
        current: document.getElementById("steps-current").textContent,
        meter: [meter.value, meter.max],
        items: [...document.querySelectorAll("#steps-list li")].map((li) => `${li.className}: ${li.textContent}`),
      };
    }));
  }
  if (action.callback !== undefined) {
    // Approve or Send feedback on a bot callback link; outputs the bar.
    await page.click(action.callback === "approve" ? "#cb-approve" : "#cb-feedback");
    await page.waitForFunction(() => !/…$/.test(document.getElementById("callback-note").textContent), null, { timeout: 15000 });
  }
  if (action.callback !== undefined || action.callbackState) {
    return JSON.stringify(await page.evaluate(() => ({
      visible: !document.getElementById("callback").hidden,
      note: document.getElementById("callback-note").textContent,
      disabled: document.getElementById("cb-approve").disabled,
    })));
  }
  if (action.reviewSend) {
    // "Send comments" on a review page; outputs the note once it is answered.
    await page.click("#review-send");
    await page.waitForFunction(() => {
      const note = document.getElementById("review-note").textContent;
      return note !== "" && note !== "Sending…";
    }, null, { timeout: 15000 });
    return page.textContent("#review-note");
  }
  if (action.reload) {
    await page.reload();
    await page.waitForFunction(() => {
      const status = document.getElementById("status");
      return status && status.textContent !== "Loading…";
    }, null, { timeout: 15000 });
    return page.textContent("#status");
  }
  if (action.type !== undefined) {
    // Starts a comment on a quote (or on the plan, with null) and types
    // without saving it.
    if (action.type[0] === null) {
      await page.click("#global-comment");
    } else {
      await select(page, action.type[0]);
      await page.click("#add-comment");
    }
    await page.fill("#comment-text", action.type[1]);
    return null;
  }
  if (action.dialogText) {
    return JSON.stringify(await page.evaluate(() => ({
      open: document.getElementById("comment-dialog").open,
      quote: document.getElementById("comment-quote").textContent,
      text: document.getElementById("comment-text").value,
    })));
  }
  if (action.waitFile !== undefined) {
    // Waits (up to 30 s) until the file exists: another session is ready.
    for (let i = 0; i < 600; i++) {
      if (await access(action.waitFile).then(() => true, () => false)) return null;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`${action.waitFile} never appeared`);
  }
  if (action.addLink) {
    // The owner's links dialog: "Add a reviewer link"; outputs the link, or
    // with `qr`, JSON {link, qr} with what its QR code reads as.
    await page.click("#review-links");
    await page.click("#links-add");
    await page.waitForFunction(() => document.getElementById("links-note").textContent !== "Making a link…", null, { timeout: 10000 });
    if (await page.locator("#new-link").isHidden()) {
      const note = await page.textContent("#links-note");
      await page.click("#links-dialog button[value=close]");
      return `refused: ${note}`;
    }
    const [link] = await cardLinks(page, "#new-link");
    const qr = action.qr ? await readQr(page, "#new-link", 0) : undefined;
    await page.click("#links-dialog button[value=close]");
    return action.qr ? JSON.stringify({ link, qr }) : link;
  }
  if (action.startReview) {
    // "Start a review" on a share page; outputs JSON {note, links: [owner,
    // reviewer…], qr: [what each link's QR code reads as], open} with the
    // dialog left open. `reviewers`: how many links to add beyond the first.
    await page.click("#start-review");
    await page.click("#start-go");
    await page.waitForFunction(() => !["", "Starting the review…"].includes(document.getElementById("start-note").textContent), null, { timeout: 15000 });
    const started = await page.textContent("#start-note");
    for (let i = 0; i < (action.reviewers ?? 0); i++) {
      await page.click("#start-add");
      await page.waitForFunction(() => document.getElementById("start-note").textContent !== "Making a link…", null, { timeout: 10000 });
    }
    const links = await cardLinks(page, "#start-dialog");
    const qr = [];
    for (let i = 0; i < links.length; i++) qr.push(await readQr(page, "#start-dialog", i));
    const open = await page.locator("#start-open").isVisible() ? await page.getAttribute("#start-open", "href") : null;
    if (links.length) lastLink = links[0];
    return JSON.stringify({ started, note: await page.textContent("#start-note"), links, qr, open });
  }
  if (action.revokeLink !== undefined) {
    // Revokes the n-th listed link; outputs the dialog's note.
    await page.click("#review-links");
    await page.locator("#links-list li button").nth(action.revokeLink).click();
    await page.waitForFunction(() => /^Revoked|refused|unavailable/.test(document.getElementById("links-note").textContent), null, { timeout: 10000 });
    const note = await page.textContent("#links-note");
    await page.click("#links-dialog button[value=close]");
    return note;
  }
  if (action.requestChanges !== undefined) {
    await page.click("#review-changes");
    await page.fill("#decide-text", action.requestChanges);
    await page.click("#decide-send");
    await page.waitForFunction(() => document.getElementById("review-note").textContent === "Changes requested."
      || !["", "Sending…"].includes(document.getElementById("decide-note").textContent), null, { timeout: 10000 });
    return page.textContent("#review-state");
  }
  if (action.annotationsNow) {
    return JSON.stringify(await page.$$eval("#annotation-list li", (items) => items.map((li) => ({
      meta: li.querySelector(".meta")?.textContent ?? "",
      text: li.querySelector("p")?.textContent ?? "",
      ...(li.classList.contains("not-found") ? { notFound: true } : {}),
    }))));
  }
  if (action.versions !== undefined) {
    // The versions dialog: outputs JSON {list, summary, lines} once every
    // version's changes are counted; `versions: [from, to]` compares those.
    await page.click("#review-versions");
    const settled = () => page.waitForFunction(() => document.getElementById("diff-summary").textContent !== "Loading the versions…"
      && ![...document.querySelectorAll("#versions-list .changes")].some((c) => c.textContent === " · …"), null, { timeout: 10000 });
    await settled();
    if (Array.isArray(action.versions)) {
      await page.selectOption("#diff-from", String(action.versions[0]));
      await page.selectOption("#diff-to", String(action.versions[1]));
      await page.waitForFunction((want) => document.getElementById("diff-summary").textContent.startsWith(want),
        `From v${action.versions[0]} to v${action.versions[1]}`, { timeout: 10000 });
    }
    const shown = await page.evaluate(() => ({
      list: [...document.querySelectorAll("#versions-list li")].map((li) => li.textContent.replace(/ · \d[^·]*?(?= · |$)/, "")),
      summary: document.getElementById("diff-summary").textContent,
      lines: [...document.querySelectorAll("#diff-view > div")].map((row) => `${row.className} ${row.textContent}`),
    }));
    return JSON.stringify(shown);
  }
  if (action.showNews) {
    // "Show" on an announced change; outputs the announcement it showed.
    const news = await page.textContent("#review-news-text");
    await page.click("#review-news-show");
    await page.waitForSelector("#review-news", { state: "hidden", timeout: 10000 });
    return news;
  }
  if (action.signal !== undefined) {
    // Tells the test (a file appears) that the page is ready for it.
    await writeFile(action.signal, "ready");
    return null;
  }
  if (action.waitText !== undefined) {
    // Waits until the element shows the text; outputs how long it took (ms).
    const [selector, text] = action.waitText;
    const started = Date.now();
    await page.waitForFunction(([selector, text]) => document.querySelector(selector)?.textContent.includes(text),
      [selector, text], { timeout: action.timeout ?? 20000 });
    return String(Date.now() - started);
  }
  if (action.screenshot !== undefined) {
    // `{ screenshot: path, dark?, width? }`: the whole page as a PNG.
    await page.emulateMedia({ colorScheme: action.dark ? "dark" : "light" });
    if (action.width) await page.setViewportSize({ width: action.width, height: 900 });
    await page.screenshot({ path: action.screenshot, fullPage: true });
    await page.emulateMedia({ colorScheme: "light" });
    if (action.width) await page.setViewportSize({ width: 1280, height: 720 });
    return action.screenshot;
  }
  if (action.click !== undefined) {
    await page.click(action.click);
    return null;
  }
  if (action.axe) {
    // axe-core's source is evaluated through the DevTools protocol, which the
    // page's CSP (script-src, Trusted Types) does not govern; the page keeps
    // the CSP the server sent.
    axeSource ??= await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
    await page.emulateMedia({ colorScheme: action.dark ? "dark" : "light" });
    try {
      if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(axeSource);
      const violations = await page.evaluate(async () => {
        const results = await window.axe.run(document, { resultTypes: ["violations"] });
        return results.violations.map((v) => ({
          id: v.id,
          impact: v.impact,
          help: v.help,
          nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
        }));
      });
      return JSON.stringify({ violations });
    } finally {
      await page.emulateMedia({ colorScheme: "light" });
    }
  }
  throw new Error(`unknown action ${JSON.stringify(action)}`);
}

/** Runs one session in a browser context of its own. */
async function runSession(session) {
  // `ignoreHttpsErrors`: a test server's self-signed certificate.
  const context = await browser.newContext({ ignoreHTTPSErrors: input.ignoreHttpsErrors === true });
  const page = await context.newPage();
  const origin = new URL(session.url).origin;
  const key = new URLSearchParams(new URL(session.url).hash.slice(1)).get("key");
  // A review link's token may travel in `Authorization` only, never in a URL.
  const token = new URLSearchParams(new URL(session.url).hash.slice(1)).get("t");
  page.on("request", (request) => {
    const url = request.url();
    const to = new URL(url).origin;
    if (to !== origin && !(session.allowOrigins ?? []).includes(to)) foreignRequests.push(url);
    const headers = JSON.stringify(request.headers());
    if (key && (url.includes(key) || headers.includes(key) || (request.postData() ?? "").includes(key))) {
      keyLeaks.push(url);
    }
    if (token && (url.includes(token) || (request.postData() ?? "").includes(token))) keyLeaks.push(`token in ${url}`);
    for (const secret of minted) {
      if (url.includes(secret.value) || (request.postData() ?? "").includes(secret.value)
        || (secret.inHeaders && headers.includes(secret.value))) {
        keyLeaks.push(`a minted review link's secret in a request to ${url.slice(0, 80)}`);
      }
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
  const fail = (what) => failures.push({ url: session.url.slice(0, 120), what });
  const outputs = [];
  try {
    await page.goto(session.url);
    await page.waitForFunction(() => {
      const status = document.getElementById("status");
      return status && status.textContent !== "Loading…";
    }, null, { timeout: 15000 });
    for (const action of session.actions ?? []) outputs.push(await act(page, action));
  } catch (error) {
    fail(String(error));
  }
  const shown = await page.evaluate(() => ({
    annotations: [...document.querySelectorAll("#annotation-list li")].map((li) => ({
      meta: li.querySelector(".meta")?.textContent ?? "",
      quote: li.querySelector("q")?.textContent ?? "",
      text: li.querySelector("p")?.textContent ?? "",
    })),
    highlighted: new Set([...document.querySelectorAll("#plan mark[data-bind-id]")].map((m) => m.dataset.bindId)).size,
    error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
    errorDetail: document.getElementById("error-detail")?.textContent ?? null,
    violations: window.__violations,
  }));
  if (errors.length) fail(`page errors: ${errors.join("; ")}`);
  if (shown.violations.length) fail(`CSP violations: ${shown.violations.join("; ")}`);
  sessions[input.sessions.indexOf(session)] = { outputs, annotations: shown.annotations, highlighted: shown.highlighted, error: shown.error, errorDetail: shown.errorDetail };
  await context.close();
}

try {
  // `parallel`: every session at once, each in its own context (two people
  // on one review); otherwise one after another.
  if (input.parallel) await Promise.all(input.sessions.map(runSession));
  else for (const session of input.sessions) await runSession(session);
} finally {
  await browser.close();
}
// Exit once the report has gone out: exiting straight after a write to a
// pipe cuts it at 64 KiB.
process.stdout.write(JSON.stringify({ sessions, failures, foreignRequests, keyLeaks }) + "\n", () => process.exit(failures.length || foreignRequests.length || keyLeaks.length ? 1 : 0));
