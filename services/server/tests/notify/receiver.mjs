// A notification receiver for planshare's tests. Every request it gets is
// written to stdout as one JSON line; a request with Standard Webhooks
// headers is verified with the `standardwebhooks` library against the
// secret the test wrote for its path (secrets file: {"/path": "whsec_…"}).
//
//   node receiver.mjs <port> <secrets.json>
//
// How it answers depends on the path's first segment:
//   /ok…         204
//   /fail-once…  500 to the first request of each webhook-id, then 204
//   /hang-once…  no answer to the first request of each webhook-id, then 204
//   /hang…       never answers
//   /gone…       410
//   /redirect…   302 to /ok-redirected on this receiver
import http from 'node:http';
import fs from 'node:fs';
import { Webhook } from 'standardwebhooks';

const port = Number(process.argv[2]);
const secretsFile = process.argv[3];
const seen = new Map();

function log(line) {
  process.stdout.write(JSON.stringify(line) + '\n');
}

function secretFor(path) {
  try {
    return JSON.parse(fs.readFileSync(secretsFile, 'utf8'))[path];
  } catch {
    return undefined;
  }
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url, 'http://receiver').pathname;
    const id = req.headers['webhook-id'] ?? null;
    let verified = null;
    let error = null;
    if (id !== null) {
      const secret = secretFor(path);
      try {
        new Webhook(secret).verify(body, {
          'webhook-id': id,
          'webhook-timestamp': req.headers['webhook-timestamp'],
          'webhook-signature': req.headers['webhook-signature'],
        });
        verified = true;
      } catch (e) {
        verified = false;
        error = String(e && e.message);
      }
    }
    const key = `${path} ${id ?? body}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    log({
      path, id, n, verified, error, body, at: Date.now(),
      contentType: req.headers['content-type'] ?? null,
      title: req.headers.title ?? null,
      click: req.headers.click ?? null,
    });
    if (path.startsWith('/hang-once') && n === 1) return;
    if (path.startsWith('/hang') && !path.startsWith('/hang-once')) return;
    if (path.startsWith('/fail-once') && n === 1) {
      res.writeHead(500);
      res.end('not yet');
      return;
    }
    if (path.startsWith('/gone')) {
      res.writeHead(410);
      res.end();
      return;
    }
    if (path.startsWith('/redirect')) {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/ok-redirected` });
      res.end();
      return;
    }
    res.writeHead(204);
    res.end();
  });
});

server.listen(port, '127.0.0.1', () => log({ ready: true }));
