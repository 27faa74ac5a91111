'use strict';
// Schedules: a durable "call this method with these arguments" at a time,
// every interval, or on a cron grid; run through the mailbox at least once
// per slot, retried like alarms. Time is a TestClock: the grid is checked to
// the millisecond and a week passes in no wall time.
const test = require('ava');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { open, TestClock } = require('../..');
const { Planner, calls } = require('../fixtures/schedule-workers');
const { tmpDir } = require('../helpers/tmp');

const at = (iso) => new Date(iso).getTime();
const iso = (ms) => new Date(ms).toISOString();

async function host(t, dir, clock, options = {}) {
  const h = await open({ dir, clock, ...options });
  const alarms = await h.startAlarms({ classes: [Planner] });
  t.teardown(async () => {
    await alarms.stop();
    await h.close();
  });
  return { h, alarms, close: () => alarms.stop().then(() => h.close()) };
}

const callsOf = (id) => calls.filter((c) => c.id === id);
let clockNow = () => Date.now();
calls.now = () => clockNow();

test('a cron schedule fires on its grid in its time zone, across a restart; slots missed while closed run once', async (t) => {
  const dir = tmpDir(t);
  // Monday 5 January 2026, 07:30 UTC = 08:30 in Paris.
  const clock = new TestClock({ at: at('2026-01-05T07:30:00Z') });
  clockNow = () => clock.now();
  let { h, close } = await host(t, dir, clock);
  const p = h.get(Planner, 'cron');
  const id = await p.plan({ cron: '0 9 * * 1-5', tz: 'Europe/Paris' }, 'standup');
  t.deepEqual(
    (await p.list()).map((s) => [s.id, s.method, s.cron, s.tz, iso(s.next)]),
    [[id, 'record', '0 9 * * 1-5', 'Europe/Paris', '2026-01-05T08:00:00.000Z']],
  );
  await clock.advance('29m');
  t.is(callsOf('cron').length, 0, 'not before 09:00 Paris');
  await clock.advance('1m');
  t.deepEqual(
    callsOf('cron').map((c) => c.args[0]),
    ['standup'],
  );
  t.true(callsOf('cron')[0].when >= at('2026-01-05T08:00:00Z') && callsOf('cron')[0].when < at('2026-01-05T08:00:01Z'));
  t.is(iso((await p.list())[0].next), '2026-01-06T08:00:00.000Z', 'next: Tuesday 09:00 Paris');

  // Closed from Monday 09:00 to Thursday 15:00 Paris: Tuesday's, Wednesday's and Thursday's slots are missed.
  await close();
  await clock.advance('78h');
  ({ h, close } = await host(t, dir, clock));
  await clock.advance(0);
  t.is(callsOf('cron').length, 2, 'the missed slots ran once, not three times');
  t.is(iso((await h.get(Planner, 'cron').list())[0].next), '2026-01-09T08:00:00.000Z', 'and the grid resumes: Friday 09:00 Paris');
  await clock.advance('18h'); // to Friday 09:00 Paris
  t.is(callsOf('cron').length, 3);
  t.is(iso((await h.get(Planner, 'cron').list())[0].next), '2026-01-12T08:00:00.000Z', 'not on the weekend: Monday');
  await clock.advance('3d');
  t.is(callsOf('cron').length, 4);
  t.is(new Date(callsOf('cron')[3].when).getUTCDay(), 1);
});

test('a schedule’s arguments survive a restart as themselves: Date, Map, BigInt, nested', async (t) => {
  const dir = tmpDir(t);
  const clock = new TestClock();
  let { h, close } = await host(t, dir, clock);
  const args = [new Date(1_700_000_000_123), new Map([['n', 2n ** 80n]]), { deep: [new Set([1, 2]), null, undefined] }];
  await h.get(Planner, 'args').plan(clock.now() + 60_000, ...args);
  await close();
  ({ h, close } = await host(t, dir, clock));
  await clock.advance('1m');
  const [call] = callsOf('args');
  t.deepEqual(call.args, args);
  t.true(call.args[0] instanceof Date && call.args[1] instanceof Map && typeof call.args[1].get('n') === 'bigint' && call.args[2].deep[0] instanceof Set);
  t.deepEqual(await h.get(Planner, 'args').list(), [], 'a one-off schedule is gone once it ran');
});

test('a schedule survives a SIGKILL and runs at least once; one whose method was cut off by the kill runs again', async (t) => {
  t.timeout(60_000);
  const dir = tmpDir(t);
  const child = fork(path.join(__dirname, '..', 'fixtures', 'schedule-child.js'), [dir], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
  const [msg] = await Promise.race([once(child, 'message'), once(child, 'exit').then(([code]) => Promise.reject(new Error(`child exited ${code}: ${stderr}`)))]);
  t.is(msg, 'running', 'the scheduled method started, and the child is killed inside it');
  child.kill('SIGKILL');
  await once(child, 'exit');
  const h = await open({ dir });
  const alarms = await h.startAlarms({ classes: [Planner] });
  t.teardown(async () => {
    await alarms.stop();
    await h.close();
  });
  const deadline = Date.now() + 20_000;
  while ((await h.get(Planner, 'killed').count()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.is(await h.get(Planner, 'killed').count(), 1, 'it ran again after the restart, and its write committed');
});

test('every: on the grid from when it was made; a throw retries the same slot with the alarm backoff, then the grid resumes', async (t) => {
  const clock = new TestClock({ at: at('2026-03-01T00:00:00Z') });
  const { h } = await host(t, tmpDir(t), clock);
  const failed = [];
  h.on('alarmFailed', (err, info) => failed.push({ message: err.message, ...info }));
  const p = h.get(Planner, 'every');
  const id = await p.planFlaky({ every: '15m' });
  const made = (await p.list())[0].next - 15 * 60_000;
  await clock.advance('15m');
  t.is(failed.length, 1, 'the first run threw');
  t.like(failed[0], { class: 'Planner', id: 'every', schedule: id, method: 'flaky', attempt: 1, message: 'first try fails' });
  t.true(
    failed[0].retryAt >= made + 15 * 60_000 + 1000 && failed[0].retryAt < made + 15 * 60_000 + 5000,
    `retried 1 s after its slot ran (${failed[0].retryAt - made - 15 * 60_000} ms after the slot)`,
  );
  await clock.advance('1s');
  t.is(callsOf('every').length, 2, 'retried after 1 s');
  t.is((await p.list())[0].next, made + 30 * 60_000, 'back on its grid');
  t.is((await p.list())[0].attempt, 0);
});

test('a schedule can cancel itself from its own call; cancelSchedule and deleteAll remove schedules; alarms of the worker are untouched', async (t) => {
  const clock = new TestClock();
  const { h } = await host(t, tmpDir(t), clock);
  const p = h.get(Planner, 'cancel');
  const self = await p.planSelfCancelling({ every: '1m' });
  const other = await p.plan({ every: '1h' }, 'hourly');
  await p.arm(clock.now() + 30 * 60_000);
  await clock.advance('1m');
  await clock.advance('1m');
  t.is(callsOf('cancel').filter((c) => c.method === 'selfCancel').length, 1, 'it ran once and cancelled itself');
  t.deepEqual(
    (await p.list()).map((s) => s.id),
    [other],
  );
  t.false(await p.cancel(self));
  t.true(await p.cancel(other));
  t.deepEqual(await p.list(), []);
  t.not(await p.alarmAt(), null, 'the plain alarm is still set');
  await p.plan({ every: '1h' }, 'again');
  await p.wipe();
  t.deepEqual(await p.list(), []);
  t.is(await p.alarmAt(), null);
});

test('schedule() refuses what cannot run: a method a stub could not call, a bad time, interval or cron, a time zone that does not exist, arguments that cannot be cloned or are too large', async (t) => {
  const { h } = await host(t, tmpDir(t), new TestClock());
  const p = h.get(Planner, 'bad');
  const err = (...a) => p.tryPlan(...a);
  t.regex(await err(Date.now(), 'nope'), /^ERR_DURABLE_METHOD Planner "bad": schedule\(when, "nope"\): not a method/);
  t.regex(await err(Date.now(), 'start'), /^ERR_DURABLE_METHOD /, 'a lifecycle hook is not callable through a stub, nor by a schedule');
  t.regex(await err(NaN, 'record'), /^TypeError .*a time must be a valid Date/);
  t.regex(await err({ every: '15 minutes' }, 'record'), /^ERR_DURABLE_NAME .*write <n><unit>/);
  t.regex(await err({ after: 'soon' }, 'record'), /^ERR_DURABLE_NAME .*schedule\(\{ after: "soon" \}\)/);
  t.regex(await err({ cron: 'every day at noon' }, 'record'), /^ERR_DURABLE_NAME .*schedule\(\{ cron: "every day at noon" \}\)/);
  t.regex(await err({ cron: '0 9 * * *', tz: 'Mars/Olympus' }, 'record'), /^ERR_DURABLE_NAME /);
  t.regex(await err({ every: '1m', cron: '* * * * *' }, 'record'), /^TypeError .*unknown form/);
  t.regex(await p.tryPlanFunction(), /^ERR_DURABLE_UNCLONEABLE /);
  t.regex(await err(Date.now(), 'record', 'x'.repeat(70_000)), /^ERR_DURABLE_STATE_TOO_LARGE .*64 KiB/);
  t.regex(await err({ cron: '0 0 30 2 *' }, 'record'), /^ERR_DURABLE_NAME .*never fires/, 'the 30th of February');
  t.regex(await p.tryAlarm('\u0000mine'), /^ERR_DURABLE_NAME .*reserved for schedules/);
  t.deepEqual(await p.list(), [], 'nothing refused was kept');
});

test('a schedule’s method runs under the host’s callTimeout: one that overruns is reset and retried', async (t) => {
  const clock = new TestClock();
  const { h } = await host(t, tmpDir(t), clock, { callTimeout: 1000 });
  const failed = [];
  h.on('alarmFailed', (err, info) => failed.push({ code: err.code, ...info }));
  const p = h.get(Planner, 'slow');
  await p.planHang(clock.now() + 1000);
  await clock.advance('1s'); // returns once the method has overrun its 1 s deadline and the worker was reset
  t.like(failed[0], { code: 'ERR_DURABLE_TIMEOUT', method: 'hangOnce', attempt: 1 });
  await clock.advance('1s');
  t.is(await p.count(), 1, 'the retry ran on a fresh instance and committed');
  t.deepEqual(await p.list(), []);
});

test('examples/reminders: its own test, written with a TestClock, passes', async (t) => {
  const { execFile } = require('node:child_process');
  const file = path.join(__dirname, '..', '..', 'examples', 'reminders', 'reminders.test.js');
  const out = await new Promise((resolve) => execFile(process.execPath, ['--test', file], (err, stdout, stderr) => resolve({ code: err?.code ?? 0, stdout, stderr })));
  t.is(out.code, 0, out.stdout + out.stderr);
  t.regex(out.stdout, /# pass 1/);
});

test('a cron schedule without a time zone is on UTC, whatever the process’s TZ', async (t) => {
  const saved = process.env.TZ;
  process.env.TZ = 'America/New_York';
  t.teardown(() => (saved === undefined ? delete process.env.TZ : (process.env.TZ = saved)));
  const clock = new TestClock({ at: at('2026-01-05T00:00:00Z') });
  const { h } = await host(t, tmpDir(t), clock);
  const p = h.get(Planner, 'utc');
  await p.plan({ cron: '0 9 * * *' }, 'nine');
  t.is(iso((await p.list())[0].next), '2026-01-05T09:00:00.000Z');
});

test('TestClock: an alarm a worker sets from Date.now() fires once the clock passes it; a clock is refused with shards', async (t) => {
  const clock = new TestClock();
  const dir = tmpDir(t);
  const { h } = await host(t, dir, clock);
  const p = h.get(Planner, 'clock');
  await p.arm(Date.now() + 3_600_000);
  await clock.advance('59m');
  t.is(await p.count(), 0);
  await clock.advance('1m');
  t.is(await p.count(), 1);
  t.true(clock.now() - Date.now() >= 3_600_000 - 1000);
  await t.throwsAsync(clock.advance(-1), { instanceOf: RangeError });
  t.throws(() => new TestClock({ at: 'tomorrow' }), { instanceOf: TypeError });
  await t.throwsAsync(open({ dir: tmpDir(t), clock: { now: () => 0 } }), { instanceOf: TypeError, message: /clock must be a TestClock/ });
  await t.throwsAsync(open({ dir: tmpDir(t), clock, shards: { count: 1, module: path.join(__dirname, '..', 'fixtures', 'schedule-workers.js') } }), {
    instanceOf: TypeError,
    message: /clock and shards cannot be combined/,
  });
});
