// The share formats in the browser (docs/wire-format.md): base64url,
// raw DEFLATE (CompressionStream), AES-GCM (WebCrypto), the payload's
// annotation tuples both ways, and the link forms. Pure: no DOM.

/** Largest inflated payload accepted (a decompression bomb stops here). */
export const MAX_INFLATED = 64 * 1024 * 1024;
/** Upstream's default paste API: short links to it carry no `&paste=`. */
export const DEFAULT_PASTE_API = "https://plannotator-paste.plannotator.workers.dev";

/** Upstream's fragment classifier: is `/#…` a share payload or an anchor? */
export function isSharePayload(fragment) {
  const text = fragment.replace(/^#/, "").split("?")[0];
  return text.length >= 30 && /^[A-Za-z0-9_-]+$/.test(text) && /[A-Z]/.test(text);
}

/** base64url (or standard base64) → bytes, with atob's forgiving rules.
 * The browser's own decoder (`Uint8Array.fromBase64`) takes the common
 * case, unpadded base64url, in one native call; anything it refuses goes
 * the old way, so what decodes and what fails stays the same. */
export function base64UrlToBytes(text) {
  if (typeof Uint8Array.fromBase64 === "function" && /^[A-Za-z0-9_-]*$/.test(text)) {
    try {
      return Uint8Array.fromBase64(text, { alphabet: "base64url", lastChunkHandling: "loose" });
    } catch {
      // Not decodable as it stands (a length atob refuses too): atob says so below.
    }
  }
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** bytes → base64url without padding. */
export function bytesToBase64Url(bytes) {
  let binary = "";
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + step));
  }
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** `bytes` run through `transform` (a CompressionStream or
 * DecompressionStream), its output joined; more than `limit` bytes out
 * throws. The bytes go in and out within the page: a Blob's stream would
 * pass them through the browser's blob store, a round trip per read. */
async function transformed(transform, bytes, limit) {
  const writer = transform.writable.getWriter();
  // A failure of the transform shows on its readable side, read below.
  writer.write(bytes).catch(() => {});
  writer.close().catch(() => {});
  const reader = transform.readable.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel();
      throw new Error("the shared plan is too large to open");
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** Raw-inflates `bytes` to text, refusing more than MAX_INFLATED bytes. */
export async function inflate(bytes) {
  return new TextDecoder().decode(await transformed(new DecompressionStream("deflate-raw"), bytes, MAX_INFLATED));
}

/** Raw-deflates the UTF-8 bytes of `text`. */
export async function deflate(text) {
  return transformed(new CompressionStream("deflate-raw"), new TextEncoder().encode(text), Infinity);
}

/** The payload object inside a compressed base64url string. */
export async function decodePayload(text) {
  const payload = JSON.parse(await inflate(base64UrlToBytes(text)));
  if (payload === null || typeof payload !== "object" || !Array.isArray(payload.a)) {
    throw new Error("not a share payload");
  }
  return payload;
}

/** `payload` as the compressed base64url string of a hash link. */
export async function encodePayload(payload) {
  return bytesToBase64Url(await deflate(JSON.stringify(payload)));
}

/** AES-GCM: `IV(12) ‖ ciphertext ‖ tag` (base64url) with a raw key (base64url). */
export async function decrypt(cipherText, keyText) {
  const data = base64UrlToBytes(cipherText);
  const key = await crypto.subtle.importKey("raw", base64UrlToBytes(keyText), "AES-GCM", false, ["decrypt"]);
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: data.slice(0, 12) }, key, data.slice(12));
  return new TextDecoder().decode(plain);
}

/** Encrypts `text` under the raw AES-256-GCM key `keyText` (base64url):
 * `IV(12) ‖ ciphertext ‖ tag`, base64url (a review's blobs). */
export async function encryptWith(text, keyText) {
  const key = await crypto.subtle.importKey("raw", base64UrlToBytes(keyText), "AES-GCM", false, ["encrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(text)));
  const out = new Uint8Array(12 + sealed.length);
  out.set(iv);
  out.set(sealed, 12);
  return bytesToBase64Url(out);
}

/** Encrypts `text` under a fresh AES-256-GCM key: `{ key, data }`, both base64url. */
export async function encrypt(text) {
  const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, true, ["encrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(text)));
  const out = new Uint8Array(12 + sealed.length);
  out.set(iv);
  out.set(sealed, 12);
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", key));
  return { key: bytesToBase64Url(raw), data: bytesToBase64Url(out) };
}

/** A tuple of `a` as an annotation (upstream `fromShareable`). */
export function annotationFromTuple(item, index, payload) {
  const letter = item[0];
  // R/I (legacy replacement/insertion) decode as such, as the CLI does;
  // upstream leaves them without a type.
  const type = { D: "DELETION", C: "COMMENT", G: "GLOBAL_COMMENT", R: "REPLACEMENT", I: "INSERTION" }[letter];
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
    images: imagesOf(images),
    isQuickLabel: letter === "C" && item.length > 5 && item[5] === 1,
    // `d` does not apply to global comments (upstream ignores it there).
    diffContext: (letter !== "G" && Array.isArray(payload.d) && payload.d[index]) || undefined,
    source: (payload.s && payload.s[index]) || undefined,
  };
}

/** An annotation as a tuple of `a` (upstream `toShareable`). */
export function tupleOf(annotation) {
  const images = annotation.images?.length ? annotation.images.map((i) => [i.path, i.name]) : null;
  const author = annotation.author || null;
  switch (annotation.type) {
    case "DELETION":
      return ["D", annotation.originalText, author, images];
    case "GLOBAL_COMMENT":
      return ["G", annotation.text ?? "", author, images];
    case "REPLACEMENT":
    case "INSERTION":
      return [annotation.type[0], annotation.originalText, annotation.text ?? "", author, images];
    default: {
      const tuple = ["C", annotation.originalText, annotation.text ?? "", author, images];
      if (annotation.isQuickLabel) tuple.push(1);
      return tuple;
    }
  }
}

/** The payload of a plan and its annotations (key order p, a, g, d, s). */
export function payloadOf(plan, annotations, attachments = []) {
  const payload = { p: plan, a: annotations.map(tupleOf) };
  if (attachments.length) payload.g = attachments.map((i) => [i.path, i.name]);
  if (annotations.some((a) => a.diffContext)) payload.d = annotations.map((a) => a.diffContext || null);
  if (annotations.some((a) => a.source)) payload.s = annotations.map((a) => a.source || null);
  return payload;
}

/** The name upstream derives from a bare image path: the last
 * `/`-separated segment without its final `.ext`, or "image". */
function nameFromPath(path) {
  const last = path.split("/").pop();
  const dot = last.lastIndexOf(".");
  const stem = dot >= 0 && dot + 1 < last.length ? last.slice(0, dot) : last;
  return stem || "image";
}

/** `[path, name]` or a bare path (old form) → `{path, name}`, or null for
 * an entry without a string path (skipped, as the CLI does). */
export function imageOf(image) {
  if (typeof image === "string") return { path: image, name: nameFromPath(image) };
  if (Array.isArray(image) && typeof image[0] === "string") {
    return { path: image[0], name: typeof image[1] === "string" ? image[1] : nameFromPath(image[0]) };
  }
  return null;
}

/** An images slot (or `g`) as `{path, name}`s; undefined when none. */
export function imagesOf(images) {
  if (!Array.isArray(images)) return undefined;
  const out = images.map(imageOf).filter(Boolean);
  return out.length ? out : undefined;
}

/** `url` as the `&paste=` value: btoa with `+/` → `-_`, no padding. */
export function pasteParam(url) {
  return btoa(url).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The short link of paste `id` under `base`, keyed by `key`. */
export function shortUrl(base, id, key, pasteApi) {
  let url = `${base.replace(/\/+$/, "")}/p/${id}#key=${key}`;
  if (pasteApi && pasteApi.replace(/\/+$/, "") !== DEFAULT_PASTE_API) url += `&paste=${pasteParam(pasteApi)}`;
  return url;
}

/** What an Import Review input names (docs/wire-format.md, "Links"): `{short: {id, fragment}}`
 * or `{hash}`; throws upstream's messages for neither. */
export function parseImport(input) {
  const text = input.trim();
  const short = /\/p\/([A-Za-z0-9]{6,16})(?:#([^?]*))?(?:\?|$)/.exec(text);
  if (short) return { short: { id: short[1], fragment: short[2] ?? "" } };
  const at = text.indexOf("#");
  if (at < 0) throw new Error("Invalid share URL: no hash fragment or short link found");
  const hash = text.slice(at + 1).split("?")[0];
  if (!hash) throw new Error("Invalid share URL: empty hash");
  return { hash };
}
