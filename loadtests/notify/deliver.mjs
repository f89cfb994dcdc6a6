// Notification delivery timing against a running planshare-server with
// PLANSHARE_NOTIFY_PRIVATE_TARGETS=true (loadtests/notify-timing starts it).
//
//   node deliver.mjs latency <base> <subs> <events> [<per second>]
//     A review with <subs> webhook subscriptions on this process's receiver;
//     <events> comment PUTs one after another (at most <per second> a
//     second when given). Per delivery: receiver time − the event's
//     timestamp (both this machine's clock). Prints JSON.
//   node deliver.mjs backlog <base> <pid> <subs> <events>
//     The same with every target refusing connections: the outbox fills
//     with <subs>×<events> rows that back off. Prints the server's RSS and a
//     GET of the review (median of 200) before and while the backlog
//     stands, and the PUTs' median with and without subscriptions.
import http from "node:http";
import fs from "node:fs";
import net from "node:net";

const [mode, base, ...rest] = process.argv.slice(2);
const digest = "d".repeat(43);

async function call(method, path, token, body) {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function review() {
  const res = await fetch(base + "/api/v1/reviews", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ version: { data: "plan-ciphertext", digest } }),
  });
  const made = await res.json();
  const link = await call("POST", `/api/v1/reviews/${made.id}/links`, made.ownerToken, {});
  return { id: made.id, owner: made.ownerToken, reviewer: link.token };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const median = (xs) => quantile([...xs].sort((a, b) => a - b), 0.5);

async function timedPuts(r, events, perSecond = 0) {
  const took = [];
  const begun = performance.now();
  for (let i = 0; i < events; i++) {
    if (perSecond > 0) {
      const due = begun + (i * 1000) / perSecond;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((res) => setTimeout(res, wait));
    }
    const t0 = performance.now();
    await call("PUT", `/api/v1/reviews/${r.id}/comments`, r.reviewer, {
      name: "Dana", version: 1, data: `comment-set-ciphertext-${i}-${"x".repeat(600)}`,
    });
    took.push(performance.now() - t0);
  }
  return took;
}

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function rssKiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
}

async function getTimes(r, n) {
  const took = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call("GET", `/api/v1/reviews/${r.id}`, r.owner);
    took.push(performance.now() - t0);
  }
  return took;
}

if (mode === "latency") {
  const [subs, events, perSecond = 0] = rest.map(Number);
  const lat = [];
  let first = 0, last = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const now = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString());
      lat.push(now - Date.parse(body.timestamp));
      if (!first) first = now;
      last = now;
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const port = server.address().port;
  const r = await review();
  for (let i = 0; i < subs; i++) {
    await call("POST", `/api/v1/reviews/${r.id}/subscriptions`, r.owner, { kind: "webhook", url: `http://127.0.0.1:${port}/r${i}` });
  }
  const started = Date.now();
  const puts = await timedPuts(r, events, perSecond);
  const wrote = Date.now();
  const want = subs * events;
  const deadline = Date.now() + 600_000;
  while (lat.length < want && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  lat.sort((a, b) => a - b);
  console.log(JSON.stringify({
    subscriptions: subs, events, per_second: perSecond || "as fast as answered", deliveries: lat.length, expected: want,
    latency_ms: { p50: quantile(lat, 0.5), p90: quantile(lat, 0.9), p99: quantile(lat, 0.99), max: lat.at(-1) },
    put_ms_median: median(puts),
    writes_s: (wrote - started) / 1000,
    drained_s: (last - started) / 1000,
    deliveries_per_s: Math.round(lat.length / ((last - first) / 1000 || 1)),
  }));
  server.close();
} else if (mode === "backlog") {
  const [pid, subs, events] = rest.map(Number);
  const plain = await review();
  const putsWithout = await timedPuts(plain, 200);
  const r = await review();
  const dead = await freePort(); // nothing listens: every attempt is refused
  for (let i = 0; i < subs; i++) {
    await call("POST", `/api/v1/reviews/${r.id}/subscriptions`, r.owner, { kind: "webhook", url: `http://127.0.0.1:${dead}/r${i}` });
  }
  const rssBefore = rssKiB(pid);
  const getBefore = median(await getTimes(r, 200));
  const putsWith = await timedPuts(r, events);
  const rssFilled = rssKiB(pid);
  const samples = [];
  for (let i = 0; i < 6; i++) {
    await new Promise((res) => setTimeout(res, 5000));
    samples.push({ s: (i + 1) * 5, rss_kib: rssKiB(pid), get_ms_median: median(await getTimes(r, 100)) });
  }
  console.log(JSON.stringify({
    subscriptions: subs, events, rows: subs * events,
    rss_kib: { before: rssBefore, after_writes: rssFilled, then: samples.map((s) => s.rss_kib) },
    get_review_ms_median: { before: getBefore, during: samples.map((s) => s.get_ms_median) },
    put_ms_median: { without_subscriptions: median(putsWithout), with: median(putsWith.slice(0, 200)) },
  }));
}
