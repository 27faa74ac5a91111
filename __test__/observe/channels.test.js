'use strict';
// The diagnostics channels (js/observe/channels.js): each subscribed for real
// with node:diagnostics_channel, its payloads, its nesting and its error
// paths checked; shards publish on the host thread's channels.
const test = require('ava');
const path = require('node:path');
const dc = require('node:diagnostics_channel');
const { open } = require('../..');
const { Inner, Outer, Ringer, seen } = require('../fixtures/observe-workers');
const { sayInRoom } = require('../helpers/room');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

const MODULE = path.join(__dirname, '..', 'fixtures', 'observe-workers.js');
const TRACING = ['call', 'commit', 'alarm', 'socket'];
const PHASES = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];

// Subscribers are per process and these tests share one: serial.
const serial = test.serial;

/**
 * Subscribes to every channel; `events` collects { channel, phase, ctx } in
 * the order published. Unsubscribed when the test ends.
 */
function record(t) {
  const events = [];
  for (const name of TRACING) {
    const handlers = Object.fromEntries(PHASES.map((phase) => [phase, (ctx) => events.push({ channel: name, phase, ctx })]));
    const ch = dc.tracingChannel(`durable-workers:${name}`);
    ch.subscribe(handlers);
    t.teardown(() => ch.unsubscribe(handlers));
  }
  for (const name of ['evict', 'shard']) {
    const fn = (msg) => events.push({ channel: name, phase: 'publish', ctx: msg });
    dc.subscribe(`durable-workers:${name}`, fn);
    t.teardown(() => dc.unsubscribe(`durable-workers:${name}`, fn));
  }
  const of = (channel, pred = () => true) => events.filter((e) => e.channel === channel && pred(e.ctx));
  return { events, of, phases: (channel, ctx) => events.filter((e) => e.channel === channel && e.ctx === ctx).map((e) => e.phase) };
}

async function openHost(t, options = {}) {
  const host = await open({ dir: tmpDir(t), ...options });
  t.teardown(() => host.close());
  return host;
}

serial('a call is traced from the stub to its released result, and a call made inside it is its child', async (t) => {
  const r = record(t);
  const host = await openHost(t);
  const out = await host.get(Outer, 'o').relay('i', 7);
  t.is(out.inner.n, 7);
  const outer = r.of('call', (c) => c.class === 'Outer')[0].ctx;
  const inner = r.of('call', (c) => c.class === 'Inner')[0].ctx;
  t.like(outer, { class: 'Outer', id: 'o', method: 'relay', chain: [], parent: undefined });
  t.like(inner, { class: 'Inner', id: 'i', method: 'write', chain: ['Outer "o"'] });
  t.is(inner.parent, outer, 'the inner call names the outer one as its parent');
  t.deepEqual(r.phases('call', outer), ['start', 'end', 'asyncStart', 'asyncEnd']);
  t.deepEqual(r.phases('call', inner), ['start', 'end', 'asyncStart', 'asyncEnd']);
  t.deepEqual(outer.result, out, 'asyncStart carries the result');
  // The inner call starts and ends inside the outer one.
  const at = (ctx, phase) => r.events.findIndex((e) => e.ctx === ctx && e.phase === phase);
  t.true(at(outer, 'start') < at(inner, 'start') && at(inner, 'asyncEnd') < at(outer, 'asyncEnd'));
});

serial('a call that throws, and one refused before it runs, publish error with the error', async (t) => {
  const r = record(t);
  const host = await openHost(t);
  const thrown = await t.throwsAsync(host.get(Inner, 'i').fail());
  const failing = r.of('call', (c) => c.method === 'fail')[0].ctx;
  t.deepEqual(r.phases('call', failing), ['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
  t.is(failing.error, thrown);
  const refused = await t.throwsAsync(host.get(Inner, 'i').missing(), { code: 'ERR_DURABLE_METHOD' });
  const ctx = r.of('call', (c) => c.method === 'missing')[0].ctx;
  t.is(ctx.error, refused);
  t.true(r.phases('call', ctx).includes('error'));
});

serial("a store bound to the call channel's start is what the method sees, nested calls included", async (t) => {
  const r = record(t);
  const ch = dc.tracingChannel('durable-workers:call');
  let n = 0;
  ch.start.bindStore(seen, (ctx) => (ctx.seenAs = ++n));
  t.teardown(() => ch.start.unbindStore(seen));
  const host = await openHost(t);
  // Three calls at once to one worker: each method sees its own call, not
  // the one whose push woke the mailbox.
  const outs = await Promise.all([1, 2, 3].map((k) => host.get(Outer, 'o').relay(`i${k}`, k)));
  for (const [k, out] of outs.entries()) {
    const outer = r.of('call', (c) => c.class === 'Outer').filter((e) => e.phase === 'start')[k].ctx;
    const inner = r.of('call', (c) => c.class === 'Inner' && c.id === `i${k + 1}`)[0].ctx;
    t.is(out.before, outer.seenAs, `call ${k + 1}: the method saw its own call's store`);
    t.is(out.inner.store, inner.seenAs, `call ${k + 1}: the nested method saw the nested call's store`);
  }
});

serial('a commit is traced with its counts and timings, attributed to the call whose writes it carries', async (t) => {
  const r = record(t);
  const host = await openHost(t);
  await host.get(Inner, 'i').write(3);
  const call = r.of('call', (c) => c.method === 'write')[0].ctx;
  const commits = r.of('commit', (c) => c.id === 'i');
  t.true(commits.length >= 1);
  const c = commits[0].ctx;
  t.like(c, { class: 'Inner', id: 'i', keys: 1, documents: 1, alarms: 0 });
  t.is(c.call, call, 'the commit names the call it carries');
  t.true(c.bytes > 10, `bytes ${c.bytes}`);
  for (const k of ['waitMs', 'queuedMs', 'syncMs', 'durationMs']) t.true(c[k] >= 0 && Number.isFinite(c[k]), `${k} ${c[k]}`);
  t.true(c.syncMs <= c.durationMs + 1);
  t.deepEqual(r.phases('commit', c), ['start', 'end', 'asyncStart', 'asyncEnd']);
  // The commit lands before the call's result is released.
  const at = (ctx, phase) => r.events.findIndex((e) => e.ctx === ctx && e.phase === phase);
  t.true(at(c, 'asyncEnd') < at(call, 'asyncStart'));
});

serial('a serial caller’s commits are each traced, those made at once on the JS thread too', async (t) => {
  const r = record(t);
  const host = await openHost(t);
  const inner = host.get(Inner, 'serial');
  const before = host.stats();
  for (let i = 0; i < 50; i++) await inner.write(i);
  t.is(host.stats().commits - before.commits, 50);
  const commits = r.of('commit', (c) => c.id === 'serial');
  t.is(commits.filter((e) => e.phase === 'asyncEnd').length, 50);
  const calls = r.of('call', (c) => c.id === 'serial' && c.method === 'write');
  for (const e of commits.filter((e) => e.phase === 'start'))
    t.true(
      calls.some((c) => c.ctx === e.ctx.call),
      'each commit names its call',
    );
  t.true(host.stats().commitsInline - before.commitsInline > 0, 'some were made on the JS thread');
});

serial('an alarm firing is traced with its name, time, attempt and lateness; one that throws publishes error', async (t) => {
  const r = record(t);
  const host = await openHost(t);
  const alarms = await host.startAlarms({ classes: [Ringer] });
  t.teardown(() => alarms.stop());
  await host.get(Ringer, 'a').ring(20, 'good');
  await host.get(Ringer, 'a').ring(20, 'bad');
  await until(() => r.of('alarm', (c) => c.name === 'bad' && c.attempt === 1).some((e) => e.phase === 'asyncEnd'), 20_000, 'the failing alarm retried');
  t.is(await host.get(Ringer, 'a').rang('bad'), 1);
  const good = r.of('alarm', (c) => c.name === 'good')[0].ctx;
  t.like(good, { class: 'Ringer', id: 'a', attempt: 0 });
  t.true(good.lateMs >= 0 && good.scheduledTime > 0);
  t.deepEqual(r.phases('alarm', good), ['start', 'end', 'asyncStart', 'asyncEnd']);
  const bad = r.of('alarm', (c) => c.name === 'bad');
  t.is(bad.filter((e) => e.phase === 'start').length, 2, `the first attempt and its retry: ${JSON.stringify(bad.map((e) => [e.phase, e.ctx.attempt]))}`);
  const first = bad.find((e) => e.phase === 'error');
  t.is(first.ctx.attempt, 0);
  t.is(first.ctx.error.message, 'the alarm failed once');
});

serial('an eviction is published with its reason', async (t) => {
  const r = record(t);
  const host = await openHost(t, { maxLive: 1 });
  await host.get(Inner, 'a').write(1);
  await host.get(Inner, 'b').write(2);
  await until(() => r.of('evict').length > 0, 10_000, 'an eviction');
  t.deepEqual(r.of('evict')[0].ctx, { class: 'Inner', id: 'a', reason: 'evicted' });
});

serial('a hibernatable socket event is traced with its worker and kind', async (t) => {
  const r = record(t);
  const host = await openHost(t);
  await sayInRoom(t, host);
  await until(() => r.of('socket', (c) => c.event === 'message').some((e) => e.phase === 'asyncEnd'), 10_000, 'the message event');
  const ev = r.of('socket', (c) => c.event === 'message')[0].ctx;
  t.like(ev, { class: 'Room', id: 'obs', event: 'message' });
  t.deepEqual(r.phases('socket', ev), ['start', 'end', 'asyncStart', 'asyncEnd']);
});

serial('on shards: start and loss, calls and their nesting, commits and alarms, all on the host thread', async (t) => {
  const r = record(t);
  const host = await openHost(t, { shards: { count: 1, module: MODULE } });
  host.on('shardLost', () => {});
  const { Outer: SOuter, Ringer: SRinger } = require(MODULE);
  const out = await host.get(SOuter, 'so').relay('si', 5);
  t.is(out.inner.n, 5);
  t.like(r.of('shard')[0].ctx, { event: 'start', shard: 0 });
  const outer = r.of('call', (c) => c.class === 'Outer')[0].ctx;
  const inner = r.of('call', (c) => c.class === 'Inner')[0].ctx;
  t.is(inner.parent, outer, 'a call made on a shard names its parent call');
  const commit = r.of('commit', (c) => c.id === 'si')[0].ctx;
  t.is(commit.call, inner, "the shard's commit is attributed to the call on the host");
  t.like(commit, { class: 'Inner', keys: 1, documents: 1 });
  const alarms = await host.startAlarms({ classes: [SRinger] });
  t.teardown(() => alarms.stop());
  await host.get(SRinger, 'sr').ring(10, 'good');
  await until(() => r.of('alarm', (c) => c.id === 'sr').some((e) => e.phase === 'asyncEnd'), 20_000, 'the shard alarm');
  t.like(r.of('alarm', (c) => c.id === 'sr')[0].ctx, { class: 'Ringer', name: 'good', attempt: 0, onShard: true });
  await t.throwsAsync(host.get(SOuter, 'so').exitThread(), { code: 'ERR_DURABLE_SHARD_LOST' });
  await until(() => r.of('shard', (c) => c.event === 'lost').length > 0, 10_000, 'the loss');
  const lost = r.of('shard', (c) => c.event === 'lost')[0].ctx;
  t.is(lost.shard, 0);
  t.is(lost.error.code, 'ERR_DURABLE_SHARD_LOST');
});

serial('with no subscriber nothing is built: a call carries no trace', async (t) => {
  const host = await openHost(t);
  t.false(dc.tracingChannel('durable-workers:call').hasSubscribers);
  const out = await host.get(Outer, 'o').relay('i', 1);
  t.is(out.before, null);
  t.is(out.inner.store, null);
});
