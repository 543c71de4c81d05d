// https:// URLs, against a server of this file's own started with --tls-cert and --tls-key
// (QUEENS_BIN, and QUEENS_TLS_CERT / QUEENS_TLS_KEY: a certificate for 127.0.0.1 and its key;
// tests/node_client.rs writes a fresh self-signed pair). The client trusts the certificate of
// --ca-cert; without it (the system's authorities) it is refused at once, with the reason.
'use strict';

const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');
const { runCli, startServer, stopServer, assertNoStackTrace } = require('./helpers.js');

const cert = process.env.QUEENS_TLS_CERT;
const key = process.env.QUEENS_TLS_KEY;
let server;

before(async () => {
  assert.ok(cert && key, 'set QUEENS_TLS_CERT and QUEENS_TLS_KEY to a certificate for 127.0.0.1 and its key (PEM)');
  server = await startServer(['--tls-cert', cert, '--tls-key', key]);
});

after(() => stopServer(server));

test('https:// with --ca-cert counts and streams over TLS', async () => {
  const url = `https://${server.addr}`;
  const counted = await runCli(['--addr', url, '--ca-cert', cert, 'count', '8']);
  assert.deepEqual([counted.code, counted.stdout, counted.stderr], [0, 'solutions: 92\nfundamental: 12\n', '']);
  const listed = await runCli(['--addr', url, '--ca-cert', cert, 'enumerate', '6', '--quiet']);
  assert.equal(listed.code, 0, listed.stderr);
  assert.equal(listed.stdout, '1,3,5,0,2,4\n2,5,1,4,0,3\n3,0,4,1,5,2\n4,2,0,5,3,1\n');
});

test('https:// without the server\'s authority fails at once, saying why', async () => {
  for (const command of [['count', '8'], ['enumerate', '6', '--quiet']]) {
    const run = await runCli(['--addr', `https://${server.addr}`, ...command]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, new RegExp(`^queens-client: cannot connect to https://${server.addr}: .*certificate`));
    assert.ok(run.ms < 15000, `took ${run.ms} ms`);
    assertNoStackTrace(run);
  }
});
