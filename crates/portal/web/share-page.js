// The share page: opens a hash link (`/#<payload>`) or a short link
// (`/p/<id>#key=…[&paste=…]`) in the browser, lets a reviewer annotate the
// plan, and shares the result again; imports a teammate's annotations,
// answers a bot's callback, deletes a short link this browser made, and
// starts a live review of the plan. Links are decoded here, so the key in
// the fragment never leaves the page. The formats (payload JSON, deflate +
// base64url, AES-GCM short-link encryption) are those upstream's clients
// write; the README's "API" section and `crates/share-codec` describe them.

import { decodePayload, decrypt, encodePayload, isSharePayload, parseImport } from "{{codec.js}}";
import { ownsLink } from "{{owned.js}}";
import { addShortcuts, listen as listenForShortcuts } from "{{keys.js}}";
import { callbackOf, sendCallback } from "{{callback.js}}";
import { keepFragment } from "{{drafts.js}}";
import { ReviewClient, reviewLink, startReview } from "{{review.js}}";
import { linkCard } from "{{linkcard.js}}";
import { annotating, plainAnnotation } from "{{annotating.js}}";
import { createShortLink, currentPayload, sharing } from "{{sharing.js}}";
import {
  $,
  LoadError,
  REVIEWER_HINT,
  annotationsOf,
  attachmentsOf,
  author,
  fail,
  insecureOrigin,
  isLinkFragment,
  loadConfig,
  markPainted,
  ownPasteApi,
  pasteApiFor,
  sanitizerLoaded,
  shareBase,
} from "{{page-common.js}}";

const HASH_ERROR = "Failed to load shared plan — the URL may have been truncated by your browser.";
const SHORT_ERROR = "Failed to load shared plan — the link may be expired or incomplete.";
const IMPORT_SHORT_ERROR = "Failed to load from short URL — paste may have expired";
const FETCH_TIMEOUT_MS = 10_000;

/** Everything the share page keeps. */
const state = {
  /** The plan (markdown, or an HTML plan's document) and its annotations
   * and global attachments; `next` numbers the annotations made here. */
  plan: "", html: null, annotations: [], attachments: [], next: 0,
  /** Where this link's drafts are filed (drafts.js), and whether the
   * annotations differ from the link's. */
  draftKey: null, changed: false,
  /** The selected text being annotated, the annotation the comment dialog
   * edits (null: it adds one), and the one last removed, which "Undo"
   * puts back (once). */
  pending: "", editing: null, removed: null,
  /** The reviewer's name when storage is off (page-common.js `author`). */
  author: null,
  /** The runtime configuration (/config.json). */
  config: {},
  /** Whether the page was opened from a short link. */
  fromShort: false,
  /** The short link "Delete this link" acts on, `{ api, id }`: the one just
   * made in the share dialog, or the one this page was opened from when
   * this browser made it (it holds the delete token). */
  deletable: { shared: null, opened: null, pending: null },
  /** The link's callback (`cb`/`ct`), read before the address is cleaned. */
  callback: null,
  /** The review started from this page, once there is one: its client,
   * id, key and service, and how many reviewer links were made. */
  started: { client: null, reviewers: 0 },
};

const ui = annotating(state, {
  what: () => "shared plan",
  decorate: () => {},
  itemLook: () => {},
  itemTags: () => [],
  editable: () => true,
  authored: () => ({ author: author(state) }),
  touched: () => {
    state.changed = true;
  },
  closed: () => false,
  removedNote: () => "",
  redraft: () => {},
  authorTyped: () => {},
  unsaved: () => (state.changed ? state.annotations.map(plainAnnotation) : null),
  restore: (restored) => {
    state.annotations = restored;
    state.changed = true;
  },
});

const share = sharing(state, { copyNote: () => null });

// --- Opening a link -------------------------------------------------------

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
  const api = pasteApiFor(state.config, params.get("paste"));
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

function accept(payload) {
  performance.mark("planshare:decoded");
  // An HTML share needs a document: `r:"html"` with an empty `h` is
  // markdown (as the CLI reads it).
  const html = payload.r === "html" && typeof payload.h === "string" && payload.h !== "" ? payload.h : null;
  state.html = html;
  state.plan = html === null ? String(payload.p ?? "") : "";
  state.annotations = annotationsOf(payload);
  state.attachments = attachmentsOf(payload);
  ui.show();
  // Navigation → decoded → rendered → every annotation placed (loadtests
  // `portal` reads these marks).
  performance.mark("planshare:highlighted");
  markPainted();
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
  ui.refresh();
  ui.saveWork();
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

// --- Bot callback (Approve / Send feedback) -------------------------------

/** The link that reports this page's annotations back: a hash link of
 * the plan as it is now, or — for an HTML plan or a page opened from a
 * short link — a new encrypted short link, as the reviewer would share it. */
async function annotatedUrl() {
  if (state.html === null && !state.fromShort) return `${shareBase(state.config)}/#${await encodePayload(currentPayload(state))}`;
  return (await createShortLink(state)).url;
}

function showCallback() {
  const { callback } = state;
  if (!callback) return;
  $("callback").hidden = false;
  $("callback-note").textContent = callback.problem ?? "A bot shared this plan and waits for your answer.";
  $("cb-approve").disabled = callback.problem !== null;
  $("cb-feedback").disabled = callback.problem !== null;
}

async function answerCallback(action) {
  const { callback } = state;
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

// --- Starting a review ----------------------------------------------------

function openStart() {
  if (!state.started.client) {
    $("start-note").textContent = "";
    $("start-go").disabled = false;
  }
  $("start-dialog").showModal();
}

async function addStartedLink() {
  const { started } = state;
  const made = await started.client.addLink();
  started.reviewers += 1;
  const { id, key, api } = started;
  const url = reviewLink(shareBase(state.config), id, key, made.token, api, location.origin);
  $("start-links").append(linkCard(`Reviewer link ${started.reviewers}`, url, REVIEWER_HINT));
}

/** Starts a review of the plan as it is on this page (with its
 * annotations), then shows the owner link and a first reviewer link. */
async function beginReview() {
  const note = $("start-note");
  $("start-go").disabled = true;
  note.textContent = "Starting the review…";
  const api = ownPasteApi(state.config);
  let made;
  try {
    made = await startReview(api, currentPayload(state), state.html ?? state.plan);
  } catch (error) {
    note.textContent = error.message;
    $("start-go").disabled = false;
    return;
  }
  Object.assign(state.started, { client: new ReviewClient(api, made.id, made.ownerToken), id: made.id, key: made.key, api });
  const owner = reviewLink(shareBase(state.config), made.id, made.key, made.ownerToken, api, location.origin);
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

// --- Loading --------------------------------------------------------------

function wire() {
  ui.wire();
  share.wire();
  $("delete-link").addEventListener("click", () => share.askDelete(state.deletable.opened));
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
  addShortcuts({
    keys: ["a"],
    label: "Approve (the review, or tell the bot that shared this plan)",
    run: () => answerCallback("approve"),
    available: () => state.callback !== null && state.callback.problem === null && !$("callback").hidden,
  });
  $("cb-approve").addEventListener("click", () => answerCallback("approve"));
  $("cb-feedback").addEventListener("click", () => answerCallback("feedback"));
  $("start-review").addEventListener("click", openStart);
  $("start-go").addEventListener("click", beginReview);
  $("start-add").addEventListener("click", addStartLink);
  listenForShortcuts();
}

/** Opens the hash or short link the page was opened at (`opened`: its
 * `path`, `search` and `hash`). */
export async function startSharePage(opened) {
  wire();
  // A link pasted into the address bar of an open page changes only the
  // fragment (no new page load): open it as if it had been loaded, drafts
  // first saved under the old link.
  window.addEventListener("hashchange", () => {
    if (!isLinkFragment(location.hash)) return;
    ui.saveWork();
    location.reload();
  });
  const configured = loadConfig();
  // A hash link needs nothing of the configuration to be decoded: its
  // payload inflates while the configuration loads.
  const hashPayload = opened.path === "/" && isSharePayload(opened.hash)
    ? decodeOrExplain(opened.hash.replace(/^#/, "").split("?")[0])
    : null;
  hashPayload?.catch(() => {}); // Awaited below, where a failure is shown.
  state.config = await configured;
  if (!(await sanitizerLoaded(state.config))) return;
  const origins = Array.isArray(state.config.callbackOrigins) ? state.config.callbackOrigins : [];
  state.callback = callbackOf(opened.search ?? "", opened.hash, origins);
  const short = /^\/p\/([A-Za-z0-9]{6,16})$/.exec(opened.path);
  const fragment = opened.hash;
  /** Drops the link from the address bar (a reload reopens it from this
   * tab's storage). */
  const tidy = (shown) => {
    keepFragment(shown, JSON.stringify(opened));
    history.replaceState(null, "", shown);
  };
  const keyed = short && new URLSearchParams(fragment.replace(/^#/, "")).has("key");
  const insecure = keyed ? insecureOrigin() : null;
  if (insecure) {
    fail("This page cannot decrypt over plain HTTP.", insecure);
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
    await ui.restoreWork(`short:${pasteApiFor(state.config, params.get("paste"))}:${short[1]}:${params.get("key") ?? ""}`);
    const api = pasteApiFor(state.config, new URLSearchParams(fragment.replace(/^#/, "")).get("paste"));
    if (api && ownsLink(api, short[1])) {
      state.deletable.opened = { api, id: short[1] };
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
  await ui.restoreWork(`share:${fragment.replace(/^#/, "").split("?")[0]}`);
  tidy(opened.path);
}
