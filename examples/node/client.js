#!/usr/bin/env node
// A small client of the queens gRPC service (queens.v1.Queens), loading proto/queens.proto at
// run time with @grpc/proto-loader: no generated code.
//
//   node client.js [--addr HOST:PORT] [--token TOKEN] enumerate N [--out FILE] [--quiet] [...]
//   node client.js [--addr HOST:PORT] [--token TOKEN] count N [--fixed R,C ...]
//
// `enumerate` streams the solutions compactly, one column vector per line ("1,3,0,2"), to
// stdout or a file as they arrive, with a progress line on stderr. With --out it resumes: the
// file records the last board written, so running the same command again continues after it
// with `start_after`; a stream broken by the server (UNAVAILABLE) is resumed the same way
// without restarting. The finished file holds every board exactly once, in order.
//
// With --token (or the environment variable QUEENS_TOKEN) every call carries the metadata
// "authorization: Bearer TOKEN", for a server started with --auth-tokens.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO = path.join(__dirname, '..', '..', 'proto', 'queens.proto');
const DEFAULT_ADDR = '127.0.0.1:50051';
// The default of --token: a token in the environment stays out of the process list and the
// shell history.
const TOKEN_ENV = 'QUEENS_TOKEN';
// Boards per response message; see ../python/README.md for the measurements behind it.
const DEFAULT_BATCH_SIZE = 1024;

/** The Queens client class, from the proto loaded now. uint64 fields arrive as strings. */
function loadQueens() {
  const definition = protoLoader.loadSync(PROTO, {
    keepCase: true, // field names as in the proto: start_after, batch_size
    longs: String, // uint64 as decimal strings: no precision lost above 2^53
    defaults: true, // zero values present (solutions: '0')
    oneofs: true, // `_fundamental` tells whether the optional `fundamental` was sent
  });
  return grpc.loadPackageDefinition(definition).queens.v1.Queens;
}

/**
 * A client of the server at addr ("host:port"); with options.token, every call made through
 * it carries "authorization: Bearer <token>".
 */
function connect(addr, options = {}) {
  const Queens = loadQueens();
  return new Queens(addr, grpc.credentials.createInsecure(), {
    // Reconnect to a restarted server within seconds, not after gRPC's default of up to 2 min.
    'grpc.max_reconnect_backoff_ms': 2000,
    interceptors: options.token ? [bearerToken(options.token)] : [],
  });
}

/**
 * An interceptor that adds "authorization: Bearer <token>" to the metadata of every call
 * (Count, CountProgress, Enumerate). Not call credentials: grpc-js sends those only over TLS,
 * and this channel is plaintext.
 */
function bearerToken(token) {
  const value = `Bearer ${token}`;
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set('authorization', value);
        next(metadata, listener);
      },
    });
}

/**
 * Counts: resolves to { solutions, fundamental } as BigInts; fundamental is undefined when
 * the server leaves it out (it does when queens are fixed).
 */
function count(client, request) {
  return new Promise((resolve, reject) => {
    client.Count(request, (error, reply) => {
      if (error) return reject(error);
      resolve({
        solutions: BigInt(reply.solutions),
        fundamental: reply._fundamental === 'fundamental' ? BigInt(reply.fundamental) : undefined,
      });
    });
  });
}

/**
 * Looks at a download file open for reading and appending: returns { last, done } (its last
 * complete board, or undefined, and how many boards it holds), after cutting off a partial
 * last line that a crash may have left.
 */
function readResumePoint(fd, n) {
  const size = fs.fstatSync(fd).size;
  const chunk = Buffer.alloc(1 << 20);
  let done = 0;
  let lastNewline = -1;
  for (let position = 0; position < size; ) {
    const read = fs.readSync(fd, chunk, 0, chunk.length, position);
    for (let i = chunk.indexOf(10); i !== -1 && i < read; i = chunk.indexOf(10, i + 1)) {
      done += 1;
      lastNewline = position + i;
    }
    position += read;
  }
  if (lastNewline + 1 < size) fs.ftruncateSync(fd, lastNewline + 1);
  if (done === 0) return { last: undefined, done };
  const start = Math.max(0, lastNewline - 16 * 4 * 32);
  const tail = Buffer.alloc(lastNewline - start);
  fs.readSync(fd, tail, 0, tail.length, start);
  const line = tail.toString().split('\n').pop();
  const last = line.split(',').map(Number);
  if (last.length !== n) throw new Error(`the file's boards have ${last.length} columns, not n = ${n}`);
  return { last, done };
}

// A stream that fails with one of these is asked again from its last board: the server
// restarting or shutting down or the connection breaking (UNAVAILABLE), the server's search
// slots all busy ("retry later": RESOURCE_EXHAUSTED), or the server's time limit on one search
// ending a long stream (DEADLINE_EXCEEDED). Anything else is an answer and is thrown.
const RETRYABLE = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.DEADLINE_EXCEEDED,
]);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Streams request's boards after startAfter to write(text) (one "c0,c1,...\n" line per
 * board, a batch per call, awaited) and resolves to how many it wrote; onBoards(k) hears of
 * every batch. On a RETRYABLE error it waits a little (backing off up to 2 s), then resumes
 * after the last board written, until the stream ends or nothing arrived for giveUpAfterMs.
 */
async function download(client, request, write, options = {}) {
  const { startAfter, onBoards = () => {}, giveUpAfterMs = 60000, log = () => {} } = options;
  let last = startAfter ?? request.start_after;
  let written = 0;
  let failures = 0;
  let failedSince = 0;
  for (;;) {
    const call = client.Enumerate({ ...request, compact: true, start_after: last ?? [] });
    try {
      for await (const reply of call) {
        if (reply.boards.length === 0) continue;
        await write(reply.boards.map((board) => board.columns.join(',') + '\n').join(''));
        last = reply.boards[reply.boards.length - 1].columns;
        written += reply.boards.length;
        failures = 0;
        onBoards(reply.boards.length);
      }
      return written;
    } catch (error) {
      if (!RETRYABLE.has(error.code)) throw error;
      if (failures === 0) {
        failedSince = Date.now();
        log(`queens-client: ${grpc.status[error.code]} (${error.details}); resuming`);
      } else if (Date.now() - failedSince > giveUpAfterMs) {
        throw error;
      }
      failures += 1;
      await sleep(Math.min(100 * 2 ** failures, 2000));
    } finally {
      call.cancel();
    }
  }
}

/**
 * Sets progress.total from a Count in the background, once started; asks again a second
 * later if the server went away before answering, and gives up on any other error (the
 * server busy, say: no percentage then).
 */
class Total {
  constructor(client, request, progress, fundamental) {
    Object.assign(this, { client, request, progress, fundamental, asked: false, closed: false });
  }

  askOnce() {
    if (!this.asked) this.ask();
    this.asked = true;
  }

  ask() {
    if (this.closed) return;
    count(this.client, this.request).then(
      (counted) => (this.progress.total = this.fundamental ? counted.fundamental : counted.solutions),
      (error) => {
        if (error.code === grpc.status.UNAVAILABLE) setTimeout(() => this.ask(), 1000).unref();
      },
    );
  }

  close() {
    this.closed = true;
  }
}

/** A progress line on stderr: boards, boards/s and, once the total is known, % and ETA. */
class Progress {
  constructor(done, enabled) {
    Object.assign(this, { done, enabled, start: Date.now(), startDone: done, shown: 0, total: undefined });
  }

  add(k) {
    this.done += k;
    if (this.enabled && Date.now() - this.shown >= 200) this.show();
  }

  show(end = '') {
    this.shown = Date.now();
    const rate = (this.done - this.startDone) / Math.max((this.shown - this.start) / 1000, 1e-3);
    let text = `${this.done} boards, ${Math.round(rate)} boards/s`;
    if (this.total) {
      const total = Number(this.total);
      const eta = rate > 0 ? Math.ceil((total - this.done) / rate) : '?';
      const percent = ((100 * this.done) / total).toFixed(1);
      text = `${percent}% ${this.done}/${total} boards, ${Math.round(rate)} boards/s, ETA ${eta} s`;
    }
    process.stderr.write(`\r${text}\x1b[K${end}`);
  }

  finish() {
    if (this.enabled) this.show('\n');
  }
}

/** Writes to stdout, waiting whenever the pipe is full. */
function writeStdout(text) {
  return new Promise((resolve) => (process.stdout.write(text) ? resolve() : process.stdout.once('drain', resolve)));
}

function parseSquare(text) {
  const [row, column] = text.split(',').map(Number);
  return { row, column };
}

async function runEnumerate(client, n, options) {
  const request = { n, batch_size: Number(options['batch-size']), compact: true };
  if (options.fundamental) request.fundamental = true;
  if (options.fixed) request.fixed = options.fixed.map(parseSquare);
  let fd;
  let write = writeStdout;
  let resume = { last: undefined, done: 0 };
  if (options.out) {
    fd = fs.openSync(options.out, 'a+');
    resume = readResumePoint(fd, n);
    if (resume.last) {
      const after = resume.last.join(',');
      console.error(`queens-client: ${options.out} holds ${resume.done} boards; resuming after ${after}`);
    }
    write = async (text) => fs.writeSync(fd, text);
  }
  const progress = new Progress(resume.done, !options.quiet);
  // The total, for a percentage and an ETA, comes from a Count asked once the stream runs
  // (so that the stream has its search slot first).
  const countRequest = { n, fixed: request.fixed ?? [] };
  const total = options.quiet ? undefined : new Total(client, countRequest, progress, options.fundamental);
  try {
    await download(client, request, write, {
      startAfter: resume.last,
      onBoards: (k) => {
        progress.add(k);
        total?.askOnce();
      },
      giveUpAfterMs: 1000 * Number(options['give-up-after']),
      log: (line) => console.error(`\n${line}`),
    });
    progress.finish();
  } finally {
    total?.close();
    if (fd !== undefined) {
      fs.fsyncSync(fd);
      fs.closeSync(fd);
    }
  }
}

async function main(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      addr: { type: 'string', default: DEFAULT_ADDR },
      out: { type: 'string' },
      'batch-size': { type: 'string', default: String(DEFAULT_BATCH_SIZE) },
      fundamental: { type: 'boolean' },
      fixed: { type: 'string', multiple: true },
      quiet: { type: 'boolean' },
      'give-up-after': { type: 'string', default: '60' },
      token: { type: 'string', default: process.env[TOKEN_ENV] || undefined },
    },
  });
  const [command, nText] = positionals;
  const n = Number(nText);
  if (!['enumerate', 'count'].includes(command) || !Number.isInteger(n)) {
    console.error(
      'usage: client.js [--addr HOST:PORT] [--token TOKEN] enumerate N [--out FILE]\n' +
        '                 [--batch-size B] [--fundamental] [--fixed R,C ...] [--quiet]\n' +
        '                 [--give-up-after S]\n' +
        '       client.js [--addr HOST:PORT] [--token TOKEN] count N [--fixed R,C ...]\n' +
        `--token defaults to $${TOKEN_ENV}.`,
    );
    return 2;
  }
  const client = connect(values.addr, { token: values.token });
  try {
    if (command === 'count') {
      const counted = await count(client, { n, fixed: (values.fixed ?? []).map(parseSquare) });
      console.log(`solutions: ${counted.solutions}`);
      if (counted.fundamental !== undefined) console.log(`fundamental: ${counted.fundamental}`);
    } else {
      await runEnumerate(client, n, values);
    }
    return 0;
  } catch (error) {
    if (error.code === undefined) throw error;
    console.error(`queens-client: ${grpc.status[error.code]}: ${error.details}`);
    if (error.code === grpc.status.UNAUTHENTICATED) {
      const hint = values.token ? 'the token was refused' : 'no token was given';
      console.error(`queens-client: ${hint}; give the server's token with --token TOKEN or $${TOKEN_ENV}`);
    }
    return 1;
  } finally {
    client.close();
  }
}

module.exports = { connect, count, download, readResumePoint, DEFAULT_BATCH_SIZE };

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => (process.exitCode = code));
}
