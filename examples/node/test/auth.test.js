// Bearer tokens, against a server of this file's own started with --auth-tokens (QUEENS_BIN:
// the `queens` binary; `cargo test` sets it in tests/node_client.rs). The client sends the
// token of --token, or of QUEENS_TOKEN when the flag is absent, as "authorization: Bearer
// TOKEN" on every call; without one, or with a wrong one, it fails at once with
// UNAUTHENTICATED and says how to give one.
'use strict';

const assert = require('node:assert/strict');
const { execFile, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { test, before, after } = require('node:test');
const { Status } = require('queens-client');
const { connect, count, download } = require('../client.js');

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-fedcba9876543210';
const WRONG = 'mallory-token-0000000000000000';
const TOKENS_FILE = `# tokens of the client tests\nalice ${ALICE}\n\n# a second client\nbob ${BOB}\n`;
const COUNT_8 = 'solutions: 92\nfundamental: 12\n';
const N6 = '1,3,5,0,2,4\n2,5,1,4,0,3\n3,0,4,1,5,2\n4,2,0,5,3,1\n'; // its 4 boards, in order
// Every run of the client here is over in well under a second; a hang fails the test.
const LIMIT_MS = 30000;
const BOUNDED = { timeout: 4 * LIMIT_MS }; // each test as a whole

let server;
let addr;
let dir;

/** Starts `queens serve --addr 127.0.0.1:0 ...flags`; resolves to its address once it listens. */
function startServer(flags) {
  const binary = process.env.QUEENS_BIN;
  assert.ok(binary, 'set QUEENS_BIN to the queens binary (e.g. ../../target/debug/queens)');
  server = spawn(binary, ['serve', '--addr', '127.0.0.1:0', ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('queens serve did not start listening in 30 s')), LIMIT_MS);
    server.once('error', reject);
    server.once('exit', (code) => reject(new Error(`queens serve exited (${code}) before listening`)));
    readline.createInterface({ input: server.stderr }).once('line', (line) => {
      clearTimeout(timer);
      const found = line.split(/\s+/).find((word) => /^127\.0\.0\.1:\d+$/.test(word));
      if (found) resolve(found);
      else reject(new Error(`queens serve said ${JSON.stringify(line)}`));
    });
    server.stderr.resume(); // keep draining later log lines
  });
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queens-node-auth-'));
  const tokens = path.join(dir, 'tokens');
  fs.writeFileSync(tokens, TOKENS_FILE);
  addr = await startServer(['--auth-tokens', tokens]);
});

after(() => {
  server?.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs client.js against the server with extra environment variables (none of the caller's QUEENS_TOKEN). */
function runCli(args, env = {}) {
  const inherited = { ...process.env };
  delete inherited.QUEENS_TOKEN;
  return new Promise((resolve) => {
    const script = path.join(__dirname, '..', 'client.js');
    execFile(
      process.execPath,
      [script, '--addr', addr, ...args],
      { timeout: LIMIT_MS, env: { ...inherited, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, signal: error?.signal, stdout, stderr }),
    );
  });
}

/** Exit status 1, nothing on stdout, UNAUTHENTICATED and how to give a token on stderr, no retrying. */
function assertRefused(run, hint) {
  assert.equal(run.code, 1, `exit ${run.code} (signal ${run.signal}): ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /queens-client: UNAUTHENTICATED: /);
  assert.ok(run.stderr.includes(hint), run.stderr);
  assert.ok(run.stderr.includes('--token TOKEN or $QUEENS_TOKEN'), run.stderr);
  assert.doesNotMatch(run.stderr, /resuming/);
  assert.ok(!run.stderr.includes(ALICE) && !run.stderr.includes(BOB), 'a token was printed');
}

test('without a token the client is refused', BOUNDED, async () => {
  for (const command of [['count', '8'], ['enumerate', '6', '--quiet'], ['enumerate', '6']]) {
    assertRefused(await runCli(command), 'no token was given');
  }
  // An empty QUEENS_TOKEN is no token.
  assertRefused(await runCli(['count', '8'], { QUEENS_TOKEN: '' }), 'no token was given');
});

test('a wrong token is refused', BOUNDED, async () => {
  // Unknown, a known one cut short, one with a character changed, a known one's name.
  for (const token of [WRONG, ALICE.slice(0, -1), ALICE.slice(0, -1) + 'g', 'alice']) {
    for (const command of [['count', '8'], ['enumerate', '6', '--quiet']]) {
      assertRefused(await runCli(['--token', token, ...command]), 'the token was refused');
    }
  }
  assertRefused(await runCli(['count', '8'], { QUEENS_TOKEN: WRONG }), 'the token was refused');
});

test('the token of --token is accepted', BOUNDED, async () => {
  // Every token of the file: comments and blank lines are skipped.
  for (const token of [ALICE, BOB]) {
    assert.deepEqual(await runCli(['--token', token, 'count', '8']), {
      code: 0,
      signal: undefined,
      stdout: COUNT_8,
      stderr: '',
    });
  }
  const run = await runCli(['--token', ALICE, 'enumerate', '6', '--quiet']);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, N6);
});

test('the token of QUEENS_TOKEN is accepted', BOUNDED, async () => {
  const env = { QUEENS_TOKEN: ALICE };
  const counted = await runCli(['count', '8'], env);
  assert.equal(counted.code, 0, counted.stderr);
  assert.equal(counted.stdout, COUNT_8);
  // With the progress line (its total comes from a Count beside the stream), to a file.
  const file = path.join(dir, 'n6.txt');
  const run = await runCli(['enumerate', '6', '--out', file], env);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(fs.readFileSync(file, 'utf8'), N6);
  assert.ok(!run.stderr.includes(ALICE), 'the token was printed');
});

test('--token wins over QUEENS_TOKEN', BOUNDED, async () => {
  const accepted = await runCli(['--token', ALICE, 'count', '8'], { QUEENS_TOKEN: WRONG });
  assert.equal(accepted.code, 0, accepted.stderr);
  assert.equal(accepted.stdout, COUNT_8);
  assertRefused(await runCli(['--token', WRONG, 'count', '8'], { QUEENS_TOKEN: ALICE }), 'the token was refused');
});

/** Collects a stream's items. */
async function collect(call) {
  const replies = [];
  for await (const reply of call) replies.push(reply);
  return replies;
}

test('every kind of call carries the token: Count, CountProgress, Enumerate', BOUNDED, async () => {
  const deadline = { timeoutMs: LIMIT_MS };
  const good = connect(addr, { token: ALICE });
  try {
    assert.deepEqual(await count(good, { n: 8 }), { solutions: 92n, fundamental: 12n });
    const updates = await collect(good.countProgress(8, deadline));
    assert.ok(updates.at(-1).done);
    assert.equal(updates.at(-1).solutions, 92n);
    let text = '';
    assert.equal(await download(good, { n: 6 }, async (chunk) => void (text += chunk)), 4);
    assert.equal(text, N6);
  } finally {
    good.close();
  }
  for (const token of [undefined, WRONG]) {
    const client = connect(addr, { token });
    try {
      const refused = (error) => error.code === Status.UNAUTHENTICATED;
      await assert.rejects(count(client, { n: 8 }), refused);
      await assert.rejects(collect(client.countProgress(8, deadline)), refused);
      await assert.rejects(collect(client.enumerate(6, { ...deadline, packed: false })), refused);
      await assert.rejects(download(client, { n: 6 }, async () => {}), refused);
    } finally {
      client.close();
    }
  }
});

test('a server without tokens ignores one', BOUNDED, async () => {
  const open = process.env.QUEENS_ADDR;
  assert.ok(open, 'set QUEENS_ADDR to the host:port of a running queens server (without tokens)');
  const client = connect(open, { token: ALICE });
  try {
    assert.deepEqual(await count(client, { n: 8 }), { solutions: 92n, fundamental: 12n });
  } finally {
    client.close();
  }
});
