'use strict';
// A batch's sets and deletes cross to the addon packed in one buffer
// (js/native/changes.js). What is packed is what is stored: every key,
// tag and value, multi-byte keys and empty values included, through a
// batch of one set (committed without BEGIN and COMMIT) and a batch of
// several; and a buffer that does not hold what its counts say is refused
// whole, with nothing written.
const test = require('ava');
const { NativeHost } = require('../../js/native/load');
const { Commits } = require('../../js/runtime/commits');
const { packChanges } = require('../../js/native/changes');
const { tmpDir } = require('../helpers/tmp');

const OPTIONS = { durability: 'full', maxLive: 128, evictAfterMs: 60_000 };

function openHost(dir) {
  const commits = new Commits();
  const host = NativeHost.open(dir, OPTIONS, commits.done);
  host.declare('C', []);
  const workers = [];
  const close = async () => {
    for (const w of workers) await commits.submit((cid) => w.close(cid));
    await host.close();
    commits.close();
  };
  const worker = (id) => {
    const w = host.worker('C', id);
    workers.push(w);
    return w;
  };
  return { host, commits, worker, close };
}

const batch = (sets, deletes = []) => ({
  keys: sets.map(([k]) => k),
  tags: sets.map(([, tag]) => tag),
  values: sets.map(([, , v]) => v),
  deletes,
});

/** The worker's stored pairs, after the host was closed and opened again. */
async function stored(dir, id) {
  const { worker, close } = openHost(dir);
  try {
    const { keys, tags, values } = await worker(id).load();
    return Object.fromEntries(keys.map((k, i) => [k, [tags[i], [...values[i]]]]));
  } finally {
    await close();
  }
}

test('sets and deletes packed in one buffer are stored as they were given, one set or several', async (t) => {
  const dir = tmpDir(t);
  const { worker, commits, close } = openHost(dir);
  const w = worker('a');
  await w.register();
  const big = Buffer.alloc(70_000, 7);
  await commits.submit((cid) =>
    w.write(
      cid,
      ...packChanges(
        batch([
          ['plain', 1, Buffer.from('one')],
          ['é日本', 2, Buffer.alloc(0)],
          ['big', 3, big],
          ['gone', 4, Buffer.from('soon')],
        ]),
      ),
    ),
  );
  // One set alone (its own statement), then a delete alone: on the JS
  // thread when the host allows it, else on a commit thread.
  const one = packChanges(batch([['plain', 5, new Uint8Array([1, 2, 3])]]));
  t.is(one[1], undefined, 'no alarm or collection changes: nothing but the buffer');
  const inlineOrNot = (packed) =>
    commits.write(
      (cid, inline) => (inline ? w.writeInline(cid, ...packed) : (w.write(cid, ...packed), -1)),
      () => true,
    );
  await inlineOrNot(one);
  await inlineOrNot(packChanges(batch([], ['gone'])));
  await close();
  t.deepEqual(await stored(dir, 'a'), {
    plain: [5, [1, 2, 3]],
    é日本: [2, []],
    big: [3, [...big]],
  });
});

test('a packed buffer that does not hold what its counts say is refused whole, with nothing written', async (t) => {
  const dir = tmpDir(t);
  const { worker, commits, close } = openHost(dir);
  const w = worker('a');
  await w.register();
  await commits.submit((cid) => w.write(cid, ...packChanges(batch([['k', 1, Buffer.from('kept')]]))));
  const [good] = packChanges(
    batch([
      ['k', 1, Buffer.from('changed')],
      ['other', 1, Buffer.from('x')],
    ]),
  );
  const badUtf8 = Buffer.from(good);
  badUtf8[12] = 0xff; // the first key's only byte
  const hugeCount = Buffer.from(good);
  hugeCount.writeUInt32LE(0xffffffff, 0);
  const cases = {
    'cut short': good.subarray(0, good.length - 1),
    'with bytes after the last delete': Buffer.concat([good, Buffer.from([0])]),
    'a count no buffer could hold': hugeCount,
    'a key that is not UTF-8': badUtf8,
    'no counts at all': Buffer.alloc(3),
  };
  for (const [what, buf] of Object.entries(cases)) {
    const err = t.throws(() => w.write(9, buf), undefined, what);
    t.is(err.code, 'ERR_DURABLE_INTERNAL', what);
    t.throws(() => w.writeInline(10, buf), undefined, what);
  }
  await close();
  t.deepEqual(await stored(dir, 'a'), { k: [1, [...Buffer.from('kept')]] });
});
