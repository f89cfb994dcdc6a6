// planshare portal: opens a share link in the browser, lets a reviewer add
// annotations, and shares the result again. Hash links (`/#<payload>`) and
// short links (`/p/<id>#key=…[&paste=…]`) are decoded here, so the key in
// the fragment never leaves the page. The formats (payload JSON, deflate +
// base64url, AES-GCM short-link encryption) are those upstream's clients
// write; the README's "API" section and `crates/share-codec` describe them.
// Everything untrusted that is not the plan's markdown (annotations,
// authors, image names) enters the page as text only.

import {
  annotationFromTuple,
  decodePayload,
  decrypt,
  encodePayload,
  encrypt,
  imagesOf,
  isSharePayload,
  parseImport,
  payloadOf,
  shortUrl,
} from "{{codec.js}}";
import { clearHighlights, highlight, placeable } from "{{highlighter.js}}";
import { disableSanitizerForTests, ready as sanitizerReady, render, renderHtml } from "{{plan-view.js}}";
import { feedbackText } from "{{plandoc-export.js}}";
import { deleteLink, ownsLink, rememberLink } from "{{owned.js}}";
import { annotationHeading, kindLabel, stateLabel } from "{{words.js}}";
import { addShortcuts, listen as listenForShortcuts, showHelp } from "{{keys.js}}";
import { renderOutline } from "{{outline.js}}";
import { renderSteps } from "{{stepmeter.js}}";
import { callbackOf, sendCallback } from "{{callback.js}}";
import { draftKey, dropDraft, keepFragment, keptFragment, loadDraft, saveDraft } from "{{drafts.js}}";
import {
  REVIEW_PATH,
  ReviewClient,
  commentAnnotations,
  commentAttachments,
  openBlob,
  reviewLink,
  sealComments,
  startReview,
} from "{{review.js}}";
import { linkCard } from "{{linkcard.js}}";
import { showVersions } from "{{versions.js}}";

export * from "{{codec.js}}";
export * from "{{highlighter.js}}";
export * from "{{plandoc-anchor.js}}";
export * from "{{plandoc-blocks.js}}";
export * from "{{plandoc-export.js}}";
export * from "{{plandoc-render.js}}";
export * from "{{plandoc-text.js}}";

const HASH_ERROR = "Failed to load shared plan — the URL may have been truncated by your browser.";
const SHORT_ERROR = "Failed to load shared plan — the link may be expired or incomplete.";
const REVIEW_ERROR = "Failed to open the review.";
const IMPORT_SHORT_ERROR = "Failed to load from short URL — paste may have expired";
const FETCH_TIMEOUT_MS = 10_000;
const CREATE_TIMEOUT_MS = 5_000;
/** Hash links longer than this may be cut by messaging apps (upstream). */
const LONG_URL = 2048;
const AUTHOR_KEY = "planshare.author";

/** What is on the page: the plan (markdown or raw HTML), its annotations
 * and global attachments. */
const state = {
  plan: "", html: null, annotations: [], attachments: [], config: {}, next: 0, fromShort: false,
  /** Where this link's drafts are filed (drafts.js), and whether the
   * share page's annotations differ from the link's. */
  draftKey: null, changed: false,
};

/** The short link "Delete this link" acts on, `{ api, id }`: the one just
 * made in the share dialog, or the one this page was opened from when this
 * browser made it (it holds the delete token). */
const deletable = { shared: null, opened: null, pending: null };

const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function loadConfig() {
  try {
    const response = await fetch("/config.json", { cache: "no-cache" });
    if (response.ok) return await response.json();
  } catch {
    // No configuration: the page's own origin serves the paste API.
  }
  return {};
}

/** The paste API this portal writes to. */
function ownPasteApi() {
  return (state.config.pasteApiUrl || location.origin).replace(/\/+$/, "");
}

/** The paste API a short link may be read from, or null when not allowed. */
function pasteApiFor(param) {
  if (!param) return ownPasteApi();
  let url;
  try {
    url = atob(param.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return null;
  }
  const allowed = [ownPasteApi(), ...(state.config.allowedPasteApis || [])].map(
    (u) => new URL(u, location.href).origin,
  );
  try {
    return allowed.includes(new URL(url).origin) ? url : null;
  } catch {
    return null;
  }
}

/** An error that says what happened, under one of upstream's headlines. */
class LoadError extends Error {
  constructor(detail) {
    super(detail);
    this.detail = detail;
  }
}

/** The payload inside a hash or a decrypted paste, or a LoadError saying
 * which step failed. */
async function decodeOrExplain(text) {
  try {
    return await decodePayload(text);
  } catch (error) {
    if (error instanceof SyntaxError) throw new LoadError("The link's data is not a share payload.");
    if (error.name === "InvalidCharacterError") {
      throw new LoadError("The link's data is not valid base64url: it was probably cut off or changed.");
    }
    if (/too large/.test(error.message)) throw new LoadError("The shared plan is larger than this page opens (64 MiB).");
    if (/share payload/.test(error.message)) throw new LoadError("The link's data is not a share payload.");
    throw new LoadError("The link's compressed data ends early or is damaged: it was probably cut off.");
  }
}

/** The payload behind short link `id` with `#fragment`. */
async function loadShort(id, fragment) {
  const params = new URLSearchParams(fragment.replace(/^#/, ""));
  const api = pasteApiFor(params.get("paste"));
  if (!api) throw new LoadError("The link names a paste service this portal is not configured to read from.");
  const origin = new URL(api, location.href).origin;
  let response;
  try {
    response = await fetch(`${api.replace(/\/+$/, "")}/api/paste/${id}`, {
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      referrerPolicy: "no-referrer",
      credentials: "omit",
    });
  } catch (error) {
    throw new LoadError(
      error.name === "TimeoutError"
        ? `The paste service at ${origin} did not answer within ${FETCH_TIMEOUT_MS / 1000} s.`
        : `The paste service at ${origin} could not be reached.`,
    );
  }
  if (response.status === 404) throw new LoadError("This paste does not exist: it may have expired or been deleted.");
  if (response.status === 429 || response.status >= 500) {
    throw new LoadError(`The paste service at ${origin} is unavailable (HTTP ${response.status}); try again shortly.`);
  }
  if (!response.ok) throw new LoadError(`The paste service at ${origin} refused the request (HTTP ${response.status}).`);
  let data;
  try {
    ({ data } = await response.json());
  } catch {
    throw new LoadError(`The paste service at ${origin} sent an answer that is not a paste.`);
  }
  if (typeof data !== "string") throw new LoadError(`The paste service at ${origin} sent an answer that is not a paste.`);
  const key = params.get("key");
  if (!key) return decodeOrExplain(data);
  let plain;
  try {
    plain = await decrypt(data, key);
  } catch {
    throw new LoadError("The key in the link does not open this paste: the link may be incomplete or changed.");
  }
  return decodeOrExplain(plain);
}

function annotationsOf(payload) {
  return payload.a.map((item, i) => annotationFromTuple(item, i, payload));
}

function attachmentsOf(payload) {
  return imagesOf(payload.g) ?? [];
}

/** The reviewer's display name, kept in local storage; a generated
 * "tater" name until they set one (as upstream). */
function author() {
  let name = pageAuthor;
  try {
    name = localStorage.getItem(AUTHOR_KEY) || name;
  } catch {
    // Storage disabled: a name for this page only.
  }
  if (!name) {
    const pick = (words) => words[crypto.getRandomValues(new Uint32Array(1))[0] % words.length];
    name = `${pick(["swift", "calm", "bright", "quiet", "brave", "keen"])}-${pick(["falcon", "otter", "heron", "lynx", "badger", "wren"])}-tater`;
    setAuthor(name);
  }
  return name;
}

let pageAuthor = null;

/** A name the person chose (not a generated one), or "". A review binds
 * the name of the first send for good, so it asks rather than guesses. */
function chosenAuthor() {
  const name = author();
  return /^[a-z]+-[a-z]+-tater$/.test(name) ? "" : name;
}

function setAuthor(name) {
  pageAuthor = name;
  try {
    localStorage.setItem(AUTHOR_KEY, name);
  } catch {
    // Storage disabled: the name lasts for this page.
  }
}

/** Renders the plan and its annotations from `state`. */
function show() {
  const plan = $("plan");
  if (state.html !== null) {
    renderHtml(plan, state.html);
  } else {
    render(plan, state.plan);
  }
  performance.mark("planshare:rendered");
  $("editor").hidden = false;
  const heading = plan.querySelector("h1, h2")?.textContent.trim();
  const what = review.view ? "review" : "shared plan";
  document.title = heading ? `${heading.slice(0, 80)} — planshare ${what}` : `planshare — ${what}`;
  refresh();
  if (state.html === null) renderOutline($("outline"), $("outline-list"), plan);
  renderSteps(state.html === null ? state.plan : "");
}

/** Redraws the highlights and the annotation list. */
function refresh() {
  const plan = $("plan");
  clearHighlights(plan);
  const none = new Set();
  const found =
    state.html === null
      ? highlight(plan, state.annotations, { plan: state.plan })
      : { placed: none, notSearched: none, unshown: none };
  if (review.view) colourByAuthor(plan);
  const list = $("annotation-list");
  list.replaceChildren(...state.annotations.map((a) => annotationItem(a, found)));
  const files = $("attachment-list");
  files.replaceChildren(
    ...state.attachments.map((image) => el("li", "meta", `${image.name} — ${image.path}`)),
  );
  $("attachments").hidden = state.attachments.length === 0;
  const n = state.annotations.length;
  $("status").textContent = `${n} annotation${n === 1 ? "" : "s"}`;
}

/** A colour (hue) per author name, the same on every page. */
function hueOf(name) {
  let hue = 0;
  for (const c of name) hue = (hue * 31 + c.codePointAt(0)) % 360;
  return hue;
}

/** Tints each review comment's highlight with its author's colour. */
function colourByAuthor(plan) {
  const byId = new Map(state.annotations.map((a) => [a.id, a]));
  for (const mark of plan.querySelectorAll("mark[data-bind-id]")) {
    const a = byId.get(mark.dataset.bindId);
    if (!a?.author || a.type === "DELETION") continue;
    mark.classList.add("by-author");
    mark.style.setProperty("--author-hue", String(hueOf(a.author)));
  }
}

/** One annotation of the side list; `found` is what the highlighter
 * reported (`placed`, `notSearched`, `unshown` sets of annotation ids). */
function annotationItem(a, { placed, notSearched, unshown }) {
  const li = el("li");
  li.dataset.annotationId = a.id;
  if (review.view && a.author) {
    li.classList.add("by-author");
    li.style.setProperty("--author-hue", String(hueOf(a.author)));
  }
  const tags = [];
  if (review.view && a.version && a.version < review.view.latest) tags.push(`on v${a.version}`);
  if (review.view && a.own && a.draft) tags.push("not sent");
  li.append(el("div", "meta", [annotationHeading(a), ...tags].join(" · ")));
  if (a.originalText) li.append(el("q", null, a.originalText));
  if (a.text) li.append(el("p", null, a.text));
  for (const image of a.images ?? []) li.append(el("div", "meta", `${image.name} — ${image.path}`));
  if (placeable(a) && state.html === null) {
    if (placed.has(a.id)) {
      li.tabIndex = 0;
      const go = () => $("plan").querySelector(`mark[data-bind-id="${CSS.escape(a.id)}"]`)?.scrollIntoView({ block: "center" });
      li.addEventListener("click", (e) => e.target.tagName !== "BUTTON" && go());
      li.addEventListener("keydown", (e) => e.key === "Enter" && e.target === li && go());
    } else {
      li.classList.add("not-found");
      li.append(el("div", "meta", notSearched.has(a.id)
        ? "not searched: the plan is too large to look for every annotation"
        : unshown?.has(a.id)
          ? "in the plan's text, but on a part the page shows as no text"
          : "not found in the plan"));
    }
  }
  if (review.view && (!a.own || review.ended || review.view.state !== "open")) return li;
  const what = `${kindLabel(a).toLowerCase()}: ${a.originalText || a.text || ""}`.replace(/: $/, "");
  const tools = el("div", "item-tools");
  if (a.type === "COMMENT" || a.type === "GLOBAL_COMMENT") {
    const edit = el("button", "link", "Edit");
    edit.type = "button";
    edit.setAttribute("aria-label", `Edit ${what}`);
    edit.addEventListener("click", () => openComment(a.originalText ?? "", a));
    tools.append(edit);
  }
  const drop = el("button", "link remove", "Remove");
  drop.type = "button";
  drop.setAttribute("aria-label", `Remove ${what}`);
  drop.addEventListener("click", () => remove(a));
  tools.append(drop);
  li.append(tools);
  return li;
}

function addAnnotation(type, originalText, text) {
  state.annotations.push({
    id: `local-${state.next++}`,
    type,
    originalText,
    text: text || undefined,
    author: review.view ? review.view.you.name ?? ($("author").value.trim() || "you") : author(),
    ...(review.view ? { own: true, draft: true, version: review.view.latest } : {}),
  });
  if (review.view) markDirty();
  else state.changed = true;
  refresh();
  saveWork();
}

/** Moves the focus to the next (`step` 1) or previous (-1) listed
 * annotation that is highlighted in the plan, and scrolls to it. */
function stepAnnotation(step) {
  const items = [...$("annotation-list").querySelectorAll("li[tabindex]")];
  if (!items.length) return;
  const at = items.indexOf(document.activeElement);
  const next = at < 0 ? (step > 0 ? 0 : items.length - 1) : (at + step + items.length) % items.length;
  items[next].focus();
  items[next].click();
}

// --- Selecting text → comment or deletion ---------------------------------

/** The selected text inside the plan, or "". */
function selectedText() {
  const selection = getSelection();
  if (!selection || selection.isCollapsed || !selection.rangeCount) return "";
  const range = selection.getRangeAt(0);
  if (!$("plan").contains(range.commonAncestorContainer)) return "";
  return selection.toString().trim();
}

let pending = "";

function onSelection() {
  const tools = $("selection-tools");
  const closed = review.view !== null && (review.ended !== null || review.view.state !== "open");
  const text = state.html === null && !closed ? selectedText() : "";
  if (!text) {
    if (!tools.contains(document.activeElement)) tools.hidden = true;
    return;
  }
  pending = text;
  const rect = getSelection().getRangeAt(0).getBoundingClientRect();
  tools.style.top = `${scrollY + rect.bottom + 6}px`;
  tools.style.left = `${Math.max(8, scrollX + rect.left)}px`;
  tools.hidden = false;
}

/** The annotation the comment dialog edits, or null when it adds one. */
let editing = null;

function openComment(originalText, edit = null) {
  pending = originalText;
  editing = edit;
  $("comment-title").textContent = edit ? "Edit comment" : "Comment";
  $("comment-save").textContent = edit ? "Save" : "Add comment";
  $("comment-quote").textContent = originalText;
  $("comment-quote").hidden = !originalText;
  $("comment-text").value = edit?.text ?? "";
  $("comment-dialog").showModal();
  $("comment-text").focus();
}

/** Marks this page's annotations changed (a review's as unsent). */
function changed() {
  if (review.view) markDirty();
  else state.changed = true;
  refresh();
  saveWork();
}

/** The annotation last removed, which "Undo" puts back (once). */
let removed = null;

function remove(a) {
  const at = state.annotations.indexOf(a);
  if (at < 0) return;
  state.annotations.splice(at, 1);
  removed = { a, at };
  $("undo-text").textContent = `${kindLabel(a)} removed${review.view && !a.draft ? " (withdrawn once you send)" : ""}.`;
  $("undo").hidden = false;
  changed();
}

function undoRemove() {
  if (!removed) return;
  const { a, at } = removed;
  removed = null;
  $("undo").hidden = true;
  if (review.view && (review.ended || review.view.state !== "open")) return;
  // Taken back after its withdrawal was sent, it is to be sent again.
  if (review.view) a.draft = true;
  state.annotations.splice(Math.min(at, state.annotations.length), 0, a);
  changed();
}

// --- Share ----------------------------------------------------------------

function shareBase() {
  return (state.config.shareBaseUrl || location.origin).replace(/\/+$/, "");
}

function currentPayload() {
  if (state.html !== null) {
    return { ...payloadOf("", state.annotations, state.attachments), h: state.html, r: "html" };
  }
  return payloadOf(state.plan, state.annotations, state.attachments);
}

/** Stores the current review as an encrypted paste and returns its link,
 * its paste `{ api, id }`, and whether this browser kept its delete token. */
async function createShortLink() {
  const compressed = await encodePayload(currentPayload());
  const { key, data } = await encrypt(compressed);
  const api = ownPasteApi();
  let response;
  try {
    response = await fetch(`${api}/api/paste`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ data }),
      signal: AbortSignal.timeout(CREATE_TIMEOUT_MS),
      referrerPolicy: "no-referrer",
      credentials: "omit",
    });
  } catch {
    throw new Error("Short URL service unavailable");
  }
  if (response.status === 413) {
    const body = await response.json().catch(() => ({}));
    throw new Error(typeof body.error === "string" ? body.error : "Share payload is too large");
  }
  if (!response.ok) throw new Error("Short URL service unavailable");
  const { id, deleteToken, expiresAt } = await response.json();
  if (typeof id !== "string" || !/^[A-Za-z0-9]{6,16}$/.test(id)) throw new Error("Short URL service unavailable");
  // An upstream paste service sends no token: such a link cannot be taken back.
  const kept = typeof deleteToken === "string" && rememberLink(api, id, deleteToken, expiresAt);
  return { url: shortUrl(shareBase(), id, key, api), paste: { api, id }, kept, token: typeof deleteToken === "string" };
}

async function openShare() {
  const link = $("share-link");
  const short = $("share-short");
  const note = $("share-note");
  note.textContent = "";
  $("share-delete").hidden = true;
  deletable.shared = null;
  // On a live review, Share makes a copy as it is now; the review itself
  // is joined through a reviewer link of its own.
  $("share-title").textContent = review.view ? "Share a copy of this plan" : "Share this review";
  const copyNote = $("share-copy-note");
  copyNote.hidden = !review.view;
  copyNote.textContent = review.view?.you.role === "owner"
    ? "This link is a copy of the plan and its comments as they are now: it does not follow the review. To bring someone into the live review, give them a reviewer link of their own (Reviewer links)."
    : "This link is a copy of the plan and its comments as they are now: it does not follow the review. To bring someone into the live review, ask the review's owner for a reviewer link.";
  $("share-dialog").showModal();
  if (state.html !== null) {
    // Raw HTML has no hash form: it is always shared as a short link.
    link.value = "";
    short.hidden = false;
    note.textContent = "An HTML plan is shared as a short link.";
    return;
  }
  link.value = `${shareBase()}/#${await encodePayload(currentPayload())}`;
  // Offered for long links (upstream's threshold) and to a reviewer who
  // came from a short link, who will expect one back.
  const long = link.value.length > LONG_URL;
  short.hidden = !long && !state.fromShort;
  if (long) note.textContent = "This URL may be too long for some messaging apps.";
  link.select();
}

async function makeShort() {
  const note = $("share-note");
  note.textContent = "Creating a short link…";
  try {
    const made = await createShortLink();
    $("share-link").value = made.url;
    note.textContent = "Short link created: the key stays in the link, the paste service only sees ciphertext.";
    if (made.kept) {
      deletable.shared = made.paste;
      $("share-delete").hidden = false;
      note.textContent += " This browser keeps its delete token, so you can delete the link later.";
    } else if (made.token) {
      note.textContent += " This browser does not allow the page to keep its delete token, so it cannot be deleted later.";
    }
  } catch (error) {
    note.textContent = error.message;
  }
  $("share-link").select();
}

// --- Delete a link this browser made -------------------------------------

function askDelete(paste) {
  deletable.pending = paste;
  $("delete-note").textContent = "";
  $("delete-confirm").hidden = false;
  $("delete-cancel").textContent = "Cancel";
  $("delete-dialog").showModal();
}

async function confirmDelete() {
  const paste = deletable.pending;
  if (!paste) return;
  const note = $("delete-note");
  note.textContent = "Deleting…";
  $("delete-confirm").disabled = true;
  const outcome = await deleteLink(paste.api, paste.id);
  $("delete-confirm").disabled = false;
  note.textContent = outcome.message;
  if (!outcome.deleted) return;
  $("delete-confirm").hidden = true;
  $("delete-cancel").textContent = "Done";
  for (const key of ["shared", "opened"]) {
    if (deletable[key]?.id === paste.id && deletable[key]?.api === paste.api) deletable[key] = null;
  }
  $("share-delete").hidden = deletable.shared === null;
  $("delete-link").hidden = deletable.opened === null;
  if (deletable.opened === null) $("status").textContent = outcome.message;
}

// --- Import ---------------------------------------------------------------

/** Merges `payload`'s annotations and attachments into the page (upstream
 * dedupe: same originalText, type and text; attachments by path). */
function merge(payload) {
  const incoming = annotationsOf(payload);
  let added = 0;
  for (const a of incoming) {
    const seen = state.annotations.some(
      (b) => b.originalText === a.originalText && b.type === a.type && b.text === a.text,
    );
    if (seen) continue;
    state.annotations.push({ ...a, id: `import-${state.next++}` });
    state.changed = true;
    added++;
  }
  for (const image of attachmentsOf(payload)) {
    if (!state.attachments.some((b) => b.path === image.path)) state.attachments.push(image);
  }
  refresh();
  saveWork();
  return { added, total: incoming.length };
}

function planTitle(payload) {
  if (payload.r === "html" && typeof payload.h === "string") {
    return new DOMParser().parseFromString(payload.h, "text/html").title || "Unknown Plan";
  }
  const line = String(payload.p ?? "").split("\n").find((l) => l.startsWith("#"));
  return line ? line.replace(/^#+\s*/, "") : "Unknown Plan";
}

async function runImport() {
  const note = $("import-note");
  let source;
  try {
    source = parseImport($("import-link").value);
  } catch (error) {
    note.textContent = error.message;
    return;
  }
  let payload;
  if (source.short) {
    try {
      payload = await loadShort(source.short.id, source.short.fragment);
    } catch {
      note.textContent = IMPORT_SHORT_ERROR;
      return;
    }
  } else {
    try {
      payload = await decodePayload(source.hash);
    } catch {
      note.textContent = HASH_ERROR;
      return;
    }
  }
  if (!payload.a.length) {
    note.textContent = "No annotations found in share link";
    return;
  }
  const { added, total } = merge(payload);
  const skipped = total - added;
  note.textContent = `Imported ${added} annotation${added === 1 ? "" : "s"} from "${planTitle(payload)}"${skipped ? ` (${skipped} already here)` : ""}.`;
}

// --- Copy feedback --------------------------------------------------------

function openFeedback() {
  const text = feedbackText(state.html !== null ? "" : state.plan, state.annotations, state.attachments);
  $("feedback-text").value = text;
  $("feedback-dialog").showModal();
  $("feedback-text").select();
  navigator.clipboard?.writeText(text).then(
    () => ($("feedback-note").textContent = "Copied to the clipboard."),
    () => ($("feedback-note").textContent = "Select the text and copy it."),
  );
}

// --- Bot callback (Approve / Send feedback) -------------------------------

/** The link's callback (`cb`/`ct`), read before the address is cleaned. */
let callback = null;

/** The link that reports this page's annotations back: a hash link of
 * the plan as it is now, or — for an HTML plan or a page opened from a
 * short link — a new encrypted short link, as the reviewer would share it. */
async function annotatedUrl() {
  if (state.html === null && !state.fromShort) return `${shareBase()}/#${await encodePayload(currentPayload())}`;
  return (await createShortLink()).url;
}

function showCallback() {
  if (!callback) return;
  $("callback").hidden = false;
  $("callback-note").textContent = callback.problem ?? "A bot shared this plan and waits for your answer.";
  $("cb-approve").disabled = callback.problem !== null;
  $("cb-feedback").disabled = callback.problem !== null;
}

async function answerCallback(action) {
  if (!callback || callback.problem || $("cb-approve").disabled) return;
  const note = $("callback-note");
  $("cb-approve").disabled = true;
  $("cb-feedback").disabled = true;
  note.textContent = action === "approve" ? "Approving…" : "Sending feedback…";
  let outcome;
  try {
    outcome = await sendCallback(callback, action, await annotatedUrl());
  } catch (error) {
    outcome = { ok: false, message: error.message };
  }
  note.textContent = outcome.message;
  // Answered: the bot has the verdict. Failed: the person may try again.
  $("cb-approve").disabled = outcome.ok;
  $("cb-feedback").disabled = outcome.ok;
}

// --- Live reviews (/r/<id>#key=…&t=…) --------------------------------------

/** The review this page shows: its client, key, the last view of it, a
 * change waiting to be shown, and why it ended (revoked, closed). */
const review = {
  client: null, api: null, key: null, view: null, waiting: null, ended: null, dirty: false, stop: new AbortController(),
  /** The newest review `seq` this page has seen (a read or its own
   * send): an older read is never painted over a newer state. */
  knownSeq: 0,
  /** The revision of this writer's own set that the page's sent comments
   * are (0: none): the `base` of the next send, which the server refuses
   * when the set changed since (another tab or device of the link). */
  ownSeq: 0,
  /** The keys of the comments in that revision, to tell which of them the
   * person removed here when a send has to be merged with a newer set. */
  ownBase: [],
  /** Each version's plan fetched so far, by number (promises). */
  plans: new Map(),
  /** The latest version's payload as last opened: `{ n, opened }`
   * (versions never change, so a comment needs no new fetch of it). */
  latest: null,
};

/** The plan of a version payload: the markdown, or an HTML plan's
 * document (what the version's digest is of). */
function htmlOf(payload) {
  return payload.r === "html" && typeof payload.h === "string" && payload.h !== "" ? payload.h : null;
}

/** Version `n`'s plan, fetched and opened once. */
function planOf(n) {
  if (!review.plans.has(n)) {
    const opened = review.client.version(n).then(async (version) => {
      const payload = await openBlob(version.data, review.key).catch(() => {
        throw new Error(`The key in the link does not open version ${n}.`);
      });
      return htmlOf(payload) ?? String(payload.p ?? "");
    });
    opened.catch(() => review.plans.delete(n));
    review.plans.set(n, opened);
  }
  return review.plans.get(n);
}

/** Version `n`'s payload, fetched and opened once for as long as it is
 * the latest. */
function latestPayload(n) {
  if (review.latest?.n !== n) {
    const opened = review.client.version(n).then((version) => openBlob(version.data, review.key).catch(() => {
      throw new LoadError("The key in the link does not open this review's plan: the link may be incomplete or changed.");
    }));
    review.latest = { n, opened };
    opened.catch(() => {
      if (review.latest?.opened === opened) review.latest = null;
    });
  }
  return review.latest.opened;
}

/** The review's latest plan and every comment set, opened with the key. */
async function readReview() {
  const view = await review.client.view();
  const payload = await latestPayload(view.latest);
  const annotations = annotationsOf(payload).map((a) => ({ ...a, id: `plan-${a.id}`, version: view.latest }));
  const attachments = attachmentsOf(payload);
  const sets = await Promise.all(view.comments.map((set) => openBlob(set.data, review.key).catch(() => null)));
  for (const [i, set] of view.comments.entries()) {
    const opened = sets[i];
    if (!opened) continue; // Not sealed with this review's key: nothing a reader can show.
    annotations.push(...commentAnnotations(set, opened, set.writer === view.you.link));
    for (const image of commentAttachments(opened)) {
      if (!attachments.some((b) => b.path === image.path)) attachments.push(image);
    }
  }
  const html = htmlOf(payload);
  review.plans.set(view.latest, Promise.resolve(html ?? String(payload.p ?? "")));
  return { view, plan: html === null ? String(payload.p ?? "") : "", html, annotations, attachments };
}

/** What identifies a comment of this writer across reads (ids are made
 * anew on each read). */
function commentKey(a) {
  return JSON.stringify([a.type, a.originalText ?? "", a.text ?? ""]);
}

/** This writer's own set in `view`: its revision (0: none). */
function ownSeqOf(view) {
  return view.comments.find((c) => c.writer === view.you.link)?.seq ?? 0;
}

/** Takes the own comments of `read` as what the page's sent comments are. */
function adoptOwn(read) {
  review.ownSeq = ownSeqOf(read.view);
  review.ownBase = read.annotations.filter((a) => a.own).map(commentKey);
}

/** Shows a read of the review: the plan, the others' comments, and this
 * writer's own — kept as they are on the page while they have unsent
 * changes. A read older than what the page already showed or sent is
 * dropped (a newer one follows). */
function applyReview(read) {
  if (read.view.seq < review.knownSeq) return;
  review.knownSeq = read.view.seq;
  // Whatever a news bar announced is on the page now.
  review.waiting = null;
  $("review-news").hidden = true;
  const planChanged = read.plan !== state.plan || read.html !== state.html;
  review.view = read.view;
  if (!review.dirty) adoptOwn(read);
  const own = review.dirty ? state.annotations.filter((a) => a.own) : [];
  state.plan = read.plan;
  state.html = read.html;
  state.annotations = [...read.annotations.filter((a) => !(review.dirty && a.own)), ...own];
  state.attachments = read.attachments;
  if (planChanged) show();
  else refresh();
  showReviewState();
}

function markDirty() {
  review.dirty = true;
  // "Sent: 3 annotations." no longer describes the page.
  if (/^Sent: /.test($("review-note").textContent)) $("review-note").textContent = "";
  showReviewState();
}

/** Who decided `view`'s review, as a sentence's subject. */
function decider(view) {
  if (view.you.role === "owner") return "You";
  const name = view.decision?.by?.name ?? view.comments.find((c) => c.writer === "owner")?.name;
  return name ? `The owner, ${name},` : "The owner";
}

/** The decision in a sentence: "The owner, Olivia, requested changes." */
function decisionSentence(view) {
  const verb = view.state === "approved" ? "approved this plan" : "requested changes";
  return `${decider(view)} ${verb}`;
}

function showReviewState() {
  const view = review.view;
  $("review-bar").hidden = false;
  const typed = $("author").value.trim();
  const open = view.state === "open" && !review.ended;
  const role = view.you.role === "owner"
    ? "You own this review"
    : view.you.name
      ? `You review as ${view.you.name}`
      : !open
        ? "You were asked to review"
        : typed
          ? `You review as ${typed} (your name is fixed when you first send)`
          : "Type your name to review";
  $("review-hint").hidden = !(open && !state.annotations.some((a) => a.own));
  const writers = new Set(view.comments.map((c) => c.name)).size;
  const decided = view.decision ? `${decisionSentence(view)}.` : null;
  $("review-state").textContent = review.ended
    ?? `${decided ?? stateLabel(view.state)} · v${view.latest} · ${writers} commenter${writers === 1 ? "" : "s"} · ${role}`;
  showDecision();
  $("review-versions").textContent = `Versions (${view.versions.length})`;
  // Offered only while there is something unsent.
  $("review-send").hidden = !(open && review.dirty);
  $("review-send").disabled = false;
  if (view.you.name) {
    $("author").value = view.you.name;
    $("author").disabled = true;
    $("author").title = "Your name on this review is bound to your link.";
  }
  for (const id of ["global-comment", "selection-tools"]) if (!open) $(id).hidden = true;
  $("global-comment").hidden = !open;
  $("owner-tools").hidden = !(open && view.you.role === "owner");
}

/** The decision shown above the plan, with who made it, when, and its
 * text (decrypted here; the server never sees it). Shown once per
 * decision; a later read of the same decision changes nothing. */
async function showDecision() {
  const view = review.view;
  const box = $("review-decision");
  const decision = view.decision;
  if (!decision) {
    box.hidden = true;
    review.decisionShown = null;
    return;
  }
  const shown = `${decision.decision}:${decision.decidedAt}:${view.you.role}`;
  if (review.decisionShown === shown) return;
  review.decisionShown = shown;
  box.className = `decision ${decision.decision === "approved" ? "approved" : "changes"}`;
  const when = new Date(decision.decidedAt).toLocaleString();
  $("decision-head").textContent = `${decisionSentence(view)} on ${when}${decision.data ? ":" : "."}`;
  const text = $("decision-text");
  text.replaceChildren();
  box.hidden = false;
  if (!decision.data) return;
  let items;
  try {
    const opened = await openBlob(decision.data, review.key);
    items = Array.isArray(opened?.a) ? opened.a.map((item, i) => annotationFromTuple(item, i, opened)) : [];
  } catch {
    text.append(el("p", "meta", "The decision's text could not be opened with this link's key."));
    return;
  }
  if (review.decisionShown !== shown) return;
  const notes = items.filter((a) => a.type === "GLOBAL_COMMENT" && a.text);
  const anchored = items.filter((a) => a.type !== "GLOBAL_COMMENT");
  for (const a of notes) text.append(el("p", "decision-note", a.text));
  if (anchored.length) {
    const list = el("ul", "decision-items");
    for (const a of anchored) {
      const li = el("li");
      li.append(el("q", null, a.originalText ?? ""));
      li.append(document.createTextNode(a.type === "DELETION" ? " — remove this" : ` — ${a.text ?? ""}`));
      list.append(li);
    }
    text.append(list);
  }
  if (!notes.length && !anchored.length) text.append(el("p", "meta", "No text came with the decision."));
}

// --- The owner: reviewer links and the decision ---------------------------

function linkItem(link) {
  const li = el("li");
  li.append(el("span", "who", link.name ? `${link.name}` : "not used yet"));
  li.append(el("span", "meta", `${link.id} · made ${new Date(link.createdAt).toLocaleString()}`));
  const revoke = el("button", "link", "Revoke");
  revoke.type = "button";
  revoke.setAttribute("aria-label", `Revoke the link ${link.name ? `of ${link.name}` : link.id}`);
  revoke.addEventListener("click", async () => {
    $("links-note").textContent = "Revoking…";
    try {
      await review.client.revokeLink(link.id);
      review.view = await review.client.view();
      $("links-note").textContent = `Revoked: ${link.name ?? link.id} can no longer open the review.`;
      showLinks();
    } catch (error) {
      $("links-note").textContent = error.message;
    }
  });
  li.append(revoke);
  return li;
}

function showLinks() {
  const links = review.view.links ?? [];
  $("links-list").replaceChildren(...links.map(linkItem));
  if (!links.length) $("links-list").append(el("li", "meta", "No live reviewer links."));
}

function openLinks() {
  $("links-note").textContent = "";
  $("new-link").hidden = true;
  $("new-link").replaceChildren();
  showLinks();
  $("links-dialog").showModal();
}

const REVIEWER_HINT = "For one person: they choose their name when they first comment. Send each reviewer a link of their own.";

async function addReviewerLink() {
  const note = $("links-note");
  note.textContent = "Making a link…";
  try {
    const made = await review.client.addLink();
    const link = reviewLink(shareBase(), review.view.id, review.key, made.token, review.api, location.origin);
    $("new-link").replaceChildren(linkCard("New reviewer link", link, REVIEWER_HINT));
    $("new-link").hidden = false;
    note.textContent = "Copy this link now and send it to one reviewer: it is not shown again.";
    review.view = await review.client.view();
    showLinks();
  } catch (error) {
    note.textContent = error.message;
  }
}

// --- Starting a review from a share page ----------------------------------

/** The review started from this page, once there is one: its client and
 * how many reviewer links were made. */
const started = { client: null, reviewers: 0 };

function openStart() {
  if (!started.client) {
    $("start-note").textContent = "";
    $("start-go").disabled = false;
  }
  $("start-dialog").showModal();
}

async function addStartedLink() {
  const made = await started.client.addLink();
  started.reviewers += 1;
  const { id, key, api } = started;
  const url = reviewLink(shareBase(), id, key, made.token, api, location.origin);
  $("start-links").append(linkCard(`Reviewer link ${started.reviewers}`, url, REVIEWER_HINT));
}

/** Starts a review of the plan as it is on this page (with its
 * annotations), then shows the owner link and a first reviewer link. */
async function beginReview() {
  const note = $("start-note");
  $("start-go").disabled = true;
  note.textContent = "Starting the review…";
  const api = ownPasteApi();
  let made;
  try {
    made = await startReview(api, currentPayload(), state.html ?? state.plan);
  } catch (error) {
    note.textContent = error.message;
    $("start-go").disabled = false;
    return;
  }
  Object.assign(started, { client: new ReviewClient(api, made.id, made.ownerToken), id: made.id, key: made.key, api });
  const owner = reviewLink(shareBase(), made.id, made.key, made.ownerToken, api, location.origin);
  $("start-intro").hidden = true;
  $("start-go").hidden = true;
  $("start-close").textContent = "Close";
  $("start-links").append(linkCard(
    "Owner link",
    owner,
    "Yours to keep: it is shown only now, and it is the only way back to the review as its owner, to see every comment, add reviewer links and decide.",
  ));
  $("start-open").href = owner;
  $("start-open").hidden = false;
  const ends = typeof made.expiresAt === "number" ? ` It expires on ${new Date(made.expiresAt).toLocaleString()}.` : "";
  try {
    await addStartedLink();
    note.textContent = `The review is started.${ends}`;
  } catch (error) {
    note.textContent = `The review is started, but no reviewer link could be made: ${error.message} "Add a reviewer link" tries again.${ends}`;
  }
  $("start-add").hidden = false;
}

async function addStartLink() {
  const note = $("start-note");
  note.textContent = "Making a link…";
  try {
    await addStartedLink();
    note.textContent = "Copy this link now and send it to one reviewer: it is not shown again.";
  } catch (error) {
    note.textContent = error.message;
  }
}

/** The owner's own comments (sent or not) and an optional text, as the
 * decision's feedback; undefined when there is none. */
async function feedbackData(text) {
  const own = state.annotations.filter((a) => a.own).map(plainAnnotation);
  if (text) own.push({ type: "GLOBAL_COMMENT", originalText: "", text, author: review.view.you.name ?? ($("author").value.trim() || "the owner") });
  return own.length ? sealComments(review.key, review.view.latest, own) : undefined;
}

async function decide(decision, text) {
  const data = await feedbackData(text);
  await review.client.decide(decision, data);
  review.view = await review.client.view();
  review.dirty = false;
  saveWork();
  showReviewState();
}

async function approve() {
  const note = $("review-note");
  note.textContent = "Approving…";
  try {
    await decide("approved");
    note.textContent = "Approved.";
  } catch (error) {
    note.textContent = error.message;
  }
}

/** Stores `own` as this writer's set on the revision the page's sent
 * comments are; answers the new revision (0: withdrawn). */
async function storeOwn(name, own) {
  if (own.length === 0) {
    await review.client.withdraw(review.ownSeq);
    return 0;
  }
  const data = await sealComments(review.key, review.view.latest, own);
  const stored = await review.client.putComments(name, review.view.latest, data, review.ownSeq);
  review.view.you.name = name;
  review.knownSeq = Math.max(review.knownSeq, stored.seq ?? 0);
  return stored.seq ?? 0;
}

/** This writer's set changed since the page read it (another tab or
 * device of the link sent): what to send instead — the newest set, less
 * what the person removed here, plus what they added or edited here —
 * painted on the page with everyone else's newest comments. */
async function mergeOwn() {
  const read = await readReview();
  const here = state.annotations.filter((a) => a.own);
  const kept = new Set(here.filter((a) => !a.draft).map(commentKey));
  const base = new Set(review.ownBase);
  const seen = new Set();
  const merged = [];
  const theirs = read.annotations.filter((a) => a.own && !(base.has(commentKey(a)) && !kept.has(commentKey(a))));
  for (const a of [...theirs, ...here.filter((a) => a.draft)]) {
    if (seen.has(commentKey(a))) continue;
    seen.add(commentKey(a));
    merged.push(a);
  }
  adoptOwn(read);
  review.knownSeq = Math.max(review.knownSeq, read.view.seq);
  review.view = read.view;
  state.annotations = [...read.annotations.filter((a) => !a.own), ...merged];
  return merged;
}

async function sendComments() {
  const note = $("review-note");
  let own = state.annotations.filter((a) => a.own);
  const name = review.view.you.name ?? $("author").value.trim();
  if (!name) {
    note.textContent = "Type your name first (next to the tools at the top): it is shown with your comments and stays with this link once you send.";
    $("author").focus();
    return;
  }
  $("review-send").disabled = true;
  note.textContent = "Sending…";
  let merged = false;
  try {
    let seq;
    try {
      seq = await storeOwn(name, own);
    } catch (error) {
      if (error.code !== "comments-changed") throw error;
      // Never replace a newer set with this page's older view of it.
      own = await mergeOwn();
      merged = true;
      seq = await storeOwn(name, own);
    }
    for (const a of own) {
      a.draft = false;
      a.version = review.view.latest;
    }
    review.ownSeq = seq;
    review.ownBase = own.map(commentKey);
    review.dirty = false;
    saveWork();
    // Show what others sent meanwhile: the news bar, if any, is answered.
    review.waiting = null;
    $("review-news").hidden = true;
    try {
      applyReview(await readReview());
    } catch {
      // The event loop reads again on the next change.
    }
    const sent = own.length ? `Sent: ${own.length} annotation${own.length === 1 ? "" : "s"}.` : "Your comments are withdrawn.";
    note.textContent = merged ? `${sent} Your comments had changed in another tab or on another device: both are kept.` : sent;
  } catch (error) {
    note.textContent = error.code === "comments-changed"
      ? "Your comments changed in another tab or on another device while you sent: check them here and send again."
      : error.message;
  }
  refresh();
  showReviewState();
}

/** What `events` mean, in a few words ("bob commented"), leaving out this
 * writer's own. */
function newsOf(events) {
  const you = review.view.you.link;
  const news = [];
  for (const { event, data } of events) {
    if (event === "comments" && data.writer !== you) news.push(`${data.name} ${data.withdrawn ? "withdrew their comments" : "commented"}`);
    else if (event === "version") news.push(`v${data.n} pushed`);
    else if (event === "decision") news.push(data.decision === "approved" ? "the plan was approved" : "changes were requested");
  }
  return news;
}

/** Changes not yet seen while the tab was in the background. */
let unseen = 0;

/** Makes others' changes visible as they arrive: a short note in the
 * review bar, and the count in the tab's title while it is hidden. */
function announce(news) {
  if (!news.length) return;
  const live = $("review-live");
  live.textContent = `${news.join(", ")}.`.replace(/^./, (c) => c.toUpperCase());
  live.hidden = false;
  clearTimeout(announce.timer);
  announce.timer = setTimeout(() => {
    live.hidden = true;
  }, 8000);
  if (document.hidden) {
    unseen += news.length;
    document.title = `(${unseen}) ${document.title.replace(/^\(\d+\) /, "")}`;
  }
}

document.addEventListener("visibilitychange", () => {
  if (document.hidden || !unseen) return;
  unseen = 0;
  document.title = document.title.replace(/^\(\d+\) /, "");
});

/** Whether something of this person's is open or unsent, which a change
 * must not be painted over. */
function drafting() {
  return review.dirty || $("comment-dialog").open;
}

async function onReviewEvents(events) {
  const you = review.view.you.link;
  for (const { event, data } of events) {
    if (event === "revoked" && data.link === you) {
      review.ended = "Your link to this review was revoked: the plan stays readable here, but you can no longer comment.";
    } else if (event === "closed") {
      review.ended = data.reason === "expired"
        ? "This review has expired: the plan stays readable on this page until you leave it."
        : "The owner deleted this review: the plan stays readable on this page until you leave it.";
    }
  }
  if (review.ended) {
    review.stop.abort();
    showReviewState();
    return;
  }
  const read = await readReview();
  // The decision is shown at once, drafts or not (no more comments).
  if (events.some((e) => e.event === "decision")) {
    review.view = { ...review.view, state: read.view.state, decision: read.view.decision };
    showReviewState();
  }
  const news = newsOf(events);
  announce(news);
  if (drafting() && news.length) {
    review.waiting = read;
    $("review-news-text").textContent = news.join(", ");
    $("review-news").hidden = false;
    return;
  }
  applyReview(read);
}

/** Follows the review's events (JSON long poll) until it ends. */
async function followReview() {
  let after = review.view.seq;
  let backoff = 500;
  while (!review.ended) {
    let page;
    try {
      page = await review.client.events(after, review.stop.signal);
      backoff = 500;
      // Back in touch: a note about the lost connection is over.
      if (review.lost) {
        review.lost = false;
        const note = $("review-note");
        if (note.dataset.lost === "1" || /could not be reached|unavailable|did not answer/.test(note.textContent)) {
          note.textContent = "";
        }
        delete note.dataset.lost;
      }
    } catch (error) {
      if (review.stop.signal.aborted) return;
      if (error.status === 404) {
        await onReviewEvents([{ event: "closed", data: { reason: "deleted" } }]);
        return;
      }
      if (!review.lost && backoff >= 2000) {
        review.lost = true;
        const note = $("review-note");
        note.textContent = "The connection to the review service is lost; trying again… (your comments stay on this page)";
        note.dataset.lost = "1";
      }
      await new Promise((resolve) => setTimeout(resolve, backoff));
      backoff = Math.min(backoff * 2, 10_000);
      continue;
    }
    after = page.seq;
    if (page.events.length) {
      try {
        await onReviewEvents(page.events);
      } catch (error) {
        $("review-note").textContent = error.message;
      }
    }
  }
}

async function openReview(id, fragment) {
  review.api = null;
  const params = new URLSearchParams(fragment.replace(/^#/, ""));
  const key = params.get("key");
  const token = params.get("t");
  if (!key || !token) throw new LoadError("The review link lacks its key or its token (…#key=…&t=…): open the whole link you were given.");
  const api = pasteApiFor(params.get("paste"));
  if (!api) throw new LoadError("The link names a review service this portal is not configured to reach.");
  review.client = new ReviewClient(api, id, token);
  review.api = api;
  review.key = key;
  let read;
  try {
    read = await readReview();
  } catch (error) {
    throw error instanceof LoadError ? error : new LoadError(error.message);
  }
  performance.mark("planshare:decoded");
  review.view = read.view;
  review.knownSeq = read.view.seq;
  adoptOwn(read);
  // Ask for a name rather than offer a generated one that would stick.
  $("author").value = read.view.you.name ?? chosenAuthor();
  $("author").placeholder = "Your name";
  state.plan = read.plan;
  state.html = read.html;
  state.annotations = read.annotations;
  state.attachments = read.attachments;
  for (const id of ["import", "delete-link", "start-review"]) $(id).hidden = true;
  $("share").textContent = "Share a copy";
  show();
  performance.mark("planshare:highlighted");
  markPainted();
  showReviewState();
  followReview();
}

// --- Drafts that survive a reload -----------------------------------------

/** What of an annotation a draft keeps (no ids: they are made anew). */
function plainAnnotation(a) {
  const { type, originalText, text, author, images, isQuickLabel, diffContext, source } = a;
  return { type, originalText, text, author, images, isQuickLabel, diffContext, source };
}

/** Files this page's unsaved work under its link's draft: a share page's
 * annotations once changed, a review page's unsent comments, and the
 * comment being typed. Nothing to keep: the draft is dropped. */
function saveWork() {
  if (!state.draftKey) return;
  const typing = $("comment-dialog").open && $("comment-text").value !== ""
    ? { quote: pending, text: $("comment-text").value }
    : null;
  let annotations = null;
  if (review.view) {
    if (review.dirty) annotations = state.annotations.filter((a) => a.own).map(plainAnnotation);
  } else if (state.changed) {
    annotations = state.annotations.map(plainAnnotation);
  }
  if (annotations === null && typing === null) {
    dropDraft(state.draftKey);
    return;
  }
  saveDraft(state.draftKey, { annotations, typing });
}

/** Files drafts under `identity` from now on, and brings back what was
 * filed there before a reload. */
async function restoreWork(identity) {
  try {
    state.draftKey = await draftKey(identity);
  } catch {
    return;
  }
  const draft = loadDraft(state.draftKey);
  if (!draft) return;
  if (Array.isArray(draft.annotations)) {
    const restored = draft.annotations
      .filter((a) => a && typeof a === "object")
      .map((a) => ({ ...a, id: `draft-${state.next++}` }));
    if (review.view) {
      for (const a of restored) Object.assign(a, { own: true, draft: true, version: review.view.latest });
      state.annotations = [...state.annotations.filter((a) => !a.own), ...restored];
      review.dirty = true;
      showReviewState();
    } else {
      state.annotations = restored;
      state.changed = true;
    }
    refresh();
    $("status").textContent += " · your unsaved annotations were restored";
  }
  if (draft.typing && typeof draft.typing.text === "string") {
    openComment(typeof draft.typing.quote === "string" ? draft.typing.quote : "");
    $("comment-text").value = draft.typing.text;
  }
}

/** This tab's link for a reload: the address as opened, when the page
 * was reloaded and the address bar no longer has its fragment. */
function reopened() {
  const navigation = performance.getEntriesByType("navigation")[0];
  if (location.hash || navigation?.type !== "reload") return null;
  try {
    const kept = JSON.parse(keptFragment(location.pathname) || "null");
    return kept && typeof kept.path === "string" && typeof kept.hash === "string" ? kept : null;
  } catch {
    return null;
  }
}

// --- Loading --------------------------------------------------------------

/** Shows upstream's headline for a failed load, and what happened. */
function fail(message, error) {
  const box = $("error");
  box.textContent = message;
  // Nothing to edit or review on an error page.
  $("editor").hidden = true;
  $("review-bar").hidden = true;
  document.title = "planshare — link not opened";
  if (error instanceof LoadError) {
    const detail = el("p", "detail", error.detail);
    detail.id = "error-detail";
    box.after(detail);
  } else if (error) {
    console.error(error);
  }
  box.hidden = false;
  $("status").textContent = "";
}

/** Marks the end of the first frame painted after the highlights
 * (loadtests `portal` reads it beside `planshare:highlighted`). */
function markPainted() {
  requestAnimationFrame(() => setTimeout(() => performance.mark("planshare:painted")));
}

function accept(payload) {
  performance.mark("planshare:decoded");
  // An HTML share needs a document: `r:"html"` with an empty `h` is
  // markdown (as the CLI reads it).
  const html = payload.r === "html" && typeof payload.h === "string" && payload.h !== "" ? payload.h : null;
  state.html = html;
  state.plan = html === null ? String(payload.p ?? "") : "";
  state.annotations = annotationsOf(payload);
  state.attachments = attachmentsOf(payload);
  show();
  // Navigation → decoded → rendered → every annotation placed (loadtests
  // `portal` reads these marks).
  performance.mark("planshare:highlighted");
  markPainted();
}

function wire() {
  document.addEventListener("selectionchange", onSelection);
  $("add-comment").addEventListener("click", () => {
    $("selection-tools").hidden = true;
    openComment(pending);
  });
  $("add-deletion").addEventListener("click", () => {
    $("selection-tools").hidden = true;
    addAnnotation("DELETION", pending);
    getSelection()?.removeAllRanges();
  });
  $("global-comment").addEventListener("click", () => openComment(""));
  $("comment-form").addEventListener("submit", (e) => {
    if (e.submitter?.value !== "save") return;
    const text = $("comment-text").value.trim();
    if (!text) {
      e.preventDefault();
      return;
    }
    if (editing) {
      const edited = editing;
      editing = null;
      if (edited.text !== text) {
        edited.text = text;
        if (review.view) edited.draft = true;
        changed();
      }
      return;
    }
    addAnnotation(pending ? "COMMENT" : "GLOBAL_COMMENT", pending, text);
    getSelection()?.removeAllRanges();
  });
  // Keep the selection while a toolbar button is pressed.
  $("selection-tools").addEventListener("mousedown", (e) => e.preventDefault());
  $("author").addEventListener("input", (e) => {
    const name = e.target.value.trim();
    if (name) setAuthor(name);
    if (review.view) showReviewState();
  });
  $("share").addEventListener("click", openShare);
  $("share-short").addEventListener("click", makeShort);
  $("share-delete").addEventListener("click", () => askDelete(deletable.shared));
  $("delete-link").addEventListener("click", () => askDelete(deletable.opened));
  $("delete-confirm").addEventListener("click", confirmDelete);
  $("import").addEventListener("click", () => {
    $("import-note").textContent = "";
    $("import-link").value = "";
    $("import-dialog").showModal();
  });
  $("import-form").addEventListener("submit", (e) => {
    if (e.submitter?.value !== "import") return;
    e.preventDefault();
    runImport();
  });
  $("copy-feedback").addEventListener("click", openFeedback);
  $("author").value = author();
  wireShortcuts();
}

function wireShortcuts() {
  const shown = () => !$("editor").hidden;
  const markdown = () => shown() && state.html === null;
  addShortcuts(
    { keys: ["n", "j"], label: "Next annotation", run: () => stepAnnotation(1), available: markdown },
    { keys: ["p", "k"], label: "Previous annotation", run: () => stepAnnotation(-1), available: markdown },
    {
      keys: ["c"],
      label: "Comment on the selected text",
      run: () => {
        const text = selectedText();
        if (!text) {
          $("status").textContent = "Select some text of the plan first, then press c.";
          return;
        }
        $("selection-tools").hidden = true;
        openComment(text);
      },
      available: markdown,
    },
    { keys: ["g"], label: "Comment on the plan", run: () => openComment(""), available: shown },
    { keys: ["?"], label: "Show these shortcuts", run: () => showHelp($("help-dialog"), $("help-list")) },
  );
  addShortcuts({
    keys: ["a"],
    label: "Approve (the review, or tell the bot that shared this plan)",
    run: () => (review.view ? approve() : answerCallback("approve")),
    available: () => (review.view
      ? review.view.you.role === "owner" && !$("owner-tools").hidden
      : callback !== null && callback.problem === null && !$("callback").hidden),
  });
  $("help").addEventListener("click", () => showHelp($("help-dialog"), $("help-list")));
  $("cb-approve").addEventListener("click", () => answerCallback("approve"));
  $("review-send").addEventListener("click", sendComments);
  $("review-links").addEventListener("click", openLinks);
  $("links-add").addEventListener("click", addReviewerLink);
  $("undo-button").addEventListener("click", undoRemove);
  $("review-versions").addEventListener("click", () => showVersions(review.view, planOf));
  $("start-review").addEventListener("click", openStart);
  $("start-go").addEventListener("click", beginReview);
  $("start-add").addEventListener("click", addStartLink);
  $("review-approve").addEventListener("click", approve);
  $("review-changes").addEventListener("click", () => {
    $("decide-note").textContent = "";
    $("decide-text").value = "";
    $("decide-dialog").showModal();
  });
  $("decide-form").addEventListener("submit", async (e) => {
    if (e.submitter?.value !== "send") return;
    e.preventDefault();
    $("decide-note").textContent = "Sending…";
    try {
      await decide("changes_requested", $("decide-text").value.trim());
      $("decide-dialog").close();
      $("review-note").textContent = "Changes requested.";
    } catch (error) {
      $("decide-note").textContent = error.message;
    }
  });
  $("comment-text").addEventListener("input", saveWork);
  $("comment-dialog").addEventListener("close", saveWork);
  $("review-news-show").addEventListener("click", async () => {
    // What the bar announced may be older than this page's own sends: read
    // the newest state rather than a kept snapshot. The bar goes once it
    // is shown.
    $("review-news-show").disabled = true;
    try {
      applyReview(await readReview());
    } catch (error) {
      $("review-note").textContent = error.message;
    }
    review.waiting = null;
    $("review-news").hidden = true;
    $("review-news-show").disabled = false;
  });
  $("cb-feedback").addEventListener("click", () => answerCallback("feedback"));
  listenForShortcuts();
}

/** Why this page cannot open encrypted links at all, when it cannot:
 * browsers give WebCrypto only to HTTPS pages and to localhost. */
function insecureOrigin() {
  if (window.isSecureContext && crypto.subtle) return null;
  const https = `https://${location.host}${location.pathname}`;
  return new LoadError(
    `This page was opened over plain HTTP from another machine (${location.origin}). Browsers let a page decrypt only over HTTPS or on localhost, so the plan cannot be opened here — the link itself is fine. To fix it, serve planshare over HTTPS (the server's [server] tls_cert and tls_key settings, or a reverse proxy with a certificate) and open the link as ${https}#…; or open it on the machine that runs the server as http://localhost:${location.port || "80"}${location.pathname}#….`,
  );
}

/** Whether `hash` is a link's fragment (a plan, a key or a token) rather
 * than an anchor within the page. */
function isLinkFragment(hash) {
  if (isSharePayload(hash)) return true;
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  return params.has("key") || params.has("t");
}

async function main() {
  wire();
  // A link pasted into the address bar of an open page changes only the
  // fragment (no new page load): open it as if it had been loaded, drafts
  // first saved under the old link.
  window.addEventListener("hashchange", () => {
    if (!isLinkFragment(location.hash)) return;
    saveWork();
    review.stop.abort();
    location.reload();
  });
  const opened = reopened() ?? { path: location.pathname, search: location.search, hash: location.hash };
  const configured = loadConfig();
  // A hash link needs nothing of the configuration to be decoded: its
  // payload inflates while the configuration loads.
  const hashPayload = opened.path === "/" && isSharePayload(opened.hash)
    ? decodeOrExplain(opened.hash.replace(/^#/, "").split("?")[0])
    : null;
  hashPayload?.catch(() => {}); // Awaited below, where a failure is shown.
  state.config = await configured;
  try {
    await sanitizerReady;
  } catch (error) {
    fail("This page could not load its HTML sanitiser: reload it to try again.", error);
    return;
  }
  if (state.config.testHooks?.disableSanitizer === true) disableSanitizerForTests();
  const origins = Array.isArray(state.config.callbackOrigins) ? state.config.callbackOrigins : [];
  callback = callbackOf(opened.search ?? "", opened.hash, origins);
  const short = /^\/p\/([A-Za-z0-9]{6,16})$/.exec(opened.path);
  const fragment = opened.hash;
  /** Drops the link from the address bar (a reload reopens it from this
   * tab's storage). */
  const tidy = (shown) => {
    keepFragment(shown, JSON.stringify(opened));
    history.replaceState(null, "", shown);
  };
  const reviewed = REVIEW_PATH.exec(opened.path);
  const keyed = reviewed || (short && new URLSearchParams(fragment.replace(/^#/, "")).has("key"));
  const insecure = keyed ? insecureOrigin() : null;
  if (insecure) {
    fail("This page cannot decrypt over plain HTTP.", insecure);
    return;
  }
  if (reviewed) {
    try {
      await openReview(reviewed[1], fragment);
    } catch (error) {
      fail(REVIEW_ERROR, error);
      history.replaceState(null, "", opened.path);
      return;
    }
    // The key and the token leave the address bar.
    tidy(opened.path);
    const params = new URLSearchParams(fragment.replace(/^#/, ""));
    await restoreWork(`review:${review.client.base}:${params.get("t")}`);
    return;
  }
  if (short) {
    try {
      accept(await loadShort(short[1], fragment));
      state.fromShort = true;
      showCallback();
    } catch (error) {
      fail(SHORT_ERROR, error);
      return;
    }
    const params = new URLSearchParams(fragment.replace(/^#/, ""));
    await restoreWork(`short:${pasteApiFor(params.get("paste"))}:${short[1]}:${params.get("key") ?? ""}`);
    const api = pasteApiFor(new URLSearchParams(fragment.replace(/^#/, "")).get("paste"));
    if (api && ownsLink(api, short[1])) {
      deletable.opened = { api, id: short[1] };
      $("delete-link").hidden = false;
    }
    tidy("/");
    return;
  }
  if (!isSharePayload(fragment)) {
    $("status").textContent = "Open a share link to see a plan.";
    return;
  }
  try {
    accept(await (hashPayload ?? decodeOrExplain(fragment.replace(/^#/, "").split("?")[0])));
  } catch (error) {
    fail(HASH_ERROR, error);
    return;
  }
  showCallback();
  await restoreWork(`share:${fragment.replace(/^#/, "").split("?")[0]}`);
  tidy(opened.path);
}

main();
