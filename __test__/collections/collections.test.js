'use strict';
// Collections: declared, indexed documents beside the key/value state, with
// the same gate and atomicity, read back through real SQLite indexes.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, fork } = require('node:child_process');
const { once } = require('node:events');
const { open, DurableWorker } = require('../..');
const { Ledger } = require('../fixtures/doc-workers');
const { tmpDir } = require('../helpers/tmp');
const { slowSyncEnv } = require('../helpers/slowsync');

const FIXTURES = path.join(__dirname, '..', 'fixtures');

async function host(t, dir, options = {}) {
  const h = await open({ dir, ...options });
  t.teardown(() => h.close());
  return h;
}

/** Every worker file of a class under `dir`. */
function filesOf(dir, className) {
  const root = path.join(dir, className);
  return fs.readdirSync(root).flatMap((sub) =>
    fs
      .readdirSync(path.join(root, sub))
      .filter((f) => f.endsWith('.db'))
      .map((f) => path.join(root, sub, f)),
  );
}

function sqlite(file, ...sql) {
  return execFileSync('sqlite3', [file, ...sql], { encoding: 'utf8' });
}

class Shop extends DurableWorker {
  static collections = { orders: { status: 'text', placedAt: 'date', total: 'real', paid: 'boolean', n: 'integer' } };

  /** Runs `fn(orders, state)` from a string: one test worker for many scenarios. */
  async run(src, ...args) {
    return new Function('orders', 'state', 'args', `return (async () => { ${src} })()`)(this.state.collection('orders'), this.state, args);
  }
}

test('reads of an open worker idle between commits run on the JS thread, and still see its uncommitted writes', async (t) => {
  const h = await host(t, tmpDir(t));
  const shop = h.get(Shop, 'hot');
  await shop.run(`for (let i = 0; i < 20; i++) orders.put('o' + i, { status: i % 2 ? 'open' : 'shipped', n: i })`);
  await shop.run(`return orders.count()`); // the first read opens the file the first write made
  const before = h.stats();
  const out = await shop.run(`
    const got = await orders.get('o3');
    const open = await orders.find({ where: { status: 'open' }, orderBy: 'n', limit: 3 });
    const all = await orders.count();
    orders.put('o99', { status: 'open', n: -1 });
    const mine = await orders.find({ where: { status: 'open' }, orderBy: 'n', limit: 2 });
    const gone = await orders.delete('o1');
    return { got: got.n, open: open.map((d) => d.n), all, mine: mine.map((d) => d.n), gone, after: await orders.count({ status: 'open' }) };
  `);
  t.deepEqual(out, { got: 3, open: [1, 3, 5], all: 20, mine: [-1, 1], gone: true, after: 10 });
  const after = h.stats();
  t.is(after.queries - before.queries, 6);
  t.is(after.queriesDeferred, before.queriesDeferred, 'no read crossed to the pool');
  // What may return thousands of documents runs on the pool, holding no other worker's calls.
  t.is(await shop.run(`return (await orders.find()).length + (await orders.find({ limit: 5000 })).length + (await orders.find({ scan: true, limit: 1 })).length`), 20 + 20 + 1);
  t.is(h.stats().queriesDeferred - after.queriesDeferred, 3);
  // And so does a read over many uncommitted documents.
  t.is(await shop.run(`for (let i = 0; i < 300; i++) orders.put('u' + i, { status: 'open', n: 100 + i }); return orders.count({ status: 'open' })`), 310);
  t.is(h.stats().queriesDeferred - after.queriesDeferred, 4);
});

test('documents round-trip as structured clones and are found by declared fields, in order', async (t) => {
  const h = await host(t, tmpDir(t));
  const shop = h.get(Shop, 's');
  await shop.run(`
    const day = (d) => new Date(Date.UTC(2026, 0, d));
    orders.put('a', { status: 'open', placedAt: day(3), total: 30, paid: false, n: 1n, lines: new Map([['apple', 2]]), note: 'gift' });
    orders.put('b', { status: 'open', placedAt: day(1), total: 10, paid: true, n: 2 });
    orders.put('c', { status: 'shipped', placedAt: day(2), total: 20.5 });
    orders.put('d', { status: 'open', placedAt: day(2), total: 10 });
  `);
  const got = await shop.run(`return orders.get('a')`);
  t.true(got.placedAt instanceof Date);
  t.true(got.lines instanceof Map);
  t.is(got.lines.get('apple'), 2);
  t.is(got.n, 1n);
  const ids = (docs) => docs.map((d) => d.total);
  t.deepEqual(ids(await shop.run(`return orders.find({ where: { status: 'open' }, orderBy: 'placedAt' })`)), [10, 10, 30]);
  t.deepEqual(ids(await shop.run(`return orders.find({ where: { total: { $gte: 10, $lt: 30 } }, orderBy: ['total', 'desc'] })`)), [20.5, 10, 10]);
  t.deepEqual(ids(await shop.run(`return orders.find({ where: { paid: true } })`)), [10]);
  t.deepEqual(ids(await shop.run(`return orders.find({ where: { paid: null }, orderBy: 'total' })`)), [10, 20.5], 'a missing field is null');
  t.deepEqual(ids(await shop.run(`return orders.find({ where: { placedAt: { $gt: Date.UTC(2026, 0, 1) } }, orderBy: 'total', limit: 2 })`)), [10, 20.5]);
  t.deepEqual(ids(await shop.run(`return orders.find({ where: { status: { $in: ['shipped', 'lost'] } } })`)), [20.5]);
  t.is(await shop.run(`return orders.count({ status: { $ne: 'open' } })`), 1);
  t.is(await shop.run(`return orders.count()`), 4);
  t.deepEqual(ids(await shop.run(`return orders.find({ where: { note: 'gift' }, scan: true })`)), [30], 'scan reads undeclared fields');
});

test('a method that puts three documents and sets two keys commits once, and its result waits for that commit', async (t) => {
  const dir = tmpDir(t);
  const h = await host(t, dir);
  const shop = h.get(Shop, 's');
  await shop.run(`state.set('warm', 1)`);
  const before = h.stats().commits;
  const file = filesOf(dir, 'Shop')[0];
  const out = await shop.run(`
    orders.put('x', { status: 'open' });
    orders.put('y', { status: 'open' });
    orders.put('z', { status: 'shipped' });
    state.set('k1', 1);
    state.set('k2', 2);
    return orders.count({ status: 'open' });
  `);
  t.is(out, 2, 'reads see the call’s own uncommitted writes');
  // Counted when the commit has returned, so before the result was released.
  t.is(h.stats().commits - before, 1);
  await h.close();
  t.is(sqlite(file, `SELECT count(*) FROM c_orders; SELECT count(*) FROM kv WHERE key IN ('k1','k2');`), '3\n2\n');
});

test('the worker file shows each collection as a table with a real index per declared field', async (t) => {
  const dir = tmpDir(t);
  const h = await host(t, dir);
  await h.get(Shop, 's').run(`orders.put('o1', { status: 'open', total: 5, placedAt: new Date(7) })`);
  await h.close(); // an open worker's file is locked to its process
  const file = filesOf(dir, 'Shop')[0];
  const schema = sqlite(file, `SELECT sql || ';' FROM sqlite_schema WHERE tbl_name = 'c_orders'`);
  t.regex(schema, /CREATE TABLE "c_orders"\(id TEXT PRIMARY KEY NOT NULL, tag INTEGER NOT NULL, doc BLOB NOT NULL, "f_status", "f_placedAt", "f_total", "f_paid", "f_n"\)/);
  for (const f of ['status', 'placedAt', 'total', 'paid', 'n']) t.regex(schema, new RegExp(`CREATE INDEX "orders\\.${f}" ON "c_orders"\\("f_${f}", id\\)`));
  t.is(sqlite(file, `SELECT id, f_status, f_total, f_placedAt, f_paid IS NULL FROM c_orders`), 'o1|open|5.0|7|1\n');
  const plan = sqlite(file, `EXPLAIN QUERY PLAN SELECT id FROM "c_orders" WHERE "f_status" = 'open' ORDER BY "f_status", id LIMIT 5`);
  t.regex(plan, /USING (COVERING )?INDEX orders\.status/);
});

test('bad documents, names and queries get coded errors naming the worker and change nothing', async (t) => {
  const h = await host(t, tmpDir(t));
  const shop = h.get(Shop, 'bad');
  await shop.run(`orders.put('keep', { status: 'open', total: 1 })`);
  const code = async (src) => (await t.throwsAsync(shop.run(src))).code;
  const err = await t.throwsAsync(shop.run(`orders.put('x', { status: 5 })`));
  t.is(err.code, 'ERR_DURABLE_TYPE');
  t.regex(err.message, /Shop "bad".*field status of collection orders is declared text.*the number 5/);
  t.is(await code(`orders.put('x', { total: 'ten' })`), 'ERR_DURABLE_TYPE');
  t.is(await code(`orders.put('x', { n: 1.5 })`), 'ERR_DURABLE_TYPE');
  t.is(await code(`orders.put('x', { n: 2n ** 64n })`), 'ERR_DURABLE_TYPE');
  t.is(await code(`orders.put('x', { paid: 'yes' })`), 'ERR_DURABLE_TYPE');
  t.is(await code(`orders.put('x', { placedAt: new Date(NaN) })`), 'ERR_DURABLE_TYPE');
  t.is(await code(`orders.put('x', { placedAt: Date.now() })`), 'ERR_DURABLE_TYPE');
  t.is(await code(`orders.put('x', { status: 'open', f: () => 1 })`), 'ERR_DURABLE_UNCLONEABLE');
  t.is(await code(`orders.put('x', { status: 'open', big: 'x'.repeat(1100000) })`), 'ERR_DURABLE_STATE_TOO_LARGE');
  t.is(await code(`orders.put(7, {})`), 'ERR_DURABLE_ID');
  t.is(await code(`orders.put('x'.repeat(2049), {})`), 'ERR_DURABLE_ID');
  t.is(await code(`orders.put('\\ud800', {})`), 'ERR_DURABLE_ID');
  t.is(await code(`return orders.find({ where: { colour: 'red' } })`), 'ERR_DURABLE_NOT_INDEXED');
  t.is(await code(`return orders.find({ orderBy: 'colour' })`), 'ERR_DURABLE_NOT_INDEXED');
  t.is(await code(`return orders.count({ colour: 'red' })`), 'ERR_DURABLE_NOT_INDEXED');
  t.is(await code(`return orders.find({ where: { total: 'ten' } })`), 'ERR_DURABLE_TYPE');
  t.is(await code(`return state.collection('nope')`), 'ERR_DURABLE_NAME');
  for (const src of [
    `return orders.find({ where: { status: { $regex: 'a' } } })`,
    `return orders.find({ where: { status: {} } })`,
    `return orders.find({ where: { total: { $lt: null } } })`,
    `return orders.find({ where: { status: { $in: 'open' } } })`,
    `return orders.find({ orderBy: ['total', 'up'] })`,
  ]) {
    const e = await t.throwsAsync(shop.run(src));
    t.is(e.name, 'TypeError', src);
  }
  t.is((await t.throwsAsync(shop.run(`return orders.find({ limit: -1 })`))).name, 'RangeError');
  t.deepEqual(await shop.run(`return (await orders.find()).map((d) => d.status)`), ['open'], 'nothing else was written');

  class BadDecl extends DurableWorker {
    static collections = { 'my orders': { a: 'text' } };
  }
  class BadType extends DurableWorker {
    static collections = { orders: { a: 'varchar' } };
  }
  t.is(t.throws(() => h.get(BadDecl, 'x')).code, 'ERR_DURABLE_NAME');
  t.is(t.throws(() => h.get(BadType, 'x')).code, 'ERR_DURABLE_NAME');
});

test('SQL in ids, values and names is stored as a string or refused, never run', async (t) => {
  const dir = tmpDir(t);
  const h = await host(t, dir);
  const shop = h.get(Shop, 'inj');
  const evil = [`'); DROP TABLE c_orders; --`, `" OR 1=1 --`, `x'||(SELECT count(*) FROM kv)||'`, `\u0000nul`, `a/../../b`];
  await shop.run(`for (const s of args[0]) orders.put(s, { status: s, note: s })`, evil);
  for (const s of evil) {
    t.deepEqual(await shop.run(`return (await orders.find({ where: { status: args[0] } })).map((d) => d.note)`, s), [s]);
    t.is((await shop.run(`return orders.get(args[0])`, s)).status, s);
  }
  t.is(await shop.run(`return orders.count({ status: { $in: args[0] } })`, evil), evil.length);
  t.is((await t.throwsAsync(shop.run(`return orders.find({ where: { ['status" = status OR 1=1 --']: 1 } })`))).code, 'ERR_DURABLE_NOT_INDEXED');
  t.deepEqual(await shop.run(`return orders.find({ where: { ['x" OR 1=1 --']: 1 }, scan: true })`), []);
  class Sneaky extends DurableWorker {
    static collections = { 'orders"; DROP TABLE kv; --': { a: 'text' } };
  }
  t.is(t.throws(() => h.get(Sneaky, 'x')).code, 'ERR_DURABLE_NAME');
  await h.close();
  const file = filesOf(dir, 'Shop')[0];
  t.is(sqlite(file, `SELECT count(*) FROM c_orders`), `${evil.length}\n`);
  t.is(sqlite(file, `PRAGMA integrity_check`), 'ok\n');
});

test('a transaction that throws leaves state and collection as they were, reads included', async (t) => {
  const h = await host(t, tmpDir(t));
  const shop = h.get(Shop, 't');
  await shop.run(`orders.put('a', { status: 'open', total: 1 }); state.set('k', 'before')`);
  const out = await shop.run(`
    let inside;
    try {
      await state.transaction(async () => {
        orders.put('a', { status: 'shipped', total: 2 });
        orders.put('b', { status: 'open', total: 3 });
        await orders.delete('a');
        state.set('k', 'during');
        inside = await orders.count();
        await state.transaction(async () => { orders.put('c', { status: 'open' }); });
        throw new Error('no');
      });
    } catch (e) {
      if (e.message !== 'no') throw e;
    }
    return { inside, docs: await orders.find(), count: await orders.count({ status: 'open' }), k: state.get('k') };
  `);
  t.is(out.inside, 1, 'inside, the transaction reads its own writes');
  t.deepEqual(out.docs, [{ status: 'open', total: 1 }]);
  t.is(out.count, 1);
  t.is(out.k, 'before');
  const committed = await shop.run(`
    await state.transaction(async () => { orders.put('d', { status: 'open' }); await state.transaction(async () => orders.delete('a')); state.set('k', 'after'); });
    return { ids: (await orders.find()).length, k: state.get('k') };
  `);
  t.deepEqual(committed, { ids: 1, k: 'after' });
});

test('deleteAll empties collections with the state and alarms, and reads see it before it commits', async (t) => {
  const dir = tmpDir(t);
  const h = await host(t, dir);
  const shop = h.get(Shop, 'd');
  await shop.run(`orders.put('a', { status: 'open' }); orders.put('b', { status: 'open' }); state.set('k', 1)`);
  const out = await shop.run(`
    const p = state.deleteAll();
    const seen = await orders.count();
    orders.put('c', { status: 'open' });
    await p;
    return { seen, after: (await orders.find()).length, k: state.get('k') };
  `);
  t.deepEqual(out, { seen: 0, after: 1, k: undefined });
  await h.close();
  const h2 = await host(t, dir);
  t.is(await h2.get(Shop, 'd').run(`return orders.count()`), 1);
});

test('a field declared later is backfilled on the next wake; one removed keeps its column and data', async (t) => {
  const dir = tmpDir(t);
  const make = (fields) =>
    class extends DurableWorker {
      static workerName = 'Evolving';
      static collections = { items: fields };
      async put(id, doc) {
        this.state.collection('items').put(id, doc);
      }
      async find(q) {
        return (await this.state.collection('items').find(q)).map((d) => d.sku);
      }
    };
  const V1 = make({ sku: 'text' });
  let h = await open({ dir });
  for (let i = 0; i < 2500; i++) await h.get(V1, 'w').put(`i${i}`, { sku: `s${i}`, region: i % 2 ? 'eu' : 'us', weight: i });
  await h.get(V1, 'w').put('odd', { sku: 'odd', region: 42 });
  await h.close();

  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  t.teardown(() => process.off('warning', onWarning));

  const V2 = make({ sku: 'text', region: 'text', weight: 'integer' });
  h = await open({ dir });
  const eu = await h.get(V2, 'w').find({ where: { region: 'eu' } });
  t.is(eu.length, 1250, 'documents written before the field existed are found by it');
  t.deepEqual(await h.get(V2, 'w').find({ where: { weight: { $gte: 2498 } } }), ['s2498', 's2499']);
  t.deepEqual(await h.get(V2, 'w').find({ where: { region: null } }), ['odd'], 'a stored value of another type is null');
  await new Promise((r) => setImmediate(r));
  t.true(warnings.some((w) => w.code === 'DURABLE_WORKERS_BACKFILL' && /Evolving "w".*items.*region/.test(w.message)));
  await h.get(V2, 'w').put('i0', { sku: 's0', region: 'apac', weight: 0 });
  await h.close();

  // region leaves the declaration: its column and data stay in the file.
  const V3 = make({ sku: 'text', weight: 'integer' });
  h = await open({ dir });
  t.deepEqual(await h.get(V3, 'w').find({ where: { weight: 0 } }), ['s0']);
  await h.get(V3, 'w').put('i1', { sku: 's1', region: 'latam', weight: 1 });
  await h.close();
  const file = filesOf(dir, 'Evolving')[0];
  t.is(sqlite(file, `SELECT f_region FROM c_items WHERE id = 'i0'`), 'apac\n');
  t.is(sqlite(file, `SELECT active FROM fields WHERE collection = 'items' AND field = 'region'`), '0\n');

  // Declared again, it is filled again: the write made while it was gone counts.
  h = await open({ dir });
  t.deepEqual(await h.get(V2, 'w').find({ where: { region: 'latam' } }), ['s1']);
  t.is((await h.get(V2, 'w').find({ where: { region: 'eu' } })).length, 1249);
  await h.close();
});

test('the connection takes one statement at a time under concurrent reads, writes and commits', async (t) => {
  const h = await host(t, tmpDir(t));
  const N = 40;
  const callers = Array.from({ length: N }, (_, c) =>
    h.get(Shop, 'busy').run(
      `
      const c = args[0];
      const reads = [];
      for (let i = 0; i < 10; i++) {
        orders.put(c + ':' + i, { status: i % 2 ? 'open' : 'shipped', n: i, total: c });
        state.set('last:' + c, i);
        reads.push(orders.count({ total: c }), orders.find({ where: { total: c }, orderBy: 'n', limit: 3 }), orders.get(c + ':' + i));
      }
      const out = await Promise.all(reads);
      await state.transaction(async () => { orders.put(c + ':t', { status: 'open', total: c, n: 99 }); });
      return { counts: out.filter((x, i) => i % 3 === 0), firsts: out[out.length - 2].map((d) => d.n), got: out[out.length - 1].n };
    `,
      c,
    ),
  );
  const results = await Promise.all(callers);
  for (const r of results) {
    t.deepEqual(r.counts, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    t.deepEqual(r.firsts, [0, 1, 2]);
    t.is(r.got, 9);
  }
  t.is(await h.get(Shop, 'busy').run(`return orders.count()`), N * 11);
});

/** Forks a Ledger child under the slow-sync shim; see fixtures/doc-transactions.js. */
function forkLedger(t, dir, mode, onMessage) {
  const child = fork(path.join(FIXTURES, 'doc-transactions.js'), [dir, mode], {
    env: slowSyncEnv(5),
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
  const kill = () => child.kill('SIGKILL');
  child.on('message', (msg) => onMessage(msg, kill));
  const ended = Promise.all([once(child, 'exit'), once(child, 'disconnect'), once(child.stderr, 'end')]).then(([[code, signal]]) => ({ code, signal, stderr }));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) kill();
    await ended;
  });
  return ended;
}

test('a SIGKILL in the middle of a transaction leaves none of its documents or keys', async (t) => {
  t.timeout(120_000);
  const dir = tmpDir(t);
  let inside = false;
  const { signal, stderr } = await forkLedger(t, dir, 'hang', (msg, kill) => {
    if (msg.inTransaction === 1) {
      inside = true;
      kill();
    }
  });
  t.true(inside);
  t.is(signal, 'SIGKILL', stderr);
  const h = await host(t, dir);
  t.deepEqual(await h.get(Ledger, 'l').read(), { total: 0, last: 0, count: 1, sum: 0 });
});

test('transactions acknowledged before a SIGKILL are wholly on disk, and none is there in part', async (t) => {
  t.timeout(120_000);
  const dir = tmpDir(t);
  let acked = 0;
  const N = 25;
  const { signal, stderr } = await forkLedger(t, dir, 'loop', (msg, kill) => {
    if (msg.acked === undefined) return;
    acked = Math.max(acked, msg.acked);
    if (msg.acked === N) kill();
  });
  t.is(signal, 'SIGKILL', stderr);
  const h = await host(t, dir);
  const r = await h.get(Ledger, 'l').read();
  t.true(r.last >= acked && r.last <= acked + 1, `${acked} acknowledged, last on disk ${r.last}`);
  t.is(r.count, r.last + 1, 'one entry per transaction on disk');
  t.is(r.total, r.sum, 'the total and the entries come from the same transactions');
});

test('a SIGKILL while a 20,000-document transaction commits leaves all of it or none', async (t) => {
  t.timeout(180_000);
  const dir = tmpDir(t);
  let committing = -1;
  let acked = -1;
  const { signal, stderr } = await forkLedger(t, dir, 'bulk', (msg, kill) => {
    if (msg.acked !== undefined) acked = msg.acked;
    if (msg.committing === 1) {
      committing = 1;
      // Somewhere in the call: its writes, its commit, or just after.
      setTimeout(kill, Math.floor(Math.random() * 150));
    }
  });
  t.is(committing, 1);
  t.is(signal, 'SIGKILL', stderr);
  const h = await host(t, dir);
  const r = await h.get(Ledger, 'l').read();
  t.true(r.count === 20_001 || r.count === 40_001, `documents on disk: ${r.count}`);
  t.is(r.last, r.count - 1, 'the key written in the same transaction agrees');
  if (acked >= 1) t.is(r.count, 40_001, 'an acknowledged bulk is there');
});
