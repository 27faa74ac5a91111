'use strict';
// Collection reads at the addon's boundary: the packed result (one buffer)
// unpacks to the documents written; a read runs on the JS thread when the
// worker's file is open and free, answers null when it is not, and one that
// fails on its pool thread still rejects with the coded error.
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const test = require('ava');
const { NativeHost } = require('../../js/native/load');
const { Commits } = require('../../js/runtime/commits');
const { packChanges } = require('../../js/native/changes');
const { unpackRows } = require('../../js/collections/result-rows');
const { tmpDir } = require('../helpers/tmp');
const { slowSyncEnv } = require('../helpers/slowsync');

function open(t) {
  const commits = new Commits();
  const host = NativeHost.open(tmpDir(t), { durability: 'full', maxLive: 128, evictAfterMs: 60_000 }, commits.done);
  t.teardown(async () => {
    await host.close();
    commits.close();
  });
  host.declare('C', [{ name: 'docs', fields: [], types: [] }]);
  return { host, commits };
}

const writeDocs = (w, commits, ids, docs, tags = ids.map(() => 1)) =>
  commits.submit((id) =>
    w.write(
      id,
      ...packChanges({
        keys: [],
        tags: [],
        values: [],
        deletes: [],
        docs: { clear: false, colls: ids.map(() => 0), ids, tags, docs, columns: Buffer.alloc(0) },
      }),
    ),
  );

test('documents come back packed in one buffer and unpack to what was written, in id order', async (t) => {
  const { host, commits } = open(t);
  const w = host.worker('C', 'a');
  await w.register();
  await writeDocs(w, commits, ['b', 'a', 'c', 'é日本'], [Buffer.from('alpha'), Buffer.alloc(0), Buffer.from('gamma-gamma'), Buffer.from([0, 255, 1])]);
  const packed = await w.query({ kind: 'scan', collection: 0 });
  t.true(Buffer.isBuffer(packed));
  // 12 bytes of header, 12 per row, then the ids' UTF-8 and the documents.
  t.is(packed.length, 12 + 4 * 12 + 3 + Buffer.byteLength('é日本') + 5 + 0 + 11 + 3);
  const u = unpackRows(packed);
  t.deepEqual(u.ids, ['a', 'b', 'c', 'é日本']);
  t.deepEqual(u.tags, [1, 1, 1, 1]);
  t.deepEqual(
    u.docs.map((d) => [...d]),
    [[], [...Buffer.from('alpha')], [...Buffer.from('gamma-gamma')], [0, 255, 1]],
  );
  t.is(unpackRows(await w.query({ kind: 'count', collection: 0 })).count, 4);
  // A Uint8Array (as a shard receives it) unpacks the same.
  t.deepEqual(unpackRows(new Uint8Array(packed)).ids, u.ids);
});

test('findNow, a find by position, reads what queryNow reads, and refuses a malformed shape', async (t) => {
  const { host, commits } = open(t);
  const w = host.worker('C', 'a');
  await w.register();
  await writeDocs(
    w,
    commits,
    ['b', 'a', 'c', 'd'],
    ['1', '2', '3', '4'].map((s) => Buffer.from(s)),
  );
  await writeDocs(w, commits, ['e'], [Buffer.from('5')]); // the file is open now
  const q = { kind: 'find', collection: 0, fields: [], ops: [], counts: [], values: Buffer.alloc(0), desc: true, limit: 2 };
  const byObject = w.queryNow(q);
  t.true(Buffer.isBuffer(byObject));
  t.deepEqual(unpackRows(byObject).ids, ['e', 'd']);
  // [order + 1, desc, limit + 1, n]: no order, descending, limit 2, no conditions.
  t.deepEqual(w.findNow(0, Uint32Array.of(0, 1, 3, 0), Buffer.alloc(0)), byObject);
  t.deepEqual(unpackRows(w.findNow(0, Uint32Array.of(0, 0, 0, 0), Buffer.alloc(0))).ids, ['a', 'b', 'c', 'd', 'e']);
  for (const shape of [Uint32Array.of(0, 0, 0), Uint32Array.of(0, 0, 0, 1, 0, 0)]) {
    const err = t.throws(() => w.findNow(0, shape, Buffer.alloc(0)));
    t.is(err.code, 'ERR_DURABLE_INTERNAL', `shape ${shape}`);
  }
  t.is(t.throws(() => w.findNow(0, Uint32Array.of(1, 0, 0, 0), Buffer.alloc(0))).code, 'ERR_DURABLE_INTERNAL', 'an order on an undeclared field');
});

test('findNow returns documents all stored as JSON text as one JSON array, in order; one in another format sends every row back packed, from the same read', async (t) => {
  const { host, commits } = open(t);
  const w = host.worker('C', 'a');
  await w.register();
  await writeDocs(
    w,
    commits,
    ['b', 'a', 'c'],
    ['{"n":2}', '"é日本"', '[3]'].map((s) => Buffer.from(s)),
    [2, 2, 2],
  );
  await writeDocs(w, commits, ['d'], [Buffer.from('{"n":4}')], [2]); // the file is open now
  const all = Uint32Array.of(0, 0, 0, 0);
  t.is(w.findNow(0, all, Buffer.alloc(0)), '["é日本",{"n":2},[3],{"n":4}]');
  t.is(w.findNow(0, Uint32Array.of(0, 1, 3, 0), Buffer.alloc(0)), '[{"n":4},[3]]', 'descending, limit 2');
  t.is(w.findNow(0, Uint32Array.of(0, 0, 1, 0), Buffer.alloc(0)), '[]', 'limit 0');
  await writeDocs(w, commits, ['bb'], [Buffer.from([1, 2])], [1]);
  const queries = host.stats().queries;
  const rows = unpackRows(w.findNow(0, all, Buffer.alloc(0)));
  t.is(host.stats().queries - queries, 1, 'one read: the documents before the clone are not read again');
  t.deepEqual(rows.ids, ['a', 'b', 'bb', 'c', 'd']);
  t.deepEqual(rows.tags, [2, 2, 1, 2, 2]);
  t.deepEqual(
    rows.docs.map((d) => [...d]),
    ['"é日本"', '{"n":2}', [1, 2], '[3]', '{"n":4}'].map((d) => [...(typeof d === 'string' ? Buffer.from(d) : d)]),
    'each document whole, the ones read as JSON text first included',
  );
  t.is(JSON.parse(w.findNow(0, Uint32Array.of(0, 0, 2, 0), Buffer.alloc(0))).length, 1, 'the clone is past the limit: JSON again');
});

test('a read runs on the JS thread once the file is open, and answers null until it is', async (t) => {
  const { host, commits } = open(t);
  const w = host.worker('C', 'a');
  t.is(w.getNow(0, 'a'), null, 'never loaded: the file is not open');
  await w.register();
  await writeDocs(w, commits, ['a', 'b'], [Buffer.from('one'), Buffer.from('two')]);
  t.is(w.queryNow({ kind: 'find', collection: 0 }), null, 'created and left closed');
  const before = host.stats();
  t.deepEqual(unpackRows(await w.query({ kind: 'find', collection: 0 })).ids, ['a', 'b']);
  t.deepEqual(unpackRows(w.getNow(0, 'b')).docs.map(String), ['two'], 'a clone (tag 1) comes back as its row');
  t.is(w.getNow(0, 'zz'), false, 'none');
  await writeDocs(w, commits, ['j', 'k'], [Buffer.from('{"n":"é日本"}'), Buffer.from([0x7b, 0xff, 0x7d])], [2, 2]);
  t.is(w.getNow(0, 'j'), '{"n":"é日本"}', 'JSON text (tag 2) comes back as a string');
  t.deepEqual(unpackRows(w.getNow(0, 'k')).docs, [Buffer.from([0x7b, 0xff, 0x7d])], 'bytes that are not UTF-8 come back as they are');
  t.is(unpackRows(w.queryNow({ kind: 'count', collection: 0 })).count, 4);
  t.deepEqual(unpackRows(w.queryNow({ kind: 'find', collection: 0, desc: true, limit: 1 })).ids, ['k']);
  const after = host.stats();
  t.is(after.queries - before.queries, 7);
  t.is(after.queriesDeferred - before.queriesDeferred, 1, 'only the read that opened the file went to the pool');
  // The JS layer checks collections first: reaching the addon is a bug of ours.
  t.throws(() => w.getNow(7, 'a'), { code: 'ERR_DURABLE_INTERNAL' });
});

test('a read during a commit’s sync runs at once and sees it; while a checkpoint holds the file, a read on the JS thread answers null and the pool read waits', async (t) => {
  t.timeout(60_000);
  const child = fork(path.join(__dirname, '..', 'fixtures', 'busy-reads.js'), [tmpDir(t), '100'], { env: slowSyncEnv(100), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [msg] = await once(child, 'message');
  await once(child, 'exit');
  t.is(msg.error, undefined, msg.error);
  t.true(msg.idle, 'an idle open file is read on the JS thread');
  t.deepEqual(msg.duringSync, ['b'], 'the commit being synced is read on the JS thread');
  t.is(msg.busy, null);
  t.is(msg.busyFind, null);
  t.is(msg.waited, 453, 'the pool read ran after the checkpoint, with every document');
  t.is(msg.after, 453);
  t.is(msg.deferred, 1);
});

test('a read that fails on its pool thread rejects with the coded error', async (t) => {
  const { host, commits } = open(t);
  const w = host.worker('C', 'a');
  t.is(unpackRows(await w.query({ kind: 'count', collection: 0 })).count, 0);
  await commits.submit((id) => w.close(id));
  await t.throwsAsync(w.query({ kind: 'count', collection: 0 }), { code: 'ERR_DURABLE_CLOSED' });
});
