#!/usr/bin/env node
// A small client of the queens gRPC service (queens.v1.Queens) on the package queens-client
// (../../clients/node: generated messages, Connect's gRPC transport), which this file
// requires (an ES module, required from CommonJS as Node 20.19 and later allow).
//
//   node client.js [--addr URL] [--token TOKEN] enumerate N [--out FILE] [--packed] [...]
//   node client.js [--addr URL] [--token TOKEN] count N [--fixed R,C ...] [--shard I/K]
//
// `enumerate` streams the packed form through the package (each response's boards as
// consecutive n-byte records, one Uint8Array per message) and writes the solutions compactly,
// one column vector per line ("1,3,0,2"), straight from those bytes, or with --packed the raw
// n-byte records themselves, to stdout or a file as they arrive, with a progress line on
// stderr. With --out it resumes: the file records the last board written, so running the
// same command again continues after it with `startAfter`; a stream broken by the server
// (UNAVAILABLE) is resumed the same way without restarting. The finished file holds every
// board exactly once, in order. Resuming, retrying and the files are this file's; the calls,
// the token and TLS are the package's.
//
// With --token (or the environment variable QUEENS_TOKEN) every call carries the metadata
// "authorization: Bearer TOKEN", for a server started with --auth-tokens.
'use strict';

const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { createClient, Status } = require('queens-client');

const DEFAULT_ADDR = 'http://127.0.0.1:50051';
// The default of --token: a token in the environment stays out of the process list and the
// shell history.
const TOKEN_ENV = 'QUEENS_TOKEN';
// Boards per response message in the Board form; see ../python/README.md for the
// measurements behind it.
const DEFAULT_BATCH_SIZE = 1024;
// Bytes per response message in the packed form (the batch size is this over n). Measured
// for n = 16 (README.md, "How fast"): 256 KiB messages cost the server about 2 CPU-s more;
// 4 MiB ones are no faster but double the server's peak memory. The server caps a message at
// 4 MiB and flushes a partly filled one after a moment, so sparse searches still arrive as
// they are found.
const PACKED_BATCH_BYTES = 1 << 20;
const STATUS_NAMES = Object.fromEntries(Object.entries(Status).map(([name, code]) => [code, name]));

/** Why a command line cannot be used: printed as one line and the usage, exit status 2. */
class UsageError extends Error {}

/**
 * The URL of an address: "host:port", "http://host:port" (the Rust CLI's form) or
 * "https://host:port" (TLS); { target, tls }. Throws a UsageError for anything else.
 */
function parseAddr(text) {
  const match = /^(?:([a-z][a-z0-9+.-]*):\/\/)?([^/]+)\/?$/i.exec(text);
  const scheme = match?.[1]?.toLowerCase();
  if (!match || (scheme !== undefined && scheme !== 'http' && scheme !== 'https')) {
    throw new UsageError(`--addr ${text}: expected HOST:PORT, http://HOST:PORT or https://HOST:PORT`);
  }
  const tls = scheme === 'https';
  let host = match[2];
  // A URL without a port means the scheme's port, as it does for the Rust CLI.
  if (scheme && !/:\d+$/.test(host)) host += tls ? ':443' : ':80';
  return { target: `${tls ? 'https' : 'http'}://${host}`, tls };
}

/**
 * The package's client of the server at addr ("host:port", "http://host:port" or
 * "https://host:port"); with options.token, every call made through it carries
 * "authorization: Bearer <token>"; over https://, options.caCert (PEM bytes) is the
 * certificate authority to trust (the system's by default); options.windowBytes, the package's
 * HTTP/2 receive window (4 MiB by default). client.connected tells whether a call of this
 * file has ever had an answer from the server.
 */
function connect(addr, options = {}) {
  const { target, tls } = parseAddr(addr);
  if (options.caCert && !tls) throw new UsageError('--ca-cert needs an https:// address');
  const client = createClient(target, { token: options.token, ca: options.caCert, windowBytes: options.windowBytes });
  client.connected = false;
  return client;
}

/**
 * Whether error is the client never having reached the server (nothing listening, say): an
 * UNAVAILABLE before any answer.
 */
function cannotConnect(client, error) {
  return error.code === Status.UNAVAILABLE && !client.connected;
}

/** Marks client as connected when error came from the server (anything but UNAVAILABLE). */
function heard(client, error) {
  if (typeof error.code === 'number' && error.code !== Status.UNAVAILABLE) client.connected = true;
  return error;
}

/**
 * Counts: resolves to { solutions, fundamental } as BigInts; fundamental is undefined when
 * the server leaves it out (it does when queens are fixed). request: { n, fixed, shard }.
 */
async function count(client, { n, ...options }) {
  try {
    const counted = await client.count(n, options);
    client.connected = true;
    return { solutions: counted.solutions, fundamental: counted.fundamental };
  } catch (error) {
    throw heard(client, error);
  }
}

// The text of a column c followed by ',' as up to 4 little-endian bytes ("3," is 0x2c33), and
// its length: one table load and one 32-bit store per column.
const COLUMN_TEXT = new Uint32Array(256);
const COLUMN_LENGTH = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  const text = Buffer.from(`${c},`);
  COLUMN_TEXT[c] = Buffer.concat([text, Buffer.alloc(4 - text.length)]).readUInt32LE(0);
  COLUMN_LENGTH[c] = text.length;
}

/**
 * The text of packed records (n bytes each): one line "c0,c1,...\n" per board, as a Buffer.
 * One pass over the bytes into one buffer: no object, string or array per board. (Measured
 * on n = 16: 2.5 times the speed of writing the digits byte by byte.)
 */
function packedToText(bytes, n) {
  // At most 3 digits and a separator per column (columns are bytes), and room for the last
  // 32-bit store to run 3 bytes past the text.
  const out = Buffer.allocUnsafe(bytes.length * 4 + 4);
  const view = new DataView(out.buffer, out.byteOffset, out.length);
  let o = 0;
  for (let i = 0; i < bytes.length; i += n) {
    for (let r = i, end = i + n; r < end; r++) {
      const c = bytes[r];
      view.setUint32(o, COLUMN_TEXT[c], true);
      o += COLUMN_LENGTH[c];
    }
    out[o - 1] = 10; // the last ',' becomes '\n'
  }
  return out.subarray(0, o);
}

/** Packed records (n bytes each) as arrays of columns: handy for a few boards, slow for many. */
function packedToBoards(bytes, n) {
  const boards = [];
  for (let i = 0; i < bytes.length; i += n) boards.push(Array.from(bytes.subarray(i, i + n)));
  return boards;
}

// A stream that fails with one of these is asked again from its last board: the server
// restarting or shutting down or the connection breaking (UNAVAILABLE), the server's search
// slots all busy ("retry later": RESOURCE_EXHAUSTED), or the server's time limit on one search
// ending a long stream (DEADLINE_EXCEEDED). Anything else is an answer and is thrown, and so
// is UNAVAILABLE before the client ever reached the server (nothing listening there).
const RETRYABLE = new Set([Status.UNAVAILABLE, Status.RESOURCE_EXHAUSTED, Status.DEADLINE_EXCEEDED]);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The boards of request ({ n, and the package's enumerate options: fundamental, fixed, shard,
 * startAfter, limit, batchSize }) after options.startAfter (else request.startAfter), as
 * batches of packed records: a Uint8Array of n bytes per board for each response. With
 * options.packed false it asks for Board messages (the package packs them). request.limit
 * counts the boards of all attempts together.
 *
 * On a RETRYABLE error it waits a little (backing off up to 2 s), then asks again after the
 * last board of the last batch taken, until the stream ends or nothing arrived for
 * options.giveUpAfterMs. A batch counts as taken when the consumer asks for the next one, so
 * a consumer that writes each batch before going on never loses or repeats a board.
 */
async function* packedBatches(client, request, options = {}) {
  const { packed = true, giveUpAfterMs = 60000, log = () => {} } = options;
  const { n, ...search } = request;
  let last = options.startAfter ?? request.startAfter ?? [];
  const limit = BigInt(request.limit ?? 0);
  let left = limit > 0n ? limit : undefined;
  let failures = 0;
  let failedSince = 0;
  for (;;) {
    if (left === 0n) return;
    const batches = client.enumerate(n, { ...search, packed, startAfter: last, limit: left ?? 0n });
    try {
      for await (const bytes of batches) {
        client.connected = true;
        if (bytes.length % n !== 0) throw new Error(`a packed response of ${bytes.length} bytes is not n = ${n} records`);
        yield bytes;
        last = Array.from(bytes.subarray(bytes.length - n));
        if (left !== undefined) left -= BigInt(bytes.length / n);
        failures = 0;
      }
      return;
    } catch (error) {
      heard(client, error);
      if (!RETRYABLE.has(error.code) || cannotConnect(client, error)) throw error;
      if (failures === 0) {
        failedSince = Date.now();
        log(`queens-client: ${STATUS_NAMES[error.code]} (${error.message}); resuming`);
      } else if (Date.now() - failedSince > giveUpAfterMs) {
        throw error;
      }
      failures += 1;
      await sleep(Math.min(100 * 2 ** failures, 2000));
    } finally {
      await batches.return();
    }
  }
}

/**
 * Streams request's boards (see packedBatches) to write(chunk), a batch per call, awaited,
 * and resolves to how many boards it wrote; onBoards(k) hears of every batch. The chunks are
 * Buffers of text, one "c0,c1,...\n" line per board, or with options.raw the packed records
 * themselves (n bytes per board, the form of `queens enumerate --packed` and `count-ref -e`).
 */
async function download(client, request, write, options = {}) {
  const { onBoards = () => {}, raw = false } = options;
  const n = request.n;
  let written = 0;
  for await (const bytes of packedBatches(client, request, options)) {
    await write(raw ? bytes : packedToText(bytes, n));
    written += bytes.length / n;
    onBoards(bytes.length / n);
  }
  return written;
}

/** Parses "c0,c1,..." (a board of n columns, each below n); undefined if it is not one. */
function parseColumns(text, n) {
  const parts = text.split(',');
  if (parts.length !== n || !parts.every((part) => /^\d+$/.test(part) && Number(part) < n)) return undefined;
  return parts.map(Number);
}

/**
 * Looks at a download file open for reading and appending: returns { last, done } (its last
 * complete board, or undefined, and how many boards it holds), after cutting off a partial
 * last line (or, with raw, a partial last record) that a crash may have left. A file that
 * does not end in boards of n in that form is refused before anything is cut.
 */
function readResumePoint(fd, n, raw = false) {
  const size = fs.fstatSync(fd).size;
  const refuse = (what) => {
    const hint = raw ? 'a text file? then leave out --packed' : 'raw records? then add --packed';
    return new Error(`the file ${what}, not boards of n = ${n} (${hint})`);
  };
  if (raw) {
    const whole = size - (size % n);
    if (whole === 0) {
      if (size > 0) fs.ftruncateSync(fd, 0);
      return { last: undefined, done: 0 };
    }
    const last = Buffer.alloc(n);
    fs.readSync(fd, last, 0, n, whole - n);
    if (!last.every((c) => c < n)) throw refuse('ends in a record with a byte of n or more');
    if (whole < size) fs.ftruncateSync(fd, whole);
    return { last: Array.from(last), done: whole / n };
  }
  // The end of the file: its last line (and a torn one after it) must be text.
  const tail = Buffer.alloc(Math.min(size, 4 * 256 + 2));
  fs.readSync(fd, tail, 0, tail.length, size - tail.length);
  if (!tail.every((c) => c === 10 || c === 44 || (c >= 48 && c <= 57))) {
    throw refuse('holds bytes other than digits, commas and newlines');
  }
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
  let last;
  if (done > 0) {
    const start = Math.max(0, lastNewline - 4 * 256);
    const end = Buffer.alloc(lastNewline - start);
    fs.readSync(fd, end, 0, end.length, start);
    const line = end.toString().split('\n').pop();
    last = parseColumns(line, n);
    if (!last) throw refuse(`ends in the line ${JSON.stringify(line)}`);
  }
  if (lastNewline + 1 < size) fs.ftruncateSync(fd, lastNewline + 1);
  return { last, done };
}

/**
 * Sets progress.total from a Count in the background, once started; asks again a second
 * later if the server went away before answering, and gives up on any other error (the
 * server busy, say: no percentage then).
 */
class Total {
  constructor(client, request, progress, fundamental, limit) {
    Object.assign(this, { client, request, progress, fundamental, limit, asked: false, closed: false });
  }

  askOnce() {
    if (!this.asked) this.ask();
    this.asked = true;
  }

  ask() {
    if (this.closed) return;
    count(this.client, this.request).then(
      (counted) => {
        const total = this.fundamental ? counted.fundamental : counted.solutions;
        this.progress.total = this.limit && total > this.limit ? this.limit : total;
      },
      (error) => {
        if (error.code === Status.UNAVAILABLE) setTimeout(() => this.ask(), 1000).unref();
      },
    );
  }

  close() {
    this.closed = true;
  }
}

// Whether a progress line is open on stderr (an error message then starts on a new line).
let progressOpen = false;

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
    progressOpen = end === '';
  }

  finish() {
    if (this.enabled) this.show('\n');
  }
}

/** Stdout was closed by its reader (`client.js enumerate 16 | head`): the download ends. */
class StdoutClosed extends Error {}

/** Writes to stdout, resolving once the chunk is written (so waiting while the pipe is full). */
function writeStdout(chunk) {
  return new Promise((resolve, reject) =>
    process.stdout.write(chunk, (error) => {
      if (!error) resolve();
      else reject(error.code === 'EPIPE' ? new StdoutClosed('stdout closed') : error);
    }),
  );
}

/** Parses a non-negative decimal integer option; throws a UsageError naming it. */
function parseCount(text, what, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}) {
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new UsageError(`${what} ${text}: expected a whole number from ${min} to ${max}`);
  }
  return Number(text);
}

/** Parses --fixed R,C (the row and column of a queen, each below n). */
function parseSquare(text, n) {
  const match = /^(\d+),(\d+)$/.exec(text);
  if (!match) {
    throw new UsageError(`--fixed ${text}: expected R,C, the row and column of a queen (e.g. --fixed 0,3)`);
  }
  const [row, column] = [Number(match[1]), Number(match[2])];
  if (row >= n || column >= n) {
    throw new UsageError(`--fixed ${text}: row and column must each be 0..${n - 1} for n = ${n}`);
  }
  return { row, column };
}

/** Parses --shard I/K (part I of K, 0 <= I < K). */
function parseShard(text) {
  const match = /^(\d+)\/(\d+)$/.exec(text);
  if (!match || Number(match[2]) < 1 || Number(match[1]) >= Number(match[2]) || Number(match[2]) > 2 ** 32 - 1) {
    throw new UsageError(`--shard ${text}: expected I/K, part I of K parts with 0 <= I < K (e.g. --shard 0/4)`);
  }
  return { index: Number(match[1]), count: Number(match[2]) };
}

/** The request's fields shared by count and enumerate, from the options. */
function searchRequest(n, values) {
  const request = { n };
  if (values.fixed) request.fixed = values.fixed.map((text) => parseSquare(text, n));
  if (values.shard) request.shard = parseShard(values.shard);
  return request;
}

async function runEnumerate(client, n, values) {
  const raw = Boolean(values.packed);
  const request = searchRequest(n, values);
  if (values.fundamental) request.fundamental = true;
  request.batchSize =
    values['batch-size'] !== undefined
      ? parseCount(values['batch-size'], '--batch-size', { min: 1, max: 2 ** 32 - 1 })
      : Math.max(1, Math.floor(PACKED_BATCH_BYTES / n));
  const limit = values.limit !== undefined ? BigInt(parseCount(values.limit, '--limit')) : 0n;
  let startAfter = [];
  if (values['start-after'] !== undefined) {
    startAfter = parseColumns(values['start-after'], n);
    if (!startAfter) {
      throw new UsageError(`--start-after ${values['start-after']}: expected ${n} columns C,C,... each 0..${n - 1}, as enumerate prints them`);
    }
  }
  const giveUpAfterMs = 1000 * parseCount(values['give-up-after'], '--give-up-after');

  let fd;
  let write = writeStdout;
  let resume = { last: undefined, done: 0 };
  if (values.out) {
    fd = fs.openSync(values.out, 'a+');
    resume = readResumePoint(fd, n, raw);
    if (resume.last) startAfter = resume.last;
    write = async (chunk) => void fs.writeSync(fd, chunk);
  }
  const resumed = resume.done > 0;
  const already = () => console.error(`queens-client: ${values.out} already complete: ${resume.done} boards`);
  const progress = new Progress(resume.done, !values.quiet);
  // The total, for a percentage and an ETA, comes from a Count asked once the stream runs
  // (so that the stream has its search slot first); not for a shard (Count's part i need not
  // hold Enumerate's part i) nor after --start-after.
  const countRequest = { n, fixed: request.fixed ?? [] };
  const total =
    values.quiet || request.shard || values['start-after'] !== undefined
      ? undefined
      : new Total(client, countRequest, progress, values.fundamental, limit);
  let written = 0;
  try {
    // --limit counts the boards of the file as a whole: a rerun fetches only the rest.
    const left = limit > 0n ? limit - BigInt(resume.done) : 0n;
    if (limit > 0n && left <= 0n) {
      already();
      return;
    }
    written = await download(client, { ...request, limit: left }, write, {
      raw,
      startAfter,
      onBoards: (k) => {
        if (written === 0 && resumed) {
          console.error(`queens-client: ${values.out} holds ${resume.done} boards; resuming after ${startAfter.join(',')}`);
        }
        written += k;
        progress.add(k);
        total?.askOnce();
      },
      giveUpAfterMs,
      log: (line) => console.error(`${progressOpen ? '\n' : ''}${line}`),
    });
    if (written === 0 && resumed) already();
    else progress.finish();
  } finally {
    total?.close();
    if (fd !== undefined) {
      fs.fsyncSync(fd);
      fs.closeSync(fd);
    }
  }
}

const USAGE = `usage: client.js [--addr URL] [--token TOKEN] [--ca-cert FILE] enumerate N [--out FILE]
                 [--packed] [--limit K] [--start-after C,C,...] [--shard I/K]
                 [--fundamental] [--fixed R,C ...] [--batch-size B] [--quiet]
                 [--give-up-after S]
       client.js [--addr URL] [--token TOKEN] [--ca-cert FILE] count N [--fixed R,C ...]
                 [--shard I/K]
URL: HOST:PORT, http://HOST:PORT or https://HOST:PORT (default ${DEFAULT_ADDR});
--token defaults to $${TOKEN_ENV}; --packed writes n raw bytes per board instead of text.`;

const OPTIONS = {
  addr: { type: 'string', default: DEFAULT_ADDR },
  token: { type: 'string' },
  'ca-cert': { type: 'string' },
  out: { type: 'string' },
  packed: { type: 'boolean' },
  limit: { type: 'string' },
  'start-after': { type: 'string' },
  shard: { type: 'string' },
  'batch-size': { type: 'string' },
  fundamental: { type: 'boolean' },
  fixed: { type: 'string', multiple: true },
  quiet: { type: 'boolean' },
  'give-up-after': { type: 'string', default: '60' },
  help: { type: 'boolean', short: 'h' },
};
const ENUMERATE_ONLY = ['out', 'packed', 'limit', 'start-after', 'batch-size', 'fundamental', 'quiet', 'give-up-after'];

/** The command line as { command, n, values }; throws a UsageError for anything wrong. */
function parseCommandLine(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    // node:util's messages run long ("... place it at the end of the command after '--'"):
    // the first sentence says it.
    throw new UsageError(error.message.split(/\.\s/)[0].replace(/\.$/, ''));
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true };
  const [command, nText, ...extra] = positionals;
  if (command === undefined) throw new UsageError('a command is needed: enumerate or count');
  if (!['enumerate', 'count'].includes(command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  if (nText === undefined) throw new UsageError(`${command} needs N, the board size`);
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
  const n = parseCount(nText, 'N', { min: 1, max: 255 });
  if (command === 'count') {
    const misplaced = ENUMERATE_ONLY.find((name) => values[name] !== undefined && OPTIONS[name].default === undefined);
    if (misplaced) throw new UsageError(`--${misplaced} is an option of enumerate, not count`);
  }
  parseAddr(values.addr);
  return { command, n, values };
}

/** The system's code (ECONNREFUSED, ENOTFOUND, ERR_SSL_...) behind a failed call, if any. */
function systemCode(error) {
  for (let cause = error; cause; cause = cause.cause) if (typeof cause.code === 'string') return cause.code;
  return undefined;
}

/** What a gRPC error means to the person at the terminal, as lines for stderr. */
function describeError(error, addr, token) {
  const system = systemCode(error);
  if (system !== undefined) {
    // The connection or its TLS failed: no answer from a server at all.
    let why = error.message.trim();
    if (system === 'ECONNREFUSED') why = 'connection refused (is the server running?)';
    else if (system === 'ERR_SSL_WRONG_VERSION_NUMBER') why = 'the server does not speak TLS there (an http:// address?)';
    else if (system === 'ENOTFOUND' || system === 'EAI_AGAIN') why = `unknown host (${why})`;
    return [`queens-client: cannot connect to ${addr}: ${why}`];
  }
  const lines = [`queens-client: ${STATUS_NAMES[error.code] ?? error.code}: ${error.message}`];
  if (error.code === Status.UNAUTHENTICATED) {
    const hint = token ? 'the token was refused' : 'no token was given';
    lines.push(`queens-client: ${hint}; give the server's token with --token TOKEN or $${TOKEN_ENV}`);
  }
  return lines;
}

async function main(argv) {
  let parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`queens-client: ${error.message}\n${USAGE}`);
    return 2;
  }
  if (parsed.help) {
    console.log(USAGE);
    return 0;
  }
  const { command, n, values } = parsed;
  const token = values.token ?? (process.env[TOKEN_ENV] || undefined);
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
    const source = values.token !== undefined ? '--token' : `$${TOKEN_ENV}`;
    console.error(`queens-client: ${source}: a token is printable ASCII without spaces\n${USAGE}`);
    return 2;
  }
  // A write error reaches writeStdout's callback; without a listener it would also be thrown.
  process.stdout.on('error', () => {});
  let client;
  try {
    const caCert = values['ca-cert'] !== undefined ? fs.readFileSync(values['ca-cert']) : undefined;
    client = connect(values.addr, { token, caCert });
    if (command === 'count') {
      const counted = await count(client, searchRequest(n, values));
      console.log(`solutions: ${counted.solutions}`);
      if (counted.fundamental !== undefined) console.log(`fundamental: ${counted.fundamental}`);
    } else {
      await runEnumerate(client, n, values);
    }
    return 0;
  } catch (error) {
    if (error instanceof StdoutClosed) {
      // The reader has what it wanted, as with `seq 1000000 | head`: no error.
      if (progressOpen) process.stderr.write('\n');
      return 0;
    }
    if (error instanceof UsageError) {
      console.error(`queens-client: ${error.message}\n${USAGE}`);
      return 2;
    }
    if (typeof error.code === 'number') {
      console.error(`${progressOpen ? '\n' : ''}${describeError(error, values.addr, token).join('\n')}`);
    } else {
      // A file that cannot be opened or read, say: its message, not a stack trace.
      console.error(`queens-client: ${error.message}`);
    }
    return 1;
  } finally {
    client?.close();
  }
}

module.exports = {
  connect,
  count,
  download,
  packedBatches,
  packedToText,
  packedToBoards,
  readResumePoint,
  parseAddr,
  DEFAULT_BATCH_SIZE,
  PACKED_BATCH_BYTES,
};

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => (process.exitCode = code));
}
