// Work that must survive a reload. Two things are kept in the browser:
//
// - the link's fragment, per tab (sessionStorage, under the page's path):
//   the page drops it from the address bar once read (a short link's key, a
//   review link's key and token), so a reload would otherwise find nothing
//   to open. It is never sent anywhere, and goes when the tab is closed.
// - drafts, per link (localStorage): the annotations made on a share link,
//   the unsent comments of a review page, and the comment being typed. A
//   draft is filed under a SHA-256 digest of what identifies the link (the
//   share payload, the short link's id and key, or the review's id and the
//   writer's token), so the stored records name no key or token. Drafts
//   are dropped once sent, after MAX_AGE_MS, and beyond the newest
//   MAX_DRAFTS.

const FRAGMENT_PREFIX = "planshare.fragment:";
const DRAFTS_KEY = "planshare.drafts";
const MAX_DRAFTS = 200;
const MAX_AGE_MS = 30 * 86_400_000;

/** Remembers `fragment` for this tab's page at `path`. */
export function keepFragment(path, fragment) {
  try {
    sessionStorage.setItem(FRAGMENT_PREFIX + path, fragment);
  } catch {
    // Storage off or full: a reload will not reopen the link.
  }
}

/** The fragment this tab last opened at `path`, or "". */
export function keptFragment(path) {
  try {
    return sessionStorage.getItem(FRAGMENT_PREFIX + path) ?? "";
  } catch {
    return "";
  }
}

/** The key drafts of a link are filed under: SHA-256 (hex) of `identity`. */
export async function draftKey(identity) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(identity));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function all() {
  try {
    const drafts = JSON.parse(localStorage.getItem(DRAFTS_KEY) ?? "{}");
    return drafts && typeof drafts === "object" && !Array.isArray(drafts) ? drafts : {};
  } catch {
    return {};
  }
}

function store(drafts) {
  const now = Date.now();
  const newest = Object.entries(drafts)
    .filter(([, d]) => typeof d?.saved === "number" && now - d.saved < MAX_AGE_MS)
    .sort(([, a], [, b]) => b.saved - a.saved)
    .slice(0, MAX_DRAFTS);
  try {
    localStorage.setItem(DRAFTS_KEY, JSON.stringify(Object.fromEntries(newest)));
    return true;
  } catch {
    return false;
  }
}

/** The draft filed under `key`, or null. */
export function loadDraft(key) {
  const draft = all()[key];
  if (!draft || typeof draft.saved !== "number" || Date.now() - draft.saved >= MAX_AGE_MS) return null;
  return draft;
}

/** Files `draft` (any JSON object) under `key`; false when the browser
 * does not let the page keep it. */
export function saveDraft(key, draft) {
  const drafts = all();
  drafts[key] = { ...draft, saved: Date.now() };
  return store(drafts);
}

/** Drops the draft under `key`. */
export function dropDraft(key) {
  const drafts = all();
  if (!(key in drafts)) return;
  delete drafts[key];
  store(drafts);
}
