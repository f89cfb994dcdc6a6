// Bot callback links: a bot that shares a plan can add `cb=<URL>&ct=<token>`
// to the link (in the real query string, after a `?` inside a hash link's
// fragment, or among a short link's fragment parameters), and the page then
// offers Approve and Send feedback, which POST
// `{"action": "approve"|"feedback", "token": ct, "annotated_url": <link>}`
// to `cb` — upstream's format, with upstream's messages for the answers.
// The portal's CSP lets the page reach only the callback origins its
// runtime configuration names (`callbackOrigins` in /config.json); a link
// naming any other is shown why instead of failing silently. Pure but for
// `fetch`.

const CALLBACK_TIMEOUT_MS = 10_000;

export const EXPIRED = "Plan link expired — request a new one from the bot.";
export const FAILED = "Callback failed.";

/** The `cb`/`ct` pair a page address carries, or null when it has none:
 * `{ url, token, origin, problem }`, where `problem` says why the callback
 * cannot be used (null when it can, given `allowedOrigins`). */
export function callbackOf(search, hash, allowedOrigins = []) {
  const fragment = hash.replace(/^#/, "");
  const sources = [search.replace(/^\?/, ""), ...fragment.split("?")];
  let url = null;
  let token = null;
  for (const source of sources) {
    if (!source.includes("cb=") && !source.includes("ct=")) continue;
    const params = new URLSearchParams(source);
    url ??= params.get("cb");
    token ??= params.get("ct");
  }
  if (url === null) return null;
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return { url, token, origin: null, problem: "The link asks to report back to an address that is not a URL, so Approve and Send feedback are off." };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return { url, token, origin: null, problem: "The link asks to report back to an address that is not http(s), so Approve and Send feedback are off." };
  }
  const origin = parsed.origin;
  if (!allowedOrigins.includes(origin)) {
    return {
      url,
      token,
      origin,
      problem: `The link asks to report back to ${origin}, which this portal is not set up to reach (its callback_origins setting), so Approve and Send feedback are off.`,
    };
  }
  return { url: parsed.href, token, origin, problem: null };
}

/** POSTs `action` ("approve" or "feedback") with `annotatedUrl` to the
 * callback; resolves to `{ ok, message }`. */
export async function sendCallback(callback, action, annotatedUrl) {
  let response;
  try {
    response = await fetch(callback.url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ action, token: callback.token, annotated_url: annotatedUrl }),
      signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
      referrerPolicy: "no-referrer",
      credentials: "omit",
    });
  } catch (error) {
    return {
      ok: false,
      message: `${FAILED} ${error.name === "TimeoutError"
        ? `${callback.origin} did not answer within ${CALLBACK_TIMEOUT_MS / 1000} s.`
        : `${callback.origin} could not be reached.`}`,
    };
  }
  if (response.status === 401) return { ok: false, message: EXPIRED };
  if (!response.ok) return { ok: false, message: `${FAILED} ${callback.origin} answered HTTP ${response.status}.` };
  return {
    ok: true,
    message: action === "approve" ? "Approved: the bot has been told." : "Feedback sent to the bot.",
  };
}
