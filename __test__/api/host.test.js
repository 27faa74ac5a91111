'use strict';
// The host's surface: ids, names, methods, delete, ids(), options, stubs.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { open, DurableWorker, DurableError } = require('../..');
const { tmpDir } = require('../helpers/tmp');

class Cart extends DurableWorker {
  start() {}
  add(item) {
    const items = this.state.get('items') ?? [];
    items.push(item);
    this.state.set('items', items);
    return items.length;
  }
  items() {
    return this.state.get('items') ?? [];
  }
}

async function host(t, opts = {}) {
  const h = await open({ dir: tmpDir(t), ...opts });
  t.teardown(() => h.close());
  return h;
}

test('bad ids are refused with ERR_DURABLE_ID', async (t) => {
  const h = await host(t);
  for (const id of ['', 42, null, undefined, '\uDC00x', 'é'.repeat(1025)]) {
    const err = t.throws(() => h.get(Cart, id));
    t.is(err.code, 'ERR_DURABLE_ID', String(id).slice(0, 10));
    t.true(err instanceof DurableError);
  }
  t.notThrows(() => h.get(Cart, 'é'.repeat(1024)));
});

test('class names unusable on disk, and non-worker classes, are refused with ERR_DURABLE_NAME', async (t) => {
  const h = await host(t);
  class Bad extends DurableWorker {
    static workerName = 'no spaces';
  }
  t.is(t.throws(() => h.get(Bad, 'x')).code, 'ERR_DURABLE_NAME');
  t.is(t.throws(() => h.get(class NotAWorker {}, 'x')).code, 'ERR_DURABLE_NAME');
  const Other = class Cart extends DurableWorker {};
  h.get(Cart, 'x');
  t.is(t.throws(() => h.get(Other, 'x')).code, 'ERR_DURABLE_NAME');
  class Renamed extends DurableWorker {
    static workerName = 'renamed-1';
    hi() {
      return 'hi';
    }
  }
  t.is(await h.get(Renamed, 'x').hi(), 'hi');
});

test('hooks, inherited and unknown names are refused with ERR_DURABLE_METHOD', async (t) => {
  const h = await host(t);
  const cart = h.get(Cart, 'm');
  for (const name of ['start', 'stop', 'alarm', 'constructor', 'toString', '__proto__', 'hasOwnProperty', 'nope']) {
    const err = await t.throwsAsync(cart[name](), undefined, name);
    t.is(err.code, 'ERR_DURABLE_METHOD', name);
    t.regex(err.message, /Cart "m"/);
  }
});

test('a stub is not thenable and can be awaited as itself', async (t) => {
  const h = await host(t);
  const cart = h.get(Cart, 'then');
  t.is(cart.then, undefined);
  t.is(await cart, cart);
  t.is(await cart.add('x'), 1);
});

test('a DurableWorker cannot be made with new', (t) => {
  const err = t.throws(() => new Cart());
  t.is(err.code, 'ERR_DURABLE_METHOD');
});

test('delete removes the file and the catalog entry, and false means it never existed', async (t) => {
  const h = await host(t);
  const cart = h.get(Cart, 'gone');
  await cart.add('x');
  const path = fs.readdirSync(h.dir, { recursive: true }).filter((p) => p.endsWith('.db') && p.startsWith('Cart'));
  t.is(path.length, 1);
  t.true(await h.delete(Cart, 'gone'));
  t.deepEqual(await cart.items(), [], 'a later call starts empty');
  t.false(fs.existsSync(`${h.dir}/${path[0]}`));
  const ids = [];
  for await (const id of h.ids(Cart)) ids.push(id);
  t.deepEqual(ids, []);
  t.false(await h.delete(Cart, 'never'));
  t.false(await h.delete(Cart, 'gone'));
});

test('ids() lists what exists, sorted, by prefix and limit; a worker that was only read does not exist', async (t) => {
  const h = await host(t);
  for (const id of ['u/3', 'u/1', 'v/1', 'u/2']) await h.get(Cart, id).add(id);
  await h.get(Cart, 'u/0-read-only').items();
  const list = async (o) => {
    const out = [];
    for await (const id of h.ids(Cart, o)) out.push(id);
    return out;
  };
  t.deepEqual(await list(), ['u/1', 'u/2', 'u/3', 'v/1']);
  t.deepEqual(await list({ prefix: 'u/' }), ['u/1', 'u/2', 'u/3']);
  t.deepEqual(await list({ prefix: 'u/', limit: 2 }), ['u/1', 'u/2']);
});

test('ids() pages through more ids than one catalog page', async (t) => {
  const h = await host(t);
  await Promise.all(Array.from({ length: 600 }, (_, i) => h.get(Cart, `p${String(i).padStart(4, '0')}`).add(i)));
  let n = 0;
  let last = '';
  for await (const id of h.ids(Cart)) {
    t.true(id > last);
    last = id;
    n++;
  }
  t.is(n, 600);
  t.true(h.stats().catalogCommits < 600, 'creating 600 workers at once batched the catalog');
});

test('open() validates its options with messages naming the option', async (t) => {
  await t.throwsAsync(open(), { instanceOf: TypeError });
  await t.throwsAsync(open({ dir: '' }), { instanceOf: TypeError, message: /dir/ });
  await t.throwsAsync(open({ dir: tmpDir(t), maxLive: 0 }), { instanceOf: RangeError, message: /maxLive/ });
  await t.throwsAsync(open({ dir: tmpDir(t), durability: 'sometimes' }), { instanceOf: RangeError, message: /durability/ });
});

test('open() refuses an option it does not know, naming it and the nearest it does, and opens nothing', async (t) => {
  const dir = path.join(tmpDir(t), 'never');
  await t.throwsAsync(open({ dir, maxlive: 10 }), { instanceOf: TypeError, message: /unknown option maxlive: did you mean maxLive\?/ });
  await t.throwsAsync(open({ dir, evictAfterMs: 1000 }), { instanceOf: TypeError, message: /unknown option evictAfterMs: did you mean evictAfter\?/ });
  await t.throwsAsync(open({ dir, banana: 1 }), {
    instanceOf: TypeError,
    message: /unknown option banana \(the options are dir, maxLive, evictAfter, mailbox, alarmPoll, durability, control, callTimeout, clock, shards, archive\)$/,
  });
  await t.throwsAsync(open({ dir, shards: { count: 1, module: 'x.js', heartbeat: 5 } }), { instanceOf: TypeError, message: /unknown option shards\.heartbeat: did you mean shards\.heartbeatMs\?/ });
  t.false(fs.existsSync(dir), 'nothing was created');
});

test('relaxed durability commits without syncs and keeps the data', async (t) => {
  const dir = tmpDir(t);
  let h = await open({ dir, durability: 'relaxed' });
  await h.get(Cart, 'r').add('x');
  t.is(h.stats().syncs, 0);
  t.is(h.stats().commits, 1);
  await h.close();
  h = await open({ dir });
  t.teardown(() => h.close());
  t.deepEqual(await h.get(Cart, 'r').items(), ['x']);
});

test('the ESM entry exports the same objects', async (t) => {
  const esm = await import('durable-workers');
  const cjs = require('../..');
  t.is(esm.open, cjs.open);
  t.is(esm.DurableWorker, cjs.DurableWorker);
  t.is(esm.DurableError, cjs.DurableError);
});

test('an error from the native core keeps its code; one with a code the package does not define is ERR_DURABLE_INTERNAL, never ERR_DURABLE_IO', (t) => {
  const { fromNative } = require('../../js/api/errors');
  const disk = fromNative(Object.assign(new Error('disk full'), { code: 'ERR_DURABLE_IO' }), 'Cart "a"');
  t.is(disk.code, 'ERR_DURABLE_IO');
  t.is(disk.message, 'Cart "a": disk full');
  for (const code of ['InvalidArg', 'ERR_INVALID_ARG_VALUE', 'ERR_DURABLE_SOMETHING_NEW', undefined]) {
    const e = fromNative(Object.assign(new Error('expected a number'), { code }), 'Cart "a"');
    t.is(e.code, 'ERR_DURABLE_INTERNAL', String(code));
    t.regex(e.message, /^Cart "a": expected a number \(an internal failure.*please report it\)$/);
  }
});
