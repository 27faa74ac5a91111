'use strict';
// RPC by reference on this host (js/do/rpc.js), beyond what the probe
// compares with workerd (__test__/fixtures/do-probe-rpc.mjs): shared,
// cyclic and sparse values with functions inside, hostile arguments, stubs
// that keep their object in memory, callbacks that run as their object's
// events, and calls out of an object held by its output gate.
const test = require('ava');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { tmpDir } = require('../helpers/tmp');
const { slowSyncEnv } = require('../helpers/slowsync');
const { openObjects } = require('../../js/do/host');
const { DurableObject, RpcTarget } = require('../../js/do/workers-module');

class Tally extends RpcTarget {
  constructor(storage) {
    super();
    this.storage = storage;
  }

  add(n) {
    const total = (this.storage.kv.get('total') ?? 0) + n;
    this.storage.kv.put('total', total);
    return total;
  }
}

class Box extends DurableObject {
  instanceCalls = 0;

  /** Calls this instance has answered: 1 on a new instance. */
  calls() {
    return ++this.instanceCalls;
  }

  keys(o) {
    return [Object.keys(o), Object.getPrototypeOf(o) === Object.prototype, o.isAdmin];
  }

  shape(o) {
    return [o.self === o, o.list[0] === o.list[1], typeof o.f];
  }

  async callIt(o) {
    return await o.f(2);
  }

  tally() {
    return new Tally(this.ctx.storage);
  }

  total() {
    return this.ctx.storage.kv.get('total') ?? 0;
  }

  ping() {
    return 'pong';
  }

  /** A stream that ends only when the reader pulls a second time. */
  stream() {
    let pulls = 0;
    return new ReadableStream({
      pull(c) {
        if (++pulls === 1) c.enqueue(new TextEncoder().encode('one'));
        else c.close();
      },
    });
  }
}

async function open(t, o = {}) {
  const h = await openObjects({ dir: tmpDir(t), name: 'rpc', bindings: { BOX: { class: Box } }, ...o });
  t.teardown(() => h.close());
  return (name) => h.env.BOX.getByName(name);
}

test('a cyclic argument with functions inside keeps its shape: the cycle, a shared object, a function stub', async (t) => {
  const box = await open(t);
  const shared = { n: 1 };
  const o = { list: [shared, shared], f: (x) => x * 10 };
  o.self = o;
  t.deepEqual(await box('a').shape(o), [true, true, 'function']);
  t.is(await box('a').callIt(o), 20);
});

test('hostile arguments reject that call only: a throwing getter, a revoked proxy, a class instance; the object goes on', async (t) => {
  const box = await open(t);
  const getter = {
    f: () => 1,
    get boom() {
      throw new RangeError('getter says no');
    },
  };
  await t.throwsAsync(box('h').callIt(getter), { instanceOf: RangeError, message: 'getter says no' });
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  await t.throwsAsync(box('h').callIt({ f: () => 1, p: proxy }), { instanceOf: TypeError });
  await t.throwsAsync(box('h').callIt({ f: () => 1, d: new (class Secret {})() }), { any: true, name: 'DataCloneError', message: /object of type "Secret"/ });
  t.is(await box('h').ping(), 'pong');
});

test("an RpcTarget's calls are its object's events: its writes are durable and seen by the object", async (t) => {
  const box = await open(t);
  const tally = await box('t').tally();
  t.is(await tally.add(2), 2);
  t.is(await tally.add(3), 5);
  t.is(await box('t').total(), 5);
});

test('a stub keeps the object its target lives in from leaving memory; once disposed, the object may leave', async (t) => {
  const box = await open(t, { maxLive: 1 });
  const tally = await box('first').tally();
  t.is(await tally.add(1), 1);
  t.is(await box('first').calls(), 1);
  await box('second').ping(); // past maxLive, but first is held by the stub
  t.is(await tally.add(1), 2);
  t.is(await box('first').calls(), 2, 'the same instance');
  tally[Symbol.dispose]();
  await box('second').ping(); // now first may leave
  t.is(await box('first').calls(), 1, 'a new instance');
  await t.throwsAsync(tally.add(1), { message: 'RPC stub used after being disposed.' });
  t.is(await box('first').total(), 2);
});

test('a stream an RPC method returns keeps its object in memory until it has been read to its end', async (t) => {
  const box = await open(t, { maxLive: 1 });
  const stream = await box('first').stream();
  t.is(await box('first').calls(), 1);
  await box('second').ping(); // past maxLive, but first's stream is unread
  t.is(await box('first').calls(), 2, 'the same instance');
  t.is(await new Response(stream).text(), 'one');
  await box('second').ping(); // read: first may leave
  t.is(await box('first').calls(), 1, 'a new instance');
});

test('disposing an RpcPromise (as `using` does) disposes the stub it settles to, which lets its object go', async (t) => {
  const box = await open(t, { maxLive: 1 });
  const pending = box('first').tally();
  t.is(await (await pending).add(5), 5);
  t.is(await box('first').calls(), 1);
  pending[Symbol.dispose]();
  await new Promise((resolve) => setImmediate(resolve));
  await box('second').ping(); // first is no longer held
  t.is(await box('first').calls(), 1, 'a new instance');
});

test('an own __proto__ key (parsed JSON) arrives as an own key beside a function, as structuredClone makes it', async (t) => {
  const box = await open(t);
  const o = JSON.parse('{"__proto__": {"isAdmin": true}, "n": 1}');
  const expected = [['__proto__', 'n'], true, undefined];
  t.deepEqual(await box('p').keys(o), expected);
  const withFn = JSON.parse('{"__proto__": {"isAdmin": true}}');
  withFn.f = () => 1;
  t.deepEqual(await box('p').keys(withFn), [['__proto__', 'f'], true, undefined]);
});

test('a value with many shared references or a huge sparse array, a function inside, crosses in linear time', async (t) => {
  const box = await open(t);
  const leaf = (x) => x + 1;
  let node = { f: leaf };
  for (let i = 0; i < 60; i++) node = { a: node, b: node }; // 2^60 paths, 61 objects
  const sparse = [];
  sparse[1e9] = { f: (x) => x * 3 };
  const started = Date.now();
  t.deepEqual(await box('d').shape({ list: [node, node], self: null, f: () => 0 }), [false, true, 'function']);
  t.is(await box('d').callIt(sparse[1e9]), 6);
  t.is(await box('d').callIt({ f: leaf, node, sparse }), 3);
  t.true(Date.now() - started < 2000, `${Date.now() - started} ms`);
});

test("a call out of an object waits until the object's earlier writes are durable (a 20 ms device)", async (t) => {
  t.timeout(60_000);
  const child = fork(path.join(__dirname, '..', 'fixtures', 'do-rpc-gate.js'), [tmpDir(t)], { env: slowSyncEnv(20), stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const [msg] = await once(child, 'message');
  await once(child, 'exit');
  t.true(msg.preloaded, 'the child runs under the slow-sync shim');
  t.log(`the callback ran ${msg.waits.map((ms) => ms.toFixed(1)).join(', ')} ms after the write`);
  for (const ms of msg.waits) t.true(ms >= 15, `${ms.toFixed(1)} ms: the call left before its write's sync`);
});
