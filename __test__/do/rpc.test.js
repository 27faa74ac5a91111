'use strict';
// RPC by reference on this host (js/do/rpc.js), beyond what the probe
// compares with workerd (__test__/fixtures/do-probe-rpc.mjs): shared and
// cyclic references with functions inside, hostile arguments, a stub whose
// object has left memory, and callbacks that run as their object's events.
const test = require('ava');
const { tmpDir } = require('../helpers/tmp');
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

test('a stub into an object that left memory refuses calls with ERR_DURABLE_CLOSED naming the object; the object itself answers again', async (t) => {
  const box = await open(t, { maxLive: 1 });
  const tally = await box('first').tally();
  t.is(await tally.add(1), 1);
  await box('second').ping(); // past maxLive: the first leaves memory
  await t.throwsAsync(tally.add(1), { code: 'ERR_DURABLE_CLOSED', message: /Durable Object Box "first"/ });
  t.is(await box('first').total(), 1);
});
