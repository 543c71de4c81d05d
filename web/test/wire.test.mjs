// gRPC-Web on the server's port, from Node without a browser, checked on the wire: the
// framing of unary and streaming answers (message frames, then one trailers frame), over
// HTTP/1.1 and HTTP/2, the text variant, errors as trailers-only answers, deadlines, the
// CORS preflight for a named origin and for one not named, bearer tokens, and the page's
// files. The servers come from the Rust test that runs this file:
//   QUEENS_ADDR        a server with --cors-origin http://allowed.example
//   QUEENS_TOKEN_ADDR  a server with --auth-tokens, QUEENS_TOKEN one of its tokens

import assert from "node:assert/strict";
import { test } from "node:test";
import { call, callH2, decode, encode, frame, frames, status } from "./grpcweb.mjs";

const base = `http://${process.env.QUEENS_ADDR}`;
const tokenBase = `http://${process.env.QUEENS_TOKEN_ADDR}`;
const token = process.env.QUEENS_TOKEN;
const ALLOWED = "http://allowed.example";

/** The attack rule, checked the plain way. */
function isSolution(columns) {
  const n = columns.length;
  for (let a = 0; a < n; a++) {
    for (let b = a + 1; b < n; b++) {
      if (columns[a] === columns[b] || Math.abs(columns[a] - columns[b]) === b - a) return false;
    }
  }
  return columns.every((c) => c >= 0 && c < n);
}

/** The packed records of every message of an Enumerate answer, as arrays of columns. */
function boards(messages, n) {
  const all = Buffer.concat(messages.map((m) => decode(m)[2]?.[0] ?? Buffer.alloc(0)));
  assert.equal(all.length % n, 0);
  const out = [];
  for (let i = 0; i < all.length; i += n) out.push([...all.subarray(i, i + n)]);
  return out;
}

test("Count over HTTP/1.1: one message frame, then a trailers frame with grpc-status 0", async () => {
  const answer = await call(base, "Count", encode([[1, 8]]));
  assert.equal(answer.http, 200);
  assert.equal(answer.headers["content-type"], "application/grpc-web+proto");
  assert.equal(answer.messages.length, 1);
  const count = decode(answer.messages[0]);
  assert.equal(count[1][0], 92n);
  assert.equal(count[2][0], 12n);
  assert.equal(answer.trailers["grpc-status"], "0");
  assert.equal(answer.rest.length, 0, "nothing after the trailers frame");
});

test("Count over HTTP/2 (prior knowledge): the same frames", async () => {
  const answer = await callH2(base, "Count", encode([[1, 8], [2, [[1, 0], [2, 0]]]]));
  assert.equal(answer.http, 200);
  assert.equal(answer.headers["content-type"], "application/grpc-web+proto");
  assert.equal(decode(answer.messages[0])[1][0], 4n, "n = 8 with a queen at (0, 0)");
  assert.equal(answer.trailers["grpc-status"], "0");
});

test("Enumerate n = 6 packed: the README's four boards", async () => {
  const answer = await call(base, "Enumerate", encode([[1, 6], [9, 1]]));
  assert.deepEqual(boards(answer.messages, 6), [
    [1, 3, 5, 0, 2, 4],
    [2, 5, 1, 4, 0, 3],
    [3, 0, 4, 1, 5, 2],
    [4, 2, 0, 5, 3, 1],
  ]);
  assert.equal(answer.trailers["grpc-status"], "0");
});

test("Enumerate n = 10 packed in batches of 100: a message frame per batch, 724 boards in order", async () => {
  const answer = await call(base, "Enumerate", encode([[1, 10], [7, 100], [9, 1]]));
  assert.ok(answer.messages.length >= 8, `${answer.messages.length} messages`);
  for (const m of answer.messages) assert.ok(boards([m], 10).length <= 100);
  const all = boards(answer.messages, 10);
  assert.equal(all.length, 724);
  assert.ok(all.every(isSolution));
  const before = (a, b) => {
    const r = a.findIndex((c, i) => c !== b[i]);
    return r >= 0 && a[r] < b[r];
  };
  for (let i = 1; i < all.length; i++) assert.ok(before(all[i - 1], all[i]), `board ${i} in order`);
  assert.equal(status(answer).code, 0);
});

test("Enumerate n = 8 over HTTP/2, with rows: 92 Board messages", async () => {
  const answer = await callH2(base, "Enumerate", encode([[1, 8]]));
  const rows = answer.messages.flatMap((m) => decode(m)[1] ?? []);
  assert.equal(rows.length, 92);
  const first = decode(rows[0]);
  assert.deepEqual(first[2].map(String), ["Q.......", "....Q...", ".......Q", ".....Q..", "..Q.....", "......Q.", ".Q......", "...Q...."]);
  assert.equal(answer.trailers["grpc-status"], "0");
});

test("CountProgress n = 12 ends with done and the exact count", async () => {
  const answer = await call(base, "CountProgress", encode([[1, 12]]));
  const last = decode(answer.messages.at(-1));
  assert.equal(last[1][0], 14200n);
  assert.equal(last[6][0], 1n, "done");
  assert.equal(answer.trailers["grpc-status"], "0");
});

test("grpc-web-text: the same answer, base64-encoded", async () => {
  const response = await fetch(`${base}/queens.v1.Queens/Count`, {
    method: "POST",
    headers: { "content-type": "application/grpc-web-text", accept: "application/grpc-web-text" },
    body: frame(0, encode([[1, 6]])).toString("base64"),
  });
  assert.match(response.headers.get("content-type"), /^application\/grpc-web-text/);
  const answer = frames(Buffer.from(await response.text(), "base64"));
  assert.equal(decode(answer.messages[0])[1][0], 4n);
  assert.equal(answer.trailers["grpc-status"], "0");
});

test("a bad request is INVALID_ARGUMENT naming its field, in the headers (trailers-only)", async () => {
  const answer = await call(base, "Count", encode([[1, 0]]));
  assert.equal(answer.http, 200);
  assert.equal(answer.messages.length, 0);
  const { code, message } = status(answer);
  assert.equal(code, 3);
  assert.match(message, /^n: 0 is not a supported board size/);
  const both = await call(base, "Enumerate", encode([[1, 8], [2, 1], [3, [[1, 0], [2, 0]]]]));
  assert.equal(status(both).code, 3);
  assert.match(status(both).message, /^fundamental: /);
});

test("a deadline (grpc-timeout) ends a long stream with DEADLINE_EXCEEDED", async () => {
  const started = Date.now();
  const answer = await call(base, "Enumerate", encode([[1, 18], [9, 1]]), { "grpc-timeout": "300m" });
  assert.equal(status(answer).code, 4, JSON.stringify(status(answer)));
  assert.ok(Date.now() - started < 10000);
});

test("CORS: a named origin's preflight is answered, and its calls expose grpc-status", async () => {
  const preflight = await fetch(`${base}/queens.v1.Queens/Count`, {
    method: "OPTIONS",
    headers: {
      origin: ALLOWED,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type,x-grpc-web,x-user-agent,authorization,grpc-timeout",
    },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("access-control-allow-origin"), ALLOWED);
  assert.equal(preflight.headers.get("access-control-allow-methods"), "POST");
  const allowed = preflight.headers.get("access-control-allow-headers").split(/,\s*/);
  for (const h of ["content-type", "x-grpc-web", "x-user-agent", "authorization", "grpc-timeout"]) {
    assert.ok(allowed.includes(h), `${h} allowed`);
  }
  const answer = await call(base, "Count", encode([[1, 0]]), { origin: ALLOWED });
  assert.equal(answer.headers["access-control-allow-origin"], ALLOWED);
  const exposed = answer.headers["access-control-expose-headers"].split(/,\s*/);
  assert.ok(exposed.includes("grpc-status") && exposed.includes("grpc-message"));
  assert.equal(status(answer).code, 3);
});

test("CORS: an origin not named gets no allowance, in the preflight or on a call", async () => {
  const preflight = await fetch(`${base}/queens.v1.Queens/Count`, {
    method: "OPTIONS",
    headers: { origin: "http://elsewhere.example", "access-control-request-method": "POST" },
  });
  assert.equal(preflight.status, 403);
  assert.equal(preflight.headers.get("access-control-allow-origin"), null);
  const answer = await call(base, "Count", encode([[1, 8]]), { origin: "http://elsewhere.example" });
  assert.equal(answer.headers["access-control-allow-origin"], undefined);
  assert.equal(answer.headers["access-control-expose-headers"], undefined);
});

test("tokens: none or a wrong one is UNAUTHENTICATED; the right one is answered", async () => {
  const none = await call(tokenBase, "Count", encode([[1, 8]]));
  assert.equal(status(none).code, 16);
  assert.match(status(none).message, /requires a bearer token/);
  const wrong = await call(tokenBase, "Count", encode([[1, 8]]), { authorization: "Bearer not-the-token-at-all" });
  assert.equal(status(wrong).code, 16);
  const right = await call(tokenBase, "Enumerate", encode([[1, 8], [9, 1]]), { authorization: `Bearer ${token}` });
  assert.equal(boards(right.messages, 8).length, 92);
  assert.equal(status(right).code, 0);
  // The page itself needs no token: it asks for one when the server does.
  const settings = await (await fetch(`${tokenBase}/settings.json`)).json();
  assert.equal(settings.tokens, true);
});

test("the page: its document, script and style sheet, and the server's settings", async () => {
  const page = await fetch(`${base}/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type"), /^text\/html/);
  assert.match(page.headers.get("content-security-policy"), /default-src 'none'/);
  const html = await page.text();
  assert.match(html, /src="app\.js"/);
  const script = await fetch(`${base}/app.js`);
  assert.match(script.headers.get("content-type"), /^text\/javascript/);
  assert.ok((await script.text()).includes("application/grpc-web+proto"));
  const settings = await (await fetch(`${base}/settings.json`)).json();
  assert.deepEqual(settings, { max_n: 32, tokens: false });
  assert.equal((await fetch(`${base}/nothing-here`)).status, 404);
});
