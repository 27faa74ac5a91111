'use strict';
// Format compatibility: a directory written by the first storage format
// (__test__/fixtures/format/v1, made once by its make.js and committed) opens
// in every later build and reads back as it was written: values of every
// kind, documents found by an indexed field and by a backfilled one, a named
// alarm and the catalog's index of it. A file of a newer format is refused by
// name, never misread.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const Database = require('better-sqlite3');
const { execFileSync } = require('node:child_process');
const { open, codes } = require('../..');
const { Ledger } = require('../fixtures/format/ledger');
const { tmpDir } = require('../helpers/tmp');

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'format', 'v1');

/** A copy of the fixture to open (opening may write: the committed one stays as it was made). */
function copy(t) {
  const dir = path.join(tmpDir(t), 'v1');
  fs.cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

const workerFile = (dir) =>
  fs
    .readdirSync(dir, { recursive: true })
    .map((f) => path.join(dir, f))
    .find((f) => f.endsWith('.db') && path.basename(f) !== '_registry.db');

test('a directory of storage format 1 opens and reads back as it was written', async (t) => {
  const dir = copy(t);
  const host = await open({ dir });
  t.teardown(() => host.close());
  const ids = [];
  for await (const id of host.ids(Ledger)) ids.push(id);
  t.deepEqual(ids, ['acct-1']);
  const r = await host.get(Ledger, 'acct-1').read();
  t.deepEqual(r.entries, [
    ['big', 2n ** 70n],
    ['name', 'ada'],
    ['nested', { list: [1, 'two', null], map: new Map([['k', 3]]) }],
    ['tags', new Set(['a', 'b'])],
    ['when', new Date(Date.UTC(2026, 11, 1))],
  ]);
  t.deepEqual(r.openTotals, [7, 12.5], 'found by the indexed field, ordered by the backfilled one');
  t.deepEqual(r.over10, ['open'], 'found by the backfilled field');
  t.deepEqual(r.o2, { status: 'shipped', total: 3 });
  t.is(r.renew, Date.UTC(2100, 0, 1));
});

test('the catalog of format 1 still indexes the alarm: inspect finds it due at its time', (t) => {
  const dir = copy(t);
  const out = execFileSync(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'durable-workers.js'), 'inspect', dir, '--json'], { encoding: 'utf8' });
  const report = JSON.parse(out);
  t.is(report.workers, 1);
  t.deepEqual(report.alarms.next, [{ class: 'Ledger', id: 'acct-1', at: Date.UTC(2100, 0, 1), due: '2100-01-01T00:00:00.000Z' }]);
});

test('a worker file of a newer storage format is refused with ERR_DURABLE_STATE_FORMAT naming the file, and left unchanged', async (t) => {
  const dir = copy(t);
  const file = workerFile(dir);
  const db = new Database(file);
  db.pragma('user_version = 2');
  db.close();
  const before = fs.readFileSync(file);
  const host = await open({ dir });
  t.teardown(() => host.close());
  const err = await t.throwsAsync(host.get(Ledger, 'acct-1').read());
  t.is(err.code, codes.STATE_FORMAT);
  t.true(err.message.includes(file), err.message);
  t.regex(err.message, /storage format 2, written by a newer version of durable-workers; this one reads format 1 and older/);
  t.deepEqual(fs.readFileSync(file), before);
});
