// planshare portal: opens a share link in the browser. Hash links
// (`/#<payload>`) and short links (`/p/<id>#key=…[&paste=…]`) are decoded
// here — base64url, raw DEFLATE (DecompressionStream), AES-GCM (WebCrypto) —
// so the key in the fragment never leaves the page. Formats: shared/WIRE.md
// §3–§5. The plan's markdown is rendered by marked and sanitised by
// DOMPurify before it reaches the page through the one Trusted Types policy;
// everything else untrusted (annotations, authors, image names) is put into
// the page as text.

import { marked } from "{{marked.esm.js}}";
import DOMPurify from "{{purify.es.mjs}}";

const HASH_ERROR = "Failed to load shared plan — the URL may have been truncated by your browser.";
const SHORT_ERROR = "Failed to load shared plan — the link may be expired or incomplete.";
/** Largest inflated payload accepted (a decompression bomb stops here). */
const MAX_INFLATED = 64 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 10_000;

/** Upstream's fragment classifier: is `/#…` a share payload or an anchor? */
export function isSharePayload(fragment) {
  const text = fragment.replace(/^#/, "").split("?")[0];
  return text.length >= 30 && /^[A-Za-z0-9_-]+$/.test(text) && /[A-Z]/.test(text);
}

/** base64url (or standard base64) → bytes, with atob's forgiving rules. */
export function base64UrlToBytes(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Raw-inflates `bytes` to text, refusing more than MAX_INFLATED bytes. */
export async function inflate(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  const reader = stream.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > MAX_INFLATED) {
      await reader.cancel();
      throw new Error("the shared plan is too large to open");
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(await new Blob(chunks).arrayBuffer());
}

/** The payload object inside a compressed base64url string. */
export async function decodePayload(text) {
  const payload = JSON.parse(await inflate(base64UrlToBytes(text)));
  if (payload === null || typeof payload !== "object" || !Array.isArray(payload.a)) {
    throw new Error("not a share payload");
  }
  return payload;
}

/** AES-GCM: `IV(12) ‖ ciphertext ‖ tag` (base64url) with a raw key (base64url). */
export async function decrypt(cipherText, keyText) {
  const data = base64UrlToBytes(cipherText);
  const key = await crypto.subtle.importKey("raw", base64UrlToBytes(keyText), "AES-GCM", false, ["decrypt"]);
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: data.slice(0, 12) }, key, data.slice(12));
  return new TextDecoder().decode(plain);
}

/** A tuple of `a` as an annotation (upstream `fromShareable`). */
export function annotationFromTuple(item, index, payload) {
  const letter = item[0];
  const type = { D: "DELETION", C: "COMMENT", G: "GLOBAL_COMMENT" }[letter];
  let originalText = "", text, author, images;
  if (letter === "G") {
    [, text, author, images] = item;
  } else if (letter === "D") {
    [, originalText, author, images] = item;
  } else {
    [, originalText, text, author, images] = item;
  }
  return {
    id: `shared-${index}`,
    type,
    originalText: originalText ?? "",
    text: text || undefined,
    author: author || undefined,
    images: Array.isArray(images) && images.length ? images.map(imageOf) : undefined,
    isQuickLabel: letter === "C" && item.length > 5 && item[5] === 1,
    diffContext: (payload.d && payload.d[index]) || undefined,
    source: (payload.s && payload.s[index]) || undefined,
  };
}

/** `[path, name]` or a bare path (old form) → `{path, name}`. */
function imageOf(image) {
  if (Array.isArray(image)) return { path: String(image[0]), name: String(image[1]) };
  const last = String(image).split("/").pop();
  const dot = last.lastIndexOf(".");
  const name = dot > 0 ? last.slice(0, dot) : dot === 0 ? "" : last;
  return { path: String(image), name: name || "image" };
}

async function loadConfig() {
  const response = await fetch("/config.json", { cache: "no-cache" });
  if (!response.ok) throw new Error(`config.json: HTTP ${response.status}`);
  return response.json();
}

/** The paste API a short link may be read from, or null when not allowed. */
function pasteApi(param, config) {
  const own = config.pasteApiUrl || location.origin;
  if (!param) return own;
  let url;
  try {
    url = atob(param.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return null;
  }
  const allowed = [own, ...(config.allowedPasteApis || [])].map((u) => new URL(u, location.href).origin);
  try {
    return allowed.includes(new URL(url).origin) ? url : null;
  } catch {
    return null;
  }
}

async function loadShort(id, fragment, config) {
  const params = new URLSearchParams(fragment.replace(/^#/, ""));
  const api = pasteApi(params.get("paste"), config);
  if (!api) throw new Error("this link names a paste service this portal does not use");
  const response = await fetch(`${api.replace(/\/+$/, "")}/api/paste/${id}`, {
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    referrerPolicy: "no-referrer",
    credentials: "omit",
  });
  if (!response.ok) throw new Error(`paste: HTTP ${response.status}`);
  const { data } = await response.json();
  const key = params.get("key");
  return decodePayload(key ? await decrypt(data, key) : data);
}

/** The only way HTML enters the page: marked's output, sanitised. */
const policy = globalThis.trustedTypes
  ? trustedTypes.createPolicy("planshare", { createHTML: (html) => DOMPurify.sanitize(html) })
  : { createHTML: (html) => DOMPurify.sanitize(html) };

/** The plan's markdown as sanitised HTML (GitHub-flavoured). */
export function renderPlan(markdown) {
  return policy.createHTML(marked.parse(markdown, { gfm: true, async: false }));
}

/** The text nodes of `root` and where each starts in their concatenation. */
function textIndex(root) {
  const nodes = [];
  let text = "";
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    nodes.push({ node, start: text.length });
    text += node.data;
  }
  return { nodes, text };
}

/** `text` with whitespace runs as one space and trimmed, and for each of
 * its characters the index of the original one. */
function normalise(text) {
  let out = "";
  const map = [];
  let space = false;
  for (let i = 0; i < text.length; i++) {
    if (/\s/.test(text[i])) {
      space = out.length > 0;
    } else {
      if (space) {
        out += " ";
        map.push(i - 1);
        space = false;
      }
      out += text[i];
      map.push(i);
    }
  }
  return { out, map };
}

/** Where `needle` is in the indexed text: the first text node holding it
 * whole, else the first occurrence across nodes, else the first occurrence
 * with whitespace normalised on both sides (upstream's order). */
export function findRange(index, needle) {
  if (!needle) return null;
  for (const { node, start } of index.nodes) {
    const at = node.data.indexOf(needle);
    if (at >= 0) return [start + at, start + at + needle.length];
  }
  const across = index.text.indexOf(needle);
  if (across >= 0) return [across, across + needle.length];
  const hay = normalise(index.text);
  const pin = normalise(needle).out;
  const at = pin ? hay.out.indexOf(pin) : -1;
  return at >= 0 ? [hay.map[at], hay.map[at + pin.length - 1] + 1] : null;
}

/** Wraps the text in `[from, to)` in `<mark>`s bound to `annotation`. */
function wrap(index, [from, to], annotation) {
  const marks = [];
  for (const { node, start } of index.nodes) {
    const end = start + node.data.length;
    if (end <= from || start >= to) continue;
    const a = Math.max(from, start) - start;
    const b = Math.min(to, end) - start;
    if (a === b) continue;
    if (b < node.data.length) node.splitText(b);
    const target = a > 0 ? node.splitText(a) : node;
    const mark = document.createElement("mark");
    mark.className = `annotation-highlight ${annotation.type === "DELETION" ? "deletion" : "comment"}`;
    mark.dataset.bindId = annotation.id;
    target.parentNode.insertBefore(mark, target);
    mark.appendChild(target);
    marks.push(mark);
  }
  return marks;
}

/** Re-finds each annotation in the rendered plan and highlights it; returns
 * the ids that were placed. Global comments and diff annotations are not
 * placed; an annotation whose text is not found stays listed. */
function highlight(plan, annotations) {
  const placed = new Set();
  for (const annotation of annotations) {
    if (annotation.type === "GLOBAL_COMMENT" || annotation.diffContext) continue;
    const index = textIndex(plan);
    const range = findRange(index, annotation.originalText);
    if (!range) {
      console.warn(`annotation ${annotation.id}: its text is not in the plan`);
      continue;
    }
    if (wrap(index, range, annotation).length) placed.add(annotation.id);
  }
  return placed;
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

function show(payload) {
  const plan = document.getElementById("plan");
  plan.innerHTML = renderPlan(payload.p ?? "");
  renderAlerts(plan);
  const annotations = payload.a.map((item, i) => annotationFromTuple(item, i, payload));
  const list = document.getElementById("annotation-list");
  list.replaceChildren(
    ...annotations.map((a) => {
      const li = document.createElement("li");
      li.dataset.annotationId = a.id;
      const quote = document.createElement("q");
      quote.textContent = a.originalText;
      const text = document.createElement("p");
      text.textContent = a.text ?? "";
      const meta = document.createElement("div");
      meta.className = "meta";
      meta.textContent = [a.type ?? "UNKNOWN", a.author].filter(Boolean).join(" · ");
      li.append(meta);
      if (a.originalText) li.append(quote);
      li.append(text);
      if (a.type !== "GLOBAL_COMMENT" && !a.diffContext) {
        li.tabIndex = 0;
        const go = () =>
          plan.querySelector(`mark[data-bind-id="${a.id}"]`)?.scrollIntoView({ block: "center" });
        li.addEventListener("click", go);
        li.addEventListener("keydown", (e) => e.key === "Enter" && go());
      }
      for (const image of a.images ?? []) {
        const img = document.createElement("div");
        img.className = "meta";
        img.textContent = `${image.name} — ${image.path}`;
        li.append(img);
      }
      return li;
    }),
  );
  const placed = highlight(plan, annotations);
  for (const li of list.children) {
    const id = li.dataset.annotationId;
    const annotation = annotations.find((a) => a.id === id);
    const placeable = annotation.type !== "GLOBAL_COMMENT" && !annotation.diffContext;
    li.classList.toggle("not-found", placeable && !placed.has(id));
    if (placeable && !placed.has(id)) {
      const note = document.createElement("div");
      note.className = "meta";
      note.textContent = "not found in the plan";
      li.append(note);
    }
  }
  document.getElementById("annotations").hidden = annotations.length === 0;
  document.getElementById("status").textContent =
    `${annotations.length} annotation${annotations.length === 1 ? "" : "s"}`;
}

function fail(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = false;
  document.getElementById("status").textContent = "";
}

async function main() {
  const short = /^\/p\/([A-Za-z0-9]{6,16})$/.exec(location.pathname);
  const fragment = location.hash;
  if (short) {
    try {
      show(await loadShort(short[1], fragment, await loadConfig()));
    } catch {
      fail(SHORT_ERROR);
      return;
    }
    history.replaceState(null, "", "/");
    return;
  }
  if (!isSharePayload(fragment)) {
    document.getElementById("status").textContent = "Open a share link to see a plan.";
    return;
  }
  try {
    show(await decodePayload(fragment.replace(/^#/, "").split("?")[0]));
  } catch {
    fail(HASH_ERROR);
    return;
  }
  history.replaceState(null, "", location.pathname);
}

main();
