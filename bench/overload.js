#!/usr/bin/env node
'use strict';
// Memory under overload, two scenarios:
//
//   node --expose-gc bench/overload.js [--seconds 5] [--workers 100000] [--concurrency 16] [--touch write|read|fresh-read]
//
// 1. Flood: callers fire calls at one slow worker (2 ms a call) as fast as the
//    event loop lets them, for --seconds. Past the mailbox (1,024 waiting
//    calls) they are refused with ERR_DURABLE_BUSY at once, so memory stays
//    bounded however fast they come. RSS and heap are printed every 500 ms.
// 2. Many workers: --workers distinct workers touched one call each with
//    maxLive 128, --concurrency at a time. RSS is printed after a warm-up
//    (the first tenth) and at the end; "flat" means the end is within 1.25×
//    the warm-up. Why 1.25: with 128 workers open the process holds a fixed
//    set (SQLite connections, their page caches, the JS instances), and what
//    moves after warm-up is allocator noise, a few MB; a leak of a single
//    kilobyte per worker touched would add ~90 MB over 90,000 workers, well
//    past 1.25× a process of this size.
//    --touch write (default): one write each, so each worker gets a file
//    (~16 KB on disk each: 1.6 GB for 100,000). --touch read: a read of each
//    (run after write, on the same directory, with --dir). --touch
//    fresh-read: a read-only call to workers that have no file, one after
//    another: such a call never leaves the JS thread, so the loop never
//    yields to the event loop and evicted workers cannot finish closing
//    (see the report in __test__/runtime/overload.test.js); it shows `live`
//    climbing past maxLive.
//
// --expose-gc lets the figures be taken after a full collection; without it
// they include garbage not yet collected.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { open, DurableWorker } = require('..');

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    workers: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '16' },
    touch: { type: 'string', default: 'write' },
    dir: { type: 'string' },
    only: { type: 'string' },
  },
});

class Slow extends DurableWorker {
  async work(i) {
    await new Promise((r) => setTimeout(r, 2));
    this.state.set('last', i);
    return i;
  }
}

class Touched extends DurableWorker {
  async put(i) {
    this.state.set('i', i);
    return i;
  }

  async read() {
    return this.state.get('i');
  }
}

const MB = (b) => `${(b / 1024 / 1024).toFixed(1)} MB`;
const settle = () => new Promise((r) => setImmediate(r));

async function memory() {
  if (global.gc) {
    await settle();
    global.gc();
  }
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
}

async function flood(dir, seconds) {
  const host = await open({ dir: path.join(dir, 'flood') });
  const w = host.get(Slow, 'slow');
  await w.work(-1);
  let sent = 0;
  let done = 0;
  let refused = 0;
  let other = 0;
  const start = Date.now();
  const samples = [];
  let nextSample = start;
  console.log(`flood: one worker at 2 ms a call, mailbox 1024, calls fired as fast as the loop turns, ${seconds} s`);
  console.log('      t      rss     heap   accepted   refused   waiting');
  while (Date.now() - start < seconds * 1000) {
    for (let i = 0; i < 2000; i++) {
      sent++;
      w.work(sent).then(
        () => done++,
        (err) => (err.code === 'ERR_DURABLE_BUSY' ? refused++ : other++),
      );
    }
    await settle();
    if (Date.now() >= nextSample) {
      nextSample += 500;
      const m = process.memoryUsage();
      samples.push(m.rss);
      const accepted = sent - refused;
      console.log(
        `${String(((Date.now() - start) / 1000).toFixed(1)).padStart(6)} s ${MB(m.rss).padStart(8)} ${MB(m.heapUsed).padStart(8)} ${String(accepted).padStart(10)} ${String(refused).padStart(9)} ${String(accepted - done).padStart(9)}`,
      );
    }
  }
  while (done + refused + other < sent) await new Promise((r) => setTimeout(r, 10));
  const half = samples.slice(Math.floor(samples.length / 2));
  const ratio = Math.max(...half) / samples[1];
  console.log(
    `flood: ${sent} calls, ${sent - refused - other} accepted and completed, ${refused} refused (ERR_DURABLE_BUSY), ${other} other errors; ` +
      `peak RSS in the second half / RSS at 0.5 s: ${ratio.toFixed(2)}× (${ratio <= 1.25 ? 'bounded' : 'GROWING'})`,
  );
  await host.close();
  return { sent, refused, other, ratio };
}

async function many(dir, workers, concurrency, touch) {
  const maxLive = 128;
  const host = await open({ dir: path.join(dir, 'many'), maxLive });
  const warmup = Math.max(1, Math.floor(workers / 10));
  let maxSeen = 0;
  const touchOne = async (i) => {
    const w = host.get(Touched, `t${i}`);
    if (touch === 'write') await w.put(i);
    else await w.read();
    maxSeen = Math.max(maxSeen, host.stats().live);
  };
  const run = async (from, to) => {
    if (touch === 'fresh-read') {
      for (let i = from; i < to; i++) await touchOne(i);
      return;
    }
    let next = from;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < to; i = next++) await touchOne(i);
      }),
    );
  };
  console.log(`\nmany workers: ${workers} distinct workers, one ${touch} call each, maxLive ${maxLive}, ${touch === 'fresh-read' ? 1 : concurrency} at a time`);
  const m0 = await memory();
  const t0 = Date.now();
  await run(0, warmup);
  const m1 = await memory();
  console.log(`after warm-up (${warmup} workers): RSS ${MB(m1.rss)}, heap ${MB(m1.heap)}, live ${host.stats().live}, max live so far ${maxSeen} (before any: RSS ${MB(m0.rss)})`);
  const step = Math.max(warmup, Math.floor(workers / 5));
  for (let from = warmup; from < workers; from += step) {
    await run(from, Math.min(workers, from + step));
    const m = process.memoryUsage();
    console.log(
      `  ${Math.min(workers, from + step)} touched: RSS ${MB(m.rss)}, heap ${MB(m.heapUsed)}, live ${host.stats().live}, max live so far ${maxSeen}, ${Math.round((Math.min(workers, from + step) * 1000) / (Date.now() - t0))} workers/s`,
    );
  }
  const m2 = await memory();
  const ratio = m2.rss / m1.rss;
  const s = host.stats();
  console.log(
    `at the end: RSS ${MB(m2.rss)}, heap ${MB(m2.heap)}; RSS end / after warm-up: ${ratio.toFixed(2)}× (${ratio <= 1.25 ? 'flat' : 'GROWING'}); ` +
      `max live seen ${maxSeen} (maxLive ${maxLive}), evicted ${s.evicted}, materialized ${s.materialized}, ${Math.round((workers * 1000) / (Date.now() - t0))} workers/s`,
  );
  await host.close();
  return { ratio, maxSeen };
}

async function main() {
  const dir = args.dir ? path.resolve(args.dir) : fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-overload-'));
  console.log(`node ${process.version}, ${os.cpus().length} CPUs, ${new Date().toISOString().slice(0, 10)}${global.gc ? '' : ' (run with --expose-gc for figures after a full collection)'}`);
  try {
    if (args.only !== 'many') await flood(dir, Number(args.seconds));
    if (args.only !== 'flood') await many(dir, Number(args.workers), Number(args.concurrency), args.touch);
  } finally {
    if (!args.dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
