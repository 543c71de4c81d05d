#!/usr/bin/env node
// Throughput of this client against a running server, next to count-ref (the project's
// reference enumerator, benches/count-ref.c in this repository) timed in the same run:
//
//   node bench.js [--addr URL] [--n 16] [--runs K] [--count-ref PATH] [--server-pid PID]
//                 [--batch-bytes B,B,...] [--no-boards] [--no-cli] [--replay] [--grpc-js]
//
// Each line is one way of draining every board of n (14,772,512 for n = 16), with its wall
// time, boards/s and ratio to the boards/s of `count-ref -e N | cat > /dev/null`:
//
// - packed, drain: the packed stream read in this process, its bytes touched but not
//   formatted (the client's floor);
// - packed, text: the same, formatted as the text lines the client writes (packedToText);
// - CLI text / CLI --packed: `node client.js enumerate N [--packed] | cat > /dev/null`, the
//   command line end to end (start-up included; its progress line tells the boards written);
// - Board form: the compact Board messages of before `packed`, read and formatted in this
//   process (skip it with --no-boards: it is the slow one);
// - grpc-js, drain (with --grpc-js): the same packed stream through @grpc/grpc-js (a
//   development dependency, loading proto/queens.proto with @grpc/proto-loader), its bytes
//   touched like "packed, drain": the other gRPC stack, as the comparison.
//
// Every other line goes through the package queens-client (../../clients/node), as client.js
// does.
//
// The client's CPU seconds are shown for the in-process lines, the server's too with
// --server-pid (read from /proc). count-ref is built with gcc -O3 -march=native into the
// system's temporary folder unless --count-ref names a build.
//
// --replay measures the client alone: the packed and CLI lines again against a stand-in
// server (this file, run as a child with --replay-server: gRPC by hand on node:http2) that
// replays the records of `count-ref -e N`, held in memory, as packed messages of the
// requested batch size and costs next to nothing per board. It answers Enumerate only, and
// ignores every field but batch_size (its order is count-ref's, not lexicographic). The
// difference between these lines and the ones against the real server is the server's share.
'use strict';

const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { Status } = require('queens-client');
const { connect, packedBatches, packedToText, PACKED_BATCH_BYTES } = require('./client.js');

const COUNT_REF_SOURCE = path.join(__dirname, '..', '..', 'benches', 'count-ref.c');

const { values } = parseArgs({
  options: {
    addr: { type: 'string', default: 'http://127.0.0.1:50051' },
    n: { type: 'string', default: '16' },
    runs: { type: 'string', default: '1' },
    'count-ref': { type: 'string' },
    'server-pid': { type: 'string' },
    'batch-bytes': { type: 'string', default: String(PACKED_BATCH_BYTES) },
    'no-boards': { type: 'boolean' },
    'no-cli': { type: 'boolean' },
    replay: { type: 'boolean' },
    'grpc-js': { type: 'boolean' },
    'replay-server': { type: 'boolean' },
  },
});
const n = Number(values.n);
const runs = Number(values.runs);

/** CPU seconds (user + system) of a process so far, from /proc/PID/stat. */
function cpuOf(pid) {
  if (!pid) return undefined;
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100/s)
}

/** Runs measure() and reports its wall time, boards/s and the CPU spent by us and the server. */
async function timed(label, measure, serverPid = values['server-pid']) {
  const serverBefore = cpuOf(serverPid);
  const ownBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  const { boards, childCpu = 0 } = await measure();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const own = process.cpuUsage(ownBefore);
  const clientCpu = (own.user + own.system) / 1e6 + childCpu;
  const serverCpu = serverPid ? cpuOf(serverPid) - serverBefore : undefined;
  return { label, boards, seconds, rate: boards / seconds, clientCpu, serverCpu };
}

function countRefBinary() {
  if (values['count-ref']) return values['count-ref'];
  const dir = path.join(os.tmpdir(), 'queens-bench');
  fs.mkdirSync(dir, { recursive: true });
  const binary = path.join(dir, 'count-ref');
  execFileSync('gcc', ['-O3', '-march=native', '-o', binary, COUNT_REF_SOURCE], { stdio: 'inherit' });
  return binary;
}

/** Runs a shell pipeline; resolves to its stderr and the CPU seconds of its processes. */
function shell(script) {
  return new Promise((resolve, reject) => {
    // `times` after the pipeline: the CPU of the shell's children (the pipeline's processes).
    const child = spawn('sh', ['-c', `${script}; status=$?; times >&2; exit $status`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${script}: exit ${code}\n${stderr}`));
      const times = stderr.trim().split('\n').pop(); // children's "0m1.234s 0m0.123s"
      const cpu = [...times.matchAll(/(\d+)m([\d.]+)s/g)].reduce((s, m) => s + 60 * m[1] + Number(m[2]), 0);
      resolve({ stderr, cpu });
    });
  });
}

async function countRef(binary) {
  const { stderr, cpu } = await shell(`'${binary}' -e ${n} | cat > /dev/null`);
  return { boards: Number(/\d+/.exec(stderr)[0]), childCpu: cpu };
}

/**
 * Resolves once client is connected: the connection's set-up is not measured. (Any answer
 * will do: the replay server answers Count with UNIMPLEMENTED.)
 */
async function ready(client) {
  await client.count(4).catch((error) => {
    if (error.code !== Status.UNIMPLEMENTED) throw error;
  });
}

/** Drains the stream of n in this process: format the batches as text, or only touch them. */
async function drain(client, { packed = true, text = false, batchBytes }) {
  const request = { n, batchSize: packed ? Math.max(1, Math.floor(batchBytes / n)) : 1024 };
  let boards = 0;
  let sink = 0;
  for await (const bytes of packedBatches(client, request, { packed })) {
    boards += bytes.length / n;
    sink += text ? packedToText(bytes, n).length : bytes[bytes.length - 1];
  }
  return { boards, sink };
}

/**
 * A grpc-js client of addr (plaintext) for --grpc-js, with the windows the package uses (4 MiB
 * for the connection and each stream); resolves once connected.
 */
function grpcJsClient(addr) {
  const grpc = require('@grpc/grpc-js');
  const protoLoader = require('@grpc/proto-loader');
  const proto = path.join(__dirname, '..', '..', 'proto', 'queens.proto');
  const definition = protoLoader.loadSync(proto, { keepCase: true, longs: String, defaults: true });
  const { Queens } = grpc.loadPackageDefinition(definition).queens.v1;
  const target = addr.replace(/^http:\/\//, '');
  const client = new Queens(target, grpc.credentials.createInsecure(), { 'grpc-node.flow_control_window': 4 << 20 });
  return new Promise((resolve, reject) =>
    client.waitForReady(Date.now() + 10000, (error) => (error ? reject(error) : resolve(client))),
  );
}

/** Drains the packed stream of n through grpc-js, touching each batch like drain(). */
async function drainGrpcJs(client, batchBytes) {
  let boards = 0;
  let sink = 0;
  for await (const reply of client.Enumerate({ n, packed: true, batch_size: Math.max(1, Math.floor(batchBytes / n)) })) {
    boards += reply.packed.length / n;
    sink += reply.packed[reply.packed.length - 1];
  }
  return { boards, sink };
}

async function cli(addr, extra) {
  const script = path.join(__dirname, 'client.js');
  // Not --quiet: the progress line's last count is the number of boards written.
  const command = `'${process.execPath}' '${script}' --addr '${addr}' enumerate ${n} ${extra}`;
  const { stderr, cpu } = await shell(`${command} | cat > /dev/null`);
  const counts = [...stderr.matchAll(/(\d+) boards,/g)];
  return { boards: counts.length ? Number(counts.at(-1)[1]) : 0, childCpu: cpu };
}

function row({ label, boards, seconds, rate, clientCpu, serverCpu }, reference) {
  const cpu = `client ${clientCpu.toFixed(1)} CPU-s` + (serverCpu === undefined ? '' : `, server ${serverCpu.toFixed(1)} CPU-s`);
  const ratio = reference ? `${(rate / reference).toFixed(2)}×` : '1.00×';
  return `${label.padEnd(44)} ${String(boards).padStart(9)} boards ${seconds.toFixed(2).padStart(6)} s ${(rate / 1e6).toFixed(2).padStart(5)} M boards/s ${ratio.padStart(6)}  (${cpu})`;
}

/** The value of field `field` (a varint) of a protobuf message, or 0. */
function varintField(message, field) {
  let at = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = message[at++];
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < message.length) {
    const key = varint();
    const wire = key & 7;
    if (wire === 0) {
      const value = varint();
      if (key >>> 3 === field) return value;
    } else if (wire === 2) at += varint();
    else at += wire === 1 ? 8 : 4;
  }
  return 0;
}

/** A gRPC message frame holding an EnumerateResponse with `packed` (field 2) = records. */
function packedFrame(records) {
  const length = [];
  for (let v = records.length; ; v = Math.floor(v / 128)) {
    if (v < 128) {
      length.push(v);
      break;
    }
    length.push((v & 0x7f) | 0x80);
  }
  const header = Buffer.alloc(5 + 1 + length.length);
  header.writeUInt32BE(1 + length.length + records.length, 1); // byte 0: not compressed
  header[5] = 0x12; // field 2, length-delimited
  Buffer.from(length).copy(header, 6);
  return header;
}

/**
 * The stand-in server of --replay: the raw records on stdin, served as packed messages by
 * gRPC's framing written by hand on node:http2 (Enumerate only).
 */
async function replayServer() {
  const http2 = require('node:http2');
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const records = Buffer.concat(chunks);
  const server = http2.createServer();
  // A client that goes away mid-stream (the CLI when it is done) is not the server's error.
  server.on('session', (session) => session.on('error', () => {}));
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const body = [];
    stream.on('data', (chunk) => body.push(chunk));
    stream.on('end', () => {
      if (headers[':path'] !== '/queens.v1.Queens/Enumerate') {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' }, { endStream: true });
        return;
      }
      const batch = varintField(Buffer.concat(body).subarray(5), 7);
      const size = Math.min(batch || 65536, Math.floor((4 << 20) / n) - 1) * n;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      let at = 0;
      const pump = () => {
        while (at < records.length) {
          if (stream.destroyed) return;
          const part = records.subarray(at, at + size);
          stream.write(packedFrame(part));
          const more = stream.write(part);
          at += size;
          if (!more) return void stream.once('drain', pump);
        }
        stream.end();
      };
      pump();
    });
  });
  server.listen(0, '127.0.0.1', () => console.log(`127.0.0.1:${server.address().port}`));
}

/** Starts the --replay stand-in fed by count-ref; resolves to { addr, child } once it listens. */
function startReplay(binary) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [__filename, '--n', String(n), '--replay-server'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const source = spawn(binary, ['-e', String(n)], { stdio: ['ignore', 'pipe', 'ignore'] });
    source.on('error', reject);
    source.stdout.pipe(child.stdin);
    child.on('exit', (code) => reject(new Error(`the replay server exited (${code})`)));
    child.stdout.once('data', (line) => resolve({ addr: line.toString().trim(), child }));
  });
}

async function main() {
  if (values['replay-server']) return replayServer();
  const binary = countRefBinary();
  const client = connect(values.addr);
  const batchSizes = values['batch-bytes'].split(',').map(Number);
  console.log(`n = ${n}, server ${values.addr}, ${os.cpus().length} cores, node ${process.version}; ratio = boards/s over count-ref's`);
  try {
    for (let run = 1; run <= runs; run++) {
      if (runs > 1) console.log(`run ${run} of ${runs}`);
      const reference = await timed(`count-ref -e ${n} | cat`, () => countRef(binary));
      console.log(row(reference));
      const expected = reference.boards;
      const check = (result) => {
        if (result.boards !== expected) {
          throw new Error(`${result.label}: ${result.boards} boards, count-ref wrote ${expected}`);
        }
        console.log(row(result, reference.rate));
      };
      const packedRuns = async (client, addr, suffix, pid) => {
        for (const batchBytes of batchSizes) {
          const kib = `${batchBytes >> 10} KiB messages${suffix}`;
          check(await timed(`packed, drain, ${kib}`, () => drain(client, { batchBytes }), pid));
          if (values['grpc-js']) {
            const other = await grpcJsClient(addr);
            try {
              check(await timed(`grpc-js, drain, ${kib}`, () => drainGrpcJs(other, batchBytes), pid));
            } finally {
              other.close();
            }
          }
          check(await timed(`packed, text, ${kib}`, () => drain(client, { batchBytes, text: true }), pid));
        }
        if (!values['no-cli']) {
          check(await timed(`CLI text | cat${suffix}`, () => cli(addr, ''), pid));
          check(await timed(`CLI --packed | cat${suffix}`, () => cli(addr, '--packed'), pid));
        }
      };
      await ready(client);
      await packedRuns(client, values.addr, '', values['server-pid']);
      if (!values['no-boards']) {
        check(await timed('Board form, text, batch 1024', () => drain(client, { packed: false, text: true })));
      }
      if (values.replay) {
        const replay = await startReplay(binary);
        const replayClient = connect(replay.addr);
        try {
          await ready(replayClient);
          await packedRuns(replayClient, replay.addr, ' (replay)', replay.child.pid);
        } finally {
          replayClient.close();
          replay.child.removeAllListeners('exit');
          replay.child.kill();
        }
      }
    }
  } finally {
    client.close();
  }
}

main().catch((error) => {
  console.error(`bench: ${error.message}`);
  process.exitCode = 1;
});
