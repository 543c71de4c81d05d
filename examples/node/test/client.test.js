// The Node example against a running server (QUEENS_ADDR=host:port; `cargo test` starts one
// in tests/node_client.rs): the n = 10 stream, Count, resuming a file, errors, the CLI.
'use strict';

const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');
const { Status } = require('queens-client');
const { count, download, readResumePoint } = require('../client.js');
const { assertComplete, onRunningServer } = require('./helpers.js');

const addr = process.env.QUEENS_ADDR;
let client;
let dir;
onRunningServer('queens-node-', (opened) => ({ client, dir } = opened));

test('n = 10 streams 724 boards in order, in batches of at most 64', async () => {
  const replies = [];
  for await (const reply of client.rpc.enumerate({ n: 10, compact: true, batchSize: 64 })) replies.push(reply);
  assert.ok(replies.every((reply) => reply.boards.length <= 64));
  assert.equal(Math.max(...replies.map((reply) => reply.boards.length)), 64);
  const text = replies.flatMap((reply) => reply.boards.map((b) => b.columns.join(',') + '\n')).join('');
  assertComplete(text, 10, 724);
});

test('download writes the n = 10 boards as they arrive', async () => {
  let text = '';
  let seen = 0;
  const write = async (chunk) => void (text += chunk);
  const written = await download(client, { n: 10, batchSize: 64 }, write, { onBoards: (k) => (seen += k) });
  assert.equal(written, 724);
  assert.equal(seen, 724);
  assertComplete(text, 10, 724);
});

test('a download resumes from its file, dropping a torn last line', async () => {
  const file = path.join(dir, 'n10.txt');
  let first = '';
  await download(client, { n: 10, limit: 100 }, async (chunk) => void (first += chunk));
  fs.writeFileSync(file, first + '9,7,');
  const fd = fs.openSync(file, 'a+');
  const { last, done } = readResumePoint(fd, 10);
  assert.equal(done, 100);
  assert.deepEqual(last, first.trim().split('\n').pop().split(',').map(Number));
  const write = async (chunk) => void fs.writeSync(fd, chunk);
  await download(client, { n: 10, batchSize: 64 }, write, { startAfter: last });
  fs.closeSync(fd);
  assertComplete(fs.readFileSync(file, 'utf8'), 10, 724);
});

test('Count n = 8: 92 solutions in 12 classes, as exact BigInts', async () => {
  assert.deepEqual(await count(client, { n: 8 }), { solutions: 92n, fundamental: 12n });
  // Present even when zero: n = 3 has no solution.
  assert.deepEqual(await count(client, { n: 3 }), { solutions: 0n, fundamental: 0n });
});

test('Count with fixed queens leaves fundamental out', async () => {
  const counted = await count(client, { n: 5, fixed: [{ row: 0, column: 0 }] });
  assert.deepEqual(counted, { solutions: 2n, fundamental: undefined });
});

test('a bad request is INVALID_ARGUMENT naming the field', async () => {
  await assert.rejects(
    count(client, { n: 0 }),
    (error) => error.code === Status.INVALID_ARGUMENT && error.message.startsWith('n: '),
  );
  await assert.rejects(
    download(client, { n: 4 }, async () => {}, { startAfter: [0, 1] }),
    (error) => error.code === Status.INVALID_ARGUMENT && error.message.startsWith('start_after: '),
  );
});

function runCli(...args) {
  return new Promise((resolve) => {
    const script = path.join(__dirname, '..', 'client.js');
    execFile(process.execPath, [script, '--addr', addr, ...args], { timeout: 60000 }, (error, stdout, stderr) =>
      resolve({ code: error ? error.code : 0, stdout, stderr }),
    );
  });
}

test('the command line counts, streams and resumes', async () => {
  assert.deepEqual(await runCli('count', '8'), { code: 0, stdout: 'solutions: 92\nfundamental: 12\n', stderr: '' });
  assert.equal((await runCli('enumerate', '4', '--quiet')).stdout, '1,3,0,2\n2,0,3,1\n');
  const file = path.join(dir, 'cli10.txt');
  const first = await runCli('enumerate', '10', '--batch-size', '64', '--out', file);
  assert.equal(first.code, 0, first.stderr);
  // The progress line (its percentage comes once the Count asked alongside is answered).
  assert.match(first.stderr, /724 boards, \d+ boards\/s/);
  assertComplete(fs.readFileSync(file, 'utf8'), 10, 724);
  const again = await runCli('enumerate', '10', '--out', file, '--quiet');
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /cli10\.txt already complete: 724 boards/);
  assertComplete(fs.readFileSync(file, 'utf8'), 10, 724);
  const refused = await runCli('count', '33');
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /INVALID_ARGUMENT: n: /);
});
