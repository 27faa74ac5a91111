'use strict';
// Peek's schedules under power loss (issue 23). A real `durable-workers peek
// serve` keeps its state directory (the schedules, durable-worker alarms) on
// the power-cut file system (__test__/powercut); its manifests and its JSON
// lines (stdout, a pipe read by this process as they come) are outside it.
// Its syncs are made slow (helpers/slowsync.js, 5 ms), like a slow disk, so
// that a write acknowledged before its sync has landed has a window a cut can
// hit. At a seeded random moment the supervisor is SIGKILLed and the power
// cut: what was not fsynced is forgotten (drop) or a seeded random part of it
// kept, torn (chaos). Then, before anything opens the directory, every
// SQLite file passes PRAGMA integrity_check (on a copy) and the catalog
// lists every worker file and indexes each alarm no later than it is due;
// then the stored schedules, read by an adapter that fires nothing, are held
// to what the supervisor printed before the cut:
//
// - accepted: a schedule the supervisor announced ("schedule <spec>; next run
//   <t>", printed once ensureSchedule resolved) is there with that spec and
//   that slot; one it announced removed is gone; one not announced is as
//   before or as its manifest now asks. Every stored schedule has a pending
//   slot and an entry in the catalog's alarm index no later than it (without
//   one it would never run again).
// - slots (`every 1s`, runs of 300 ms; half the cuts aimed just after a run
//   ends, while its slot is handed on): docs/peek.md promises at least once.
//   A slot is on disk before its run starts, and the next one is set only
//   after the run, so after a cut the pending slot is exactly the slot of a
//   run that started and did not finish; else the slot of the last run that
//   finished (it runs again) or the first slot of its grid after that run
//   ended. Never an earlier slot (a completed one run again, or the schedule
//   going backwards), never a later one (slots skipped). After the restart the
//   pending slot runs first (the catch-up), and each run's next slot is the
//   first after it ended.
//
// Each test runs ROUNDS rounds on one directory; the next round's supervisor
// is the restart after the previous cut. DW_POWERCUT_ROUNDS=n runs n rounds
// (a soak); DW_POWERCUT_SEED=s sets the base seed (chaos choices replay from
// it, the moments of the cuts only roughly: they are wall-clock delays).
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { nodeAdapter } = require('durable-workers/peek');
const { inspect } = require('../../js/tools/inspect');
const { mount } = require('../helpers/powercut');
const { ROUNDS, BASE_SEED, prng, integrity, catalogCheck, powerTestOf } = require('../helpers/powercut-rounds');
const { serve } = require('../helpers/peek');
const { slowSyncEnv } = require('../helpers/slowsync');
const { tmpDir } = require('../helpers/tmp');
const { until, sleep } = require('../helpers/poll');

/** Seeds of this file: BASE_SEED + SEEDS + …, apart from the engine's. */
const SEEDS = 50_000;
/** How late, after the run that set it, a next slot may be computed (the parent stamps a line when it reads it). */
const SLACK = 100;
const SECOND = 1000;
/** Every fsync of the supervisor takes this much longer, like a slow disk: a write acknowledged before its sync has landed is then caught more often. */
const SYNC_MS = 5;

const powerTest = powerTestOf(test);

/** The real `durable-workers peek serve <workers> --state <state> --json` (helpers/peek.js), its syncs slowed by SYNC_MS. */
function startServe(t, workers, state) {
  return serve(t, workers, ['--state', state], { env: slowSyncEnv(SYNC_MS) });
}

/** Throws, with its stderr, if the supervisor has exited: a wait for its output then ends at once. */
function alive(sup) {
  if (sup.proc.exitCode !== null || sup.proc.signalCode !== null) throw new Error(`the supervisor exited (code ${sup.proc.exitCode}, signal ${sup.proc.signalCode}):\n${sup.stderr()}`);
  return true;
}

/** What the supervisor printed about schedules: name → { spec, next } (announced) or null (removed). */
function accepted(lines) {
  const out = new Map();
  for (const l of lines) {
    if (l.event !== 'log' || typeof l.args?.[0] !== 'string') continue;
    const m = /^schedule (every \S+); next run (\S+)$/.exec(l.args[0]);
    if (m !== null) out.set(l.worker, { spec: m[1], next: Date.parse(m[2]) });
    else if (l.args[0] === 'schedule removed: its manifest no longer has one') out.set(l.worker, null);
  }
  return out;
}

/**
 * The schedules stored in `state` (name → { spec, next }), read by an
 * adapter that fires nothing, and the catalog's alarm index (name → at).
 */
async function storedSchedules(state) {
  const adapter = nodeAdapter({ dir: state, log: () => {}, warm: false, sandbox: 'off' });
  const stored = new Map();
  try {
    for (const s of await adapter.schedules()) stored.set(s.name, { spec: s.spec, next: s.next });
  } finally {
    await adapter.close();
  }
  const summary = await inspect(state, { alarms: 100_000 });
  const index = new Map(summary.alarms.next.filter((a) => a.class === 'peek-worker').map((a) => [a.id, a.at]));
  return { stored, index };
}

/** Problems of stored schedules: none without a pending slot, none the alarm index would fire late or never. */
function pendingProblems(stored, index) {
  const wrong = [];
  for (const [name, s] of stored) {
    if (typeof s.next !== 'number') wrong.push(`${name}: no pending slot (${s.next})`);
    else if (!(index.get(name) <= s.next)) wrong.push(`${name}: slot ${s.next}, alarm index ${index.get(name) ?? 'none'}`);
  }
  return wrong;
}

/**
 * Runs ROUNDS rounds on one state directory of a power-cut mount in `mode`:
 * `setup(workers, round, rand, memo)` writes the manifests, a supervisor
 * starts, `ready(sup)` waits for it, the cut comes when `moment(sup, rand,
 * memo)` resolves (to words saying when, for the log). Then, before anything
 * opens the directory, integrity_check and the catalog against the worker
 * files (helpers/powercut-rounds.js); then the stored schedules, each with a
 * pending slot, and `check(t, facts, memo)` with facts { lines, stored,
 * index, startedAt, cutAt, where }; `memo` carries what earlier rounds
 * established. Resolves with { memo, workers, state } for a last look.
 */
async function peekCuts(t, { name, mode, seed, setup, ready, moment, check }) {
  t.timeout(120_000 + ROUNDS * 8_000);
  const root = tmpDir(t);
  const m = await mount({ backing: path.join(root, 'backing'), mountpoint: path.join(root, 'mnt'), mode, seed });
  t.teardown(() => m.unmount());
  // The manifests are the test's input, not what is under test: off the mount.
  const workers = path.join(root, 'workers');
  fs.mkdirSync(workers);
  const state = path.join(m.mountpoint, 'state');
  const rand = prng(seed);
  const memo = {};
  for (let round = 0; round < ROUNDS; round++) {
    setup(workers, round, rand, memo);
    const startedAt = Date.now();
    const sup = startServe(t, workers, state);
    m.register(sup.proc);
    await ready(sup, memo);
    const when = await moment(sup, rand, memo);
    if (sup.proc.exitCode !== null) t.fail(`the supervisor exited by itself (code ${sup.proc.exitCode}):\n${sup.stderr()}`);
    const report = await m.cut([sup.proc]);
    const cutAt = Date.now();
    await sup.closed;
    const where = `${name}, ${mode}, seed ${seed}, round ${round} (cut ${when}, ${sup.lines.length} lines, ${JSON.stringify(report)})`;
    t.log(where);
    t.deepEqual(integrity(state), [], `${where}: PRAGMA integrity_check`);
    const catalog = catalogCheck(state);
    t.deepEqual(catalog.problems.slice(0, 20), [], `${where}: the catalog against ${catalog.files} worker files (${catalog.alarms} with alarms)`);
    let found;
    try {
      found = await storedSchedules(state);
    } catch (err) {
      t.fail(`${where}: reading the schedules after the cut: ${err.code} ${err.message}`);
      return { memo, workers, state };
    }
    t.deepEqual(pendingProblems(found.stored, found.index).slice(0, 20), [], `${where}: every stored schedule has a pending slot the alarm index will fire`);
    await check(t, { lines: sup.lines, ...found, startedAt, cutAt, where }, memo);
  }
  return { memo, workers, state };
}

// --- accepted: schedules added, changed and removed at the supervisor's start

const SPECS = ['every 1h', 'every 2h', 'every 45m', 'every 1d'];
const INTERVALS = { 'every 1h': 3_600_000, 'every 2h': 7_200_000, 'every 45m': 2_700_000, 'every 1d': 86_400_000 };
const NEW_PER_ROUND = 8;

/** Writes the manifest of `name`: a schedule `spec`, or none. */
function writeManifest(workers, name, spec) {
  fs.writeFileSync(path.join(workers, `${name}.json`), JSON.stringify({ name, worker: { url: 'worker.js' }, ...(spec === null ? {} : { schedule: spec }) }));
}

/** A random element of `list`. */
const pick = (rand, list) => list[Math.floor(rand() * list.length)];

/**
 * This round's manifests: NEW_PER_ROUND new workers, and of the earlier ones
 * three get another spec, two lose their schedule, one gets one back.
 * memo.want: name → spec (or null) as the manifests now say.
 */
function acceptSetup(workers, round, rand, memo) {
  if (round === 0) {
    fs.writeFileSync(path.join(workers, 'package.json'), '{ "type": "module" }');
    fs.writeFileSync(path.join(workers, 'worker.js'), 'export default async () => null;');
    memo.want = new Map();
    memo.stored = new Map();
  }
  const scheduled = () => [...memo.want].filter(([, s]) => s !== null).map(([n]) => n);
  const unscheduled = () => [...memo.want].filter(([, s]) => s === null).map(([n]) => n);
  const set = (name, spec) => {
    memo.want.set(name, spec);
    writeManifest(workers, name, spec);
  };
  for (let k = 0; k < 3 && scheduled().length > 0; k++) {
    const name = pick(rand, scheduled());
    set(
      name,
      pick(
        rand,
        SPECS.filter((s) => s !== memo.want.get(name)),
      ),
    );
  }
  for (let k = 0; k < 2 && scheduled().length > 0; k++) set(pick(rand, scheduled()), null);
  if (unscheduled().length > 0) set(pick(rand, unscheduled()), pick(rand, SPECS));
  for (let i = 0; i < NEW_PER_ROUND; i++) set(`a${round}-${i}`, pick(rand, SPECS));
}

/** Ready at the first schedule the supervisor announces: the cut then lands among the others. */
async function acceptReady(sup) {
  await until(
    () => alive(sup) && accepted(sup.lines).size > 0,
    30_000,
    () => `a schedule announced; stderr: ${sup.stderr()}`,
  );
}

/** How many schedules the supervisor will announce (or announce removed) at its start. */
const dueOf = (memo) => [...memo.want].filter(([name, spec]) => spec !== null || memo.stored.has(name)).length;

/**
 * A moment among the announcements, however fast they come: after a random
 * number of them, then up to a few syncs more (between two).
 */
async function acceptMoment(sup, rand, memo) {
  const k = 1 + Math.floor(rand() * dueOf(memo));
  await until(
    () => alive(sup) && accepted(sup.lines).size >= k,
    30_000,
    () => `${k} schedules announced; stderr: ${sup.stderr()}`,
    1,
  );
  const aim = Math.floor(rand() * 4 * SYNC_MS);
  await sleep(aim);
  return `${aim} ms after announcement ${k}`;
}

/**
 * Each schedule is as announced; one not announced is as the last round
 * left it, or changed as its manifest asks (with a slot set during this
 * round). Nothing else is stored.
 */
function acceptCheck(t, { lines, stored, startedAt, cutAt, where }, memo) {
  const acked = accepted(lines);
  const show = (s) => (s === null ? 'none' : `${s.spec} next ${s.next}`);
  const wrong = [];
  const names = new Set([...memo.want.keys(), ...memo.stored.keys(), ...stored.keys()]);
  for (const name of names) {
    const now = stored.get(name) ?? null;
    const before = memo.stored.get(name) ?? null;
    const want = memo.want.get(name) ?? null;
    if (acked.has(name)) {
      const a = acked.get(name);
      if (show(now) !== show(a)) wrong.push(`${name}: announced ${show(a)}, stored ${show(now)}`);
      continue;
    }
    if (show(now) === show(before)) continue;
    const changed = now === null ? want === null : now.spec === want && now.next >= startedAt + INTERVALS[want] && now.next <= cutAt + INTERVALS[want];
    if (!changed || before?.spec === want) wrong.push(`${name}: not announced; before ${show(before)}, manifest ${want ?? 'none'}, stored ${show(now)}`);
  }
  t.deepEqual(wrong.slice(0, 20), [], `${where}: ${wrong.length} of ${names.size} schedules wrong`);
  const due = dueOf(memo);
  const at = lines.filter((l) => l.event === 'log' && /^schedule /.test(l.args?.[0])).map((l) => l.at);
  t.log(`  ${acked.size} of ${due} schedules announced (or removed) before the cut, over ${at.length > 0 ? at.at(-1) - at[0] : 0} ms; ${stored.size} stored`);
  memo.stored = stored;
}

for (const [j, mode] of ['drop', 'chaos'].entries()) {
  powerTest(`power cut (${mode}): schedules the supervisor announced are there with their spec and slot, removed ones gone, each with a pending alarm`, async (t) => {
    await peekCuts(t, {
      name: 'accepted',
      mode,
      seed: BASE_SEED + SEEDS + 100 * j,
      setup: acceptSetup,
      ready: acceptReady,
      moment: acceptMoment,
      check: acceptCheck,
    });
  });
}

// --- slots: `every 1s` schedules running, cut among their runs

const TICKS = ['tick-0', 'tick-1', 'tick-2'];
/** Each run logs its start, then takes 300 ms: a cut often lands mid-run. */
const TICK_SOURCE = `export default async (api, ctx) => {
  api.log('start', ctx.trigger.scheduledFor);
  await new Promise((r) => setTimeout(r, 300));
  return ctx.trigger.scheduledFor;
};`;

function slotsSetup(workers, round, rand, memo) {
  if (round > 0) return;
  memo.pending = new Map();
  fs.writeFileSync(path.join(workers, 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(workers, 'tick.js'), TICK_SOURCE);
  for (const name of TICKS) {
    fs.writeFileSync(path.join(workers, `${name}.json`), JSON.stringify({ name, worker: { url: 'tick.js' }, schedule: 'every 1s', capabilities: { log: {} } }));
  }
}

/** The run lines of `name`, in order. */
const runsOf = (lines, name) => lines.filter((l) => l.event === 'run' && l.worker === name);

/** Ready once every schedule has run once since the restart (its catch-up). */
async function slotsReady(sup) {
  await until(
    () => alive(sup) && TICKS.every((name) => runsOf(sup.lines, name).length > 0),
    30_000,
    () => `a run of each schedule; stderr: ${sup.stderr()}`,
  );
}

/**
 * A moment up to 2.5 s after ready; in half the rounds then aimed at the
 * moment a slot is handed on: up to 10 ms after the next run ends, while the
 * next slot is being written and the finished one removed.
 */
async function slotsMoment(sup, rand) {
  const wait = Math.floor(rand() * 2500);
  await sleep(wait);
  if (rand() < 0.5) return `${wait} ms after ready`;
  const seen = sup.lines.length;
  const ended = await until(
    () => alive(sup) && sup.lines.slice(seen).find((l) => l.event === 'run'),
    10_000,
    () => `a run to end; stderr: ${sup.stderr()}`,
    1,
  );
  const aim = Math.floor(rand() * 10);
  await sleep(aim);
  return `${wait} ms after ready, then ${aim} ms after ${ended.worker}'s run of ${ended.trigger.scheduledFor} ended`;
}

/** Problems of one schedule's runs in one round: each ok, on its grid, the next the first slot after the previous run ended. */
function runProblems(runs) {
  const wrong = [];
  runs.forEach((r, i) => {
    if (!r.ok || r.trigger.kind !== 'schedule') wrong.push(`run ${i} ${r.trigger.kind} of ${r.trigger.scheduledFor}: ${r.ok ? 'ok' : r.error?.code}`);
    if (i === 0) return;
    const prev = runs[i - 1];
    const slot = r.trigger.scheduledFor;
    const gap = slot - prev.trigger.scheduledFor;
    if (gap <= 0 || gap % SECOND !== 0) wrong.push(`run ${i}: slot ${slot} after ${prev.trigger.scheduledFor}`);
    if (slot - SECOND > prev.at + SLACK) wrong.push(`run ${i}: slot ${slot} skips slots: the previous run ended at ${prev.at}`);
  });
  return wrong;
}

/**
 * The promise of each round for each schedule: the restart kept the pending
 * slot and ran it first; the runs kept their grid; the slot pending after
 * the cut is the run in flight, else the last one finished or the first slot
 * after it.
 */
function slotsCheck(t, { lines, stored, cutAt, where }, memo) {
  for (const name of TICKS) {
    const runs = runsOf(lines, name);
    const announced = accepted(lines).get(name);
    const before = memo.pending.get(name);
    if (before !== undefined) {
      t.is(announced?.next, before, `${where}: ${name}: the restart kept the pending slot`);
      t.is(runs[0].trigger.scheduledFor, before, `${where}: ${name}: the slot pending after the last cut ran first after the restart`);
    } else {
      t.is(runs[0].trigger.scheduledFor, announced?.next, `${where}: ${name}: the first run is the announced slot`);
    }
    t.deepEqual(runProblems(runs), [], `${where}: ${name}: ${runs.length} runs`);
    memo.runs = (memo.runs ?? 0) + runs.length;

    const s = stored.get(name);
    t.is(s?.spec, 'every 1s', `${where}: ${name}: the schedule is stored`);
    if (typeof s?.next !== 'number') continue;
    const finished = new Set(runs.map((r) => r.trigger.scheduledFor));
    const inFlight = lines.filter((l) => l.event === 'log' && l.worker === name && l.args[0] === 'start' && !finished.has(l.args[1])).map((l) => l.args[1]);
    const last = runs.at(-1);
    const slot = last.trigger.scheduledFor;
    memo.seen ??= { inFlight: 0, again: 0, next: 0 };
    memo.seen[inFlight.length > 0 ? 'inFlight' : s.next === slot ? 'again' : 'next']++;
    if (inFlight.length > 0) {
      t.deepEqual([s.next], inFlight, `${where}: ${name}: the slot of the run in flight at the cut is the one pending (it runs again)`);
    } else if (s.next !== slot) {
      const ok = s.next > slot && (s.next - slot) % SECOND === 0 && s.next - SECOND <= last.at + SLACK && s.next <= cutAt + SECOND;
      t.true(ok, `${where}: ${name}: pending ${s.next}; the last run finished was ${slot} at ${last.at}: neither it nor the first slot after it`);
    }
    memo.pending.set(name, s.next);
  }
}

for (const [j, mode] of ['drop', 'chaos'].entries()) {
  powerTest(`power cut (${mode}): every 1s schedules run at least once, never back to a completed slot, never skipping, and run again after each cut`, async (t) => {
    const { memo, workers, state } = await peekCuts(t, {
      name: 'slots',
      mode,
      seed: BASE_SEED + SEEDS + 1000 + 100 * j,
      setup: slotsSetup,
      ready: slotsReady,
      moment: slotsMoment,
      check: slotsCheck,
    });
    const { inFlight, again, next } = memo.seen;
    t.log(`${memo.runs} runs checked; after the cuts, pending: ${inFlight} the slot in flight, ${again} the last slot finished, ${next} the slot after it`);
    // After the last cut, one more restart: each pending slot runs.
    const sup = startServe(t, workers, state);
    await slotsReady(sup);
    for (const name of TICKS) t.is(runsOf(sup.lines, name)[0].trigger.scheduledFor, memo.pending.get(name), `${name}: the slot pending after the last cut ran after the restart`);
    sup.proc.kill('SIGTERM');
    t.deepEqual(await sup.exited, { code: 0, signal: null }, sup.stderr());
  });
}
