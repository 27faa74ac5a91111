'use strict';
// Shards: worker classes on worker threads, storage on the host thread, and a
// watchdog that ends what hangs. Everything is real: worker_threads, a heap
// ceiling, a ws server, a child process that must exit by itself.
const test = require('ava');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { WebSocket } = require('ws');
const { open } = require('../..');
const { Counter, ShardRoom } = require('../fixtures/shard-workers');
const { Stuck } = require('../fixtures/shard-never-ready');
const { Broken } = require('../fixtures/shard-throws');
const { serve } = require('../fixtures/socket-server');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const MODULE = path.join(FIXTURES, 'shard-workers.js');

async function openHost(t, shards, options = {}) {
  const host = await open({ dir: tmpDir(t), ...options, ...(shards ? { shards: { count: 2, module: MODULE, ...shards } } : {}) });
  t.teardown(() => host.close());
  return host;
}

/** Ids that land on different shards of two (the placement is a fixed hash). */
async function onTwoShards(host) {
  const seen = new Map();
  for (let i = 0; seen.size < 2; i++) {
    const tid = await host.get(Counter, `w${i}`).threadId();
    if (!seen.has(tid)) seen.set(tid, `w${i}`);
  }
  return [...seen.values()];
}

for (const mode of ['in process', 'on shards']) {
  const shards = mode === 'on shards' ? {} : null;

  test(`${mode}: state, collections, calls between workers, cycles and errors behave the same`, async (t) => {
    const host = await openHost(t, shards);
    const a = host.get(Counter, 'a');
    t.is(await a.add(), 1);
    t.is(await a.add(2), 3);
    t.deepEqual(await a.read(), { n: 3, events: 2 });
    t.is(await a.callOther('b'), 10);
    t.deepEqual(await host.get(Counter, 'b').read(), { n: 10, events: 1 });
    const cycle = await t.throwsAsync(a.callBack('b'));
    t.is(cycle.code, 'ERR_DURABLE_CYCLE');
    t.regex(cycle.message, /Counter "a" → Counter "b" → Counter "a"/);
    const thrown = await t.throwsAsync(a.fail('E_BAD'));
    t.true(thrown instanceof RangeError);
    t.is(thrown.code, 'E_BAD');
    t.deepEqual(thrown.detail, { why: 'test' });
    t.is((await t.throwsAsync(a.nope())).code, 'ERR_DURABLE_METHOD');
    const threads = new Set(await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => host.get(Counter, id).threadId())));
    if (shards) t.false(threads.has(0), 'the code ran on worker threads');
    else t.deepEqual([...threads], [0]);
    await host.close();
    const again = await open({ dir: host.dir, ...(shards ? { shards: { count: 2, module: MODULE } } : {}) });
    t.teardown(() => again.close());
    t.deepEqual(await again.get(Counter, 'a').read(), { n: 3, events: 2 }, 'on disk, as the host wrote it');
  });

  test(`${mode}: alarms fire and a worker evicted past maxLive comes back with its state`, async (t) => {
    const host = await openHost(t, shards, { maxLive: 2 });
    const alarms = await host.startAlarms({ classes: [Counter] });
    t.teardown(() => alarms.stop());
    await host.get(Counter, 'x').setAlarmIn(50);
    for (const id of ['p', 'q', 'r']) await host.get(Counter, id).add();
    const deadline = Date.now() + 20_000;
    while ((await host.get(Counter, 'x').alarmed()) < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    t.is(await host.get(Counter, 'x').alarmed(), 1);
    for (const id of ['p', 'q', 'r']) t.is((await host.get(Counter, id).read()).n, 1);
    t.true(host.stats().evicted >= 1);
  });

  test(`${mode}: a socket accepted by a worker gets its messages, tags and attachments across eviction`, async (t) => {
    const host = await openHost(t, shards, { maxLive: 1 });
    const server = await serve((ws, [room, user]) => host.get(ShardRoom, room).join(ws, user));
    t.teardown(() => server.close());
    const connect = async (user) => {
      const ws = new WebSocket(server.url(`/lobby/${user}`));
      const frames = [];
      ws.on('message', (d) => frames.push(String(d)));
      await once(ws, 'open');
      t.teardown(() => ws.terminate());
      return { ws, frames };
    };
    const ann = await connect('ann');
    const bob = await connect('bob');
    await until(() => host.stats().sockets === 2, 20_000, 'both accepted');
    // Evict the room: another worker takes the only live slot.
    await host.get(Counter, 'other').add();
    ann.ws.send('hello');
    await until(() => bob.frames.length >= 1, 20_000, 'bob hears ann');
    const msg = JSON.parse(bob.frames[0]);
    t.is(msg.from, 'ann');
    t.is(msg.text, 'hello');
    t.deepEqual(msg.present, ['name:ann', 'name:bob']);
    if (shards) t.not(msg.thread, 0);
    ann.ws.send('ping');
    await until(() => ann.frames.includes('pong'), 20_000, 'the auto-response');
    bob.ws.close();
    const deadline = Date.now() + 20_000;
    while ((await host.get(ShardRoom, 'lobby').said()).left !== 'bob' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    t.deepEqual(await host.get(ShardRoom, 'lobby').said(), { said: 1, left: 'bob' });
  });
}

test('a method that never yields ends its shard within seconds; other shards carry on, and the worker comes back with its state', async (t) => {
  const host = await openHost(t, {});
  const lost = [];
  host.on('shardLost', (err, info) => lost.push({ err, info }));
  const [stuckId, otherId] = await onTwoShards(host);
  const stuck = host.get(Counter, stuckId);
  const other = host.get(Counter, otherId);
  await stuck.add(5);
  const started = Date.now();
  const spin = stuck.spin();
  // Queued behind the spinning call: never sent to the dying shard.
  const queued = [stuck.add(), stuck.add()];
  t.is(await other.add(), 1, 'a worker on the other shard answers meanwhile');
  const err = await t.throwsAsync(spin);
  const took = Date.now() - started;
  t.is(err.code, 'ERR_DURABLE_SHARD_LOST');
  t.regex(err.message, new RegExp(`Counter "${stuckId}".*missed 3 heartbeats`));
  t.true(took < 10_000, `lost after ${took} ms`);
  t.deepEqual(await Promise.all(queued), [6, 7], 'the queued calls ran on a replacement, from the state on disk');
  t.deepEqual(await stuck.read(), { n: 7, events: 3 });
  t.is(lost.length, 1);
  t.is(lost[0].err.code, 'ERR_DURABLE_SHARD_LOST');
  t.is(typeof lost[0].info.shard, 'number');
});

test('a method that runs its shard out of memory gets ERR_DURABLE_SHARD_LOST, and the next call works', async (t) => {
  t.timeout(60_000);
  const host = await openHost(t, { memoryMb: 64 });
  const w = host.get(Counter, 'hungry');
  await w.add();
  const err = await t.throwsAsync(w.hog());
  t.is(err.code, 'ERR_DURABLE_SHARD_LOST');
  t.regex(err.message, /out of memory/);
  t.is(await w.add(), 2);
});

test('a throw outside any call ends the shard and is reported; the worker carries on from its file', async (t) => {
  const host = await openHost(t, {});
  const lost = [];
  host.on('shardLost', (err) => lost.push(err));
  const w = host.get(Counter, 'thrower');
  await w.add();
  t.is(await w.throwLater(), 'ok');
  await until(() => lost.length === 1, 20_000, 'shardLost');
  t.regex(lost[0].message, /thrown outside a call/);
  t.is(await w.add(), 2);
});

test('a transaction open when its shard dies is rolled back', async (t) => {
  const host = await openHost(t, {});
  const w = host.get(Counter, 'tx');
  await w.add();
  t.is((await t.throwsAsync(w.spinInTransaction())).code, 'ERR_DURABLE_SHARD_LOST');
  t.deepEqual(await w.read(), { n: 1, events: 1 });
});

test('a shard module that never reports ready fails the call after startTimeoutMs, naming the module', async (t) => {
  const host = await open({ dir: tmpDir(t), shards: { count: 1, module: path.join(FIXTURES, 'shard-never-ready.js'), startTimeoutMs: 500 } });
  t.teardown(() => host.close());
  const err = await t.throwsAsync(host.get(Stuck, 's').ping());
  t.is(err.code, 'ERR_DURABLE_SHARD_LOST');
  t.regex(err.message, /Stuck "s".*shard-never-ready\.js.*did not report ready within 500 ms/);
  // Next use tries again (and fails again): failing calls, not a restart loop.
  t.is((await t.throwsAsync(host.get(Stuck, 's').ping())).code, 'ERR_DURABLE_SHARD_LOST');
});

test('a shard module that throws while loading fails the call with its error', async (t) => {
  const host = await open({ dir: tmpDir(t), shards: { count: 1, module: path.join(FIXTURES, 'shard-throws.js') } });
  t.teardown(() => host.close());
  const err = await t.throwsAsync(host.get(Broken, 'b').ping());
  t.is(err.code, 'ERR_DURABLE_SHARD_LOST');
  t.regex(err.message, /shard-throws\.js.*needs the main thread/);
});

test('a shards module written as an ES module runs on a shard (require(esm), unflagged from Node 20.19 and 22.12)', async (t) => {
  t.true(process.features.require_module, `Node ${process.versions.node} loads an ES module with require()`);
  const module = path.join(FIXTURES, 'shard-workers.mjs');
  const { EsmCounter } = await import(module);
  const host = await open({ dir: tmpDir(t), shards: { count: 1, module } });
  t.teardown(() => host.close());
  const first = await host.get(EsmCounter, 'e').add(2);
  t.is(first.n, 2);
  t.not(first.threadId, require('node:worker_threads').threadId, 'it ran on a shard');
  t.is((await host.get(EsmCounter, 'e').add(3)).n, 5);
});

test('bad shard options are refused by name', async (t) => {
  const dir = tmpDir(t);
  await t.throwsAsync(open({ dir, shards: { count: 0, module: MODULE } }), { instanceOf: RangeError, message: /shards\.count/ });
  await t.throwsAsync(open({ dir, shards: { count: 1 } }), { instanceOf: TypeError, message: /shards\.module/ });
  await t.throwsAsync(open({ dir, shards: { count: 1, module: './no-such-module.js' } }), { instanceOf: TypeError, message: /cannot be found/ });
  await t.throwsAsync(open({ dir, shards: { count: 1, module: MODULE, memoryMb: 1 } }), { instanceOf: RangeError, message: /memoryMb/ });
});

test('a script using shards exits by itself after its last call', async (t) => {
  const child = fork(path.join(FIXTURES, 'shard-exit.js'), [tmpDir(t)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s) => (out += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code, signal] = await once(child, 'exit');
  clearTimeout(timer);
  t.is(signal, null, `the child did not exit by itself: ${out}`);
  t.is(code, 0, out);
  t.regex(out, /done/);
});
