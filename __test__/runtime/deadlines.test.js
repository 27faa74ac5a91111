'use strict';
// Deadlines and resets: a call that overruns its timeout (or a worker that
// calls ctx.abort()) gets its worker reset; the abandoned instance can no
// longer write, call or send, and the worker serves its next call from its file.
const test = require('ava');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const dc = require('node:diagnostics_channel');
const { open } = require('../..');
const { OutputGate, OWNER } = require('../../js/state/gate');
const { Slow, HangsAtStart, seen, sleep } = require('../fixtures/deadline-workers');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

async function host(t, opts) {
  const h = await open({ dir: tmpDir(t), ...opts });
  t.teardown(() => h.close());
  const resets = [];
  h.on('reset', (r) => resets.push(r));
  return { h, resets };
}

test('a method awaiting for ever is timed out, its signal aborts, and the worker serves its next call from its file', async (t) => {
  const { h, resets } = await host(t, { callTimeout: 150 });
  const w = h.get(Slow, 'a');
  await w.set('kept', 1);
  const began = Date.now();
  const err = await t.throwsAsync(w.hang('dropped'), { code: 'ERR_DURABLE_TIMEOUT' });
  t.true(Date.now() - began < 1000);
  t.regex(err.message, /^Slow "a": hang\(\) ran for \d+ ms, past its deadline \(150 ms\); the worker was reset$/);
  t.true(err.ranMs >= 150);
  t.deepEqual(
    seen.aborted.filter(([id]) => id === 'a'),
    [['a', 'ERR_DURABLE_TIMEOUT']],
  );
  t.is(await w.get('kept'), 1);
  t.is(await w.get('dropped'), undefined, 'a write of no started commit is dropped');
  t.is(await w.get('starts'), 2, 'a fresh instance ran start() again');
  t.is(resets.length, 1);
  t.like(resets[0], { class: 'Slow', id: 'a', reason: 'timeout', method: 'hang' });
  t.is(resets[0].error, err);
  t.is(h.stats().resets, 1);
  t.regex(h.metrics(), /^durable_workers_resets_total\{class="Slow",reason="timeout"\} 1$/m);
});

test('a reset listener that throws does not stop the worker: its error surfaces as an uncaught exception, and the next call is served', async (t) => {
  const child = fork(path.join(__dirname, '..', 'fixtures', 'reset-listener-child.js'), [tmpDir(t)], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const [report] = await Promise.race([once(child, 'message'), once(child, 'exit').then(([code]) => t.fail(`the child exited ${code}: ${stderr}`))]);
  t.deepEqual(report, { timedOut: 'ERR_DURABLE_TIMEOUT', next: 7, read: 7, caught: ['a reset listener that throws'] });
});

test('calls queued behind a hung call run on the fresh instance', async (t) => {
  const { h } = await host(t, { callTimeout: 100 });
  const w = h.get(Slow, 'q');
  const hung = w.hang('x');
  const queued = [w.set('n', 1), w.set('n', 2), w.get('n')];
  await t.throwsAsync(hung, { code: 'ERR_DURABLE_TIMEOUT' });
  t.deepEqual(await Promise.all(queued), [1, 2, 2]);
  t.is(await w.get('x'), undefined);
});

test('a stub timeout overrides the host default; Infinity turns it off; a call from inside a call gets at most its caller’s remaining time', async (t) => {
  const { h, resets } = await host(t, { callTimeout: 5000 });
  await t.throwsAsync(h.get(Slow, 's', { timeout: 80 }).hang('x'), { code: 'ERR_DURABLE_TIMEOUT' });
  // Infinity: no deadline, though the host has one.
  const slowOk = h.get(Slow, 'inf', { timeout: Infinity });
  t.is(await slowOk.relay('inf2', 'set', 'k', 1), 1);
  // The relay has 120 ms; the callee's own (host default, 5 s) is cut to what
  // is left of it. Both workers are loaded first, so that the relay reaches
  // the callee within its 120 ms even on a loaded machine.
  await h.get(Slow, 'outer').get('y');
  await h.get(Slow, 'inner').get('y');
  const began = Date.now();
  await t.throwsAsync(h.get(Slow, 'outer', { timeout: 120 }).relay('inner', 'hang', 'y'), { code: 'ERR_DURABLE_TIMEOUT' });
  t.true(Date.now() - began < 2000);
  await until(() => resets.find((r) => r.id === 'inner'), 2500, 'the inner worker’s reset');
  t.true(Date.now() - began < 3000, 'the inner worker was reset at its caller’s deadline, not its own 5 s');
  t.is(await h.get(Slow, 'inner').get('y'), undefined);
});

test('a call that starts after its caller’s deadline has passed is refused without running', async (t) => {
  const { h } = await host(t);
  const busy = h.get(Slow, 'busy');
  const holding = busy.pause(300);
  await t.throwsAsync(h.get(Slow, 'caller', { timeout: 100 }).relay('busy', 'set', 'late', 1), { code: 'ERR_DURABLE_TIMEOUT' });
  await holding;
  await sleep(50);
  t.is(await busy.get('late'), undefined, 'the queued call whose caller had timed out never ran');
});

test('nothing the abandoned instance writes, calls or sends after its reset is ever on disk (checked after SIGKILL)', async (t) => {
  t.timeout(60_000);
  const dir = tmpDir(t);
  const child = fork(path.join(__dirname, '..', 'fixtures', 'deadline-child.js'), [dir], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
  const [report] = await Promise.race([once(child, 'message'), once(child, 'exit').then(([code]) => Promise.reject(new Error(`child exited ${code}: ${stderr}`)))]);
  child.kill('SIGKILL');
  await once(child, 'exit');
  t.is(report.timedOut, 'ERR_DURABLE_TIMEOUT');
  t.deepEqual(report.refused, ['ERR_DURABLE_RESET', 'ERR_DURABLE_RESET', 'ERR_DURABLE_RESET', 'ERR_DURABLE_RESET'], 'a write, a call, a transaction and an alarm: each refused');
  const h = await open({ dir });
  t.teardown(() => h.close());
  const w = h.get(Slow, 'k');
  t.is(await w.get('committed'), 1);
  t.is(await w.get('after-reset'), 1);
  for (const key of ['x-before', 'x-after', 'x-txn']) t.is(await w.get(key), undefined, key);
  const bystander = h.get(Slow, 'bystander');
  t.is(await bystander.get('x-leak'), undefined, 'the call the abandoned instance tried never reached its target');
  t.is(await bystander.get('starts'), 1, 'nor woke it');
});

test('ctx.abort() mid-transaction leaves nothing; the caller gets ERR_DURABLE_RESET even if the code caught it', async (t) => {
  const { h, resets } = await host(t);
  const w = h.get(Slow, 'ab');
  await w.set('before', 1);
  const err = await t.throwsAsync(w.abortInTransaction(), { code: 'ERR_DURABLE_RESET' });
  t.regex(err.message, /^Slow "ab": reset by ctx\.abort\(\): changed my mind$/);
  t.is(await w.get('before'), 1);
  t.is(await w.get('outside'), undefined);
  t.is(await w.get('inside'), undefined);
  await t.throwsAsync(w.abortCaught(), { code: 'ERR_DURABLE_RESET' });
  t.is(await w.get('caught'), undefined);
  t.deepEqual(
    resets.map((r) => r.reason),
    ['abort', 'abort'],
  );
  // And on disk: a reopened host sees the same.
  await h.close();
  const again = await open({ dir: h.dir });
  t.teardown(() => again.close());
  t.deepEqual(await Promise.all(['before', 'outside', 'inside', 'caught'].map((k) => again.get(Slow, 'ab').get(k))), [1, undefined, undefined, undefined]);
});

test('a reset drops the writes of a finished call whose commit had not started, and refuses its result rather than release it without them', (t) => {
  let land;
  const owner = {
    batches: [],
    dirty: false,
    [OWNER.take]() {
      if (!this.dirty) return null;
      this.dirty = false;
      return {};
    },
    [OWNER.commit](batch) {
      this.batches.push(batch);
      return new Promise((r) => (land = r));
    },
    [OWNER.landed]() {},
    [OWNER.dirty]() {
      return this.dirty;
    },
  };
  const gate = new OutputGate(owner);
  owner.dirty = true;
  const first = gate.flush(); // in flight
  owner.dirty = true;
  const second = gate.flush(); // waits for the next commit
  const reset = Object.assign(new Error('reset'), { code: 'ERR_DURABLE_RESET' });
  const landing = gate.abandon(reset);
  t.is(landing, first);
  land();
  return Promise.all([
    t.notThrowsAsync(first),
    t.throwsAsync(second, { is: reset }),
    t.throwsAsync(gate.flush(), { is: reset }),
    landing.then(() => t.is(owner.batches.length, 1, 'the next commit never started')),
  ]);
});

test('an alarm handler that overruns is reset, counted as failed, and retried with backoff', async (t) => {
  t.timeout(30_000);
  const { h, resets } = await host(t, { callTimeout: 150, alarmPoll: 100 });
  const failed = [];
  h.on('alarmFailed', (err, info) => failed.push({ code: err.code, ...info }));
  const alarms = await h.startAlarms({ classes: [Slow] });
  t.teardown(() => alarms.stop());
  const w = h.get(Slow, 'al');
  const setAt = Date.now() + 50;
  await w.armAt(setAt);
  const deadline = Date.now() + 10_000;
  while ((await w.get('alarmRuns')) !== 2 && Date.now() < deadline) await sleep(50);
  // The first run's write committed as it was made (an alarm's writes do not wait for the handler to end); the retry made the second.
  t.is(await w.get('alarmRuns'), 2);
  t.true(Date.now() >= setAt + 1000, 'retried after the first backoff step');
  t.is(await w.alarmTime(), null, 'the retry succeeded: the alarm is gone');
  t.is(failed.length, 1);
  t.like(failed[0], { code: 'ERR_DURABLE_TIMEOUT', class: 'Slow', id: 'al', attempt: 1 });
  t.true(failed[0].retryAt >= setAt + 1000);
  t.deepEqual(
    resets.filter((r) => r.id === 'al').map((r) => [r.reason, r.method]),
    [['timeout', 'alarm']],
  );
});

test('start() that overruns fails the calls waiting for it with ERR_DURABLE_TIMEOUT', async (t) => {
  const { h } = await host(t, { callTimeout: 100 });
  await t.throwsAsync(h.get(HangsAtStart, 'h').ping(), { code: 'ERR_DURABLE_TIMEOUT', message: /start\(\) ran for/ });
});

test('resets are published on durable-workers:reset', async (t) => {
  const { h } = await host(t, { callTimeout: 80 });
  const got = [];
  const listen = (m) => got.push(m);
  dc.subscribe('durable-workers:reset', listen);
  t.teardown(() => dc.unsubscribe('durable-workers:reset', listen));
  await t.throwsAsync(h.get(Slow, 'dc').hang('k'), { code: 'ERR_DURABLE_TIMEOUT' });
  const mine = got.filter((m) => m.id === 'dc');
  t.is(mine.length, 1);
  t.like(mine[0], { class: 'Slow', id: 'dc', reason: 'timeout', method: 'hang' });
});

test('callTimeout and a stub timeout are checked', async (t) => {
  const dir = tmpDir(t);
  await t.throwsAsync(open({ dir, callTimeout: 0 }), { instanceOf: RangeError, message: /callTimeout must be an integer ≥ 1, got 0/ });
  await t.throwsAsync(open({ dir, callTimeout: '1s' }), { instanceOf: RangeError });
  const h = await open({ dir });
  t.teardown(() => h.close());
  t.throws(() => h.get(Slow, 'x', { timeout: 0 }), { instanceOf: RangeError, message: /get\(Slow "x"\): timeout must be a positive integer of ms, or Infinity for none, got 0/ });
  t.throws(() => h.get(Slow, 'x', { timeot: 5 }), { instanceOf: TypeError, message: /unknown option timeot/ });
  t.throws(() => h.get(Slow, 'x', 5), { instanceOf: TypeError });
});

test('on a shard: a call awaiting past its deadline resets the worker there; a loop that never yields is the watchdog’s', async (t) => {
  t.timeout(30_000);
  const module = path.join(__dirname, '..', 'fixtures', 'deadline-workers.js');
  const { h, resets } = await host(t, { callTimeout: 150, shards: { count: 1, module, heartbeatMs: 100, missedHeartbeats: 3 } });
  const w = h.get(Slow, 'sh');
  await w.set('kept', 1);
  await t.throwsAsync(w.hang('x'), { code: 'ERR_DURABLE_TIMEOUT', message: /^Slow "sh": hang\(\) ran for/ });
  t.is(await w.get('kept'), 1);
  t.is(await w.get('x'), undefined);
  t.is(await w.get('starts'), 2);
  t.is(resets.length, 1);
  t.like(resets[0], { class: 'Slow', id: 'sh', reason: 'timeout', method: 'hang' });
  t.is(resets[0].error.code, 'ERR_DURABLE_TIMEOUT');
  t.is(h.stats().resets, 1);
  // A timer cannot interrupt a loop that holds the thread: the watchdog ends the shard.
  await t.throwsAsync(w.cpu(10_000), { code: 'ERR_DURABLE_SHARD_LOST' });
  t.is(await w.get('kept'), 1);
});

test('an alarm handler that writes and calls ctx.abort() resets the worker (not fails it): queued calls run, the alarm is retried after its backoff', async (t) => {
  t.timeout(30_000);
  const { h, resets } = await host(t, { alarmPoll: 100 });
  const failed = [];
  h.on('alarmFailed', (err, info) => failed.push({ code: err.code, ...info }));
  const alarms = await h.startAlarms({ classes: [Slow] });
  t.teardown(() => alarms.stop());
  const w = h.get(Slow, 'alarm-abort');
  const at = Date.now() + 50;
  await w.armAbort(at);
  await until(() => resets.some((r) => r.id === 'alarm-abort'), 10_000, 'the reset');
  t.is(await w.set('after', 1), 1, 'the worker serves calls: it was reset, not failed');
  await until(async () => (await w.get('abortRuns')) === 1, 10_000, 'the retry');
  t.is(failed.length, 1, 'one failed run, not a loop of them');
  t.like(failed[0], { code: 'ERR_DURABLE_RESET', name: 'abort', attempt: 1 });
  t.true(failed[0].retryAt >= at + 1000, 'retried after the backoff, not at once');
  t.deepEqual(
    resets.filter((r) => r.id === 'alarm-abort').map((r) => r.reason),
    ['abort'],
  );
  t.is(h.stats().materialized, 1, 'reloaded in place: never failed and materialized again');
});

test('a call’s deadline ends with it: a timer it left running calls other workers afterwards', async (t) => {
  const { h } = await host(t, { callTimeout: 100 });
  seen.refused.length = 0;
  await h.get(Slow, 'timer').startTimer(300, 'timer-target');
  await until(() => seen.refused.some(([what]) => what === 'timer'), 5000, 'the timer’s call');
  t.deepEqual(
    seen.refused.filter(([what]) => what === 'timer'),
    [['timer', 'ok']],
  );
  t.is(await h.get(Slow, 'timer-target').get('from-timer'), 1);
});
