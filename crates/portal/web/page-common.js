// What the share page (share-page.js) and the review page (review-page.js)
// both need and that holds no state of its own: element lookup and
// creation, the runtime configuration and the paste services it allows,
// the error a failed load shows, the reviewer's name, and how the address
// the page was opened at is read back after a reload.

import { annotationFromTuple, imagesOf, isSharePayload } from "{{codec.js}}";
import { keptFragment } from "{{drafts.js}}";
import { disableSanitizerForTests, ready as sanitizerReady } from "{{plan-view.js}}";

const AUTHOR_KEY = "planshare.author";

export const REVIEWER_HINT = "For one person: they choose their name when they first comment. Send each reviewer a link of their own.";

export const $ = (id) => document.getElementById(id);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export async function loadConfig() {
  try {
    const response = await fetch("/config.json", { cache: "no-cache" });
    if (response.ok) return await response.json();
  } catch {
    // No configuration: the page's own origin serves the paste API.
  }
  return {};
}

/** The paste API this portal writes to, given its configuration. */
export function ownPasteApi(config) {
  return (config.pasteApiUrl || location.origin).replace(/\/+$/, "");
}

/** The paste API a link's `paste` parameter names, or null when the
 * configuration does not allow it. */
export function pasteApiFor(config, param) {
  if (!param) return ownPasteApi(config);
  let url;
  try {
    url = atob(param.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return null;
  }
  const allowed = [ownPasteApi(config), ...(config.allowedPasteApis || [])].map(
    (u) => new URL(u, location.href).origin,
  );
  try {
    return allowed.includes(new URL(url).origin) ? url : null;
  } catch {
    return null;
  }
}

/** Where the links this page makes point. */
export function shareBase(config) {
  return (config.shareBaseUrl || location.origin).replace(/\/+$/, "");
}

/** An error that says what happened, under one of upstream's headlines. */
export class LoadError extends Error {
  constructor(detail) {
    super(detail);
    this.detail = detail;
  }
}

export function annotationsOf(payload) {
  return payload.a.map((item, i) => annotationFromTuple(item, i, payload));
}

export function attachmentsOf(payload) {
  return imagesOf(payload.g) ?? [];
}

/** The reviewer's display name, kept in local storage; a generated
 * "tater" name until they set one (as upstream). `names.author` holds it
 * for this page alone when storage is off. */
export function author(names) {
  let name = names.author;
  try {
    name = localStorage.getItem(AUTHOR_KEY) || name;
  } catch {
    // Storage disabled: a name for this page only.
  }
  if (!name) {
    const pick = (words) => words[crypto.getRandomValues(new Uint32Array(1))[0] % words.length];
    name = `${pick(["swift", "calm", "bright", "quiet", "brave", "keen"])}-${pick(["falcon", "otter", "heron", "lynx", "badger", "wren"])}-tater`;
    setAuthor(names, name);
  }
  return name;
}

/** A name the person chose (not a generated one), or "". A review binds
 * the name of the first send for good, so it asks rather than guesses. */
export function chosenAuthor(names) {
  const name = author(names);
  return /^[a-z]+-[a-z]+-tater$/.test(name) ? "" : name;
}

export function setAuthor(names, name) {
  names.author = name;
  try {
    localStorage.setItem(AUTHOR_KEY, name);
  } catch {
    // Storage disabled: the name lasts for this page.
  }
}

/** Shows upstream's headline for a failed load, and what happened. */
export function fail(message, error) {
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
export function markPainted() {
  requestAnimationFrame(() => setTimeout(() => performance.mark("planshare:painted")));
}

/** Why this page cannot open encrypted links at all, when it cannot:
 * browsers give WebCrypto only to HTTPS pages and to localhost. */
export function insecureOrigin() {
  if (window.isSecureContext && crypto.subtle) return null;
  const https = `https://${location.host}${location.pathname}`;
  return new LoadError(
    `This page was opened over plain HTTP from another machine (${location.origin}). Browsers let a page decrypt only over HTTPS or on localhost, so the plan cannot be opened here — the link itself is fine. To fix it, serve planshare over HTTPS (the server's [server] tls_cert and tls_key settings, or a reverse proxy with a certificate) and open the link as ${https}#…; or open it on the machine that runs the server as http://localhost:${location.port || "80"}${location.pathname}#….`,
  );
}

/** Whether `hash` is a link's fragment (a plan, a key or a token) rather
 * than an anchor within the page. */
export function isLinkFragment(hash) {
  if (isSharePayload(hash)) return true;
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  return params.has("key") || params.has("t");
}

/** This tab's link for a reload: the address as opened, when the page
 * was reloaded and the address bar no longer has its fragment. */
export function reopened() {
  const navigation = performance.getEntriesByType("navigation")[0];
  if (location.hash || navigation?.type !== "reload") return null;
  try {
    const kept = JSON.parse(keptFragment(location.pathname) || "null");
    return kept && typeof kept.path === "string" && typeof kept.hash === "string" ? kept : null;
  } catch {
    return null;
  }
}

/** Waits for the HTML sanitiser; false, with the page showing why, when
 * it could not load. */
export async function sanitizerLoaded(config) {
  try {
    await sanitizerReady;
  } catch (error) {
    fail("This page could not load its HTML sanitiser: reload it to try again.", error);
    return false;
  }
  if (config.testHooks?.disableSanitizer === true) disableSanitizerForTests();
  return true;
}
