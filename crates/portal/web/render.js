// The plan's markdown as HTML: marked (GitHub-flavoured) → DOMPurify →
// the page, through the one Trusted Types policy; then DOM-only passes
// (GitHub alerts) that touch text nodes and classes, never markup.

import { marked } from "{{marked.esm.js}}";
import DOMPurify from "{{purify.es.mjs}}";

let sanitizing = true;

/** Turns DOMPurify off, so that tests can show the CSP alone stops
 * script. Called only when `/config.json` carries `testHooks`, which only
 * a server built with the portal's `test-hooks` feature writes. */
export function disableSanitizerForTests() {
  sanitizing = false;
}

const sanitize = (html) => (sanitizing ? DOMPurify.sanitize(html) : html);

/** The only way HTML enters the page: sanitised by DOMPurify. */
const policy = globalThis.trustedTypes
  ? trustedTypes.createPolicy("planshare", { createHTML: sanitize })
  : { createHTML: sanitize };

/** The plan's markdown as sanitised HTML (GitHub-flavoured). */
export function renderPlan(markdown) {
  return policy.createHTML(marked.parse(markdown, { gfm: true, async: false }));
}

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

/** Raw HTML goes into the page only as a sandboxed frame's document. */
const framePolicy = globalThis.trustedTypes
  ? trustedTypes.createPolicy("planshare-frame", { createHTML: (html) => html })
  : { createHTML: (html) => html };

/** Shows a raw-HTML plan in `root` inside an iframe sandboxed without
 * scripts, same origin, forms, popups or top navigation. */
export function renderHtml(root, html) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "");
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.className = "html-plan";
  frame.title = "Shared HTML plan";
  frame.srcdoc = framePolicy.createHTML(html);
  root.replaceChildren(frame);
}

/** Renders `markdown` into `root`. */
export function render(root, markdown) {
  root.innerHTML = renderPlan(markdown);
  renderAlerts(root);
}
