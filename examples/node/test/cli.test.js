// The command line as a newcomer meets it, against a running server (QUEENS_ADDR=host:port)
// and one of this file's own (QUEENS_BIN): usage errors are one line and the usage (exit
// status 2, never a stack trace); --fixed, --start-after and --shard are checked before
// anything is sent; http:// URLs work; --limit, --start-after and --shard select what they
// say; no server means "connection refused" at once, while a server that goes away mid-stream
// is waited for; a finished download run again says it is already complete.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test, before, after } = require('node:test');
const { connect, download } = require('../client.js');
const { spawn } = require('node:child_process');
const { SCRIPT, runCli, freePort, startServer, stopServer, assertComplete, assertNoStackTrace } = require('./helpers.js');

const addr = process.env.QUEENS_ADDR;
const COUNT_8 = 'solutions: 92\nfundamental: 12\n';
let dir;
let n10; // the 724 boards of n = 10 as lines

const cli = (...args) => runCli(['--addr', addr, ...args]);

before(async () => {
  assert.ok(addr, 'set QUEENS_ADDR to the host:port of a running queens server');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queens-node-cli-'));
  const run = await cli('enumerate', '10', '--quiet');
  assert.equal(run.code, 0, run.stderr);
  n10 = run.stdout.trim().split('\n');
  assert.equal(n10.length, 724);
});

after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Exit status 2, one line naming the problem (matching pattern), then the usage; no trace. */
function assertUsageError(run, pattern) {
  assert.equal(run.code, 2, `exit ${run.code}: ${run.stderr}`);
  assert.equal(run.stdout, '');
  const [first, ...rest] = run.stderr.split('\n');
  assert.match(first, /^queens-client: /);
  assert.match(first, pattern);
  assert.match(rest.join('\n'), /^usage: client\.js /);
  assertNoStackTrace(run);
}

test('an unknown option is one line and the usage, exit status 2, wherever it stands', async () => {
  assertUsageError(await cli('enumerate', '8', '--bogus'), /Unknown option '--bogus'/);
  assertUsageError(await cli('--bogus', 'count', '8'), /Unknown option '--bogus'/);
  assertUsageError(await cli('count', '8', '-x'), /Unknown option '-x'/);
  assertUsageError(await cli('enumerate', '8', '--out'), /--out/);
  assertUsageError(await cli('frobnicate', '8'), /unknown command "frobnicate"/);
  assertUsageError(await cli('count'), /count needs N/);
  assertUsageError(await cli('count', 'eight'), /N eight: expected a whole number/);
  assertUsageError(await cli('count', '8', '9'), /unexpected argument "9"/);
  assertUsageError(await cli('count', '8', '--limit', '3'), /--limit is an option of enumerate/);
  assertUsageError(await cli('enumerate', '8', '--limit', '-3'), /--limit/);
  assertUsageError(await cli('enumerate', '8', '--batch-size', '0'), /--batch-size 0/);
  assertUsageError(await cli('--token', 'two words', 'count', '8'), /--token: a token is printable ASCII without spaces/);
  assertUsageError(await runCli(['--addr', addr, 'count', '8'], { QUEENS_TOKEN: 'bad\ntoken' }), /\$QUEENS_TOKEN: a token is/);
  const help = await cli('--help');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: client\.js /);
});

test('--fixed takes R,C only: 9 is refused naming the form, not read as (9,0)', async () => {
  assertUsageError(await cli('count', '8', '--fixed', '9'), /--fixed 9: expected R,C/);
  for (const bad of ['9,', ',9', '1,2,3', '1;2', 'a,b', '-1,2', '1.5,2', '']) {
    assertUsageError(await cli('count', '8', `--fixed=${bad}`), /--fixed .*expected R,C/);
    assertUsageError(await cli('enumerate', '8', `--fixed=${bad}`), /--fixed .*expected R,C/);
  }
  assertUsageError(await cli('count', '8', '--fixed', '8,0'), /--fixed 8,0: row and column must each be 0\.\.7/);
  assertUsageError(await cli('count', '8', '--fixed', '0,0', '--fixed', '0,9'), /--fixed 0,9/);
  const counted = await cli('count', '8', '--fixed', '0,0');
  assert.deepEqual([counted.code, counted.stdout], [0, 'solutions: 4\n']);
  const listed = await cli('enumerate', '8', '--fixed', '0,0', '--quiet');
  assert.equal(listed.stdout, '0,4,7,5,2,6,1,3\n0,5,7,2,6,3,1,4\n0,6,3,5,7,1,4,2\n0,6,4,7,1,3,5,2\n');
});

test('http://HOST:PORT URLs are taken as the Rust CLI takes them; other schemes are refused', async () => {
  for (const url of [`http://${addr}`, `http://${addr}/`, `HTTP://${addr}`]) {
    const run = await runCli(['--addr', url, 'count', '8']);
    assert.deepEqual([run.code, run.stdout, run.stderr], [0, COUNT_8, ''], url);
  }
  const listed = await runCli(['--addr', `http://${addr}`, 'enumerate', '4', '--quiet']);
  assert.equal(listed.stdout, '1,3,0,2\n2,0,3,1\n');
  assertUsageError(await runCli(['--addr', `grpc://${addr}`, 'count', '8']), /expected HOST:PORT, http:\/\/HOST:PORT/);
  assertUsageError(await runCli(['--addr', `http://${addr}/queens`, 'count', '8']), /--addr/);
  assertUsageError(await cli('--ca-cert', __filename, 'count', '8'), /--ca-cert needs an https:\/\/ address/);
});

test('--limit, --start-after (checked locally) and --shard select what they say', async () => {
  const limited = await cli('enumerate', '10', '--limit', '5', '--quiet');
  assert.equal(limited.stdout, n10.slice(0, 5).join('\n') + '\n');
  const after = await cli('enumerate', '10', '--start-after', n10[99], '--limit', '3', '--quiet');
  assert.equal(after.stdout, n10.slice(100, 103).join('\n') + '\n');
  // Any vector will do, solution or not: the boards after it.
  const vector = [8, 5, 0, 0, 0, 0, 0, 0, 0, 0];
  const fromVector = await cli('enumerate', '10', '--start-after', vector.join(','), '--quiet');
  const later = n10.filter((line) => Buffer.compare(Buffer.from(line.split(',').map(Number)), Buffer.from(vector)) > 0);
  assert.ok(later.length > 0 && later.length < 724);
  assert.equal(fromVector.stdout, later.join('\n') + '\n');
  for (const bad of ['1,2,3', '0,0,0,0,0,0,0,0,0,10', '0,0,0,0,0,0,0,0,0,x', '0,0,0,0,0,0,0,0,0,', '']) {
    assertUsageError(await cli('enumerate', '10', `--start-after=${bad}`), /--start-after .*expected 10 columns/);
  }
  // The shards are disjoint and make up the whole, for enumerate and count alike.
  const parts = [];
  let counted = 0;
  for (let index = 0; index < 3; index++) {
    const part = await cli('enumerate', '10', '--shard', `${index}/3`, '--quiet');
    assert.equal(part.code, 0, part.stderr);
    parts.push(...part.stdout.trim().split('\n'));
    const count = await cli('count', '10', '--shard', `${index}/3`);
    assert.equal(count.code, 0, count.stderr);
    counted += Number(/solutions: (\d+)/.exec(count.stdout)[1]);
  }
  assert.equal(counted, 724);
  assert.deepEqual([...parts].sort(), [...n10].sort());
  for (const bad of ['3/3', '1', '1/0', '-1/3', 'a/b', '1/3/4']) {
    assertUsageError(await cli('enumerate', '10', `--shard=${bad}`), /--shard .*expected I\/K/);
    assertUsageError(await cli('count', '10', `--shard=${bad}`), /--shard .*expected I\/K/);
  }
});

test('no server listening: "connection refused" at once, exit status 1', async () => {
  const port = await freePort();
  for (const args of [['count', '8'], ['enumerate', '8'], ['enumerate', '8', '--quiet', '--out', path.join(dir, 'none.txt')]]) {
    for (const url of [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`]) {
      const run = await runCli(['--addr', url, ...args]);
      assert.equal(run.code, 1, `${args}: exit ${run.code}: ${run.stderr}`);
      assert.match(run.stderr, new RegExp(`cannot connect to ${url.replace(/[.:/]/g, '\\$&')}: connection refused`));
      assert.doesNotMatch(run.stderr, /resuming/);
      assertNoStackTrace(run);
      // At once, not after the 60 s of --give-up-after (generous: a loaded machine starts node slowly).
      assert.ok(run.ms < 15000, `took ${run.ms} ms`);
    }
  }
});

test('a server that goes away mid-stream is waited for, and the download resumes', { timeout: 120000 }, async () => {
  let server = await startServer([]);
  // A small HTTP/2 window: the server cannot have sent the whole stream before it goes away.
  const client = connect(server.addr, { windowBytes: 65535 });
  const logged = [];
  let text = '';
  let batches = 0;
  let restarted;
  try {
    const written = await download(
      client,
      { n: 13, batchSize: 100 },
      async (chunk) => {
        text += chunk;
        batches += 1;
        if (batches === 2) {
          // Kill the server after the second batch; another starts on the same port a second
          // later, while the client is retrying (connection refused, then UNAVAILABLE).
          const listen = server.addr;
          await stopServer(server);
          restarted = new Promise((resolve) => setTimeout(resolve, 1000))
            .then(() => startServer([], listen))
            .then((started) => (server = started));
        }
      },
      { log: (line) => logged.push(line), giveUpAfterMs: 30000 },
    );
    assert.equal(written, 73712);
    assertComplete(text, 13, 73712);
    assert.equal(logged.length, 1, logged.join('\n'));
    assert.match(logged[0], /UNAVAILABLE .*; resuming/);
  } finally {
    client.close();
    await restarted?.catch(() => {});
    await stopServer(server);
  }
});

test('a finished download run again says it is already complete', async () => {
  const file = path.join(dir, 'n8.txt');
  const first = await cli('enumerate', '8', '--out', file, '--quiet');
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stderr, '');
  const text = fs.readFileSync(file, 'utf8');
  assertComplete(text, 8, 92);
  const again = await cli('enumerate', '8', '--out', file);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /n8\.txt already complete: 92 boards/);
  assert.doesNotMatch(again.stderr, /resuming/);
  assert.equal(fs.readFileSync(file, 'utf8'), text);
  // The same for raw records, and for a download with --limit (not asked of the server again).
  const raw = path.join(dir, 'n8.bin');
  assert.equal((await cli('enumerate', '8', '--packed', '--out', raw, '--quiet')).code, 0);
  assert.match((await cli('enumerate', '8', '--packed', '--out', raw)).stderr, /already complete: 92 boards/);
  assert.equal(fs.statSync(raw).size, 92 * 8);
  const limited = path.join(dir, 'n10-limit.txt');
  assert.equal((await cli('enumerate', '10', '--limit', '100', '--out', limited, '--quiet')).code, 0);
  const port = await freePort(); // nothing there: the file alone says it is complete
  const rerun = await runCli(['--addr', `127.0.0.1:${port}`, 'enumerate', '10', '--limit', '100', '--out', limited]);
  assert.deepEqual([rerun.code, rerun.stderr.trim()], [0, `queens-client: ${limited} already complete: 100 boards`]);
  // Without the limit the same file resumes to the end.
  const rest = await cli('enumerate', '10', '--out', limited, '--quiet');
  assert.match(rest.stderr, /holds 100 boards; resuming after /);
  assert.equal(fs.readFileSync(limited, 'utf8'), n10.join('\n') + '\n');
});

test('a reader that stops early (| head) ends the download quietly, exit status 0', async () => {
  for (const extra of [[], ['--packed']]) {
    // n = 14: megabytes of output, far more than a pipe holds, so the client is still writing.
    const child = spawn(process.execPath, [SCRIPT, '--addr', addr, 'enumerate', '14', ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const first = await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy();
    assert.deepEqual(await exited, { code: 0, signal: null }, stderr);
    assertNoStackTrace({ stderr });
    assert.doesNotMatch(stderr, /EPIPE|queens-client: /);
    const board = [0, 2, 4, 6, 11, 9, 12, 3, 13, 8, 1, 5, 7, 10]; // the first of n = 14
    const expected = extra.length === 0 ? Buffer.from(`${board.join(',')}\n`) : Buffer.from(board);
    assert.ok(first.subarray(0, expected.length).equals(expected), first.subarray(0, 64).toString());
  }
});

test('a file of other boards, or of the other form, is refused with one line and left alone', async () => {
  const cases = [
    ['n6.txt', Buffer.from('1,3,5,0,2,4\n'), [], /the file ends in the line "1,3,5,0,2,4", not boards of n = 8/],
    ['raw.txt', Buffer.from([0, 4, 7, 5, 2, 6, 1, 3, 0, 5, 10, 2]), [], /bytes other than digits.*\(raw records\? then add --packed\)/],
    ['text.bin', Buffer.from('0,4,7,5,2,6,1,3\n0,5,7,'), ['--packed'], /byte of n or more.*\(a text file\? then leave out --packed\)/],
  ];
  for (const [name, content, extra, pattern] of cases) {
    const file = path.join(dir, name);
    fs.writeFileSync(file, content);
    const run = await cli('enumerate', '8', '--out', file, '--quiet', ...extra);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^queens-client: /);
    assert.match(run.stderr, pattern);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assertNoStackTrace(run);
    assert.ok(fs.readFileSync(file).equals(content), `${name} was changed`);
  }
  const missing = await cli('enumerate', '8', '--out', path.join(dir, 'no', 'such', 'dir', 'f.txt'), '--quiet');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^queens-client: ENOENT/);
  assertNoStackTrace(missing);
});
