'use strict';
// What a durable directory looks like on disk: one plain SQLite file per
// worker under a hash of its id, readable by the stock sqlite3 tool, and
// checked when opened, so a wrong or damaged file is refused by name.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');
const crypto = require('node:crypto');
const { execFileSync } = require('node:child_process');
const { open, DurableWorker, codes } = require('../..');
const { Box } = require('../fixtures/workers');
const { tmpDir } = require('../helpers/tmp');

class Cart extends DurableWorker {
  async add(item) {
    const items = this.state.get('items') ?? [];
    items.push(item);
    this.state.set('items', items);
    return items.length;
  }

  async items() {
    return this.state.get('items') ?? [];
  }
}

/** Runs one statement with the sqlite3 command-line tool; rows as objects. */
function sqlite(file, sql) {
  const out = execFileSync('sqlite3', ['-json', file, sql], { encoding: 'utf8' }).trim();
  return out === '' ? [] : JSON.parse(out);
}

/** Every worker database under <dir>/<cls> (not SQLite's sidecar files), as paths relative to it. */
function filesUnder(dir, cls) {
  return fs.readdirSync(path.join(dir, cls), { recursive: true }).filter((rel) => !SIDECAR.test(rel) && fs.statSync(path.join(dir, cls, rel)).isFile());
}

/** The worker file holding `id`, found by the id each file stores. */
function fileOf(dir, cls, id) {
  for (const rel of filesUnder(dir, cls)) {
    const file = path.join(dir, cls, rel);
    if (sqlite(file, "SELECT v FROM meta WHERE k='id'")[0]?.v === id) return file;
  }
  throw new Error(`no file under ${dir}/${cls} holds ${JSON.stringify(id)}`);
}

/** Opens `dir` for one step of a test; closed at teardown if the step fails. */
async function openFor(t, dir) {
  const host = await open({ dir });
  t.teardown(() => host.close());
  return host;
}

const SIDECAR = /-(wal|shm|journal)$/;

test('ids with slashes, of 400 characters, or differing only in case are distinct workers stored under plain hex file names', async (t) => {
  const dir = tmpDir(t);
  const ids = ['a/b/../c', '../../outside', 'x/'.repeat(200), 'Cart', 'cart'];
  t.is(ids[2].length, 400);

  const first = await openFor(t, dir);
  for (const id of ids) t.is(await first.get(Cart, id).add(`item of ${id}`), 1);
  await first.close();

  const second = await openFor(t, dir);
  for (const id of ids) t.deepEqual(await second.get(Cart, id).items(), [`item of ${id}`], id);
  await second.close();

  // Nothing escaped the class directory, whatever the ids held.
  t.deepEqual(
    fs
      .readdirSync(dir)
      .filter((n) => !SIDECAR.test(n))
      .sort(),
    ['Cart', '_registry.db'],
  );
  const files = filesUnder(dir, 'Cart');
  t.is(files.length, ids.length);
  for (const rel of files) {
    const [sub, name, ...rest] = rel.split(path.sep);
    t.deepEqual(rest, []);
    t.regex(sub, /^[0-9a-f]{2}$/);
    t.regex(name, /^[0-9a-f]{64}\.db$/);
    t.true(name.startsWith(sub), rel);
  }
  const stored = files.map((rel) => sqlite(path.join(dir, 'Cart', rel), "SELECT v FROM meta WHERE k='id'")[0].v);
  t.deepEqual(stored.sort(), [...ids].sort());
});

test("a worker file copied over another id's path is refused with ERR_DURABLE_CORRUPT naming the worker", async (t) => {
  const dir = tmpDir(t);
  const first = await openFor(t, dir);
  await first.get(Box, 'alice').put('who', 'alice');
  await first.get(Box, 'bob').put('who', 'bob');
  await first.close();

  fs.copyFileSync(fileOf(dir, 'Box', 'alice'), fileOf(dir, 'Box', 'bob'));

  const second = await openFor(t, dir);
  const err = await t.throwsAsync(second.get(Box, 'bob').read('who'));
  t.is(err.code, codes.CORRUPT);
  t.true(err.message.includes('Box') && err.message.includes('bob'), err.message);
  // The file it copied from is still alice's, and alice is unaffected.
  t.is(await second.get(Box, 'alice').read('who'), 'alice');
});

test('a worker file of random bytes is refused with ERR_DURABLE_CORRUPT, and other workers are unaffected', async (t) => {
  const dir = tmpDir(t);
  const first = await openFor(t, dir);
  await first.get(Box, 'broken').put('k', 'before');
  await first.get(Box, 'intact').put('k', 'kept');
  await first.close();

  fs.writeFileSync(fileOf(dir, 'Box', 'broken'), crypto.randomBytes(8192));

  const second = await openFor(t, dir);
  const err = await t.throwsAsync(second.get(Box, 'broken').read('k'));
  t.is(err.code, codes.CORRUPT);
  t.true(err.message.includes('Box') && err.message.includes('broken'), err.message);
  // Not quietly replaced by an empty worker on the next call either.
  const again = await t.throwsAsync(second.get(Box, 'broken').read('k'));
  t.is(again.code, codes.CORRUPT);

  t.is(await second.get(Box, 'intact').read('k'), 'kept');
  await second.get(Box, 'intact').put('k', 'changed');
  await second.get(Box, 'new').put('k', 'fresh');
  await second.close();

  const third = await openFor(t, dir);
  t.is(await third.get(Box, 'intact').read('k'), 'changed');
  t.is(await third.get(Box, 'new').read('k'), 'fresh');
});

test('a value stored with a codec tag this build does not know is refused with ERR_DURABLE_STATE_FORMAT naming the worker and the key', async (t) => {
  const dir = tmpDir(t);
  const first = await openFor(t, dir);
  await first.get(Box, 'tagged').put('cart-items', { sku: 'apple' });
  await first.get(Box, 'tagged').put('other', 2);
  await first.close();

  sqlite(fileOf(dir, 'Box', 'tagged'), "UPDATE kv SET tag=99 WHERE key='cart-items'");

  const second = await openFor(t, dir);
  const err = await t.throwsAsync(second.get(Box, 'tagged').read('other'));
  t.is(err.code, codes.STATE_FORMAT);
  for (const part of ['Box', 'tagged', 'cart-items']) t.true(err.message.includes(part), `${part} in: ${err.message}`);
});

test('a closed worker file is a plain SQLite database holding JSON for plain data and structured-clone bytes otherwise, and _registry.db lists the worker', async (t) => {
  const dir = tmpDir(t);
  const values = { a: new Map([[1, { nested: [1n, 'two'] }]]), b: new Date(86_400_000), c: 'text', d: { sku: 'apple', qty: 2, tags: ['red', null, true] } };
  const host = await openFor(t, dir);
  for (const [k, v] of Object.entries(values)) await host.get(Box, 'plain').put(k, v);
  await host.close();

  const file = fileOf(dir, 'Box', 'plain');
  t.deepEqual(sqlite(file, 'SELECT key FROM kv ORDER BY key'), [{ key: 'a' }, { key: 'b' }, { key: 'c' }, { key: 'd' }]);
  const rows = sqlite(file, 'SELECT key, tag, hex(value) AS hex FROM kv ORDER BY key');
  const plain = new Set(['c', 'd']);
  for (const { key, tag, hex } of rows) {
    const bytes = Buffer.from(hex, 'hex');
    t.is(tag, plain.has(key) ? 2 : 1, key);
    t.deepEqual(plain.has(key) ? JSON.parse(bytes.toString('utf8')) : v8.deserialize(bytes), values[key], key);
  }
  // JSON text, so SQLite's own JSON functions read it.
  t.deepEqual(sqlite(file, "SELECT json_extract(CAST(value AS TEXT), '$.tags[0]') AS first FROM kv WHERE key='d'"), [{ first: 'red' }]);
  t.deepEqual(sqlite(file, "SELECT v FROM meta WHERE k='class'"), [{ v: 'Box' }]);
  t.deepEqual(sqlite(path.join(dir, '_registry.db'), 'SELECT class, id FROM workers'), [{ class: 'Box', id: 'plain' }]);
});
