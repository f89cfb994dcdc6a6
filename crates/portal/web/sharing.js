// Sharing the plan as it is on the page, on either page: the Share dialog
// (a hash link, or an encrypted short link on the paste service) and
// deleting a short link this browser made (its delete token is kept by
// owned.js).
//
// `sharing(state, page)` works on the page's state object (`config`,
// `plan`, `html`, `annotations`, `attachments`, `fromShort`, and
// `deletable`: `{ shared, opened, pending }`, the short links "Delete this
// link" may act on) and asks `page.copyNote()` for the note the dialog
// shows above the link (null: none; a review page shares a copy).

import { encodePayload, encrypt, payloadOf, shortUrl } from "{{codec.js}}";
import { deleteLink, rememberLink } from "{{owned.js}}";
import { $, ownPasteApi, shareBase } from "{{page-common.js}}";

const CREATE_TIMEOUT_MS = 5_000;
/** Hash links longer than this may be cut by messaging apps (upstream). */
const LONG_URL = 2048;

/** The share payload of what `state` shows. */
export function currentPayload(state) {
  if (state.html !== null) {
    return { ...payloadOf("", state.annotations, state.attachments), h: state.html, r: "html" };
  }
  return payloadOf(state.plan, state.annotations, state.attachments);
}

/** Stores what `state` shows as an encrypted paste and returns its link,
 * its paste `{ api, id }`, and whether this browser kept its delete token. */
export async function createShortLink(state) {
  const compressed = await encodePayload(currentPayload(state));
  const { key, data } = await encrypt(compressed);
  const api = ownPasteApi(state.config);
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
  return { url: shortUrl(shareBase(state.config), id, key, api), paste: { api, id }, kept, token: typeof deleteToken === "string" };
}

export function sharing(state, page) {
  async function openShare() {
    const link = $("share-link");
    const short = $("share-short");
    const note = $("share-note");
    note.textContent = "";
    $("share-delete").hidden = true;
    state.deletable.shared = null;
    // On a live review, Share makes a copy as it is now; the review itself
    // is joined through a reviewer link of its own.
    const copy = page.copyNote();
    $("share-title").textContent = copy !== null ? "Share a copy of this plan" : "Share this review";
    const copyNote = $("share-copy-note");
    copyNote.hidden = copy === null;
    copyNote.textContent = copy ?? "";
    $("share-dialog").showModal();
    if (state.html !== null) {
      // Raw HTML has no hash form: it is always shared as a short link.
      link.value = "";
      short.hidden = false;
      note.textContent = "An HTML plan is shared as a short link.";
      return;
    }
    link.value = `${shareBase(state.config)}/#${await encodePayload(currentPayload(state))}`;
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
      const made = await createShortLink(state);
      $("share-link").value = made.url;
      note.textContent = "Short link created: the key stays in the link, the paste service only sees ciphertext.";
      if (made.kept) {
        state.deletable.shared = made.paste;
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

  /** Asks to delete short link `paste` (`{ api, id }`). */
  function askDelete(paste) {
    state.deletable.pending = paste;
    $("delete-note").textContent = "";
    $("delete-confirm").hidden = false;
    $("delete-cancel").textContent = "Cancel";
    $("delete-dialog").showModal();
  }

  async function confirmDelete() {
    const { deletable } = state;
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

  /** Wires the Share and delete dialogs. */
  function wire() {
    $("share").addEventListener("click", openShare);
    $("share-short").addEventListener("click", makeShort);
    $("share-delete").addEventListener("click", () => askDelete(state.deletable.shared));
    $("delete-confirm").addEventListener("click", confirmDelete);
  }

  return { askDelete, wire };
}
