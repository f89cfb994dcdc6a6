// The plan's markdown as HTML: marked (GitHub-flavoured), then sanitised
// (sanitize.js: the browser's own sanitizer where it has one, else
// DOMPurify, under one set of rules) into nodes; no HTML string is
// written into the page (the Trusted Types policy refuses them). Then
// DOM-only passes (GitHub alerts, task labels) that touch text nodes and
// attributes, and code highlighting. Raw-HTML plans are shown in a
// sandboxed frame document of their own (`/frame`, see renderHtml).

import { marked } from "{{marked.esm.js}}";
import hljs from "{{highlight.min.mjs}}";
import { sanitizedFragment } from "{{sanitize.js}}";

export { ready } from "{{sanitize.js}}";

let sanitizing = true;

/** Turns the sanitiser off, so that tests can show the CSP alone stops
 * script. Called only when `/config.json` carries `testHooks`, which only
 * a server built with the portal's `test-hooks` feature writes. */
export function disableSanitizerForTests() {
  sanitizing = false;
}

/** The page's Trusted Types policy. HTML enters the page as sanitised
 * nodes, never as a string: the policy passes a string only while the
 * sanitiser is off for tests, and refuses every string otherwise. */
const passUnsanitized = (html) => {
  if (sanitizing) throw new TypeError("HTML strings are not written into this page");
  return html;
};
const policy = globalThis.trustedTypes
  ? trustedTypes.createPolicy("planshare", { createHTML: passUnsanitized })
  : { createHTML: passUnsanitized };

/** marked's options: GitHub-flavoured, synchronous. */
const MARKED = { gfm: true, async: false };

const ALERTS = { NOTE: "Note", TIP: "Tip", IMPORTANT: "Important", WARNING: "Warning", CAUTION: "Caution" };

/** GitHub alerts: a blockquote whose text starts with `[!NOTE]` (or TIP,
 * IMPORTANT, WARNING, CAUTION) becomes a titled callout. Works on the
 * sanitised DOM, with text nodes only. */
export function renderAlerts(root) {
  for (const quote of root.querySelectorAll("blockquote")) {
    const first = quote.firstElementChild;
    const lead = first?.firstChild;
    if (!first || first.tagName !== "P" || !lead || lead.nodeType !== Node.TEXT_NODE) continue;
    const match = /^\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*/.exec(lead.data);
    if (!match) continue;
    lead.data = lead.data.slice(match[0].length);
    const kind = match[1].toLowerCase();
    quote.classList.add("alert", `alert-${kind}`);
    const title = document.createElement("p");
    title.className = "alert-title";
    title.textContent = ALERTS[match[1]];
    quote.prepend(title);
  }
}

/** Task-list checkboxes come from marked bare (disabled, no label): each
 * is named by its item's own text, nested lists left out, so assistive
 * technology says which task it marks. Only an attribute is added; the
 * plan's text stays as it is. */
export function labelTasks(root) {
  for (const box of root.querySelectorAll("li input[type=checkbox]")) {
    const holder = box.parentElement;
    const text = [...holder.childNodes]
      .filter((node) => node !== box && !(node.nodeName === "UL" || node.nodeName === "OL"))
      .map((node) => node.textContent)
      .join("")
      .replace(/\s+/g, " ")
      .trim();
    box.setAttribute("aria-label", text || "Task");
  }
}

/** Code blocks longer than this stay plain (highlighting is linear but
 * not free). */
const MAX_HIGHLIGHT = 200_000;

/** One token of highlight.js's output: an opening span with its classes,
 * a closing span, or text (escaped). */
const TOKEN = /<span class="([\w\- ]{1,200})">|<\/span>|[^<]+/y;
/** The five characters highlight.js escapes, as it escapes them. */
const ESCAPED = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'" };

/** highlight.js's markup as DOM nodes, built without parsing HTML: its
 * output is escaped text inside `<span class="…">` tokens and nothing
 * else, so only spans with a class and text nodes come out. Anything else
 * gives null, and the caller sanitises the markup instead. Parsing and
 * sanitising each block's markup cost more than the highlighting. */
function tokenNodes(html) {
  const root = document.createDocumentFragment();
  const open = [root];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < html.length) {
    const match = TOKEN.exec(html);
    if (!match) return null;
    const parent = open[open.length - 1];
    if (match[1] !== undefined) {
      const span = document.createElement("span");
      span.className = match[1];
      parent.append(span);
      open.push(span);
    } else if (match[0] === "</span>") {
      if (open.length === 1) return null;
      open.pop();
    } else {
      parent.append(match[0].replace(/&(?:amp|lt|gt|quot|#x27);/g, (e) => ESCAPED[e]));
    }
  }
  return open.length === 1 ? root : null;
}

/** Highlights every `pre > code` whose `language-xxx` class names a
 * language of the bundled highlight.js (or one of its aliases); blocks
 * without a language, or with another one, stay as they are (no
 * auto-detection: slow, and often wrong). The code's text stays exactly
 * the same — only `<span class>` tokens are added — so annotations are
 * still found in it. */
export function renderCode(root) {
  for (const code of root.querySelectorAll("pre > code[class*='language-']")) {
    const name = /(?:^|\s)language-([A-Za-z0-9+#.-]{1,40})(?:\s|$)/.exec(code.className)?.[1];
    const language = name && hljs.getLanguage(name.toLowerCase()) ? name.toLowerCase() : null;
    const text = code.textContent;
    if (!language || text.length > MAX_HIGHLIGHT) continue;
    let html;
    try {
      html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    } catch {
      continue;
    }
    code.replaceChildren(tokenNodes(html) ?? sanitizedFragment(html));
    // Whatever the sanitiser or the grammar did, the text must not change.
    if (code.textContent !== text) {
      code.textContent = text;
      continue;
    }
    code.classList.add("hljs");
  }
}

/** The frame document raw-HTML plans are shown in (served by the portal,
 * with a CSP of its own: inline styles and data: images, no network, no
 * script but its loader). */
const FRAME_URL = "/frame";
const FRAME_MIN = 320;
const FRAME_MAX = 40_000;

/** The frame currently showing a raw-HTML plan, its document and whether
 * that was handed over (once: a later "ready" is ignored). */
let current = null;

addEventListener("message", (event) => {
  const frame = current?.frame;
  if (!frame || event.source !== frame.contentWindow || !frame.isConnected) return;
  const message = event.data;
  if (message === "planshare-frame-ready" && !current.sent) {
    current.sent = true;
    // The frame's origin is opaque ("null"), so no target origin can name
    // it; the message goes to that window only.
    event.source.postMessage({ type: "planshare-frame-html", html: current.html }, "*");
  } else if (message?.type === "planshare-frame-height" && Number.isFinite(message.height)) {
    const height = Math.min(FRAME_MAX, Math.max(FRAME_MIN, Math.ceil(message.height)));
    frame.style.height = `${height}px`;
  }
});

/** Shows a raw-HTML plan in `root` inside an iframe sandboxed with scripts
 * only: no same origin (so an opaque origin: no access to this page, its
 * storage, cookies or the link's key), no forms, popups, modals or top
 * navigation. The frame loads `/frame`, whose own CSP lets the plan's
 * inline CSS apply while blocking all network access and every script but
 * the loader; the loader takes the HTML from this page (postMessage),
 * parses it inert, drops scripts, handlers and refreshes, shows it, and
 * reports its height so the frame fits the document. */
export function renderHtml(root, html) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.className = "html-plan";
  frame.title = "Shared HTML plan";
  Object.assign(frame.style, {
    display: "block",
    width: "100%",
    height: "80vh",
    border: "1px solid color-mix(in srgb, currentColor 20%, transparent)",
    borderRadius: ".4rem",
    background: "#fff",
  });
  current = { frame, html, sent: false };
  frame.src = FRAME_URL;
  root.replaceChildren(frame);
}

/** Renders `markdown` into `root`. */
export function render(root, markdown) {
  current = null;
  if (sanitizing) {
    root.replaceChildren(sanitizedFragment(marked.parse(markdown, MARKED)));
  } else {
    root.innerHTML = policy.createHTML(marked.parse(markdown, MARKED));
  }
  renderAlerts(root);
  labelTasks(root);
  renderCode(root);
}
