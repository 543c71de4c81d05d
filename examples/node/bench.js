#!/usr/bin/env node
// Throughput of this client against a running server, next to count-ref (the project's
// reference enumerator, ../../../shared/peers/count-ref.c) timed in the same run:
//
//   node bench.js [--addr URL] [--n 16] [--runs K] [--count-ref PATH] [--server-pid PID]
//                 [--batch-bytes B,B,...] [--no-boards] [--no-cli]
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
//   process (skip it with --no-boards: it is the slow one).
//
// The client's CPU seconds are shown for the in-process lines, the server's too with
// --server-pid (read from /proc). count-ref is built with gcc -O3 -march=native into the
// system's temporary folder unless --count-ref names a build.
'use strict';

const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { connect, packedBatches, packedToText, PACKED_BATCH_BYTES } = require('./client.js');

const COUNT_REF_SOURCE = path.join(__dirname, '..', '..', '..', 'shared', 'peers', 'count-ref.c');

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
async function timed(label, measure) {
  const serverBefore = cpuOf(values['server-pid']);
  const ownBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  const { boards, childCpu = 0 } = await measure();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const own = process.cpuUsage(ownBefore);
  const clientCpu = (own.user + own.system) / 1e6 + childCpu;
  const serverCpu = values['server-pid'] ? cpuOf(values['server-pid']) - serverBefore : undefined;
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

/** Drains the stream of n in this process: format the batches as text, or only touch them. */
async function drain(client, { packed = true, text = false, batchBytes }) {
  const request = { n, batch_size: packed ? Math.max(1, Math.floor(batchBytes / n)) : 1024 };
  let boards = 0;
  let sink = 0;
  for await (const bytes of packedBatches(client, request, { packed })) {
    boards += bytes.length / n;
    sink += text ? packedToText(bytes, n).length : bytes[bytes.length - 1];
  }
  return { boards, sink };
}

async function cli(extra) {
  const script = path.join(__dirname, 'client.js');
  // Not --quiet: the progress line's last count is the number of boards written.
  const command = `'${process.execPath}' '${script}' --addr '${values.addr}' enumerate ${n} ${extra}`;
  const { stderr, cpu } = await shell(`${command} | cat > /dev/null`);
  const counts = [...stderr.matchAll(/(\d+) boards,/g)];
  return { boards: counts.length ? Number(counts.at(-1)[1]) : 0, childCpu: cpu };
}

function row({ label, boards, seconds, rate, clientCpu, serverCpu }, reference) {
  const cpu = `client ${clientCpu.toFixed(1)} CPU-s` + (serverCpu === undefined ? '' : `, server ${serverCpu.toFixed(1)} CPU-s`);
  const ratio = reference ? `${(rate / reference).toFixed(2)}×` : '1.00×';
  return `${label.padEnd(34)} ${String(boards).padStart(9)} boards ${seconds.toFixed(2).padStart(6)} s ${(rate / 1e6).toFixed(2).padStart(5)} M boards/s ${ratio.padStart(6)}  (${cpu})`;
}

async function main() {
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
      for (const batchBytes of batchSizes) {
        const kib = `${batchBytes >> 10} KiB messages`;
        check(await timed(`packed, drain, ${kib}`, () => drain(client, { batchBytes })));
        check(await timed(`packed, text, ${kib}`, () => drain(client, { batchBytes, text: true })));
      }
      if (!values['no-cli']) {
        check(await timed('CLI text | cat', () => cli('')));
        check(await timed('CLI --packed | cat', () => cli('--packed')));
      }
      if (!values['no-boards']) {
        check(await timed('Board form, text, batch 1024', () => drain(client, { packed: false, text: true })));
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
