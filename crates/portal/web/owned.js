// Short links this browser made, and taking them back. Creating a paste
// returns a delete token, shown only in that answer; it is kept here, in
// the browser's local storage, under the paste service and the paste id, so
// that the person who made a link can delete it later from this browser.
// Only the token is kept, never the link's key: the token can delete the
// paste but not read it. Records are dropped once their paste has expired,
// once it is deleted, and beyond the newest MAX_RECORDS.

const STORAGE_KEY = "planshare.ownLinks";
const MAX_RECORDS = 500;
const DELETE_TIMEOUT_MS = 10_000;
/** Kept this long when the paste service did not say when the paste expires. */
const UNKNOWN_LIFETIME_MS = 90 * 86_400_000;

/** The record key of paste `id` on the paste service at `api`. */
function recordKey(api, id) {
  return `${new URL(api, location.href).href.replace(/\/+$/, "")}|${id}`;
}

/** Every stored record, expired ones dropped; `{}` when storage is off or damaged. */
function records() {
  let all;
  try {
    all = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "{}");
  } catch {
    return {};
  }
  if (typeof all !== "object" || all === null || Array.isArray(all)) return {};
  const now = Date.now();
  const live = {};
  for (const [key, record] of Object.entries(all)) {
    if (typeof record?.token === "string" && typeof record.until === "number" && record.until > now) {
      live[key] = record;
    }
  }
  return live;
}

function save(all) {
  const newest = Object.entries(all)
    .sort(([, a], [, b]) => b.made - a.made)
    .slice(0, MAX_RECORDS);
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(Object.fromEntries(newest)));
    return true;
  } catch {
    return false;
  }
}

/** Keeps the delete token of paste `id` on `api`; false when the browser
 * does not let the page store it. */
export function rememberLink(api, id, token, expiresAt) {
  const made = Date.now();
  const until = typeof expiresAt === "number" && expiresAt > made ? expiresAt : made + UNKNOWN_LIFETIME_MS;
  const all = records();
  all[recordKey(api, id)] = { token, made, until };
  return save(all);
}

/** Whether this browser holds the delete token of paste `id` on `api`. */
export function ownsLink(api, id) {
  return recordKey(api, id) in records();
}

function forget(api, id) {
  const all = records();
  delete all[recordKey(api, id)];
  save(all);
}

/** Deletes paste `id` on `api` with its stored token. Resolves to
 * `{ deleted: true, message }` when the link no longer opens (also when it
 * was already gone), else `{ deleted: false, message }` saying why. */
export async function deleteLink(api, id) {
  const record = records()[recordKey(api, id)];
  if (!record) return { deleted: false, message: "This browser holds no delete token for this link." };
  const origin = new URL(api, location.href).origin;
  let response;
  try {
    response = await fetch(`${api.replace(/\/+$/, "")}/api/paste/${id}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${record.token}` },
      signal: AbortSignal.timeout(DELETE_TIMEOUT_MS),
      referrerPolicy: "no-referrer",
      credentials: "omit",
    });
  } catch (error) {
    return {
      deleted: false,
      message: error.name === "TimeoutError"
        ? `The paste service at ${origin} did not answer within ${DELETE_TIMEOUT_MS / 1000} s; try again.`
        : `The paste service at ${origin} could not be reached; try again.`,
    };
  }
  if (response.status === 204 || response.status === 404) {
    forget(api, id);
    return {
      deleted: true,
      message: response.status === 204
        ? "Link deleted: it now opens to a message that the paste does not exist."
        : "This link had already expired or been deleted.",
    };
  }
  if (response.status === 429 || response.status >= 500) {
    return { deleted: false, message: `The paste service at ${origin} is unavailable (HTTP ${response.status}); try again shortly.` };
  }
  // 401/403: the token is not this paste's (storage edited, or another
  // service answers at that address); it will never work, so drop it.
  if (response.status === 401 || response.status === 403) forget(api, id);
  return { deleted: false, message: `The paste service at ${origin} refused to delete the link (HTTP ${response.status}).` };
}
