// The installed package against real servers: run from a project that installed the packed
// tarball (`npm install queens-client-*.tgz`), so it imports the package by its name, as a
// user would. tests/node_package.rs copies it there and starts the servers:
//   QUEENS_ADDR        a plain server
//   QUEENS_TOKEN_ADDR  a server with --auth-tokens, QUEENS_TOKEN one of its tokens
//   QUEENS_TLS_ADDR    a server with a self-signed certificate, QUEENS_TLS_CA that certificate
//   QUEENS_COMPRESS_ADDR  a server that offers gzip

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { after, test } from "node:test";
import { QueensError, Status, createClient, decodeFrontCoded } from "queens-client";

const client = createClient(process.env.QUEENS_ADDR);
after(() => client.close());

/** The attack rule, checked the plain way. */
function isSolution(columns) {
  const n = columns.length;
  for (let a = 0; a < n; a++) {
    if (columns[a] < 0 || columns[a] >= n) return false;
    for (let b = a + 1; b < n; b++) {
      if (columns[a] === columns[b] || Math.abs(columns[a] - columns[b]) === b - a) return false;
    }
  }
  return true;
}

/** Whether board a comes before board b in lexicographic order. */
function before(a, b) {
  const r = a.findIndex((c, i) => c !== b[i]);
  return r >= 0 && a[r] < b[r];
}

/** Resolves to the QueensError that promise (or iterating an async iterator) rejects with. */
async function failure(work) {
  try {
    await work();
  } catch (error) {
    assert.ok(error instanceof QueensError, `not a QueensError: ${error?.stack ?? error}`);
    assert.ok(error instanceof Error);
    return error;
  }
  assert.fail("the call succeeded");
}

test("count: 92 solutions and 12 classes for n = 8, as BigInts", async () => {
  assert.deepEqual(await client.count(8), { solutions: 92n, fundamental: 12n, turnFixed: undefined });
});

test("count with a fixed queen: fewer solutions, no fundamental", async () => {
  const counted = await client.count(8, { fixed: [[0, 0]] });
  assert.equal(counted.solutions, 4n);
  assert.equal(counted.fundamental, undefined);
  assert.equal((await client.count(8, { fixed: [{ row: 0, column: 0 }] })).solutions, 4n);
});

test("count by shards adds up to the whole", async () => {
  let sum = 0n;
  for (let index = 0; index < 3; index++) sum += (await client.count(10, { shard: { index, count: 3 } })).solutions;
  assert.equal(sum, 724n);
});

test("countProgress ends with done and the total", async () => {
  const updates = [];
  for await (const update of client.countProgress(12)) updates.push(update);
  const last = updates.at(-1);
  assert.equal(last.done, true);
  assert.equal(last.solutions, 14200n);
  assert.equal(last.fundamental, 1787n);
  assert.equal(last.subproblemsDone, last.subproblemsTotal);
  assert.ok(updates.slice(0, -1).every((u) => !u.done));
});

test("enumerate n = 10: Uint8Arrays of packed records, 724 valid boards in order", async () => {
  const n = 10;
  const boards = [];
  let messages = 0;
  for await (const bytes of client.enumerate(n, { batchSize: 100 })) {
    assert.ok(bytes instanceof Uint8Array);
    assert.equal(bytes.length % n, 0);
    assert.ok(bytes.length > 0 && bytes.length <= 100 * n, `a message of ${bytes.length} bytes`);
    messages += 1;
    for (let i = 0; i < bytes.length; i += n) boards.push(Array.from(bytes.subarray(i, i + n)));
  }
  assert.equal(boards.length, 724);
  assert.ok(messages >= 8, `${messages} messages`); // batches of at most 100 (a slow one is sent early)
  assert.ok(boards.every(isSolution));
  assert.ok(boards.every((board, i) => i === 0 || before(boards[i - 1], board)));
});

test("enumerate's options: limit, startAfter, fundamental, fixed", async () => {
  const all = [];
  for await (const board of client.boards(8)) all.push(board);
  assert.equal(all.length, 92);
  const some = [];
  for await (const board of client.boards(8, { startAfter: all[9], limit: 5 })) some.push(board);
  assert.deepEqual(some, all.slice(10, 15));
  let classes = 0;
  for await (const _ of client.boards(8, { fundamental: true })) classes += 1;
  assert.equal(classes, 12);
  const fixed = [];
  for await (const board of client.boards(8, { fixed: [[0, 0]] })) fixed.push(board);
  assert.deepEqual(fixed, all.filter((board) => board[0] === 0));
});

test("enumerate with packed: false reads Board messages into the same records", async () => {
  const records = async (options) => {
    const parts = [];
    for await (const bytes of client.enumerate(8, options)) parts.push(...bytes);
    return parts;
  };
  const packed = await records({});
  assert.equal(packed.length, 92 * 8);
  assert.deepEqual(await records({ packed: false, batchSize: 10 }), packed);
});

test("rpc: the raw calls, the response messages as sent", async () => {
  const replies = [];
  for await (const reply of client.rpc.enumerate({ n: 6, compact: true, batchSize: 3 })) replies.push(reply);
  assert.ok(replies.every((reply) => reply.packed.length === 0 && reply.boards.length <= 3));
  assert.deepEqual(
    replies.flatMap((reply) => reply.boards.map((board) => board.columns)),
    [
      [1, 3, 5, 0, 2, 4],
      [2, 5, 1, 4, 0, 3],
      [3, 0, 4, 1, 5, 2],
      [4, 2, 0, 5, 3, 1],
    ],
  );
});

test("a small windowBytes still streams every board", async () => {
  const narrow = createClient(process.env.QUEENS_ADDR, { windowBytes: 65535 });
  try {
    let boards = 0;
    for await (const bytes of narrow.enumerate(12, { batchSize: 4096 })) boards += bytes.length / 12;
    assert.equal(boards, 14200);
  } finally {
    narrow.close();
  }
});

test("boards: arrays of columns", async () => {
  const boards = [];
  for await (const board of client.boards(4)) boards.push(board);
  assert.deepEqual(boards, [
    [1, 3, 0, 2],
    [2, 0, 3, 1],
  ]);
});

test("an invalid n is INVALID_ARGUMENT, the field named", async () => {
  const counted = await failure(() => client.count(0));
  assert.equal(counted.code, Status.INVALID_ARGUMENT);
  assert.equal(counted.codeName, "INVALID_ARGUMENT");
  assert.match(counted.message, /\bn\b/);
  const streamed = await failure(async () => {
    for await (const _ of client.enumerate(99)) assert.fail("a batch of n = 99");
  });
  assert.equal(streamed.code, Status.INVALID_ARGUMENT);
  assert.match(streamed.message, /\bn\b/);
});

test("tokens: the right one is taken, a wrong one or none is UNAUTHENTICATED", async () => {
  const addr = process.env.QUEENS_TOKEN_ADDR;
  const good = createClient(addr, { token: process.env.QUEENS_TOKEN });
  const wrong = createClient(addr, { token: "not-a-token-of-this-server" });
  const none = createClient(addr);
  try {
    assert.equal((await good.count(8)).solutions, 92n);
    for (const refused of [wrong, none]) {
      const error = await failure(() => refused.count(8));
      assert.equal(error.code, Status.UNAUTHENTICATED);
      const streamed = await failure(async () => {
        for await (const _ of refused.enumerate(8)) assert.fail("a batch without a valid token");
      });
      assert.equal(streamed.code, Status.UNAUTHENTICATED);
    }
  } finally {
    [good, wrong, none].forEach((c) => c.close());
  }
});

test("TLS: https:// with the server's certificate as ca", async () => {
  const ca = readFileSync(process.env.QUEENS_TLS_CA);
  const secure = createClient(`https://${process.env.QUEENS_TLS_ADDR}`, { ca });
  try {
    assert.equal((await secure.count(8)).solutions, 92n);
  } finally {
    secure.close();
  }
});

test("no server: UNAVAILABLE", async () => {
  const nowhere = createClient("127.0.0.1:1");
  try {
    assert.equal((await failure(() => nowhere.count(8))).code, Status.UNAVAILABLE);
  } finally {
    nowhere.close();
  }
});

/**
 * A loopback proxy to `target` ("host:port") that counts the bytes coming back from it:
 * `{ address, received(), close() }`.
 */
async function countingProxy(target) {
  const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
  let received = 0;
  const sockets = new Set();
  const server = createServer((client) => {
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => sockets.delete(s));
    }
    upstream.on("data", (chunk) => {
      received += chunk.length;
    });
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${server.address().port}`,
    received: () => received,
    close: () => {
      sockets.forEach((s) => s.destroy());
      server.close();
    },
  };
}

/** Every packed byte of Enumerate of n through a client made with `options` (and `asked`). */
async function drain(address, n, options, asked = {}) {
  const drained = createClient(address, options);
  try {
    const parts = [];
    for await (const bytes of drained.enumerate(n, asked)) parts.push(Buffer.from(bytes));
    return Buffer.concat(parts);
  } finally {
    drained.close();
  }
}

test("compressed responses (gzip, the default) are the same boards in fewer bytes", async () => {
  const proxy = await countingProxy(process.env.QUEENS_COMPRESS_ADDR);
  try {
    const plain = await drain(proxy.address, 12, { acceptCompression: false });
    const plainBytes = proxy.received();
    assert.equal(plain.length, 14200 * 12);
    assert.ok(plainBytes >= plain.length, `uncompressed: ${plainBytes}`);
    const compressed = await drain(proxy.address, 12);
    const compressedBytes = proxy.received() - plainBytes;
    assert.ok(compressed.equals(plain), "the boards of the uncompressed stream");
    assert.ok(compressedBytes * 2 < plainBytes, `${compressedBytes} of ${plainBytes} bytes`);
  } finally {
    proxy.close();
  }
});

test("front-coded boards are the records in under a third of the bytes, compressed or not", async () => {
  const proxy = await countingProxy(process.env.QUEENS_COMPRESS_ADDR);
  try {
    const plain = await drain(proxy.address, 12, { acceptCompression: false });
    const plainBytes = proxy.received();
    const coded = await drain(proxy.address, 12, { acceptCompression: false }, { layout: "front-coded" });
    const codedBytes = proxy.received() - plainBytes;
    assert.ok(coded.equals(plain), "the records of the plain stream");
    assert.ok(codedBytes * 3 < plainBytes, `${codedBytes} of ${plainBytes} bytes`);
    const both = await drain(proxy.address, 12, {}, { layout: "front-coded" });
    assert.ok(both.equals(plain), "the records, under gzip too");
  } finally {
    proxy.close();
  }
});

test("front-coded boards equal the records however asked; a bad layout is a TypeError", async () => {
  const asks = [];
  for (let n = 1; n <= 11; n++) asks.push([n, {}]);
  asks.push([10, { batchSize: 7 }], [10, { batchSize: 1 }], [11, { fundamental: true }]);
  asks.push([11, { startAfter: [5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], limit: 300 }]);
  asks.push([11, { shard: { index: 2, count: 5 }, batchSize: 100 }], [10, { fixed: [{ row: 0, column: 3 }] }]);
  for (const [n, asked] of asks) {
    const records = await drain(process.env.QUEENS_ADDR, n, {}, asked);
    const coded = await drain(process.env.QUEENS_ADDR, n, {}, { ...asked, layout: "front-coded" });
    assert.ok(coded.equals(records), `n = ${n} ${JSON.stringify(asked)}`);
  }
  await assert.rejects(async () => {
    for await (const _ of client.enumerate(8, { layout: "rows" }));
  }, TypeError);
});

test("decodeFrontCoded: n = 4's two boards; malformed data is a RangeError", () => {
  // Prefixes 0 0; column 0: 1 2; column 1: 3 0; column 2: 0 3 (column 3 follows).
  const good = Uint8Array.of(0x00, 0x12, 0x30, 0x03);
  assert.deepEqual(Array.from(decodeFrontCoded(4, 2, good)), [1, 3, 0, 2, 2, 0, 3, 1]);
  for (const [boards, data] of [
    [2, good.subarray(0, 3)],
    [3, good],
    [1, good],
    [2, Uint8Array.of(0x10, 0x12, 0x30, 0x03)],
    [2, Uint8Array.of(0x00, 0x12, 0x34, 0x03)],
    [1, new Uint8Array(0)],
  ]) {
    assert.throws(() => decodeFrontCoded(4, boards, data), RangeError);
  }
});
