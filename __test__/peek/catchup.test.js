'use strict';
// Catch-up is exactly once (issue 7: "a run missed while down happens once
// on start"). A real `durable-workers peek serve` runs an `every 2s`
// schedule, is stopped (SIGTERM) and stays down across three or more due
// times, then is started again on the same state directory. What the docs
// promise (docs/peek.md, "Schedules are alarms"): the alarm pending when it
// stopped fires once at start, with that slot as `scheduledFor` (the first
// slot missed); then the schedule resumes at the next slot of its own grid
// after now. Not one run per missed slot, and not none.
// Serial: these wait on wall-clock schedules.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { nodeAdapter } = require('durable-workers/peek');
const { tmpDir } = require('../helpers/tmp');
const { serve } = require('../helpers/peek');
const { until, sleep } = require('../helpers/poll');

const INTERVAL = 2000;

/** `peek serve` on `dir` with its state in `state`, and the runs of worker tick it reports. */
function serveTick(t, dir, state) {
  const p = serve(t, dir, ['--state', state]);
  return { ...p, runs: () => p.lines.filter((l) => l.event === 'run' && l.worker === 'tick') };
}

/** The stored schedule, read from the state directory by an adapter that fires nothing (no start()). */
async function stored(state) {
  const adapter = nodeAdapter({ dir: state, log: () => {}, warm: false });
  try {
    return await adapter.schedules();
  } finally {
    await adapter.close();
  }
}

test.serial('a supervisor down across three due times runs the schedule once at start, for the first slot missed, then resumes on its grid', async (t) => {
  t.timeout(90_000);
  const dir = tmpDir(t);
  const workers = path.join(dir, 'workers');
  const wdir = path.join(workers, 'tick');
  fs.mkdirSync(wdir, { recursive: true });
  fs.writeFileSync(path.join(wdir, 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(wdir, 'worker.js'), 'export default async () => ({ startedAt: Date.now() });');
  fs.writeFileSync(path.join(wdir, 'manifest.json'), JSON.stringify({ name: 'tick', worker: { url: 'worker.js' }, schedule: `every ${INTERVAL / 1000}s` }));
  const state = path.join(dir, 'state');

  // Up: the schedule runs at least once, then a clean stop.
  const a = serveTick(t, workers, state);
  await until(
    () => a.runs().length >= 1,
    30_000,
    () => `a scheduled run; stderr: ${a.stderr()}`,
  );
  a.proc.kill('SIGTERM');
  t.deepEqual(await a.exited, { code: 0, signal: null }, a.stderr());
  const lastBefore = a.runs().at(-1).trigger.scheduledFor;

  // Down: the slot pending on disk, then three of its due times pass.
  const [schedule] = await stored(state);
  t.is(schedule?.name, 'tick');
  const pending = schedule.next;
  t.is((pending - lastBefore) % INTERVAL, 0, 'the pending slot is on the grid of the last run');
  await sleep(pending + 2 * INTERVAL + INTERVAL / 2 - Date.now());
  const restart = Date.now();
  const missed = Math.floor((restart - pending) / INTERVAL) + 1;
  t.true(missed >= 3, `${missed} due times passed while down`);

  // Up again: wait for two runs of slots after the restart. A replay of
  // the other missed slots would come before them (they are due earlier).
  const b = serveTick(t, workers, state);
  await until(
    () => b.runs().filter((r) => r.trigger.scheduledFor >= restart).length >= 2,
    30_000,
    () => `two runs after the restart; stderr: ${b.stderr()}`,
  );
  b.proc.kill('SIGTERM');
  t.deepEqual(await b.exited, { code: 0, signal: null }, b.stderr());

  const runs = b.runs();
  t.true(
    runs.every((r) => r.ok && r.trigger.kind === 'schedule'),
    JSON.stringify(runs),
  );
  const caught = runs.filter((r) => r.trigger.scheduledFor < restart);
  t.is(caught.length, 1, `exactly one run for the ${missed} slots missed: ${JSON.stringify(caught.map((r) => r.trigger.scheduledFor))}`);
  const [catchUp, next] = runs;
  t.is(catchUp, caught[0], 'the catch-up run is the first run after the restart');
  t.is(catchUp.trigger.scheduledFor, pending, 'its scheduledFor is the slot that was pending when the supervisor stopped: the first one missed');
  t.true(catchUp.value.startedAt >= restart);

  // The restart kept the pending slot (ensureSchedule with the same spec does not reset it).
  const announced = b.lines.find((l) => l.event === 'log' && l.worker === 'tick' && /^schedule every 2s; next run /.test(l.args[0]));
  t.is(announced?.args[0], `schedule every 2s; next run ${new Date(pending).toISOString()}`);

  // Then the grid resumes: the next run is the first slot of the grid after the catch-up run.
  t.is((next.trigger.scheduledFor - pending) % INTERVAL, 0, 'the next slot is on the same grid');
  t.true(next.trigger.scheduledFor > catchUp.value.startedAt, 'the next slot is after the catch-up run');
  t.true(next.trigger.scheduledFor - INTERVAL <= catchUp.at + 100, 'and it is the first slot after it: none skipped beyond the catch-up');
});

test.serial('the conformance check of catchesUpMissedRuns counts the runs for missed slots: exactly one passes true, and false is caught', async (t) => {
  t.timeout(60_000);
  const { runConformance } = require('durable-workers/peek');
  const adapter = nodeAdapter({ dir: path.join(tmpDir(t), 'state'), log: () => {} });
  t.teardown(() => adapter.close());
  const truth = await runConformance({ adapter, only: ['scheduler.catchesUpMissedRuns'] });
  t.true(truth.ok, truth.declarations[0]?.observed);
  t.regex(truth.declarations[0].observed, /every 1s, stopped across [3-9] due times: 1 run\(s\) for missed slots/);
  const d = adapter.declares;
  const lying = { ...adapter, declares: { ...d, scheduler: { ...d.scheduler, catchesUpMissedRuns: false } } };
  const lie = await runConformance({ adapter: lying, only: ['scheduler.catchesUpMissedRuns'] });
  t.false(lie.ok);
  t.regex(lie.declarations[0].observed, /1 run\(s\) for missed slots/);
});
