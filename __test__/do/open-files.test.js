'use strict';
// A host keeps at most maxOpenFiles object files open: past it, the least
// recently used idle objects close their connections (parked) and open them
// again before their next event. Nothing they stored changes, and an object
// in the middle of a transaction is never parked.
const fs = require('node:fs');
const path = require('node:path');
const test = require('ava');
const { tmpDir } = require('../helpers/tmp');
const { openObjects } = require('../../js/do/host');
const { DurableObject } = require('../../js/do/workers-module');

class Counter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    env.MADE.push(ctx.id.name);
  }

  incr() {
    const n = (this.ctx.storage.kv.get('n') ?? 0) + 1;
    this.ctx.storage.kv.put('n', n);
    this.ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS t (n)');
    this.ctx.storage.sql.exec('INSERT INTO t VALUES (?)', n);
    return n;
  }

  read() {
    return [this.ctx.storage.kv.get('n'), this.ctx.storage.sql.exec('SELECT count(*) AS c FROM t').one().c];
  }

  /** A transaction that stays open across an await (env.HOLD) while other objects come and go. */
  async slow() {
    return this.ctx.storage.transaction(async (txn) => {
      txn.put('a', 1);
      await this.env.HOLD.promise;
      txn.put('b', 2);
      return 'done';
    });
  }

  async both() {
    return [await this.ctx.storage.get('a'), await this.ctx.storage.get('b')];
  }

  /** Changes the settings user SQL may change (nothing written). */
  relax() {
    this.ctx.storage.sql.exec('PRAGMA foreign_keys = OFF; PRAGMA case_sensitive_like = ON; PRAGMA recursive_triggers = ON');
  }

  /** The settings as they are, and whether a row breaking a foreign key is accepted. */
  settings() {
    const sql = this.ctx.storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS parent (id INTEGER PRIMARY KEY); CREATE TABLE IF NOT EXISTS child (p INTEGER REFERENCES parent (id))');
    let orphan = 'accepted';
    try {
      sql.exec('INSERT INTO child VALUES (42)');
    } catch (err) {
      orphan = err.message;
    }
    return {
      foreignKeys: sql.exec('PRAGMA foreign_keys').one().foreign_keys,
      recursiveTriggers: sql.exec('PRAGMA recursive_triggers').one().recursive_triggers,
      likeIgnoresCase: sql.exec("SELECT 'a' LIKE 'A' AS x").one().x,
      orphan,
    };
  }

  async alarm() {
    this.env.FIRED.push(this.ctx.id.name);
  }

  async setAlarm(at) {
    await this.ctx.storage.setAlarm(at);
  }
}

/** Object files of `dir` this process has open (database files and their logs). */
function openUnder(dir) {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(path.join('/proc/self/fd', fd)).startsWith(path.join(dir, 'do.Counter'))) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

async function open(t, dir, o = {}) {
  const fired = [];
  const made = [];
  const hold = {};
  const h = await openObjects({ dir, name: 'test', bindings: { C: { class: Counter } }, vars: { FIRED: fired, MADE: made, HOLD: hold }, maxOpenFiles: 4, ...o });
  t.teardown(() => h.close().catch(() => {}));
  return { ...h, fired, made, hold, c: (name) => h.env.C.getByName(name) };
}

test.serial('40 objects written in turn keep at most 4 files open; each reads back what it stored, then and after a reopen', async (t) => {
  const dir = tmpDir(t);
  const h = await open(t, dir);
  for (let round = 1; round <= 2; round++) {
    for (let i = 0; i < 40; i++) t.is(await h.c(`o${i}`).incr(), round);
  }
  const atMost = 4 * 3; // a database, its log, and the log's descriptor for syncs
  t.true(openUnder(dir) <= atMost, `${openUnder(dir)} descriptors open under the directory (at most ${atMost})`);
  for (let i = 0; i < 40; i++) t.deepEqual(await h.c(`o${i}`).read(), [2, 2]);
  await h.close();
  // Closing checkpoints the parked ones too: each database file, copied
  // without its log, holds both rounds' rows.
  const Database = require('better-sqlite3');
  const copy = path.join(tmpDir(t), 'copy.db');
  const files = fs.readdirSync(path.join(dir, 'do.Counter'), { recursive: true }).filter((f) => f.endsWith('.db'));
  t.is(files.length, 40);
  for (const f of files) {
    fs.copyFileSync(path.join(dir, 'do.Counter', f), copy);
    const db = new Database(copy, { readonly: true });
    t.is(db.prepare('SELECT count(*) AS c FROM t').get().c, 2, f);
    db.close();
  }
  const again = await open(t, dir);
  for (let i = 0; i < 40; i++) t.deepEqual(await again.c(`o${i}`).read(), [2, 2]);
});

test.serial('an object inside a transaction that awaits is not parked while 20 others come and go', async (t) => {
  const h = await open(t, tmpDir(t));
  let release;
  h.hold.promise = new Promise((resolve) => (release = resolve));
  const slow = h.c('slow').slow();
  for (let i = 0; i < 20; i++) await h.c(`x${i}`).incr();
  release();
  t.is(await slow, 'done');
  t.deepEqual(await h.c('slow').both(), [1, 2]);
});

test.serial('a parked object’s alarm fires at its time, and its instance (memory) is the same one', async (t) => {
  const h = await open(t, tmpDir(t));
  await h.c('alarmed').setAlarm(Date.now() + 300);
  for (let i = 0; i < 10; i++) await h.c(`y${i}`).incr();
  const end = Date.now() + 5000;
  while (h.fired.length === 0 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20));
  t.deepEqual(h.fired, ['alarmed']);
  t.is(h.made.filter((name) => name === 'alarmed').length, 1, 'parking kept the instance');
});

test.serial('the settings user SQL changed survive the connection being parked, with a file or before the first write', async (t) => {
  const dir = tmpDir(t);
  const h = await open(t, dir);
  await h.c('written').incr();
  await h.c('written').relax();
  const files = () => fs.readdirSync(path.join(dir, 'do.Counter'), { recursive: true }).filter((f) => f.endsWith('.db')).length;
  const before = files();
  await h.c('unwritten').relax();
  t.is(files(), before, 'settings alone make no file');
  for (let i = 0; i < 10; i++) await h.c(`z${i}`).incr();
  const relaxed = { foreignKeys: 0, recursiveTriggers: 1, likeIgnoresCase: 0, orphan: 'accepted' };
  t.deepEqual(await h.c('written').settings(), relaxed);
  // Its first write makes its file after the stand-in was parked.
  t.deepEqual(await h.c('unwritten').settings(), relaxed);
  t.deepEqual(await h.c('other').settings(), {
    foreignKeys: 1,
    recursiveTriggers: 0,
    likeIgnoresCase: 1,
    orphan: 'FOREIGN KEY constraint failed: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_FOREIGNKEY)',
  });
});

test('maxOpenFiles must be an integer >= 1', async (t) => {
  await t.throwsAsync(openObjects({ dir: tmpDir(t), name: 'test', bindings: { C: { class: Counter } }, vars: { MADE: [] }, maxOpenFiles: 0 }), { message: /maxOpenFiles/ });
});

test('with 1,024 descriptors (Linux’s default), 600 objects all commit by default; past the limit a commit fails its object, not the process', async (t) => {
  const { execFile } = require('node:child_process');
  const script = `
    const { openObjects } = require(${JSON.stringify(require.resolve('../../js/do/host'))});
    class C { constructor(ctx) { this.ctx = ctx; } incr() { this.ctx.storage.kv.put('n', 1); } }
    (async () => {
      const o = { dir: process.argv[1], name: 'test', bindings: { C: { class: C } } };
      if (process.argv[2] === 'unbounded') o.maxOpenFiles = 1e9;
      const h = await openObjects(o);
      const results = [];
      for (let i = 0; i < 600; i += 50) {
        results.push(...(await Promise.allSettled(Array.from({ length: 50 }, (_, j) => h.env.C.getByName('o' + (i + j)).incr()))));
      }
      const failed = results.filter((r) => r.status === 'rejected');
      console.log(JSON.stringify({ ok: results.length - failed.length, codes: [...new Set(failed.map((r) => r.reason.code))] }));
    })();
  `;
  const run = (mode) =>
    new Promise((resolve, reject) => {
      execFile('bash', ['-c', 'ulimit -n 1024 && exec "$0" -e "$1" "$2" "$3"', process.execPath, script, tmpDir(t), mode], { timeout: 60_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
      );
    });
  t.deepEqual(await run('default'), { ok: 600, codes: [] });
  const unbounded = await run('unbounded');
  t.true(unbounded.ok < 600, `${unbounded.ok} of 600 committed with every file kept open`);
  t.deepEqual(unbounded.codes, ['ERR_DURABLE_IO']);
});
