'use strict';
// The engine under power loss (durability 'full'). A child process runs
// workers on a power-cut file system (__test__/powercut) and records every
// operation it saw acknowledged in a file outside the mount; at a random
// moment the parent SIGKILLs it and cuts the power, which forgets everything
// the child did not fsync (drop), or keeps a seeded random part of it, writes
// torn at sectors and directory changes half applied (chaos). The parent then
// checks every SQLite file of the directory (PRAGMA integrity_check, on a
// copy, before anything opens it), reopens the directory with open({ dir })
// and checks that every acknowledged operation is there and no transaction
// is there in part. Each test runs several rounds on one directory, so later
// rounds also start from what earlier cuts left (helpers/powercut-rounds.js
// says how to soak and replay).
//
// A SIGKILL alone (files/crash.test.js) leaves every write in the kernel and
// so cannot tell whether anything was synced; this can.
const test = require('ava');
const path = require('node:path');
const { open } = require('../..');
const { mount } = require('../helpers/powercut');
const { tmpDir } = require('../helpers/tmp');
const { ROUNDS, BASE_SEED, engineCuts, must, powerTestOf, idsOf } = require('../helpers/powercut-rounds');
const { Counter, Cell, Books, Clock, docsOf } = require('../helpers/powercut-workers');

const powerTest = powerTestOf(test);

/** Counters: the last value acknowledged (and every earlier one) is there, and nothing beyond what was in flight. */
function counterCheck(inFlight) {
  return async (t, host, acks, memo, where) => {
    memo.floor ??= new Map();
    const acked = new Map();
    for (const [kind, w, v] of acks) if (kind === 'c') acked.set(w, Math.max(acked.get(w) ?? 0, Number(v)));
    for (const w of new Set([...acked.keys(), ...memo.floor.keys()])) {
      const floor = Math.max(acked.get(w) ?? 0, memo.floor.get(w) ?? 0);
      const value = await must(t, where, `${w}.value()`, host.get(Counter, w).value());
      t.true(value >= floor, `${where}: ${w} is ${value} after the cut, ${floor} was acknowledged`);
      t.true(value <= floor + inFlight, `${where}: ${w} is ${value}, more than ${floor} acknowledged + ${inFlight} in flight`);
      memo.floor.set(w, value);
    }
  };
}

/** New workers: every one acknowledged exists, listed, with its value. */
async function createCheck(t, host, acks, memo, where) {
  memo.made ??= new Map();
  for (const [kind, id, i] of acks) if (kind === 'n') memo.made.set(id, Number(i));
  const listed = await idsOf(host, Cell);
  const missing = [];
  for (const [id, i] of memo.made) {
    const v = await must(t, where, `${id}.read()`, host.get(Cell, id).read('v'));
    if (v !== i || !listed.has(id)) missing.push(`${id}: ${v === undefined ? 'no value' : v}${listed.has(id) ? '' : ', not listed'}`);
  }
  t.deepEqual(missing.slice(0, 20), [], `${where}: ${missing.length} of ${memo.made.size} acknowledged new workers lost`);
}

/** Transactions of documents and keys: the last acknowledged is there, and each is all or nothing. */
async function booksCheck(t, host, acks, memo, where) {
  memo.last ??= new Map();
  for (const [kind, w, seq] of acks) if (kind === 'b') memo.last.set(w, Math.max(memo.last.get(w) ?? 0, Number(seq)));
  for (const [w, acked] of memo.last) {
    const r = await must(t, where, `${w}.read()`, host.get(Books, w).read());
    if (r === undefined) continue;
    t.true(r.last >= acked, `${where}: ${w}: transaction ${acked} acknowledged, ${r.last} on disk`);
    t.true(r.last <= acked + 1, `${where}: ${w}: transaction ${acked} acknowledged, ${r.last} on disk (one in flight at most)`);
    const want = [];
    let total = 0;
    for (let s = 1; s <= r.last; s++) {
      want.push([s, docsOf(s)]);
      total += docsOf(s);
    }
    t.deepEqual(r.seqs, want, `${where}: ${w}: every transaction up to ${r.last} wholly, none after it`);
    t.is(r.docs, total, `${where}: ${w}: the 'docs' key agrees with its transactions`);
    t.is(r.count, total, `${where}: ${w}: count() agrees`);
    memo.last.set(w, r.last);
  }
}

/** Deletes: host.delete and deleteAll acknowledged stay done; a worker is whole or wholly deleted. */
async function deleteCheck(t, host, acks, memo, where) {
  memo.state ??= new Map();
  for (const [kind, id] of acks) {
    if (kind === 'p' && !memo.state.has(id)) memo.state.set(id, 'written');
    if (kind === 'd') memo.state.set(id, 'deleted');
    if (kind === 'w') memo.state.set(id, 'wiped');
  }
  const listed = await idsOf(host, Cell);
  const wrong = [];
  for (const [id, state] of memo.state) {
    const keys = await must(t, where, `${id}.keys()`, host.get(Cell, id).keys());
    const shown = JSON.stringify(keys);
    if (state === 'written' && shown !== '["a","b"]' && shown !== '[]') wrong.push(`${id} (written, a delete may have been in flight): ${shown}`);
    if (state !== 'written' && shown !== '[]') wrong.push(`${id} (${state} and acknowledged): ${shown}`);
    if (state === 'deleted' && listed.has(id)) wrong.push(`${id} (deleted and acknowledged): still listed by ids()`);
  }
  t.deepEqual(wrong.slice(0, 20), [], `${where}: ${wrong.length} of ${memo.state.size} workers wrong`);
}

/** A serial caller: what counterCheck asks, and its commits were made on the JS thread (Commits#write). */
async function serialCheck(t, host, acks, memo, where, round) {
  await counterCheck(1)(t, host, acks, memo, where);
  memo.inline = (memo.inline ?? 0) + Math.max(0, ...acks.filter(([kind]) => kind === 'i').map(([, n]) => Number(n)));
  if (round === ROUNDS - 1) t.true(memo.inline > 0, `${memo.inline} of the serial caller's commits were made on the JS thread`);
}

/** Alarms: every setAlarm that resolved is there, at its time. */
async function alarmsCheck(t, host, acks, memo, where) {
  memo.set ??= [];
  for (const [kind, w, name, at] of acks) if (kind === 'a') memo.set.push([w, name, Number(at)]);
  const wrong = [];
  for (const [w, name, at] of memo.set) {
    const when = await must(t, where, `${w}.when(${name})`, host.get(Clock, w).when(name));
    if (when !== at) wrong.push(`${w} alarm ${name}: ${when} instead of ${at}`);
  }
  t.deepEqual(wrong.slice(0, 20), [], `${where}: ${wrong.length} of ${memo.set.length} acknowledged alarms wrong`);
}

const SCENARIOS = [
  ['acknowledged increments through the output gate (4 workers, 12 concurrent callers each)', 'counter', counterCheck(12)],
  ['acknowledged new workers exist, listed, with their value (each written once, built aside and renamed in)', 'create', createCheck],
  ['transactions of documents and keys are there wholly up to the last acknowledged, none in part', 'books', booksCheck],
  ['acknowledged increments of a serial caller, its commits made on the JS thread, survive', 'serial', serialCheck],
  ['acknowledged increments survive with maxLive 4 evicting and reopening 24 workers under writes', 'evict', counterCheck(8)],
  ['workers deleted by host.delete or deleteAll, acknowledged, stay deleted', 'delete', deleteCheck],
  ['alarms whose setAlarm resolved are there after the cut, at their time', 'alarms', alarmsCheck],
];

SCENARIOS.forEach(([title, scenario, check], i) => {
  for (const [j, mode] of ['drop', 'chaos'].entries()) {
    const seed = BASE_SEED + 1000 * i + 100 * j;
    powerTest(`power cut (${mode}): ${title}`, (t) => engineCuts(t, { scenario, mode, seed, check }));
  }
});

// durability 'relaxed' promises, on power loss, only "writes up to the last
// checkpoint" (README) / "commits survive a process crash, not a power loss"
// (docs/api.md). These workers are written twice each and never
// checkpointed, so no value is promised; what is checked is only what no
// promise gives up: the directory opens, every file passes integrity_check,
// and every worker answers (a worker file left empty is ERR_DURABLE_CORRUPT
// on every call for ever: damage, which the guarantees say a worker file is
// never reset to, and far more than losing unsynced writes).
async function relaxedCheck(t, host, acks, memo, where) {
  memo.ids ??= new Set();
  for (const [kind, id] of acks) if (kind === 'c') memo.ids.add(id);
  const broken = [];
  for (const id of memo.ids) {
    try {
      const v = await host.get(Counter, id).value();
      if (!(v >= 0 && v <= 2)) broken.push(`${id}: ${v}`);
    } catch (err) {
      broken.push(`${id}: ${err.code} ${err.message}`);
    }
  }
  t.deepEqual(broken.slice(0, 10), [], `${where}: ${broken.length} of ${memo.ids.size} workers do not answer`);
}

for (const [j, mode] of ['drop', 'chaos'].entries()) {
  powerTest(`power cut (${mode}), durability 'relaxed': the directory opens and every worker answers, none left empty`, (t) =>
    engineCuts(t, { scenario: 'relaxed', mode, seed: BASE_SEED + 9000 + 100 * j, durability: 'relaxed', check: relaxedCheck, catalog: false }),
  );
}

// What a clean close leaves unsynced, by name: each worker's log emptied by
// the close's checkpoint (a truncation SQLite does not sync), and nothing
// else. Safe: every frame of that log is already in the synced database
// file, so a log that a cut brings back replays pages already there (and a
// new file at that path removes it first). Anything else here would be a
// write that a cut after close() loses.
powerTest('a clean close leaves nothing unsynced but the truncation of each log it emptied', async (t) => {
  const root = tmpDir(t);
  const m = await mount({ backing: path.join(root, 'backing'), mountpoint: path.join(root, 'mnt') });
  t.teardown(() => m.unmount());
  const dir = path.join(m.mountpoint, 'data');
  for (let round = 1; round <= 2; round++) {
    const host = await open({ dir });
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        for (let k = 0; k < 3; k++) await host.get(Counter, `c${i}`).inc();
      }),
    );
    await host.get(Books, 'b').post(round);
    await host.get(Clock, 'k').arm('x', Date.now() + 3_600_000);
    await host.close();
    const { files, entries } = await m.dirty();
    t.deepEqual(entries, [], `round ${round}: directory entries not synced after close()`);
    const other = files.filter((f) => !f.path.endsWith('.db-wal') || f.bytes !== 0);
    t.deepEqual(other, [], `round ${round}: unsynced data after close()`);
    t.true(files.length >= 8, `round ${round}: the logs of the workers written more than once were emptied (${files.length} truncations pending)`);
  }
  await m.cut();
  const host = await open({ dir });
  t.is(await host.get(Counter, 'c0').value(), 6);
  t.is((await host.get(Books, 'b').read()).last, 2);
  await host.close();
});
