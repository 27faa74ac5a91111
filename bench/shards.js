#!/usr/bin/env node
'use strict';
// Shards: what a call costs when the worker runs on a worker thread, what
// shards buy for compute-bound methods, and how long the watchdog takes to
// end a method that never yields. Every figure is measured in this run, in
// process and on shards, with the same classes (bench/fixtures/shard-bench-workers.js).
//
//   node bench/shards.js [--seconds S] [--shards K]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { parseArgs } = require('node:util');
const { open } = require('..');
const { Tally } = require('./fixtures/shard-bench-workers');
const { renderTable, formatNumber, formatRatio } = require('./table');

const MODULE = path.join(__dirname, 'fixtures', 'shard-bench-workers.js');

/** Runs `call` from `concurrency` loops for `seconds`; calls per second. */
async function rate(seconds, concurrency, call) {
  let n = 0;
  const until = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      while (performance.now() < until) {
        await call(i);
        n++;
      }
    }),
  );
  return n / ((performance.now() - start) / 1000);
}

async function measure({ seconds, shards }) {
  const out = {};
  for (const mode of ['in process', `${shards} shards`]) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-shards-'));
    const host = await open({ dir, ...(mode === 'in process' ? {} : { shards: { count: shards, module: MODULE } }) });
    try {
      // Warm: every worker placed (shards started, files created).
      await Promise.all(Array.from({ length: 64 }, (_, i) => host.get(Tally, `t${i}`).add()));
      const r = {};
      r.serial = await rate(seconds, 1, () => host.get(Tally, 't0').add());
      r.concurrent = await rate(seconds, 64, (i) => host.get(Tally, `t${i}`).add());
      r.compute = await rate(seconds, 8, (i) => host.get(Tally, `t${i}`).work(2));
      out[mode] = r;
    } finally {
      await host.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  // The watchdog: how long a call that never yields takes to be refused.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-shards-'));
  const host = await open({ dir, shards: { count: shards, module: MODULE } });
  try {
    await host.get(Tally, 'stuck').add();
    const t0 = performance.now();
    await host
      .get(Tally, 'stuck')
      .spin()
      .catch(() => {});
    out.lostAfterMs = performance.now() - t0;
  } finally {
    await host.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

function report(r, shards) {
  const a = r['in process'];
  const b = r[`${shards} shards`];
  const rows = [
    ['serial write calls, one worker', a.serial, b.serial],
    ['64 concurrent write calls, 64 workers', a.concurrent, b.concurrent],
    ['compute-bound calls (2 ms of hashing), 8 at a time', a.compute, b.compute],
  ].map(([what, x, y]) => [what, `${formatNumber(x)}/s`, `${formatNumber(y)}/s`, formatRatio(y / x)]);
  return [
    `Shards (${os.cpus().length} CPUs): calls per second in process and on ${shards} worker threads`,
    '',
    renderTable(['scenario', 'in process', `${shards} shards`, 'ratio'], rows, ['left', 'right', 'right', 'right']),
    '',
    `A method in an endless loop was refused with ERR_DURABLE_SHARD_LOST after ${formatNumber(r.lostAfterMs)} ms (heartbeat 1000 ms, 3 missed).`,
  ].join('\n');
}

async function main() {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '2' }, shards: { type: 'string', default: '2' } } });
  const shards = Number(values.shards);
  const r = await measure({ seconds: Number(values.seconds), shards });
  console.log(report(r, shards));
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

module.exports = { measure, report };
