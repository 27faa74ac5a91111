'use strict';
// Collection reads at the addon's boundary: the packed result (one buffer,
// each document's end) unpacks to the documents written, and a read that
// fails on its pool thread still rejects with the coded error.
const test = require('ava');
const { NativeHost } = require('../../js/native/load');
const { Commits } = require('../../js/runtime/commits');
const { unpackRows } = require('../../js/collections/result-rows');
const { tmpDir } = require('../helpers/tmp');

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

test('documents come back packed and unpack to what was written, in id order', async (t) => {
  const { host, commits } = open(t);
  const w = host.worker('C', 'a');
  await w.register();
  const docs = [Buffer.from('alpha'), Buffer.alloc(0), Buffer.from('gamma-gamma')];
  await commits.submit((id) =>
    w.write(id, { keys: [], tags: [], values: [], deletes: [], docs: { clear: false, colls: [0, 0, 0], ids: ['b', 'a', 'c'], tags: [1, 1, 1], docs, columns: Buffer.alloc(0) } }),
  );
  const r = await w.query({ kind: 'scan', collection: 0 });
  t.deepEqual(r.ends, [0, 5, 16]);
  const u = unpackRows(r);
  t.deepEqual(u.ids, ['a', 'b', 'c']);
  t.deepEqual(u.docs.map(String), ['', 'alpha', 'gamma-gamma']);
});

test('a read that fails on its pool thread rejects with the coded error', async (t) => {
  const { host, commits } = open(t);
  const w = host.worker('C', 'a');
  t.is((await w.query({ kind: 'count', collection: 0 })).count, 0);
  await commits.submit((id) => w.close(id));
  await t.throwsAsync(w.query({ kind: 'count', collection: 0 }), { code: 'ERR_DURABLE_CLOSED' });
});
