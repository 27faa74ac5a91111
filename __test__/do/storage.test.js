'use strict';
// Durable Object classes on this engine: ctx.storage (key-value, kv, sql,
// transactions, alarm) over real files, the implicit transaction of a turn,
// and what a reopened directory finds.
const test = require('ava');
const { tmpDir } = require('../helpers/tmp');
const { openObjects } = require('../../js/do/host');
const { limits } = require('../../js/do/state');
const { DurableObject } = require('../../js/do/workers-module');

class Probe extends DurableObject {
  /** Runs `fn`'s source against this object: the test's way in. */
  async run(source, ...args) {
    const fn = new Function('ctx', 'storage', 'sql', '...args', `return (async () => { ${source} })()`);
    return fn(this.ctx, this.ctx.storage, this.ctx.storage.sql, ...args);
  }
  async alarm() {}
}

async function open(t, dir = tmpDir(t)) {
  const h = await openObjects({ dir, name: 'test', bindings: { PROBE: { class: Probe } } });
  t.teardown(() => h.close().catch(() => {}));
  return { ...h, dir, probe: (name = 'a') => h.env.PROBE.getByName(name) };
}

test('values put in one object read back, in UTF-8 key order, after the directory is reopened', async (t) => {
  const dir = tmpDir(t);
  const h = await open(t, dir);
  const p = h.probe();
  await p.run(`await storage.put({ b: 1, a: new Map([[1, 2]]), '\\u{1F600}': 'astral', '\\uFFFD': 'bmp' }); await storage.put('d', new Date(5));`);
  await h.close();
  const again = await open(t, dir);
  const got = await again.probe().run(`
    const m = await storage.list();
    return { keys: [...m.keys()], a: m.get('a') instanceof Map, d: (await storage.get('d')).getTime(), missing: await storage.get('zz') };
  `);
  // U+FFFD sorts before U+1F600 in UTF-8 (and after its surrogates in UTF-16).
  t.deepEqual(got, { keys: ['a', 'b', 'd', '\uFFFD', '\u{1F600}'], a: true, d: 5, missing: undefined });
});

test('get and delete of many keys: a Map of those present, and a count', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    const keys = Array.from({ length: 200 }, (_, i) => 'k' + i);
    await storage.put(Object.fromEntries(keys.map((k) => [k, k.length])));
    const m = await storage.get(['k1', 'nope', 'k0']);
    const n = await storage.delete([...keys, 'nope']);
    return { m: [...m], n, one: await storage.delete('k1'), left: (await storage.list()).size };
  `);
  t.deepEqual(got, {
    m: [
      ['k0', 2],
      ['k1', 2],
    ],
    n: 200,
    one: false,
    left: 0,
  });
});

test('put refuses undefined, and entries with a value in place of options', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    const out = [];
    for (const f of [() => storage.put('k', undefined), () => storage.put({ a: 1 }, 5)]) {
      try { await f(); out.push('ok'); } catch (e) { out.push(e.constructor.name + ': ' + e.message); }
    }
    return out;
  `);
  t.deepEqual(got, [
    'TypeError: put() called with undefined value.',
    'TypeError: put() may only be called with a single key-value pair and optional options as put(key, value, options) or with multiple key-value pairs and optional options as put(entries, options)',
  ]);
});

test('sql runs synchronously: tables, bound values (numbers as REAL), cursors, and the rows written', async (t) => {
  const dir = tmpDir(t);
  const h = await open(t, dir);
  const got = await h.probe().run(`
    sql.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB)');
    const ins = sql.exec('INSERT INTO t (name, data) VALUES (?, ?), (?, ?)', 'a', new Uint8Array([1, 2]), 'b', null);
    const c = sql.exec('SELECT id, name, data, typeof(?) AS ty FROM t ORDER BY id', 1);
    const first = c.next().value;
    return {
      written: ins.rowsWritten,
      columns: c.columnNames,
      first: { ...first, data: [...new Uint8Array(first.data)] },
      rest: c.raw().toArray(),
      one: sql.exec('SELECT count(*) AS n FROM t').one(),
      size: sql.databaseSize > 0,
    };
  `);
  t.deepEqual(got, {
    written: 2,
    columns: ['id', 'name', 'data', 'ty'],
    first: { id: 1, name: 'a', data: [1, 2], ty: 'real' },
    rest: [[2, 'b', null, 'real']],
    one: { n: 2 },
    size: true,
  });
  await h.close();
  const again = await open(t, dir);
  t.deepEqual(await again.probe().run(`return sql.exec('SELECT name FROM t ORDER BY id').toArray();`), [{ name: 'a' }, { name: 'b' }]);
});

test('sql errors carry SQLite message and code, as workerd words them', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    const out = [];
    const tryIt = (q, ...b) => { try { sql.exec(q, ...b); out.push('ok'); } catch (e) { out.push(e.message); } };
    tryIt('SELEC 1');
    tryIt('CREATE TABLE u (k TEXT PRIMARY KEY)');
    tryIt("INSERT INTO u VALUES ('x')");
    tryIt("INSERT INTO u VALUES ('x')");
    tryIt('SELECT ?', 1, 2);
    tryIt('SELECT ?; SELECT 1', 1);
    tryIt('  ');
    tryIt('BEGIN');
    await storage.put('k', 1);
    tryIt('SELECT * FROM _cf_KV');
    try { sql.exec('SELECT 1 UNION SELECT 2').one(); } catch (e) { out.push(e.message); }
    return out;
  `);
  t.is(got[0], 'near "SELEC": syntax error at offset 0: SQLITE_ERROR');
  t.deepEqual(got.slice(1, 3), ['ok', 'ok']);
  t.is(got[3], 'UNIQUE constraint failed: u.k: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_PRIMARYKEY)');
  t.is(got[4], 'Wrong number of parameter bindings for SQL query.');
  t.is(got[5], 'When executing multiple SQL statements in a single call, only the last statement can have parameters.');
  t.is(got[6], 'SQL code did not contain a statement.');
  t.regex(got[7], /^To execute a transaction, please use the state.storage.transaction\(\)/);
  t.is(got[8], 'access to _cf_KV.key is prohibited: SQLITE_AUTH');
  t.is(got[9], 'Expected exactly one result from SQL query, but got multiple results.');
});

test('a query kept prepared (run more than once) follows the schema: dropped, altered, made again, and the authorizer still decides', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    const out = [];
    const q = 'SELECT * FROM s';
    const rows = () => { try { return sql.exec(q).toArray(); } catch (e) { return e.message; } };
    sql.exec('CREATE TABLE s (a)');
    sql.exec('INSERT INTO s VALUES (1)');
    out.push(rows(), rows(), rows());
    sql.exec('ALTER TABLE s ADD COLUMN b DEFAULT 2');
    out.push(rows());
    sql.exec('DROP TABLE s');
    out.push(rows(), rows());
    sql.exec('CREATE TABLE s (c)');
    out.push(rows());
    // A kept statement that reads an engine table once it exists is still refused.
    const kv = 'SELECT count(*) AS n FROM _cf_KV';
    const tryKv = () => { try { return sql.exec(kv).one().n; } catch (e) { return e.message; } };
    out.push(tryKv(), tryKv());
    await storage.put('k', 1);
    out.push(tryKv());
    // deleteAll drops what was kept with the tables.
    await storage.deleteAll();
    out.push(rows());
    return out;
  `);
  t.deepEqual(got, [
    [{ a: 1 }],
    [{ a: 1 }],
    [{ a: 1 }],
    [{ a: 1, b: 2 }],
    'no such table: s: SQLITE_ERROR',
    'no such table: s: SQLITE_ERROR',
    [],
    'no such table: _cf_KV: SQLITE_ERROR',
    'no such table: _cf_KV: SQLITE_ERROR',
    'not authorized: SQLITE_AUTH',
    'no such table: s: SQLITE_ERROR',
  ]);
});
test('writes of one turn commit together; a constraint left violated at commit resets the object and drops them', async (t) => {
  const h = await open(t);
  const p = h.probe();
  await p.run(`
    sql.exec('PRAGMA foreign_keys = ON');
    sql.exec('CREATE TABLE parent (id INTEGER PRIMARY KEY)');
    sql.exec('CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)');
  `);
  const err = await t.throwsAsync(p.run(`await storage.put('before', 1); sql.exec('INSERT INTO child VALUES (1, 99)');`));
  t.regex(
    err.message,
    /^Durable Object was reset and rolled back to its last known good state because the application left the database in a state where constraints were violated: FOREIGN KEY constraint failed/,
  );
  t.deepEqual(await p.run(`return { before: await storage.get('before'), children: sql.exec('SELECT count(*) AS n FROM child').one().n };`), {
    before: undefined,
    children: 0,
  });
});

test('transactionSync rolls back what its closure wrote when it throws, and nests', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    sql.exec('CREATE TABLE t (v)');
    storage.transactionSync(() => {
      sql.exec('INSERT INTO t VALUES (1)');
      try { storage.transactionSync(() => { sql.exec('INSERT INTO t VALUES (2)'); throw new Error('inner'); }); } catch {}
    });
    let outer;
    try { storage.transactionSync(() => { sql.exec('INSERT INTO t VALUES (3)'); throw new Error('outer'); }); } catch (e) { outer = e.message; }
    return { rows: sql.exec('SELECT v FROM t').raw().toArray().flat(), outer };
  `);
  t.deepEqual(got, { rows: [1], outer: 'outer' });
});

test('transaction() commits on return, rolls back on a throw or rollback(), and refuses its txn afterwards', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    await storage.transaction(async (txn) => { await txn.put('kept', 1); });
    await storage.transaction(async (txn) => { await txn.put('thrown', 1); throw new Error('x'); }).catch(() => {});
    let late;
    await storage.transaction(async (txn) => { await txn.put('rolled', 1); txn.rollback(); late = txn; });
    let after;
    try { await late.get('kept'); } catch (e) { after = e.message; }
    return { keys: [...(await storage.list()).keys()], after };
  `);
  t.deepEqual(got, { keys: ['kept'], after: 'Cannot get on rolled back transaction' });
});

test('an object broken inside transaction() closes: its next call is a new instance without the rolled-back write, and the host closes', async (t) => {
  const h = await open(t);
  const p = h.probe();
  await p.run(`storage.kv.put('kept', 1);`);
  await t.throwsAsync(p.run(`await storage.transaction(async (txn) => { await txn.put('lost', 1); await new Promise((r) => setTimeout(r, 10)); ctx.abort('reset'); });`), { message: /reset/ });
  const within = (promise) => Promise.race([promise, new Promise((r) => setTimeout(r, 5000, 'timed out'))]);
  t.deepEqual(await within(h.probe().run(`return [...(await storage.list()).keys()];`)), ['kept']);
  await t.throwsAsync(p.run(`storage.transactionSync(() => { storage.kv.put('lost', 2); ctx.abort('reset again'); });`), { message: 'reset again' });
  t.deepEqual(await within(h.probe().run(`return [...(await storage.list()).keys()];`)), ['kept']);
  t.is(await within(h.close().then(() => 'closed')), 'closed');
});

test('deleteAll removes keys, tables and the alarm; refused inside a transaction', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    await storage.put('k', 1);
    sql.exec('CREATE TABLE t (v)');
    await storage.setAlarm(Date.now() + 60000);
    let inside;
    await storage.transaction(async () => { try { await storage.deleteAll(); } catch (e) { inside = e.message; } });
    await storage.deleteAll();
    return { inside, keys: (await storage.list()).size, alarm: await storage.getAlarm(), tables: sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'").toArray() };
  `);
  t.deepEqual(got, { inside: 'Cannot call deleteAll() within a transaction', keys: 0, alarm: null, tables: [] });
});

test('the alarm: set (a past time is now), read, deleted; refused at or below 0', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    const at = Date.now() + 5000;
    await storage.setAlarm(new Date(at));
    const set = (await storage.getAlarm()) === at;
    const before = Date.now();
    await storage.setAlarm(1);
    const clamped = (await storage.getAlarm()) >= before;
    let zero;
    try { await storage.setAlarm(0); } catch (e) { zero = e.message; }
    await storage.deleteAlarm();
    return { set, clamped, zero, gone: await storage.getAlarm() };
  `);
  t.deepEqual(got, { set: true, clamped: true, zero: 'setAlarm() cannot be called with an alarm time <= 0', gone: null });
});

test('kv is synchronous, and a second list() invalidates the first', async (t) => {
  const h = await open(t);
  const got = await h.probe().run(`
    const kv = storage.kv;
    kv.put('a', 1); kv.put('b', 2); kv.put('c', 3);
    const first = kv.list();
    const one = first.next().value;
    const second = kv.list({ start: 'b' });
    let invalid;
    try { first.next(); } catch (e) { invalid = e.message; }
    return { one, rest: [...second], got: kv.get('b'), deleted: kv.delete('a'), again: kv.delete('a'), invalid };
  `);
  t.deepEqual(got, {
    one: ['a', 1],
    rest: [
      ['b', 2],
      ['c', 3],
    ],
    got: 2,
    deleted: true,
    again: false,
    invalid: 'kv.list() iterator was invalidated because a new call to kv.list() was started. Only one kv.list() iterator can exist at a time.',
  });
});

test('blockConcurrencyWhile holds the next event until it ends', async (t) => {
  const h = await open(t);
  const p = h.probe();
  const slow = p.run(`await ctx.blockConcurrencyWhile(async () => { await new Promise((r) => setTimeout(r, 100)); await storage.put('x', 1); }); return 'slow';`);
  await new Promise((r) => setTimeout(r, 20));
  // Sent while the section sleeps: it starts only once the section has written.
  const fast = p.run(`return (await storage.get('x')) ?? 'not yet';`);
  t.deepEqual(await Promise.all([slow, fast]), ['slow', 1]);
});

const BLOCKED_TOO_LONG = 'A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was canceled and the Durable Object was reset.';

/** Cloudflare's 30 s, shortened for a test (serial: the limit is the process's). */
function shortBlockLimit(t, ms) {
  const before = limits.blockConcurrencyMs;
  limits.blockConcurrencyMs = ms;
  t.teardown(() => {
    limits.blockConcurrencyMs = before;
  });
}

test.serial(
  "a blockConcurrencyWhile() callback past the limit resets the object: it and each event waiting on it fail with Cloudflare's message; the next event gets a new instance over the same storage",
  async (t) => {
    shortBlockLimit(t, 200);
    const h = await open(t);
    const p = h.probe();
    const first = await p.run(`ctx.mark ??= Math.random(); await storage.put('kept', 1); return ctx.mark;`);
    const started = performance.now();
    // It outlives the limit, then tries to write: refused, as the object it belonged to is gone.
    const stuck = p.run(`await ctx.blockConcurrencyWhile(async () => {
      await new Promise((r) => setTimeout(r, 400));
      try { await storage.put('late', 1); globalThis.lateWrite = 'written'; } catch (err) { globalThis.lateWrite = err.message; }
    }); return 'never';`);
    await new Promise((r) => setTimeout(r, 20));
    const waiting = p.run(`return 'ran';`);
    t.is((await t.throwsAsync(stuck)).message, BLOCKED_TOO_LONG);
    t.is((await t.throwsAsync(waiting)).message, BLOCKED_TOO_LONG);
    t.true(performance.now() - started >= 190);
    const [mark, kept] = await p.run(`ctx.mark ??= Math.random(); return [ctx.mark, await storage.get('kept')];`);
    t.not(mark, first, 'a new instance');
    t.is(kept, 1);
    while (globalThis.lateWrite === undefined) await new Promise((r) => setTimeout(r, 20));
    t.is(globalThis.lateWrite, BLOCKED_TOO_LONG);
    t.is(await p.run(`return storage.get('late');`), undefined);
  },
);

test('a blockConcurrencyWhile() left unawaited that fails resets its object without an unhandled rejection (as on Cloudflare, where one is logged)', async (t) => {
  // An unhandled rejection would fail this test file (and end a process run with Node's defaults).
  const h = await open(t);
  const p = h.probe();
  // The event it was started in fails with the reset, as a request in flight does on Cloudflare.
  await t.throwsAsync(p.run(`ctx.mark = 'old'; ctx.blockConcurrencyWhile(async () => { throw new Error('boom'); }); return 'returned';`), { message: 'boom' });
  await new Promise((r) => setTimeout(r, 50));
  t.is(await p.run(`return ctx.mark ?? 'a new instance';`), 'a new instance');
});

test.serial("the blockConcurrencyWhile() limit counts a callback's own time, not its wait for the gate", async (t) => {
  shortBlockLimit(t, 700);
  const h = await open(t);
  const p = h.probe();
  // Each runs 400 ms; the second waits 400 ms for the first before it starts: 800 ms from its call.
  const two = await p.run(`
    const section = () => ctx.blockConcurrencyWhile(() => new Promise((r) => setTimeout(r, 400)));
    await Promise.all([section(), section()]);
    return 'both done';
  `);
  t.is(two, 'both done');
});

test.serial('a cycle through blockConcurrencyWhile() (a callback that calls back into the blocked object) ends at the limit, as on Cloudflare, rather than hanging', async (t) => {
  shortBlockLimit(t, 200);
  const h = await open(t);
  const p = h.probe();
  const cycle = p.run(`await ctx.blockConcurrencyWhile(() => args[0]()); return 'never';`, () => p.run(`return 'inner';`));
  t.is((await t.throwsAsync(cycle)).message, BLOCKED_TOO_LONG);
  t.is(await p.run(`return 'after';`), 'after');
});

test('RPC refuses reserved and missing methods with workerd messages', async (t) => {
  const h = await open(t);
  const p = h.probe();
  t.is((await t.throwsAsync(p.alarm())).message, "'alarm' is a reserved method and cannot be called over RPC.");
  t.is((await t.throwsAsync(p.nothing())).message, 'The RPC receiver does not implement the method "nothing".');
});
