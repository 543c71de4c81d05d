#!/usr/bin/env node
// A small client of the queens gRPC service (queens.v1.Queens), loading proto/queens.proto at
// run time with @grpc/proto-loader: no generated code.
//
//   node client.js [--addr URL] [--token TOKEN] enumerate N [--out FILE] [--packed] [...]
//   node client.js [--addr URL] [--token TOKEN] count N [--fixed R,C ...] [--shard I/K]
//
// `enumerate` asks for the packed form (EnumerateRequest.packed: each response carries its
// boards as consecutive n-byte records) and writes the solutions compactly, one column vector
// per line ("1,3,0,2"), straight from those bytes, or with --packed the raw n-byte records
// themselves, to stdout or a file as they arrive, with a progress line on stderr. With --out
// it resumes: the file records the last board written, so running the same command again
// continues after it with `start_after`; a stream broken by the server (UNAVAILABLE) is
// resumed the same way without restarting. The finished file holds every board exactly once,
// in order.
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
// Largest message accepted: a margin over the server's 4 MiB cap, which is also grpc-js's
// default limit (a server whose cap counted differently would otherwise fail every stream).
const MAX_RECEIVE_BYTES = 8 << 20;
// Until its channel has once been READY (connected to the server), a client takes an
// UNAVAILABLE for "cannot connect" and reports it at once instead of retrying.
const READY = grpc.connectivityState.READY;

/** The Queens client class, from the proto loaded now. uint64 fields arrive as strings. */
function loadQueens() {
  const definition = protoLoader.loadSync(PROTO, {
    keepCase: true, // field names as in the proto: start_after, batch_size
    longs: String, // uint64 as decimal strings: no precision lost above 2^53
    defaults: true, // zero values present (solutions: '0', packed: an empty Buffer)
    oneofs: true, // `_fundamental` tells whether the optional `fundamental` was sent
    // `bytes` left unset: `packed` arrives as a Buffer, a view of the received message (not
    // String, which would base64-encode it, nor Array, a JavaScript array of numbers).
  });
  return grpc.loadPackageDefinition(definition).queens.v1.Queens;
}

/** Why a command line cannot be used: printed as one line and the usage, exit status 2. */
class UsageError extends Error {}

/**
 * The grpc-js target and security of an address: "host:port", "http://host:port" (the Rust
 * CLI's form) or "https://host:port" (TLS). Throws a UsageError for anything else.
 */
function parseAddr(text) {
  const match = /^(?:([a-z][a-z0-9+.-]*):\/\/)?([^/]+)\/?$/i.exec(text);
  const scheme = match?.[1]?.toLowerCase();
  if (!match || (scheme !== undefined && scheme !== 'http' && scheme !== 'https')) {
    throw new UsageError(`--addr ${text}: expected HOST:PORT, http://HOST:PORT or https://HOST:PORT`);
  }
  const tls = scheme === 'https';
  let target = match[2];
  // A URL without a port means the scheme's port, as it does for the Rust CLI.
  if (scheme && !/:\d+$/.test(target)) target += tls ? ':443' : ':80';
  return { target, tls };
}

/**
 * A client of the server at addr ("host:port", "http://host:port" or "https://host:port");
 * with options.token, every call made through it carries "authorization: Bearer <token>";
 * over https://, options.caCert (PEM bytes) is the certificate authority to trust (the
 * system's by default); options.channelOptions add to or override the grpc-js channel
 * options below. client.connected tells whether it ever reached the server.
 */
function connect(addr, options = {}) {
  const { target, tls } = parseAddr(addr);
  if (options.caCert && !tls) throw new UsageError('--ca-cert needs an https:// address');
  const Queens = loadQueens();
  const credentials = tls ? grpc.credentials.createSsl(options.caCert ?? null) : grpc.credentials.createInsecure();
  const client = new Queens(target, credentials, {
    // Reconnect to a restarted server within seconds, not after gRPC's default of up to 2 min.
    'grpc.max_reconnect_backoff_ms': 2000,
    'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
    // A 4 MiB HTTP/2 window instead of 64 KiB: the server sends 1 MiB messages without
    // waiting for a window update every 64 KiB. Drained from a replay server like bench.js's:
    // 41 M boards/s against 23 to 36 M; no difference against the real server, whose search
    // is the limit.
    'grpc-node.flow_control_window': 4 << 20,
    interceptors: options.token ? [bearerToken(options.token)] : [],
    ...options.channelOptions,
  });
  client.connected = false;
  const channel = client.getChannel();
  const watch = (state) => {
    if (state === READY) client.connected = true;
    else if (state !== grpc.connectivityState.SHUTDOWN) {
      channel.watchConnectivityState(state, Infinity, () => watch(channel.getConnectivityState(false)));
    }
  };
  watch(channel.getConnectivityState(false));
  return client;
}

/**
 * An interceptor that adds "authorization: Bearer <token>" to the metadata of every call
 * (Count, CountProgress, Enumerate). Not call credentials: grpc-js sends those only over TLS,
 * and this channel may be plaintext.
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

/** Whether error is the channel never having reached the server (nothing listening, say). */
function cannotConnect(client, error) {
  return error.code === grpc.status.UNAVAILABLE && !client.connected;
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

/** Board messages (their `columns`) as packed records: the form of a packed response. */
function boardsToPacked(boards, n) {
  const bytes = new Uint8Array(boards.length * n);
  boards.forEach((board, i) => bytes.set(board.columns, i * n));
  return bytes;
}

// A stream that fails with one of these is asked again from its last board: the server
// restarting or shutting down or the connection breaking (UNAVAILABLE), the server's search
// slots all busy ("retry later": RESOURCE_EXHAUSTED), or the server's time limit on one search
// ending a long stream (DEADLINE_EXCEEDED). Anything else is an answer and is thrown, and so
// is UNAVAILABLE before the client ever reached the server (nothing listening there).
const RETRYABLE = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.DEADLINE_EXCEEDED,
]);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether error is grpc-js refusing a message above MAX_RECEIVE_BYTES: RESOURCE_EXHAUSTED
 * too, but this client's own limit, which asking again would only hit again.
 */
function tooLarge(error) {
  return error.code === grpc.status.RESOURCE_EXHAUSTED && /larger than max/i.test(error.details ?? '');
}

/**
 * The boards of request after options.startAfter (else request.start_after), as batches of
 * packed records: a Uint8Array of n bytes per board for each response. Asks for the packed
 * form unless options.packed is false (then it asks for compact Board messages and packs
 * them; a server older than `packed` answers in that form too, and is read the same way).
 * request.limit counts the boards of all attempts together.
 *
 * On a RETRYABLE error it waits a little (backing off up to 2 s), then asks again after the
 * last board of the last batch taken, until the stream ends or nothing arrived for
 * options.giveUpAfterMs. A batch counts as taken when the consumer asks for the next one, so
 * a consumer that writes each batch before going on never loses or repeats a board.
 */
async function* packedBatches(client, request, options = {}) {
  const { packed = true, giveUpAfterMs = 60000, log = () => {} } = options;
  const n = request.n;
  let last = options.startAfter ?? request.start_after ?? [];
  const limit = BigInt(request.limit ?? 0);
  let left = limit > 0n ? limit : undefined;
  let failures = 0;
  let failedSince = 0;
  for (;;) {
    if (left === 0n) return;
    const call = client.Enumerate({
      ...request,
      compact: true,
      packed,
      start_after: last,
      limit: left === undefined ? 0 : String(left),
    });
    try {
      for await (const reply of call) {
        client.connected = true;
        const bytes = reply.packed.length > 0 ? reply.packed : boardsToPacked(reply.boards, n);
        if (bytes.length === 0) continue;
        if (bytes.length % n !== 0) throw new Error(`a packed response of ${bytes.length} bytes is not n = ${n} records`);
        yield bytes;
        last = Array.from(bytes.subarray(bytes.length - n));
        if (left !== undefined) left -= BigInt(bytes.length / n);
        failures = 0;
      }
      return;
    } catch (error) {
      if (!RETRYABLE.has(error.code) || cannotConnect(client, error) || tooLarge(error)) throw error;
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
        if (error.code === grpc.status.UNAVAILABLE) setTimeout(() => this.ask(), 1000).unref();
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
  request.batch_size =
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
    written = await download(client, { ...request, limit: String(left) }, write, {
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

/** What a gRPC error means to the person at the terminal, as lines for stderr. */
function describeError(error, addr, token) {
  const details = error.details ?? '';
  if (error.code === grpc.status.UNAVAILABLE && /^No connection established|^Name resolution failed/.test(details)) {
    // grpc-js says "No connection established. Last error: Error: connect ECONNREFUSED
    // 127.0.0.1:1. Resolution note: ": the last error is the news.
    const last = (/Last error: (?:Error: )?(.*?)\.?\s*(?:Resolution note:.*)?$/s.exec(details)?.[1] ?? details).trim();
    let why = last;
    if (/ECONNREFUSED/.test(last)) why = 'connection refused (is the server running?)';
    else if (/wrong version number/.test(last)) why = 'the server does not speak TLS there (an http:// address?)';
    else if (/^Name resolution failed/.test(details)) why = `unknown host (${details})`;
    return [`queens-client: cannot connect to ${addr}: ${why}`];
  }
  const lines = [`queens-client: ${grpc.status[error.code]}: ${error.details}`];
  if (error.code === grpc.status.UNAUTHENTICATED) {
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
  boardsToPacked,
  readResumePoint,
  parseAddr,
  DEFAULT_BATCH_SIZE,
  PACKED_BATCH_BYTES,
};

if (require.main === module) {
  // grpc-js names the host as the TLS server name even when it is an IP address, and Node
  // then warns (DEP0123) on every https://127.0.0.1:... call; the certificate is still
  // checked against the address. Only that warning is dropped.
  const emitWarning = process.emitWarning;
  process.emitWarning = (warning, ...rest) => {
    if ((rest[0]?.code ?? rest[1]) !== 'DEP0123') emitWarning.call(process, warning, ...rest);
  };
  main(process.argv.slice(2)).then((code) => (process.exitCode = code));
}
