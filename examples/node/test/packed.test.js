// The packed form against a running server (QUEENS_ADDR=host:port): every request feature
// gives the same boards, record for record, as packed n-byte records as in Board messages;
// the client's reading of them (packedBatches, packedToText, --packed files) is exact.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');
const { download, packedBatches, packedToText, packedToBoards } = require('../client.js');
const { collect, assertComplete, runCli, onRunningServer } = require('./helpers.js');

const addr = process.env.QUEENS_ADDR;
let client;
let dir;
onRunningServer('queens-node-packed-', (opened) => ({ client, dir } = opened));

/** Board messages as packed records (n bytes each). */
function boardsToPacked(boards) {
  return Buffer.from(boards.flatMap((board) => board.columns));
}

/**
 * The Board stream's and the packed stream's responses for request (compact either way),
 * from the package's raw calls (`rpc`: the messages as sent).
 */
async function bothForms(request) {
  const init = { ...request, limit: BigInt(request.limit ?? 0) };
  const boards = await collect(client.rpc.enumerate({ ...init, compact: true }));
  const packed = await collect(client.rpc.enumerate({ ...init, packed: true }));
  return { boards, packed };
}

/** The records of both forms' responses, checked response by response; returns the bytes. */
function assertSameRecords({ boards, packed }, n, batchSize) {
  assert.ok(boards.every((reply) => reply.packed.length === 0), 'a Board response carries packed bytes');
  assert.ok(packed.every((reply) => reply.boards.length === 0), 'a packed response carries Board messages');
  assert.ok(packed.every((reply) => reply.packed.length % n === 0), 'a packed response is not whole records');
  if (batchSize) {
    assert.ok(packed.every((reply) => reply.packed.length <= batchSize * n), `a response above ${batchSize} boards`);
    assert.ok(boards.every((reply) => reply.boards.length <= batchSize));
  }
  const fromBoards = Buffer.concat(boards.map((reply) => boardsToPacked(reply.boards)));
  const fromPacked = Buffer.concat(packed.map((reply) => reply.packed));
  assert.equal(fromPacked.length, fromBoards.length, 'both forms hold as many boards');
  // Record for record: the first differing board, if any, is named.
  for (let i = 0; i < fromBoards.length; i += n) {
    const [a, b] = [fromPacked.subarray(i, i + n), fromBoards.subarray(i, i + n)];
    assert.ok(a.equals(b), `board ${i / n}: packed ${[...a]} but Board ${[...b]}`);
  }
  return fromPacked;
}

const N32_START = [...Array.from({ length: 16 }, (_, i) => 2 * i + 1), ...Array.from({ length: 16 }, (_, i) => 2 * i)];

const CASES = [
  ['the whole search', { n: 10 }, 724],
  ['fundamental', { n: 10, fundamental: true }, 92],
  ['one fixed queen', { n: 10, fixed: [{ row: 2, column: 5 }] }],
  ['two fixed queens', { n: 10, fixed: [{ row: 0, column: 1 }, { row: 9, column: 4 }] }],
  ['shard 1/3', { n: 10, shard: { index: 1, count: 3 } }],
  ['start_after a vector that is no solution', { n: 10, startAfter: [4, 0, 0, 0, 0, 0, 0, 0, 0, 0] }],
  ['limit 100', { n: 10, limit: 100 }, 100],
  ['batch_size 1', { n: 10, batchSize: 1, limit: 50 }, 50],
  ['batch_size 7', { n: 10, batchSize: 7 }, 724],
  ['batch_size 64', { n: 10, batchSize: 64 }, 724],
  // (The first boards of n = 32 take the search a while; after this vector they come at once.)
  ['n = 32 after a vector far into the search', { n: 32, startAfter: N32_START, limit: 300, batchSize: 50 }, 300],
  [
    'fixed, shard, start_after, limit and batch_size together',
    {
      n: 10,
      fixed: [{ row: 1, column: 3 }],
      shard: { index: 0, count: 2 },
      startAfter: [2, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      limit: 9,
      batchSize: 4,
    },
  ],
  [
    'fundamental, shard, start_after and limit together',
    { n: 11, fundamental: true, shard: { index: 1, count: 4 }, startAfter: [3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], limit: 20, batchSize: 3 },
  ],
];

for (const [name, request, expected] of CASES) {
  test(`packed equals the Board stream record for record: ${name}`, async () => {
    const forms = await bothForms(request);
    const bytes = assertSameRecords(forms, request.n, request.batchSize);
    assert.ok(bytes.length > 0, 'the case streams no board at all');
    if (expected !== undefined) assert.equal(bytes.length / request.n, expected);
    // And they are solutions, distinct and in increasing order, after start_after.
    assertComplete(packedToText(bytes, request.n).toString(), request.n, bytes.length / request.n);
    if (request.startAfter) assert.ok(Buffer.compare(bytes.subarray(0, request.n), Buffer.from(request.startAfter)) > 0);
  });
}

test('the packed shards of n = 10 make up the whole stream', async () => {
  const whole = Buffer.concat((await collect(client.rpc.enumerate({ n: 10, packed: true }))).map((r) => r.packed));
  const records = [];
  for (let index = 0; index < 3; index++) {
    const part = await collect(client.rpc.enumerate({ n: 10, packed: true, shard: { index, count: 3 } }));
    for (const board of packedToBoards(Buffer.concat(part.map((r) => r.packed)), 10)) records.push(board.join(','));
  }
  records.sort((a, b) => Buffer.compare(Buffer.from(a.split(',').map(Number)), Buffer.from(b.split(',').map(Number))));
  assert.equal(records.join('\n') + '\n', packedToText(whole, 10).toString());
});

test('a batch_size beyond the 4 MiB cap: packed messages stay within it and match the Board stream', async () => {
  const request = { n: 16, limit: 600000, batchSize: 4294967295 };
  const forms = await bothForms(request);
  const largest = Math.max(...forms.packed.map((reply) => reply.packed.length));
  assert.ok(largest <= 4 << 20, `a message of ${largest} bytes`);
  assert.equal(assertSameRecords(forms, 16).length, 600000 * 16);
});

test('packedToText writes what columns.join does, one- two- and three-digit columns alike', async () => {
  const replies = await collect(client.rpc.enumerate({ n: 12, compact: true, limit: 300n }));
  const joined = replies.flatMap((r) => r.boards.map((b) => b.columns.join(',') + '\n')).join('');
  const bytes = Buffer.concat(replies.map((r) => boardsToPacked(r.boards)));
  assert.equal(packedToText(bytes, 12).toString(), joined);
  assert.equal(packedToText(Uint8Array.from([0, 9, 10, 99, 100, 255]), 3).toString(), '0,9,10\n99,100,255\n');
  assert.equal(packedToText(new Uint8Array(0), 5).length, 0);
});

test('packedBatches reads the packed form, or Board messages when asked (as from an older server)', async () => {
  for (const packed of [true, false]) {
    const batches = [];
    for await (const bytes of packedBatches(client, { n: 10, batchSize: 100, limit: 250 }, { packed })) {
      batches.push(Buffer.from(bytes));
    }
    // Batches of at most 100 boards (the server sends a partly filled one after a moment).
    assert.ok(batches.every((b) => b.length > 0 && b.length <= 100 * 10 && b.length % 10 === 0));
    assertComplete(packedToText(Buffer.concat(batches), 10).toString(), 10, 250);
  }
});

test('download writes text or raw records, and resumes after a start', async () => {
  let text = '';
  assert.equal(await download(client, { n: 10, batchSize: 64 }, async (chunk) => void (text += chunk)), 724);
  assertComplete(text, 10, 724);
  const raw = [];
  assert.equal(await download(client, { n: 10 }, async (chunk) => void raw.push(Buffer.from(chunk)), { raw: true }), 724);
  assert.equal(packedToText(Buffer.concat(raw), 10).toString(), text);
  const lines = text.trim().split('\n');
  let rest = '';
  const startAfter = lines[99].split(',').map(Number);
  assert.equal(await download(client, { n: 10, limit: 5 }, async (chunk) => void (rest += chunk), { startAfter }), 5);
  assert.equal(rest, lines.slice(100, 105).join('\n') + '\n');
});

test('the command line writes raw n-byte records with --packed, and resumes such a file', async () => {
  const text = await runCli(['--addr', addr, 'enumerate', '10', '--quiet']);
  const raw = await runCli(['--addr', addr, 'enumerate', '10', '--quiet', '--packed']);
  assert.equal(raw.code, 0, raw.stderr);
  assert.equal(raw.bytes.length, 7240);
  assert.equal(packedToText(raw.bytes, 10).toString(), text.stdout);
  // A file cut off after 100 boards and 3 bytes of the next resumes after board 100.
  const file = path.join(dir, 'n10.bin');
  fs.writeFileSync(file, raw.bytes.subarray(0, 1003));
  const resumed = await runCli(['--addr', addr, 'enumerate', '10', '--packed', '--out', file, '--quiet']);
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.match(resumed.stderr, /holds 100 boards; resuming after /);
  assert.ok(fs.readFileSync(file).equals(raw.bytes));
});
