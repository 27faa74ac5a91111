'use strict';
// Eviction: swept when work arrives, never on a timer; stop() runs; state survives.
const test = require('ava');
const { open, DurableWorker } = require('../..');
const { tmpDir } = require('../helpers/tmp');

const stops = [];

class Room extends DurableWorker {
  start() {
    this.started = (this.state.get('starts') ?? 0) + 1;
    this.state.set('starts', this.started);
  }
  stop(reason) {
    stops.push([this.id, reason]);
  }
  hit() {
    const n = (this.state.get('hits') ?? 0) + 1;
    this.state.set('hits', n);
    return n;
  }
  starts() {
    return this.started;
  }
}

async function host(t, opts) {
  const h = await open({ dir: tmpDir(t), ...opts });
  t.teardown(() => h.close());
  const events = [];
  h.on('evicted', (e) => events.push(e));
  return { h, events };
}

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

test.serial('past maxLive the least recently used worker is evicted, stop("evicted") runs, and its state survives', async (t) => {
  stops.length = 0;
  const { h, events } = await host(t, { maxLive: 2 });
  await h.get(Room, 'r1').hit();
  await h.get(Room, 'r2').hit();
  await h.get(Room, 'r1').hit(); // r2 is now the least recently used
  await h.get(Room, 'r3').hit();
  await tick(20);
  t.deepEqual(stops, [['r2', 'evicted']]);
  t.deepEqual(events, [{ class: 'Room', id: 'r2', reason: 'evicted' }]);
  t.is(h.stats().live, 2);
  t.is(h.stats().evicted, 1);
  t.is(await h.get(Room, 'r2').hit(), 2);
  t.is(await h.get(Room, 'r2').starts(), 2, 'start() ran again on the new instance');
});

test.serial('a worker idle past evictAfter is closed with stop("idle") when other work arrives, not before', async (t) => {
  stops.length = 0;
  const { h, events } = await host(t, { evictAfter: 30 });
  await h.get(Room, 'idle').hit();
  await tick(80);
  t.deepEqual(stops, [], 'no timer closed it');
  t.is(h.stats().live, 1);
  await h.get(Room, 'other').hit();
  await tick(20);
  t.deepEqual(stops, [['idle', 'idle']]);
  t.deepEqual(events, [{ class: 'Room', id: 'idle', reason: 'idle' }]);
  t.is(await h.get(Room, 'idle').hit(), 2);
});

test.serial('close() runs stop("close") on live workers and later calls reject with ERR_DURABLE_CLOSED', async (t) => {
  stops.length = 0;
  const h = await open({ dir: tmpDir(t) });
  const r = h.get(Room, 'c');
  await r.hit();
  await h.close();
  t.deepEqual(stops, [['c', 'close']]);
  const err = await t.throwsAsync(r.hit());
  t.is(err.code, 'ERR_DURABLE_CLOSED');
  t.regex(err.message, /Room "c"/);
});

test.serial('a call that arrives while its worker is being evicted waits and runs on a fresh instance', async (t) => {
  stops.length = 0;
  const { h } = await host(t, { maxLive: 1 });
  await h.get(Room, 'a').hit();
  const b = h.get(Room, 'b').hit(); // evicts a
  const a = h.get(Room, 'a').hit(); // arrives mid-eviction
  t.deepEqual(await Promise.all([a, b]), [2, 1]);
});

test('an error thrown by start() reaches the queued callers as itself, and the next call starts again', async (t) => {
  let failures = 1;
  class Flaky extends DurableWorker {
    async start() {
      await new Promise((r) => setTimeout(r, 5)); // both calls are queued by now
      if (failures-- > 0) throw new TypeError('not yet');
    }
    ping() {
      return 'pong';
    }
  }
  const h = await open({ dir: tmpDir(t) });
  t.teardown(() => h.close());
  const f = h.get(Flaky, 'f');
  const [a, b] = await Promise.allSettled([f.ping(), f.ping()]);
  t.is(a.status, 'rejected');
  t.true(a.reason instanceof TypeError);
  t.is(a.reason.message, 'not yet');
  t.is(b.reason, a.reason);
  t.is(await f.ping(), 'pong');
});
