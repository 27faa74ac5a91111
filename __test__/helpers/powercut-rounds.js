'use strict';
// Rounds of power cuts, shared by the power-cut tests of the engine
// (files/powercut*.test.js) and of Peek: a child process writes on a
// power-cut mount (helpers/powercut.js) and records what it saw acknowledged,
// with synchronous writes, in a file outside the mount; at a seeded random
// moment the power is cut; then every SQLite file is checked with
// integrity_check (on a copy, before anything opens it) and the test's own
// check runs.
//
// DW_POWERCUT_ROUNDS=n runs n rounds per test (a soak); DW_POWERCUT_SEED=s
// sets the base seed. A failure prints its seed, round, delay and the cut's
// report: the chaos choices replay from the seed (round r is cut with seed
// + r), the moment of the cut only roughly (it is a wall-clock delay).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const Database = require('better-sqlite3');
const { open } = require('../..');
const { available, mount } = require('./powercut');
const { tmpDir } = require('./tmp');

const ROUNDS = Number(process.env.DW_POWERCUT_ROUNDS ?? 5);
const BASE_SEED = Number(process.env.DW_POWERCUT_SEED ?? 20261202);
/** The cut comes this long after the child's first acknowledgement: MIN_DELAY + [0, SPREAD) ms. */
const MIN_DELAY = 5;
const SPREAD = 400;

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

/**
 * Forks `program` with `args`, ACK_FILE=`ackFile` in its environment. Its
 * `ready` resolves at the child's { ready: true } message (sent at its first
 * acknowledgement) and rejects if it ends first.
 */
function startChild(t, program, args, ackFile) {
  const child = fork(program, args, {
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

/**
 * The child's side of startChild: `ack(line)` appends a line to ACK_FILE,
 * synchronously (it is there before what it acknowledges goes on), and the
 * first one sends { ready: true }; `note(line)` appends without counting as
 * an acknowledgement.
 * @returns {{ ack: (line: string) => void, note: (line: string) => void }}
 */
function ackWriter() {
  const fd = fs.openSync(process.env.ACK_FILE, 'a');
  let acked = false;
  const note = (line) => fs.writeSync(fd, `${line}\n`);
  const ack = (line) => {
    note(line);
    if (!acked) process.send({ ready: true });
    acked = true;
  };
  return { ack, note };
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
 * Calls `fn(db, rel, file)` with each database under `dir` that `keep(rel)`
 * accepts, opened from a copy (with its -wal and -journal) so that
 * recovering it here changes nothing the engine will open. An error opening
 * or reading one is returned as "rel: message", with `fn`'s own problems.
 * @param {string} dir
 * @param {(db: import('better-sqlite3').Database, rel: string, file: string) => string[]} fn
 * @param {(rel: string) => boolean} [keep]
 * @returns {string[]} the problems, as "file: message" lines
 */
function eachCopy(dir, fn, keep = () => true) {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-copy-'));
  const problems = [];
  try {
    for (const file of databases(dir)) {
      const rel = path.relative(dir, file);
      if (!keep(rel)) continue;
      const copy = path.join(scratch, 'x.db');
      for (const f of fs.readdirSync(scratch)) fs.rmSync(path.join(scratch, f));
      fs.copyFileSync(file, copy);
      for (const side of ['-wal', '-journal']) if (fs.existsSync(file + side)) fs.copyFileSync(file + side, copy + side);
      try {
        const db = new Database(copy);
        try {
          problems.push(...fn(db, rel, file));
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

const CATALOG = '_registry.db';

/**
 * PRAGMA integrity_check of every database under `dir` (but those `keep`
 * refuses), and no worker file left empty.
 */
function integrity(dir, keep) {
  return eachCopy(
    dir,
    (db, rel, file) => {
      const problems = [];
      const result = db.pragma('integrity_check', { simple: false }).map((r) => r.integrity_check);
      if (result.length !== 1 || result[0] !== 'ok') problems.push(`${rel}: ${result.join('; ')}`);
      if (rel !== CATALOG && fs.statSync(file).size === 0 && !fs.existsSync(file + '-wal')) problems.push(`${rel}: empty`);
      return problems;
    },
    keep,
  );
}

/** Whether a table exists, in a database eachCopy opened. */
const hasTable = (db, name) => db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table' AND name = ?").get(name).n > 0;

/**
 * The catalog checked against the worker files as the cut left them (read
 * before anything opens the directory): every worker file is listed (the
 * catalog row is written before the file, so a file nobody lists is a
 * worker lost to ids()), and every worker file with alarms has an index
 * entry no later than its earliest alarm (the index is moved earlier before
 * the file is written and set exactly after: early costs a wake, late loses
 * the alarm). A catalog that open() will rebuild from the files by itself
 * (none, or one with a rebuild owed) has nothing to check.
 * @returns {{ problems: string[], files: number, alarms: number, early: number, rebuilt: boolean }}
 */
function catalogCheck(dir) {
  const out = { problems: [], files: 0, alarms: 0, early: 0, rebuilt: false };
  let listed = null;
  let index = null;
  out.problems.push(
    ...eachCopy(
      dir,
      (db) => {
        if (!hasTable(db, 'workers')) return [];
        if (hasTable(db, 'catalog_state') && db.prepare("SELECT count(*) AS n FROM catalog_state WHERE k = 'rebuild'").get().n > 0) return [];
        listed = new Set(
          db
            .prepare('SELECT class, id FROM workers')
            .all()
            .map((r) => `${r.class}:${r.id}`),
        );
        index = new Map(
          db
            .prepare('SELECT class, id, at FROM alarm_index')
            .all()
            .map((r) => [`${r.class}:${r.id}`, r.at]),
        );
        return [];
      },
      (rel) => rel === CATALOG,
    ),
  );
  if (listed === null) {
    out.rebuilt = true;
    return out;
  }
  out.problems.push(
    ...eachCopy(
      dir,
      (db, rel) => {
        // A file the cut left before its first commit is no worker yet.
        if (!hasTable(db, 'meta')) return [];
        const meta = Object.fromEntries(
          db
            .prepare('SELECT k, v FROM meta')
            .all()
            .map((r) => [r.k, r.v]),
        );
        const who = `${meta.class}:${meta.id}`;
        out.files++;
        const problems = [];
        if (!listed.has(who)) problems.push(`${rel} (${who}): a worker file the catalog does not list`);
        const earliest = hasTable(db, 'alarms') ? db.prepare('SELECT min(at) AS at FROM alarms').get().at : null;
        if (earliest !== null) {
          out.alarms++;
          const at = index.get(who);
          if (at === undefined) problems.push(`${rel} (${who}): an alarm at ${earliest} and no index entry`);
          else if (at > earliest) problems.push(`${rel} (${who}): indexed at ${at}, later than its alarm at ${earliest}`);
          else if (at < earliest) out.early++;
        }
        return problems;
      },
      (rel) => rel !== CATALOG,
    ),
  );
  return out;
}

/**
 * Runs `rounds` rounds on one directory of a power-cut mount in `mode`: fork
 * `program` with `args(dir, round)` (see startChild), cut at a random moment,
 * check every SQLite file's integrity, then `after({ dir, acks, memo, where,
 * round, mount })`. `memo` carries what earlier rounds established; `where`
 * names the round for messages. Later rounds start from what earlier cuts
 * left. Resolves with the memo.
 * @param {import('ava').ExecutionContext} t
 * @param {{ program: string, args: (dir: string, round: number) => string[], mode: 'drop' | 'chaos', seed: number,
 *   rounds?: number, name?: string, delay?: { min: number, spread: number }, keep?: (rel: string) => boolean,
 *   after: (o: object) => Promise<void> }} options `delay`: when the cut comes after the
 *   child's first acknowledgement, min + [0, spread) ms; `keep`: which databases
 *   (relative paths) integrity_check reads before `after` (default all).
 */
async function powerCuts(t, { program, args, mode, seed, rounds = ROUNDS, name = path.basename(program), delay: span = { min: MIN_DELAY, spread: SPREAD }, keep, after }) {
  t.timeout(120_000 + rounds * 5_000);
  const root = tmpDir(t);
  const m = await mount({ backing: path.join(root, 'backing'), mountpoint: path.join(root, 'mnt'), mode, seed });
  t.teardown(() => m.unmount());
  const dir = path.join(m.mountpoint, 'data');
  const rand = prng(seed);
  const memo = {};
  for (let round = 0; round < rounds; round++) {
    const ackFile = path.join(root, `acks-${round}`);
    const delay = span.min + Math.floor(rand() * span.spread);
    const run = startChild(t, program, args(dir, round), ackFile);
    m.register(run.child);
    await run.ready;
    await sleep(delay);
    if (run.child.exitCode !== null) t.fail(`the child exited by itself (code ${run.child.exitCode}):\n${run.stderr}`);
    const report = await m.cut([run.child]);
    const acks = readAcks(ackFile);
    const where = `${name}, ${mode}, seed ${seed}, round ${round} (cut ${delay} ms in, ${acks.length} acks, ${JSON.stringify(report)})`;
    t.log(where);
    if (run.stderr.trim() !== '') t.log(`child stderr: ${run.stderr.trim()}`);
    t.true(acks.length > 0, `${where}: the child acknowledged something before the cut`);
    t.deepEqual(integrity(dir, keep), [], `${where}: PRAGMA integrity_check`);
    await after({ dir, acks, memo, where, round, mount: m });
  }
  return memo;
}

const CHILD = path.join(__dirname, 'powercut-child.js');

/**
 * Rounds of `scenario` in the engine's child (powercut-child.js). After each
 * cut: `before(o)` if given (o as powerCuts gives `after`), the catalog
 * against the worker files as the cut left them (catalogCheck; `catalog:
 * false` leaves it out), then the directory reopened and `check(t, host,
 * acks, memo, where, round)`. Other options go to powerCuts. Resolves with
 * the memo, whose `catalog` counts what catalogCheck saw.
 */
function engineCuts(t, { scenario, mode, seed, durability = 'full', catalog = true, before, check, ...options }) {
  return powerCuts(t, {
    program: CHILD,
    args: (dir, round) => [scenario, dir, String(round), durability],
    name: scenario,
    mode,
    seed,
    ...options,
    after: async (o) => {
      const { dir, acks, memo, where, round } = o;
      if (before !== undefined) await before(o);
      if (catalog) {
        const c = catalogCheck(dir);
        t.deepEqual(c.problems.slice(0, 20), [], `${where}: the catalog against ${c.files} worker files (${c.alarms} with alarms)`);
        memo.catalog ??= { rounds: 0, files: 0, alarms: 0, early: 0, rebuilt: 0 };
        for (const k of ['files', 'alarms', 'early']) memo.catalog[k] += c[k];
        memo.catalog.rounds++;
        memo.catalog.rebuilt += c.rebuilt ? 1 : 0;
      }
      let host;
      try {
        host = await open({ dir, durability });
      } catch (err) {
        t.fail(`${where}: open({ dir }) after the cut: ${err.code} ${err.message}`);
        return;
      }
      try {
        await check(t, host, acks, memo, where, round);
      } finally {
        await host.close();
      }
    },
  });
}

/**
 * `test.serial` when `check()` says the power-cut tests can run here (by
 * default: the power-cut mount works); otherwise `test.skip`, with one
 * visible skipped test saying why.
 * @param {import('ava').TestFn} test
 * @param {() => { ok: boolean, reason?: string }} [check]
 * @param {string} [needs] what the tests need, for the skip's title
 */
function powerTestOf(test, check = available, needs = 'the powercut mount') {
  const can = check();
  if (!can.ok) test.skip(`power-cut tests need ${needs}: ${can.reason}`, () => {});
  return can.ok ? test.serial : test.skip;
}

/** ids(Class) as a Set. */
async function idsOf(host, Class) {
  const out = new Set();
  for await (const id of host.ids(Class)) out.add(id);
  return out;
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

module.exports = { ROUNDS, BASE_SEED, prng, sleep, startChild, ackWriter, readAcks, integrity, catalogCheck, engineCuts, must, powerTestOf, idsOf };
