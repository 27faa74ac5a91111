'use strict';
// Schedules are durable-worker alarms in the adapter's directory: a run is
// told the time it was due, not when it started; a failed run comes back with
// the same scheduledFor; and a supervisor process SIGKILLed mid-run runs that
// slot again after a restart (at least once). The supervisor here is the real
// CLI, `durable-workers peek serve`, printing JSON lines.
// Serial: these wait on wall-clock schedules.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { codes } = require('durable-workers/peek');
const { tmpDir } = require('../helpers/tmp');
const { worker, setup: peekSetup, serve } = require('../helpers/peek');
const { until } = require('../helpers/poll');

/** The shared setup, but log records are dropped and each run event is kept with the time it was seen (`at`). */
function setup(t, options = {}) {
  const { dir, adapter, host } = peekSetup(t, { log: () => {}, ...options });
  const runs = [];
  host.on('run', (e) => runs.push({ ...e, at: Date.now() }));
  return { dir, adapter, host, runs };
}

test.serial('a bad spec and one below the minimum interval are refused; ensureSchedule keeps a pending slot; cancelSchedule removes it', async (t) => {
  const { dir, adapter } = setup(t);
  const file = worker(dir, 'tick', 'export default async () => 1;');
  await t.throwsAsync(adapter.ensureSchedule(file, 'every 15 minutes'), { code: codes.SCHEDULE });
  const first = await adapter.ensureSchedule(file, 'every 1h');
  t.true(first.changed);
  const again = await adapter.ensureSchedule(file, 'every 1h');
  t.false(again.changed);
  t.is(again.next, first.next, 'ensuring the same schedule does not push its next run back');
  t.deepEqual(
    (await adapter.schedules()).map((s) => [s.name, s.spec]),
    [['tick', 'every 1h']],
  );
  t.true(await adapter.cancelSchedule(file));
  t.deepEqual(await adapter.schedules(), []);
  t.false(await adapter.cancelSchedule('tick'));
});

test.serial("a run's scheduledFor is the time it was due, not the time it started", async (t) => {
  const { dir, adapter, runs } = setup(t);
  const file = worker(
    dir,
    'late',
    `export default async (api, ctx) => {
      if (ctx.trigger.kind === 'command') await new Promise((r) => setTimeout(r, 2500));
      return { startedAt: Date.now() };
    };`,
  );
  await adapter.start();
  const { next } = await adapter.ensureSchedule(file, 'every 1s');
  // A command occupies the worker across the due time; the scheduled run
  // waits behind it (single flight) and starts well after it was due.
  const busy = adapter.dispatch(file, { kind: 'command', name: 'hold', params: null });
  const sched = await until(() => runs.find((r) => r.trigger.kind === 'schedule'), 20_000, 'the scheduled run');
  await busy;
  await adapter.cancelSchedule(file);
  t.true(sched.result.ok, sched.result.error?.message);
  t.is(sched.trigger.scheduledFor, next);
  t.true(sched.result.value.startedAt - sched.trigger.scheduledFor > 1000, `started ${sched.result.value.startedAt - next} ms after it was due`);
  const cmd = runs.find((r) => r.trigger.kind === 'command');
  t.true(cmd.result.value.startedAt <= sched.result.value.startedAt, 'the scheduled run did not overlap the command');
});

test.serial('a failed scheduled run is retried with the same scheduledFor, then the schedule moves on', async (t) => {
  const { dir, adapter, runs } = setup(t, { retries: 2 });
  const file = worker(dir, 'flaky', 'export default async (api, ctx) => { throw new Error("no " + ctx.trigger.scheduledFor); };');
  await adapter.start();
  await adapter.ensureSchedule(file, 'every 1s');
  // 1 + 2 retries at 1 s and 2 s, then the next slot.
  await until(() => new Set(runs.map((r) => r.trigger.scheduledFor)).size >= 2, 30_000, 'a run of the next slot');
  await adapter.cancelSchedule(file);
  const first = runs.filter((r) => r.trigger.scheduledFor === runs[0].trigger.scheduledFor);
  t.is(first.length, 3);
  t.true(first.every((r) => !r.result.ok));
  t.true(first[2].at - first[0].at >= 2900, 'retries wait 1 s, then 2 s');
});

test.serial('a supervisor SIGKILLed mid-run runs the same slot again after a restart (at least once)', async (t) => {
  const dir = tmpDir(t);
  const wdir = path.join(dir, 'workers', 'slow');
  const source = `export default async (api, ctx) => {
    api.log('start', ctx.trigger.scheduledFor);
    await new Promise((r) => setTimeout(r, 4000));
    api.log('end', ctx.trigger.scheduledFor);
    return ctx.trigger.scheduledFor;
  };`;
  fs.mkdirSync(wdir, { recursive: true });
  fs.writeFileSync(path.join(wdir, 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(wdir, 'worker.js'), source);
  fs.writeFileSync(path.join(wdir, 'manifest.json'), JSON.stringify({ name: 'slow', worker: { url: 'worker.js' }, schedule: 'every 2s', capabilities: { log: {} } }));
  const state = path.join(dir, 'state');

  const a = serve(t, path.join(dir, 'workers'), ['--state', state]);
  const started = await until(
    () => a.lines.find((l) => l.event === 'log' && l.args[0] === 'start'),
    30_000,
    () => `a run to start; stderr: ${a.stderr()}`,
  );
  const slot = started.args[1];
  a.proc.kill('SIGKILL');
  await a.exited;
  t.false(
    a.lines.some((l) => l.event === 'log' && l.args[0] === 'end'),
    'killed mid-run',
  );

  const b = serve(t, path.join(dir, 'workers'), ['--state', state]);
  const rerun = await until(
    () => b.lines.find((l) => l.event === 'run' && l.worker === 'slow'),
    30_000,
    () => `a run after the restart; stderr: ${b.stderr()}`,
  );
  t.is(rerun.trigger.scheduledFor, slot, 'the slot cut short by the kill ran again');
  t.true(rerun.ok);
  t.true(b.lines.some((l) => l.event === 'log' && l.args[0] === 'start' && l.args[1] === slot));
  b.proc.kill('SIGTERM');
  t.deepEqual(await b.exited, { code: 0, signal: null }, 'SIGTERM stops the supervisor cleanly');
});

test.serial('a directory made before schedules keeps its slot: the slot alarm runs it, then the worker is on a schedule of the same interval', async (t) => {
  const { open, DurableWorker } = require('durable-workers');
  const { dir, adapter, runs } = setup(t);
  const file = worker(dir, 'older', 'export default async (api, ctx) => ctx.trigger.scheduledFor;');
  // What an older version left in the adapter's directory: the schedule in state, its slot as the worker's alarm.
  class OlderPeekWorker extends DurableWorker {
    static workerName = 'peek-worker';
    async seed(schedule, at) {
      this.state.set('schedule', schedule);
      await this.state.setAlarm(at);
    }
  }
  const older = await open({ dir: path.join(dir, 'state') });
  const slot = Date.now() + 300;
  await older.get(OlderPeekWorker, 'older').seed({ manifestPath: file, spec: 'every 1s', intervalMs: 1000 }, slot);
  await older.close();
  await adapter.start();
  await until(() => runs.filter((r) => r.trigger.kind === 'schedule').length >= 2, 20_000, 'the slot the alarm held, then one of the schedule');
  const [listed] = await adapter.schedules();
  await adapter.cancelSchedule(file);
  const scheduled = runs.filter((r) => r.trigger.kind === 'schedule');
  t.is(scheduled[0].trigger.scheduledFor, slot, 'the pending slot ran');
  t.true(scheduled.every((r) => r.result.ok));
  t.true(scheduled[1].trigger.scheduledFor > slot);
  t.like(listed, { name: 'older', spec: 'every 1s' });
});
