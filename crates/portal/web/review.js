// Live reviews in the browser: the review API client (`/api/v1/reviews`,
// docs/reviews.md) and the review's blobs. A review link is
// `/r/<id>#key=<review key>&t=<token>[&paste=<api>]`: the key opens every
// blob (each exactly an encrypted short-link paste) and never leaves the
// page; the token travels only in `Authorization: Bearer`, never in a URL.
// Versions hold the share payload `{p, a, g?}`; comment sets hold
// `{"v": n, "a": [tuples], "g"?: […], "ids"?, "replies"?, "states"?}`
// (the threads' fields: plan-doc's threads.rs). No DOM.

import { ERROR_CODES } from "{{error-codes.js}}";
import {
  annotationFromTuple,
  base64UrlToBytes,
  bytesToBase64Url,
  decodePayload,
  decrypt,
  encodePayload,
  encryptWith,
  imagesOf,
  pasteParam,
  tupleOf,
} from "{{codec.js}}";

/** The path of a review page. */
export const REVIEW_PATH = /^\/r\/([A-Za-z0-9]{6,16})$/;

const TIMEOUT_MS = 10_000;
/** The long poll's wait (the server's most). */
const POLL_WAIT_S = 25;

/** A failed review request, with a message for the page and the HTTP
 * status (0: no answer). */
export class ReviewError extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The server's lower-case message as a sentence. */
function sentence(text) {
  const trimmed = text.trim();
  if (!trimmed) return trimmed;
  return `${trimmed[0].toUpperCase()}${trimmed.slice(1)}${/[.!?]$/.test(trimmed) ? "" : "."}`;
}

/** What a refused request means to the person looking at the page. */
function explain(status, body, origin) {
  if (status === 404) {
    return body?.code === ERROR_CODES.versionNotFound
      ? "That version of the plan is not in this review."
      : "This review does not exist any more, or this link was revoked.";
  }
  if (status === 401) return "This review link has no token: open the whole link you were given.";
  if (status === 403) return "Only the review's owner can do that.";
  if (status === 429 || status >= 500) return `The review service at ${origin} is unavailable (HTTP ${status}); try again shortly.`;
  if (body?.code === ERROR_CODES.nameTaken) return "Another reviewer of this review already writes under that name: choose another one.";
  if (typeof body?.error === "string") return sentence(body.error);
  return `The review service at ${origin} refused the request (HTTP ${status}).`;
}

/** Sends one request to the review API at `origin`: the answer's JSON
 * (null for 204), or a `ReviewError` that says what went wrong. */
async function send(url, origin, init, why = explain) {
  let response;
  try {
    response = await fetch(url, {
      ...init,
      signal: init.signal ?? AbortSignal.timeout(TIMEOUT_MS),
      referrerPolicy: "no-referrer",
      credentials: "omit",
      cache: "no-store",
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ReviewError(
      error.name === "TimeoutError"
        ? `The review service at ${origin} did not answer within ${TIMEOUT_MS / 1000} s.`
        : `The review service at ${origin} could not be reached.`,
      0,
    );
  }
  if (response.status === 204) return null;
  const answer = await response.json().catch(() => null);
  if (!response.ok) throw new ReviewError(why(response.status, answer, origin), response.status, answer?.code);
  if (answer === null || typeof answer !== "object") {
    throw new ReviewError(`The review service at ${origin} sent an answer that is not JSON.`, response.status);
  }
  return answer;
}

/** A fresh review key: 32 random bytes as base64url (43 characters). */
export function newReviewKey() {
  return bytesToBase64Url(crypto.getRandomValues(new Uint8Array(32)));
}

/** A version's digest: `b64url(HMAC-SHA256(key, utf8(plan)))`, which lets
 * the server tell an unchanged push without seeing the plan. */
export async function planDigest(key, plan) {
  const hmac = await crypto.subtle.importKey("raw", base64UrlToBytes(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return bytesToBase64Url(new Uint8Array(await crypto.subtle.sign("HMAC", hmac, new TextEncoder().encode(plan))));
}

/** Why starting a review was refused, for the person who asked. */
function explainStart(status, body, origin) {
  if (status === 401 || status === 403) {
    return `The review service at ${origin} starts reviews only for holders of an API key (HTTP ${status}): start this one with \`planshare review start\` and your key.`;
  }
  if (status === 413) return typeof body?.error === "string" ? body.error : "This plan is too large for the review service.";
  return explain(status, body, origin);
}

/** Starts a review of the share payload `payload` at `api`, under a fresh
 * key: `{id, ownerToken, key, expiresAt}`. `plan` is what the digest is
 * of (the markdown, or an HTML plan's document). */
export async function startReview(api, payload, plan) {
  const key = newReviewKey();
  const [data, digest] = await Promise.all([encryptWith(await encodePayload(payload), key), planDigest(key, plan)]);
  const origin = new URL(api, location.href).origin;
  const made = await send(`${api.replace(/\/+$/, "")}/api/v1/reviews`, origin, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ version: { data, digest } }),
  }, explainStart);
  if (typeof made.id !== "string" || !/^[A-Za-z0-9]{6,16}$/.test(made.id) || typeof made.ownerToken !== "string") {
    throw new ReviewError(`The review service at ${origin} sent an answer that is not a review.`, 201);
  }
  return { id: made.id, ownerToken: made.ownerToken, key, expiresAt: made.expiresAt };
}

/** One review, seen through one token. */
export class ReviewClient {
  constructor(api, id, token) {
    this.base = `${api.replace(/\/+$/, "")}/api/v1/reviews/${id}`;
    this.origin = new URL(api, location.href).origin;
    this.token = token;
  }

  call(method, path, body, { signal, accept } = {}) {
    const headers = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (accept) headers.Accept = accept;
    return send(`${this.base}${path}`, this.origin, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  }

  /** The review as this token sees it. */
  view() {
    return this.call("GET", "");
  }

  /** Version `n`: `{n, digest, data, createdAt}`. */
  version(n) {
    return this.call("GET", `/versions/${n}`);
  }

  /** Replaces this writer's comment set, only if it is still revision
   * `base` (0: none) — else a `ReviewError` with code `comments-changed`
   * (another tab or device of this link sent meanwhile). `{writer,
   * updatedAt, seq}`. */
  putComments(name, version, data, base, sealed) {
    const body = { name, version, data, base };
    if (sealed) body.sealed = sealed;
    return this.call("PUT", "/comments", body);
  }

  /** Withdraws this writer's comment set, only if it is still revision
   * `base` (as `putComments`). */
  withdraw(base) {
    return this.call("DELETE", `/comments?base=${base}`);
  }

  /** Mints a link: `{id, token, role}` (owner only); `role` "reviewer"
   * (the default) or "approver". */
  addLink(role) {
    return this.call("POST", "/links", role ? { role } : {});
  }

  /** Revokes reviewer link `link` (owner only). */
  revokeLink(link) {
    return this.call("DELETE", `/links/${encodeURIComponent(link)}`);
  }

  /** This round's decision (the owner or an approver): "approved" or
   * "changes_requested" on `version` (the one the decider read: a newer
   * one makes it 409 stale-version), with an optional sealed comment set
   * as feedback and the decider's name (an approver that has not
   * commented must give one). */
  decide(decision, version, data, name, sealed) {
    const body = { decision, version };
    if (data !== undefined) body.data = data;
    if (name) body.name = name;
    if (sealed) body.sealed = sealed;
    return this.call("POST", "/decision", body);
  }

  /** Events after `seq` (JSON long poll): `{events, seq}`. */
  events(after, signal) {
    return this.call("GET", `/events?after=${after}&wait=${POLL_WAIT_S}`, undefined, {
      signal: AbortSignal.any([signal, AbortSignal.timeout((POLL_WAIT_S + 10) * 1000)]),
      accept: "application/json",
    });
  }
}

/** A review link: `<base>/r/<id>#key=…&t=…`, plus `&paste=` when the
 * API is not the portal's own origin (as short links do). */
export function reviewLink(base, id, key, token, api, ownOrigin) {
  let url = `${base.replace(/\/+$/, "")}/r/${id}#key=${key}&t=${token}`;
  if (new URL(api, location.href).origin !== ownOrigin) url += `&paste=${pasteParam(api.replace(/\/+$/, ""))}`;
  return url;
}

/** Opens a blob of the review: the JSON object inside. */
export async function openBlob(data, key) {
  return decodePayload(await decrypt(data, key));
}

/** A comment set of `writer` as annotations: each carries the writer's
 * bound name as its author, the version it was made on, and who wrote it. */
export function commentAnnotations(set, payload, own) {
  return payload.a.map((item, i) => ({
    ...annotationFromTuple(item, i, payload),
    id: `review-${set.writer}-${i}`,
    author: set.name,
    version: set.version,
    writer: set.writer,
    own,
  }));
}

/** The images of a comment set's `g`. */
export function commentAttachments(payload) {
  return imagesOf(payload.g) ?? [];
}

/** Most characters of a notification preview. */
const PREVIEW_CHARS = 140;

/** The preview a write's notifications carry (the CLI's `seal_preview`):
 * `{"text"}` with the first line of `text`, at most 140 characters,
 * sealed under the review key as a comment set is; only key holders read
 * it. Undefined for no text. */
export async function sealPreview(key, text) {
  const line = String(text ?? "").trim().split("\n")[0].trim();
  if (!line) return undefined;
  const chars = [...line];
  const short = chars.slice(0, PREVIEW_CHARS).join("") + (chars.length > PREVIEW_CHARS ? "…" : "");
  return encryptWith(await encodePayload({ text: short }), key);
}

/** `annotations` sealed as a comment set made on version `v` (a
 * decision's feedback: no threads). */
export async function sealComments(key, v, annotations) {
  return encryptWith(await encodePayload({ v, a: annotations.map(tupleOf) }), key);
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** A fresh thread or reply id: 12 random base62 characters. */
export function newThreadId() {
  // 248 is the largest multiple of 62 below 256: no value is likelier.
  let id = "";
  while (id.length < 12) {
    for (const byte of crypto.getRandomValues(new Uint8Array(16))) {
      if (byte < 248 && id.length < 12) id += BASE62[byte % 62];
    }
  }
  return id;
}

/** The fields of a writer's decrypted comment set that this page writes
 * itself; every other one is kept as it came (a newer client's). */
const WRITTEN = new Set(["v", "a", "ids", "replies", "states"]);

/** What a writer's stored set holds beside its annotations: its replies
 * and state changes as they came (each kept whole, fields this page does
 * not know included), and its other fields. */
export function threadFieldsOf(set) {
  const list = (name) => (Array.isArray(set?.[name]) ? set[name] : []);
  const kept = {};
  for (const [name, value] of Object.entries(set && typeof set === "object" ? set : {})) {
    if (!WRITTEN.has(name)) kept[name] = value;
  }
  return { replies: list("replies"), states: list("states"), kept };
}

/** This writer's own comment set sealed: `annotations` made on version
 * `v`, `ids[i]` the thread id of annotation i (null: none), its replies
 * and state changes, and the fields it came with that this page does not
 * write (`kept`), so a set another client wrote loses nothing here. */
export async function sealCommentSet(key, v, annotations, ids, { replies = [], states = [], kept = {} } = {}) {
  const set = { ...kept, v, a: annotations.map(tupleOf), ids };
  if (replies.length) set.replies = replies;
  if (states.length) set.states = states;
  return encryptWith(await encodePayload(set), key);
}
