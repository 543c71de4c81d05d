// Shared by the test files: running client.js, a server of a test's own, the hooks of a file
// against a running server, free ports, and checks on streams of boards.
'use strict';

const assert = require('node:assert/strict');
const { execFile, spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { before, after } = require('node:test');

const SCRIPT = path.join(__dirname, '..', 'client.js');
// Every run of the client here is over in a few seconds; a hang fails the test.
const LIMIT_MS = 60000;

/**
 * Runs client.js with args (and extra environment variables, without the caller's
 * QUEENS_TOKEN); resolves to { code, signal, stdout (text), bytes (stdout as a Buffer),
 * stderr, ms }.
 */
function runCli(args, env = {}) {
  const inherited = { ...process.env };
  delete inherited.QUEENS_TOKEN;
  const start = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SCRIPT, ...args],
      { timeout: LIMIT_MS, env: { ...inherited, ...env }, encoding: 'buffer', maxBuffer: 1 << 28 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? error.code : 0,
          signal: error?.signal ?? undefined,
          stdout: stdout.toString(),
          bytes: stdout,
          stderr: stderr.toString(),
          ms: Date.now() - start,
        }),
    );
  });
}

/** A TCP port on 127.0.0.1 that nothing listens on (it was free a moment ago). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `queens serve --addr ADDR ...flags` (QUEENS_BIN: the queens binary; port 0 picks a
 * free one); resolves to { addr, child } once it listens. Stop it with child.kill().
 */
function startServer(flags, listen = '127.0.0.1:0') {
  const binary = process.env.QUEENS_BIN;
  assert.ok(binary, 'set QUEENS_BIN to the queens binary (e.g. ../../target/debug/queens)');
  const child = spawn(binary, ['serve', '--addr', listen, ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('queens serve did not start listening in 30 s')), 30000);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`queens serve exited (${code}) before listening`)));
    readline.createInterface({ input: child.stderr }).once('line', (line) => {
      clearTimeout(timer);
      const found = line.split(/\s+/).find((word) => /^127\.0\.0\.1:\d+$/.test(word));
      if (found) resolve({ addr: found, child });
      else reject(new Error(`queens serve said ${JSON.stringify(line)}`));
    });
    child.stderr.resume(); // keep draining later log lines
  });
}

/** Stops a server of startServer and waits until it is gone. */
function stopServer(server) {
  return new Promise((resolve) => {
    if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return resolve();
    server.child.once('exit', () => resolve());
    server.child.kill('SIGKILL');
  });
}

/**
 * For a test file against a running server (QUEENS_ADDR=host:port): before its tests, connects
 * a client and makes a fresh temporary folder named from `prefix`, and hands both to
 * use({ client, dir }); after them, closes the client and removes the folder.
 */
function onRunningServer(prefix, use) {
  let opened;
  before(() => {
    const addr = process.env.QUEENS_ADDR;
    assert.ok(addr, 'set QUEENS_ADDR to the host:port of a running queens server');
    const { connect } = require('../client.js');
    opened = { client: connect(addr), dir: fs.mkdtempSync(path.join(os.tmpdir(), prefix)) };
    use(opened);
  });
  after(() => {
    opened?.client.close();
    if (opened) fs.rmSync(opened.dir, { recursive: true, force: true });
  });
}

/** A server stream's messages. */
async function collect(call) {
  const replies = [];
  for await (const reply of call) replies.push(reply);
  return replies;
}

function isSolution(columns) {
  const n = columns.length;
  return columns.every(
    (c, i) => c >= 0 && c < n && columns.slice(i + 1).every((d, k) => d !== c && Math.abs(d - c) !== k + 1),
  );
}

/** text: `expected` distinct solutions of n, one "c0,c1,..." line each, in increasing order. */
function assertComplete(text, n, expected) {
  assert.ok(text.endsWith('\n'));
  const lines = text.slice(0, -1).split('\n');
  assert.equal(lines.length, expected);
  assert.equal(new Set(lines).size, expected);
  const boards = lines.map((line) => line.split(',').map(Number));
  assert.ok(boards.every((b) => b.length === n && isSolution(b)));
  for (let i = 1; i < boards.length; i++) {
    const [a, b] = [boards[i - 1], boards[i]];
    const k = a.findIndex((c, j) => c !== b[j]);
    assert.ok(k !== -1 && a[k] < b[k], `boards ${i - 1} and ${i} out of order`);
  }
}

/** A command's run failed as a user error should: no stack trace, no JavaScript internals. */
function assertNoStackTrace(run) {
  assert.doesNotMatch(run.stderr, /^\s+at /m, run.stderr);
  assert.doesNotMatch(run.stderr, /node:internal|TypeError|ReferenceError|\.js:\d+/, run.stderr);
}

module.exports = {
  SCRIPT,
  LIMIT_MS,
  runCli,
  freePort,
  startServer,
  stopServer,
  onRunningServer,
  collect,
  isSolution,
  assertComplete,
  assertNoStackTrace,
};
