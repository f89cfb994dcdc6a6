// The one sanitising policy for HTML that comes from a plan, with two
// engines that apply it alike:
//
// - the browser's own sanitizer (the Sanitizer API: `setHTML` with a
//   sanitizer), where it has one. It always drops script, frames, plug-ins,
//   event handlers and `javascript:` URLs; the rules below go on top.
//   Native, so a 200 KB plan is sanitised in ~15 ms instead of DOMPurify's
//   ~60 (loadtests/JOURNAL.md).
// - DOMPurify elsewhere, configured to the same rules, loaded only in a
//   browser without a sanitizer of its own (`ready` says when it is).
//
// The rules: HTML only (inline SVG and MathML are dropped: a plan has no
// need of them, and their attribute sets are large); no forms, and nothing
// that acts on the document (`base`, `link`, `meta`, `noscript`, …); only
// the attributes DOMPurify allows by default (plus `aria-*` and `data-*`);
// every attribute that may hold a URL holds an http(s), mailto, tel or
// relative one (a `data:image/…` source on an image); no `id` or `name`
// that would shadow a property of `document` or of a form ("DOM
// clobbering"), and no `id` of the page's own elements. Nothing is serialised and parsed again: both engines hand
// over nodes.
//
// Both parse the plan's HTML inert, in a document of a hidden frame that
// may not run scripts (`inertDocument`). A document of the page's own
// window is not inert enough: Chromium weighs every event-handler
// attribute it parses against the page's CSP (a violation report for the
// plan's `onerror`), in `Document.parseHTML`, `DOMParser` and
// `createHTMLDocument` documents alike, before any sanitizer runs. In a
// window without scripts, markup never meets script at all.

/** Elements removed with their content, beyond what the browser's
 * sanitizer always removes. */
const REMOVED_ELEMENTS = [
  "form", "base", "link", "meta", "noscript", "noembed", "noframes", "title", "template",
  "xmp", "plaintext", "fencedframe",
];
const SVG = "http://www.w3.org/2000/svg";
const MATHML = "http://www.w3.org/1998/Math/MathML";

/** The HTML attributes DOMPurify allows by default; `aria-*` and `data-*`
 * are allowed besides. */
const ATTRIBUTES = new Set([
  "accept", "action", "align", "alt", "autocapitalize", "autocomplete", "autopictureinpicture", "autoplay",
  "background", "bgcolor", "border", "capture", "cellpadding", "cellspacing", "checked", "cite", "class",
  "clear", "color", "cols", "colspan", "controls", "controlslist", "coords", "crossorigin", "datetime",
  "decoding", "default", "dir", "disabled", "disablepictureinpicture", "disableremoteplayback", "download",
  "draggable", "enctype", "enterkeyhint", "face", "for", "headers", "height", "hidden", "high", "href",
  "hreflang", "id", "inputmode", "integrity", "ismap", "kind", "label", "lang", "list", "loading", "loop",
  "low", "max", "maxlength", "media", "method", "min", "minlength", "multiple", "muted", "name", "noshade",
  "novalidate", "nowrap", "open", "optimum", "pattern", "placeholder", "playsinline", "poster", "preload",
  "pubdate", "radiogroup", "readonly", "rel", "required", "rev", "reversed", "role", "rows", "rowspan",
  "spellcheck", "scope", "selected", "shape", "size", "sizes", "span", "srclang", "start", "src", "srcset",
  "step", "style", "summary", "tabindex", "title", "translate", "type", "usemap", "valign", "value", "width",
  "wrap",
]);
const ARIA_OR_DATA = /^(?:aria|data)-[-\w.\u00B7-\uFFFF]+$/;
/** ARIA 1.2's attributes (the browser's sanitizer takes no pattern). */
const ARIA = [
  "activedescendant", "atomic", "autocomplete", "braillelabel", "brailleroledescription", "busy", "checked",
  "colcount", "colindex", "colindextext", "colspan", "controls", "current", "describedby", "description",
  "details", "disabled", "dropeffect", "errormessage", "expanded", "flowto", "grabbed", "haspopup", "hidden",
  "invalid", "keyshortcuts", "label", "labelledby", "level", "live", "modal", "multiline", "multiselectable",
  "orientation", "owns", "placeholder", "posinset", "pressed", "readonly", "relevant", "required",
  "roledescription", "rowcount", "rowindex", "rowindextext", "rowspan", "selected", "setsize", "sort",
  "valuemax", "valuemin", "valuenow", "valuetext",
].map((name) => `aria-${name}`);

/** Attributes whose values are text, never a URL: not checked as URLs. */
const TEXT_ATTRIBUTES = new Set([
  "alt", "class", "for", "id", "label", "name", "pattern", "placeholder", "role", "summary", "title",
  "value", "style",
]);
/** What the browser ignores around and inside a URL's scheme. */
const URL_WHITESPACE = /[\u0000-\u0020\u00A0\u1680\u180E\u2000-\u2029\u205F\u3000]/g;
/** A URL with an allowed scheme, or one without a scheme (relative). */
const ALLOWED_URL = /^(?:(?:https?|mailto|tel):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i;
const IMAGE_DATA_URL = /^data:image\//i;

const formElement = document.createElement("form");

/** Whether `id` names an element of the page's own (outside the plan): a
 * plan's element with that id would stand in for it wherever the page
 * looks it up, the plan coming first in the document. */
function pageOwnId(id) {
  const holder = document.getElementById(id);
  return holder !== null && holder.closest("#plan") === null;
}

/** Whether attribute `name` with `value` may stay on `element`. */
function allowedAttribute(element, name, value) {
  if (!ATTRIBUTES.has(name) && !ARIA_OR_DATA.test(name)) return false;
  if ((name === "id" || name === "name") && (value in document || value in formElement)) return false;
  if (name === "id" && pageOwnId(value)) return false;
  if (TEXT_ATTRIBUTES.has(name) || ARIA_OR_DATA.test(name) || value === "") return true;
  const compact = value.replace(URL_WHITESPACE, "");
  if (ALLOWED_URL.test(compact)) return true;
  return name === "src" && element.localName === "img" && IMAGE_DATA_URL.test(compact);
}

/** The browser's sanitizer with the rules above, or null without one:
 * elements and attribute names are its job, attribute values are checked
 * after it (`checkValues`). */
const native = (() => {
  if (typeof Sanitizer !== "function" || typeof Element.prototype.setHTML !== "function") return null;
  try {
    return new Sanitizer({
      removeElements: [
        ...REMOVED_ELEMENTS,
        { name: "svg", namespace: SVG },
        { name: "math", namespace: MATHML },
      ],
      attributes: [...ATTRIBUTES, ...ARIA],
      dataAttributes: true,
      comments: false,
    });
  } catch {
    return null;
  }
})();

/** The hidden frame whose documents parse the plan's HTML (see the top):
 * sandboxed without `allow-scripts`, so nothing parsed in it is ever
 * script; same-origin, so the page can use its documents. Made at the
 * first use; about:blank, so it asks the network for nothing. */
let inertFrame = null;

/** The inert frame's window. */
function inertWindow() {
  if (inertFrame === null || !inertFrame.isConnected) {
    inertFrame = document.createElement("iframe");
    inertFrame.setAttribute("sandbox", "allow-same-origin");
    inertFrame.setAttribute("aria-hidden", "true");
    inertFrame.tabIndex = -1;
    inertFrame.hidden = true;
    document.body.append(inertFrame);
  }
  return inertFrame.contentWindow;
}

/** A fresh document in which parsed HTML is inert. */
function inertDocument() {
  return inertWindow().document.implementation.createHTMLDocument("");
}

/** The attributes whose values `allowedAttribute` may refuse. */
const CHECKED = new Set([...ATTRIBUTES].filter((name) => !TEXT_ATTRIBUTES.has(name) || name === "id" || name === "name"));

/** Drops the attributes under `root` whose values the rules refuse (their
 * names the browser's sanitizer already allowed). Each element's own
 * attributes are looked at: most of a plan's elements have none. */
function checkValues(root) {
  for (const element of root.getElementsByTagName("*")) {
    if (!element.hasAttributes()) continue;
    let refused = null;
    for (const { name, value } of element.attributes) {
      if (CHECKED.has(name) && !allowedAttribute(element, name, value)) (refused ??= []).push(name);
    }
    if (refused) for (const name of refused) element.removeAttribute(name);
  }
}

/** DOMPurify with the same rules (the attribute rules run in its hook),
 * once loaded. */
let purify = null;
const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: REMOVED_ELEMENTS,
  // With their content, as the browser's sanitizer removes them.
  ADD_FORBID_CONTENTS: REMOVED_ELEMENTS,
  RETURN_DOM_FRAGMENT: true,
};

/** Settles when the page can sanitise: at once with the browser's own
 * sanitizer, else once DOMPurify has loaded. */
export const ready = native !== null
  ? Promise.resolve()
  : import("{{purify.es.mjs}}").then(({ default: DOMPurify }) => {
    // An instance of the inert frame's window: it parses with that
    // window's DOMParser.
    const instance = DOMPurify(inertWindow());
    instance.addHook("uponSanitizeAttribute", (element, data) => {
      if (!allowedAttribute(element, data.attrName, data.attrValue)) data.keepAttr = false;
    });
    purify = instance;
  });

/** `html` parsed inert and sanitised, as a fragment of this document
 * (after `ready`). */
export function sanitizedFragment(html) {
  if (native === null) {
    if (purify === null) throw new Error("the sanitiser has not loaded yet");
    return purify.sanitize(html, PURIFY);
  }
  const inert = inertDocument();
  inert.body.setHTML(html, { sanitizer: native });
  checkValues(inert.body);
  const fragment = document.createDocumentFragment();
  fragment.append(...inert.body.childNodes);
  return fragment;
}
