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
// is there in part. Each test runs ROUNDS rounds on one directory, so later
// rounds also start from what earlier cuts left.
//
// A SIGKILL alone (files/crash.test.js) leaves every write in the kernel and
// so cannot tell whether anything was synced; this can.
//
// DW_POWERCUT_ROUNDS=n runs n rounds per test (a soak); DW_POWERCUT_SEED=s
// sets the base seed. A failure prints its seed, round, delay and the cut's
// report: the chaos choices replay from the seed (round r is cut with seed
// + r), the moment of the cut only roughly (it is a wall-clock delay).
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const Database = require('better-sqlite3');
const { open } = require('../..');
const { available, mount } = require('../helpers/powercut');
const { tmpDir } = require('../helpers/tmp');
const { Counter, Cell, Books, Clock, docsOf } = require('../helpers/powercut-workers');

const CHILD = path.join(__dirname, '..', 'helpers', 'powercut-child.js');
const ROUNDS = Number(process.env.DW_POWERCUT_ROUNDS ?? 5);
const BASE_SEED = Number(process.env.DW_POWERCUT_SEED ?? 20261202);
/** The cut comes this long after the child's first acknowledgement: MIN_DELAY + [0, SPREAD) ms. */
const MIN_DELAY = 5;
const SPREAD = 400;

const can = available();
const powerTest = can.ok ? test.serial : test.skip;
if (!can.ok) test.skip(`power-cut tests need the powercut mount: ${can.reason}`, () => {});

/** A small seeded generator (mulberry32), for the moments of the cuts. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the child; resolves once it says it is writing, rejects if it ends first. */
function startChild(t, scenario, dir, round, durability, ackFile) {
  const child = fork(CHILD, [scenario, dir, String(round), durability], {
    env: { ...process.env, ACK_FILE: ackFile },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  const out = { child, stderr: '' };
  child.stderr.setEncoding('utf8').on('data', (s) => (out.stderr += s));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  out.ready = new Promise((resolve, reject) => {
    child.on('message', (msg) => msg.ready && resolve());
    child.on('exit', (code, signal) => reject(new Error(`the child ended before it was ready (code ${code}, signal ${signal}):\n${out.stderr}`)));
  });
  return out;
}

/** The acknowledgement lines a child wrote, split into words (a torn last line is dropped). */
function readAcks(file) {
  if (!fs.existsSync(file)) return [];
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split('\n');
  lines.pop(); // after the last newline: empty, or a line the kill cut short
  return lines.map((l) => l.split(' '));
}

/** Every SQLite database under `dir` (worker files and the catalog; not sidecars or files being built). */
function databases(dir) {
  return fs
    .readdirSync(dir, { recursive: true })
    .filter((rel) => rel.endsWith('.db'))
    .map((rel) => path.join(dir, rel))
    .filter((file) => fs.statSync(file).isFile());
}

/**
 * PRAGMA integrity_check of every database under `dir`, each on a copy (with
 * its -wal and -journal) so that recovering it here changes nothing the
 * engine will open. Returns the problems, as "file: message" lines.
 */
function integrity(dir) {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-integrity-'));
  const problems = [];
  try {
    for (const file of databases(dir)) {
      const copy = path.join(scratch, 'x.db');
      for (const f of fs.readdirSync(scratch)) fs.rmSync(path.join(scratch, f));
      fs.copyFileSync(file, copy);
      for (const side of ['-wal', '-journal']) if (fs.existsSync(file + side)) fs.copyFileSync(file + side, copy + side);
      const rel = path.relative(dir, file);
      try {
        const db = new Database(copy);
        try {
          const result = db.pragma('integrity_check', { simple: false }).map((r) => r.integrity_check);
          if (result.length !== 1 || result[0] !== 'ok') problems.push(`${rel}: ${result.join('; ')}`);
          if (!rel.startsWith('_registry') && fs.statSync(file).size === 0 && !fs.existsSync(file + '-wal')) problems.push(`${rel}: empty`);
        } finally {
          db.close();
        }
      } catch (err) {
        problems.push(`${rel}: ${err.message}`);
      }
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  return problems;
}

/** ids(Class) as a Set. */
async function idsOf(host, Class) {
  const out = new Set();
  for await (const id of host.ids(Class)) out.add(id);
  return out;
}

/**
 * Runs ROUNDS rounds of `scenario` on one directory of a power-cut mount in
 * `mode`: start the child, cut at a random moment, check integrity, reopen,
 * `check(t, host, acks, memo, where)`. `memo` carries what earlier rounds
 * established; `where` names the round for messages.
 */
async function powerCuts(t, { scenario, mode, seed, durability = 'full', check }) {
  t.timeout(120_000);
  const root = tmpDir(t);
  const m = await mount({ backing: path.join(root, 'backing'), mountpoint: path.join(root, 'mnt'), mode, seed });
  t.teardown(() => m.unmount());
  const dir = path.join(m.mountpoint, 'data');
  const rand = prng(seed);
  const memo = {};
  for (let round = 0; round < ROUNDS; round++) {
    const ackFile = path.join(root, `acks-${round}`);
    const delay = MIN_DELAY + Math.floor(rand() * SPREAD);
    const run = startChild(t, scenario, dir, round, durability, ackFile);
    m.register(run.child);
    await run.ready;
    await sleep(delay);
    if (run.child.exitCode !== null) t.fail(`the child exited by itself (code ${run.child.exitCode}):\n${run.stderr}`);
    const report = await m.cut([run.child]);
    const acks = readAcks(ackFile);
    const where = `${scenario}, ${mode}, seed ${seed}, round ${round} (cut ${delay} ms in, ${acks.length} acks, ${JSON.stringify(report)})`;
    t.log(where);
    if (run.stderr.trim() !== '') t.log(`child stderr: ${run.stderr.trim()}`);
    t.true(acks.length > 0, `${where}: the child acknowledged something before the cut`);
    t.deepEqual(integrity(dir), [], `${where}: PRAGMA integrity_check`);
    let host;
    try {
      host = await open({ dir, durability });
    } catch (err) {
      t.fail(`${where}: open({ dir }) after the cut: ${err.code} ${err.message}`);
      return;
    }
    try {
      await check(t, host, acks, memo, where);
    } finally {
      await host.close();
    }
  }
}

/** A call that must not fail; its failure is reported with the round. */
async function must(t, where, what, p) {
  try {
    return await p;
  } catch (err) {
    t.fail(`${where}: ${what}: ${err.code ?? ''} ${err.message}`);
    return undefined;
  }
}

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
  ['acknowledged increments survive with maxLive 4 evicting and reopening 24 workers under writes', 'evict', counterCheck(8)],
  ['workers deleted by host.delete or deleteAll, acknowledged, stay deleted', 'delete', deleteCheck],
  ['alarms whose setAlarm resolved are there after the cut, at their time', 'alarms', alarmsCheck],
];

SCENARIOS.forEach(([title, scenario, check], i) => {
  for (const [j, mode] of ['drop', 'chaos'].entries()) {
    const seed = BASE_SEED + 1000 * i + 100 * j;
    powerTest(`power cut (${mode}): ${title}`, (t) => powerCuts(t, { scenario, mode, seed, check }));
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
    powerCuts(t, { scenario: 'relaxed', mode, seed: BASE_SEED + 9000 + 100 * j, durability: 'relaxed', check: relaxedCheck }),
  );
}
