// Fills a review with threads for loadtests/threads-timing: WRITERS writers
// (the owner and WRITERS - 1 reviewer links), each with ROOTS annotations
// (thread roots, with ids) and, for every root of the review, REPLIES
// replies spread over the writers — every set sealed with the review key
// exactly as the CLI and the portal seal them: b64url(IV ‖ AES-GCM(key, IV,
// b64url(deflate-raw(utf8(JSON)))) ‖ tag).
//
//   node seed.mjs '<owner link>' '<reviewer link>'... [--roots 200] [--replies 3] [--plain]
//
// `--plain`: the same annotations as sets without threads (no ids, no
// replies), as a client before threads wrote them: the reference.
// Prints `{"review", "threads", "replies", "setBytes"}` on stdout.

import { createCipheriv, randomBytes } from "node:crypto";
import { deflateRawSync } from "node:zlib";

const args = process.argv.slice(2);
const option = (name, dflt) => {
  const at = args.indexOf(name);
  if (at < 0) return dflt;
  const value = Number(args[at + 1]);
  args.splice(at, 2);
  return value;
};
const plain = args.includes("--plain");
if (plain) args.splice(args.indexOf("--plain"), 1);
const ROOTS = option("--roots", 200);
const REPLIES = option("--replies", 3);
const links = args;

const b64url = (buf) => Buffer.from(buf).toString("base64url");
function parse(link) {
  const url = new URL(link);
  const fragment = new URLSearchParams(url.hash.slice(1));
  const api = fragment.get("paste") ?? url.origin;
  return { api, id: url.pathname.split("/").pop(), key: Buffer.from(fragment.get("key"), "base64url"), token: fragment.get("t") };
}
function seal(key, json) {
  const inner = Buffer.from(b64url(deflateRawSync(Buffer.from(json, "utf8"))), "utf8");
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(inner), cipher.final()]);
  return b64url(Buffer.concat([iv, body, cipher.getAuthTag()]));
}
const id12 = () => b64url(randomBytes(9));

const writers = links.map(parse);
const { api, id } = writers[0];
const rootIds = writers.map(() => Array.from({ length: ROOTS }, id12));
const all = rootIds.flat();
let replies = 0, setBytes = 0;
for (const [w, writer] of writers.entries()) {
  const a = rootIds[w].map((_, i) => ["C", `change number ${i} `, `comment ${i} from writer ${w}: why this way and not another?`, null, null]);
  // This writer's share of the replies: reply r of root k is written by
  // writer (k + r + 1) mod WRITERS.
  const mine = [];
  all.forEach((root, k) => {
    for (let r = 0; r < REPLIES; r++) {
      if ((k + r + 1) % writers.length !== w) continue;
      mine.push({ id: id12(), to: root, text: `reply ${r} to thread ${k}: measured, see the notes`, at: 1765100000000 + k * 10 + r });
    }
  });
  replies += mine.length;
  const set = plain ? { v: 1, a } : { v: 1, a, ids: rootIds[w], replies: mine, states: [] };
  if (plain) replies -= mine.length;
  const data = seal(writer.key, JSON.stringify(set));
  setBytes += data.length;
  const response = await fetch(`${api}/api/v1/reviews/${id}/comments`, {
    method: "PUT",
    headers: { authorization: `Bearer ${writer.token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: `writer ${w}`, version: 1, data }),
  });
  if (response.status !== 200) throw new Error(`PUT as writer ${w}: ${response.status} ${await response.text()}`);
}
console.log(JSON.stringify({ review: id, threads: all.length, replies, setBytes }));
