'use strict';
// The gate and the mailbox, in process. (The gate under SIGKILL is in files/crash.)
const test = require('ava');
const { open, DurableWorker } = require('../..');
const { tmpDir } = require('../helpers/tmp');

let currentHost = null;

class Counter extends DurableWorker {
  incr() {
    const n = (this.state.get('n') ?? 0) + 1;
    this.state.set('n', n);
    return n;
  }
  read() {
    return this.state.get('n') ?? 0;
  }
  async slow(ms) {
    this.state.set('last', ms);
    await new Promise((r) => setTimeout(r, ms));
    return ms;
  }
  async syncThenReport() {
    this.state.set('s', 1);
    const before = currentHost.stats().commits;
    await this.state.sync();
    return currentHost.stats().commits - before;
  }
}

class Order extends DurableWorker {
  async place() {
    this.state.set('placed', true);
    const commitsBefore = currentHost.stats().commits;
    const seen = await this.ctx.get(Audit, 'a').commitsNow();
    return seen - commitsBefore;
  }
}

class Audit extends DurableWorker {
  commitsNow() {
    return currentHost.stats().commits;
  }
}

class Gate extends DurableWorker {
  async hold(tag) {
    await Gate.release[tag];
    return tag;
  }
}
Gate.release = {};

async function host(t, opts = {}) {
  const h = await open({ dir: tmpDir(t), ...opts });
  currentHost = h;
  t.teardown(() => h.close());
  return h;
}

test('64 concurrent write calls on one worker share their commits, and every result counts', async (t) => {
  const h = await host(t);
  const c = h.get(Counter, 'burst');
  await c.incr();
  const before = h.stats().commits;
  const results = await Promise.all(Array.from({ length: 64 }, () => c.incr()));
  t.deepEqual(
    results,
    Array.from({ length: 64 }, (_, i) => i + 2),
  );
  const commits = h.stats().commits - before;
  t.true(commits >= 1 && commits <= 4, `64 calls took ${commits} commits`);
});

test('a result is released only after the commit carrying its writes', async (t) => {
  const h = await host(t);
  const c = h.get(Counter, 'order');
  await c.incr();
  const before = h.stats().commits;
  const n = await c.incr();
  t.is(n, 2);
  t.is(h.stats().commits, before + 1, 'the commit had landed when the result arrived');
});

test('a read-only call that saw uncommitted writes waits for their commit', async (t) => {
  const h = await host(t);
  const c = h.get(Counter, 'reader');
  await c.incr();
  const before = h.stats().commits;
  const log = [];
  const w = c.incr().then((v) => log.push(['write', v, h.stats().commits - before]));
  const r = c.read().then((v) => log.push(['read', v, h.stats().commits - before]));
  await Promise.all([w, r]);
  t.deepEqual(log, [
    ['write', 2, 1],
    ['read', 2, 1],
  ]);
});

test.serial('state.sync() resolves after the writes so far have committed', async (t) => {
  const h = await host(t);
  t.is(await h.get(Counter, 's').syncThenReport(), 1);
});

test.serial("a call leaving a worker waits for that worker's writes to commit (output gate)", async (t) => {
  const h = await host(t);
  await h.get(Audit, 'a').commitsNow(); // materialize the callee first
  t.is(await h.get(Order, 'o1').place(), 1);
});

test('calls to one worker run one at a time, in the order they were made', async (t) => {
  const h = await host(t);
  const c = h.get(Counter, 'serial');
  const done = [];
  const calls = [30, 5, 15].map((ms) => c.slow(ms).then((v) => done.push(v)));
  await Promise.all(calls);
  t.deepEqual(done, [30, 5, 15]);
});

test('past the mailbox limit a call is refused with ERR_DURABLE_BUSY, and the queued ones still run', async (t) => {
  const h = await host(t, { mailbox: 2 });
  let open1;
  Gate.release.first = new Promise((r) => (open1 = r));
  Gate.release.q1 = Promise.resolve();
  Gate.release.q2 = Promise.resolve();
  Gate.release.over = Promise.resolve();
  const g = h.get(Gate, 'busy');
  const first = g.hold('first');
  await new Promise((r) => setImmediate(r));
  const q1 = g.hold('q1');
  const q2 = g.hold('q2');
  const err = await t.throwsAsync(g.hold('over'));
  t.is(err.code, 'ERR_DURABLE_BUSY');
  t.regex(err.message, /Gate "busy"/);
  t.is(h.stats().refused, 1);
  open1();
  t.deepEqual(await Promise.all([first, q1, q2]), ['first', 'q1', 'q2']);
});

test('an error thrown by a method reaches the caller as that error', async (t) => {
  class Thrower extends DurableWorker {
    fail() {
      const e = new RangeError('out of stock');
      e.code = 'E_STOCK';
      e.sku = 'apple';
      throw e;
    }
  }
  const h = await host(t);
  const err = await t.throwsAsync(h.get(Thrower, 't').fail(), { instanceOf: RangeError });
  t.is(err.message, 'out of stock');
  t.is(err.code, 'E_STOCK');
  t.is(err.sku, 'apple');
});
