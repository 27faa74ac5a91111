'use strict';
// Overload: a flood past the mailbox is refused at once and retains nothing;
// thousands of distinct workers touched with maxLive 128 keep the open set
// and the memory bounded. bench/overload.js is the long form (a flood for
// seconds, 100,000 workers, RSS printed).
//
// Memory is read after a full collection (gc exposed at run time), and the
// bounds are loose on purpose: they are there to catch memory that grows
// with the number of calls or workers, which grows by tens of MB over these
// counts, not allocator noise of a few MB.
const test = require('ava');
const v8 = require('node:v8');
const vm = require('node:vm');
const { open, DurableWorker } = require('../..');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

async function heapAfterGc() {
  await new Promise((r) => setImmediate(r));
  gc();
  return process.memoryUsage();
}

/** What the Slow worker does, in order, and the gate its hold() waits on. */
const ran = [];
let held = null;

class Slow extends DurableWorker {
  async warm() {
    return true;
  }

  /** Tells the test it runs, then waits until the test releases it. */
  async hold() {
    ran.push('hold');
    await new Promise((resolve) => held.started(resolve));
    this.state.set('held', true);
    return 'held';
  }

  async fast(i) {
    ran.push(i);
    this.state.set('last', i);
    return i;
  }

  async last() {
    return this.state.get('last');
  }
}

class Caller extends DurableWorker {
  /** Fires `n` calls at the slow worker through this.ctx at once; the code of each outcome. */
  async flood(id, n) {
    const stub = this.ctx.get(Slow, id);
    const all = await Promise.allSettled(Array.from({ length: n }, (_, i) => stub.fast(1000 + i)));
    return all.map((r) => (r.status === 'fulfilled' ? 'ok' : r.reason.code));
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

/** Starts hold() on `w` and resolves, with the function that releases it, once it runs. */
async function holdWorker(w) {
  let release;
  const running = new Promise((resolve) => {
    held = { started: (r) => ((release = r), resolve()) };
  });
  const result = w.hold();
  await running;
  return { result, release };
}

test.serial('a flood past the mailbox is refused with ERR_DURABLE_BUSY while the worker is still busy, and every accepted call completes, in order', async (t) => {
  const MAILBOX = 16;
  const N = 2000;
  const dir = tmpDir(t);
  const host = await open({ dir, mailbox: MAILBOX });
  t.teardown(() => host.close());
  const w = host.get(Slow, 'slow');
  await w.warm();
  ran.length = 0;
  const refusedBefore = host.stats().refused;

  const { result, release } = await holdWorker(w);
  const log = [];
  result.then((v) => log.push(`hold:${v}`));
  const outcomes = Array.from({ length: N }, (_, i) =>
    w.fast(i).then(
      (v) => (log.push(`ok:${v}`), 'ok'),
      (err) => (log.push(`refused:${i}`), err),
    ),
  );

  // Every refusal arrives while hold() still runs: none waits for the queue.
  await until(
    () => log.length >= N - MAILBOX,
    10_000,
    () => `${N - MAILBOX} refusals, got ${log.length}`,
  );
  t.is(log.length, N - MAILBOX, 'only refusals have settled');
  t.true(log.every((e) => e.startsWith('refused:')));
  t.deepEqual(ran, ['hold'], 'no queued call ran meanwhile');
  t.is(host.stats().refused - refusedBefore, N - MAILBOX);

  release();
  const settled = await Promise.all(outcomes);
  await result;
  for (let i = 0; i < N; i++) {
    if (i < MAILBOX) t.is(settled[i], 'ok');
    else {
      t.is(settled[i].code, 'ERR_DURABLE_BUSY');
      if (i === MAILBOX) t.regex(settled[i].message, /Slow "slow": the mailbox is full \(16 calls waiting\)/);
    }
  }
  // Refusals, then the held call, then the accepted ones in the order they came.
  const firstOk = log.findIndex((e) => !e.startsWith('refused:'));
  t.is(firstOk, N - MAILBOX);
  t.deepEqual(log.slice(firstOk), ['hold:held', ...Array.from({ length: MAILBOX }, (_, i) => `ok:${i}`)]);
  t.deepEqual(ran, ['hold', ...Array.from({ length: MAILBOX }, (_, i) => i)]);
  t.is(await w.last(), MAILBOX - 1);
});

test.serial('calls from another worker past the mailbox get ERR_DURABLE_BUSY too, and the caller goes on', async (t) => {
  const dir = tmpDir(t);
  const host = await open({ dir, mailbox: 8 });
  t.teardown(() => host.close());
  const w = host.get(Slow, 'slow2');
  await w.warm();
  const { result, release } = await holdWorker(w);
  const codes = host.get(Caller, 'c').flood('slow2', 30);
  await until(() => host.stats().refused >= 22, 10_000, 'the refusals');
  release();
  await result;
  const got = await codes;
  t.is(got.filter((c) => c === 'ok').length, 8);
  t.is(got.filter((c) => c === 'ERR_DURABLE_BUSY').length, 22);
});

test.serial('refused calls retain nothing: 100,000 of them leave the heap as it was', async (t) => {
  t.timeout(120_000);
  const dir = tmpDir(t);
  const host = await open({ dir, mailbox: 16 });
  t.teardown(() => host.close());
  const w = host.get(Slow, 'slow3');
  await w.warm();
  const { result, release } = await holdWorker(w);
  const accepted = Array.from({ length: 16 }, (_, i) => w.fast(i));
  const floodOnce = async (n) => {
    let refused = 0;
    for (let i = 0; i < n; i += 1000) {
      const batch = [];
      for (let j = 0; j < 1000; j++) batch.push(w.fast(-1).catch((err) => err.code === 'ERR_DURABLE_BUSY' && refused++));
      await Promise.all(batch);
    }
    return refused;
  };
  t.is(await floodOnce(10_000), 10_000); // warm-up: code paths compiled, pools grown
  const before = await heapAfterGc();
  t.is(await floodOnce(100_000), 100_000);
  const after = await heapAfterGc();
  const grew = after.heapUsed - before.heapUsed;
  t.log(`heap ${(before.heapUsed / 1e6).toFixed(1)} MB → ${(after.heapUsed / 1e6).toFixed(1)} MB after 100,000 refusals; RSS ${(before.rss / 1e6).toFixed(0)} → ${(after.rss / 1e6).toFixed(0)} MB`);
  // A refusal that kept even 100 bytes would add 10 MB.
  t.true(grew < 5e6, `the heap grew by ${grew} bytes over 100,000 refused calls`);
  release();
  await result;
  t.deepEqual(
    await Promise.all(accepted),
    Array.from({ length: 16 }, (_, i) => i),
  );
});

test.serial('5,000 distinct workers written with maxLive 128 keep the open set at 128 plus the calls in flight, and memory flat after warm-up', async (t) => {
  t.timeout(180_000);
  const MAX_LIVE = 128;
  const N = 5000;
  const WARMUP = 1000;
  const CONCURRENCY = 8;
  const dir = tmpDir(t);
  const host = await open({ dir, maxLive: MAX_LIVE });
  t.teardown(() => host.close());
  let maxSeen = 0;
  const touch = async (from, to) => {
    let next = from;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < to; i = next++) {
          t.is(await host.get(Touched, `t${i}`).put(i), i);
          maxSeen = Math.max(maxSeen, host.stats().live);
        }
      }),
    );
  };
  await touch(0, WARMUP);
  const warm = await heapAfterGc();
  await touch(WARMUP, N);
  const end = await heapAfterGc();
  const s = host.stats();
  t.log(
    `after ${WARMUP} workers: RSS ${(warm.rss / 1e6).toFixed(1)} MB, heap ${(warm.heapUsed / 1e6).toFixed(1)} MB; after ${N}: RSS ${(end.rss / 1e6).toFixed(1)} MB, heap ${(end.heapUsed / 1e6).toFixed(1)} MB; ` +
      `max live ${maxSeen}, evicted ${s.evicted}`,
  );
  // A worker evicted to make room still counts while its close runs, and each
  // of the calls in flight may have just started one: maxLive + CONCURRENCY.
  t.true(maxSeen <= MAX_LIVE + CONCURRENCY, `live reached ${maxSeen}`);
  t.true(s.live <= MAX_LIVE);
  t.is(s.materialized, N);
  t.true(s.evicted >= N - MAX_LIVE - CONCURRENCY);
  // 128 open workers cost about 10 MB of native memory (79 KB each, docs/internals.md);
  // 4,000 more workers touched must add none of it. A leak of one open
  // worker's native memory per worker touched would add 300 MB; of its JS
  // instance (about 7 KB), 28 MB of heap.
  t.true(end.rss < warm.rss * 1.5, `RSS ${warm.rss} → ${end.rss} bytes`);
  t.true(end.heapUsed - warm.heapUsed < 10e6, `heap ${warm.heapUsed} → ${end.heapUsed} bytes`);
  // Every write is there after the churn.
  for (const i of [0, 1, WARMUP, N - 1]) t.is(await host.get(Touched, `t${i}`).read(), i);
});

// A call that only reads a worker with no file never leaves the JS thread
// (materializing it is one stat), so a loop of such calls to distinct workers
// runs entirely in microtasks. An evicted worker's close must then finish
// without a commit thread (whose answer needs a turn of the event loop), or
// `live` would climb to one per worker touched until the loop yielded.
test.serial('a loop of read-only calls to 2,000 distinct workers without files keeps live at most maxLive + 1', async (t) => {
  const MAX_LIVE = 128;
  const dir = tmpDir(t);
  const host = await open({ dir, maxLive: MAX_LIVE });
  t.teardown(() => host.close());
  let maxSeen = 0;
  for (let i = 0; i < 2000; i++) {
    t.is(await host.get(Touched, `r${i}`).read(), undefined);
    maxSeen = Math.max(maxSeen, host.stats().live);
  }
  t.true(maxSeen <= MAX_LIVE + 1, `live reached ${maxSeen} with maxLive ${MAX_LIVE}`);
});
