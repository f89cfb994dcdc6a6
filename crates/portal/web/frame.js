// The loader of `/frame`, the document a raw-HTML plan is shown in (see
// plan-view.js `renderHtml` and src/frame.rs). It runs in an iframe sandboxed
// with scripts only — an opaque origin, no forms, popups or top
// navigation — under a CSP that allows this script, inline CSS and data:
// images and nothing else (no network at all). It asks the portal page
// for the HTML, parses it inert (DOMParser: scripts never run), removes
// what could run, load or navigate — scripts, event handlers,
// `javascript:` URLs, `<meta http-equiv>`, `<link>`, `<base>`, nested
// frames and plugins — shows the rest, keeps clicks on links from leaving
// the frame, and tells the page its height.
"use strict";
(() => {
  if (window.parent === window) return;
  const portal = location.origin;
  const policy = globalThis.trustedTypes
    ? trustedTypes.createPolicy("planshare-frame", { createHTML: (html) => html })
    : { createHTML: (html) => html };
  const REMOVED = "script, meta[http-equiv], link, base, iframe, frame, frameset, object, embed, applet, portal, fencedframe";
  const URL_ATTRIBUTES = ["href", "src", "action", "formaction", "xlink:href", "data"];

  function inert(doc) {
    for (const node of doc.querySelectorAll(REMOVED)) node.remove();
    // Scripts never run here, so what was meant for browsers without them shows.
    for (const node of doc.querySelectorAll("noscript")) node.replaceWith(...node.childNodes);
    for (const node of doc.querySelectorAll("*")) {
      for (const { name, value } of [...node.attributes]) {
        const lower = name.toLowerCase();
        const scheme = value.replace(/[\u0000-\u0020]+/g, "").toLowerCase();
        if (
          lower.startsWith("on") ||
          lower === "ping" ||
          lower === "srcdoc" ||
          (URL_ATTRIBUTES.includes(lower) && /^(javascript|vbscript):/.test(scheme))
        ) {
          node.removeAttribute(name);
        }
      }
    }
  }

  let reports = 0;
  let last = 0;
  /** The document's height: its scroll height when it overflows the
   * frame, else the height of its root box (the scroll height is never
   * less than the frame's, so the frame could not shrink). */
  function contentHeight() {
    const root = document.documentElement;
    return root.scrollHeight > root.clientHeight
      ? root.scrollHeight
      : Math.ceil(root.getBoundingClientRect().height);
  }

  function reportHeight() {
    const height = contentHeight();
    // A document as tall as its viewport plus a margin would grow the
    // frame without end: a few reports, then it scrolls.
    if (height === last || reports >= 20) return;
    last = height;
    reports++;
    parent.postMessage({ type: "planshare-frame-height", height }, portal);
  }

  function show(html) {
    const doc = new DOMParser().parseFromString(policy.createHTML(html), "text/html");
    inert(doc);
    document.replaceChild(document.adoptNode(doc.documentElement), document.documentElement);
    new ResizeObserver(reportHeight).observe(document.documentElement);
    reportHeight();
  }

  let shown = false;
  addEventListener("message", (event) => {
    const message = event.data;
    if (shown || event.source !== parent || event.origin !== portal) return;
    if (message?.type !== "planshare-frame-html" || typeof message.html !== "string") return;
    shown = true;
    show(message.html);
  });
  // Links inside the plan do not navigate the frame away (in-page
  // `#anchors` still work); the sandbox already stops new windows.
  addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("a[href], area[href]") : null;
    if (link && !link.getAttribute("href").startsWith("#")) event.preventDefault();
  }, true);
  parent.postMessage("planshare-frame-ready", portal);
})();
