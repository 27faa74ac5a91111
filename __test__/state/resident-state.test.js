'use strict';
// this.state: resident reads, caps, clone semantics, coalesced commits.
const test = require('ava');
const { open, DurableWorker } = require('../..');
const { tmpDir } = require('../helpers/tmp');

class Box extends DurableWorker {
  put(key, value) {
    this.state.set(key, value);
    return true;
  }
  get(key) {
    return this.state.get(key);
  }
  putMany(n) {
    for (let i = 0; i < n; i++) this.state.set(`k${String(i).padStart(4, '0')}`, i);
    return n;
  }
  tryPut(key, value) {
    try {
      this.state.set(key, value);
      return { ok: true };
    } catch (err) {
      return { ok: false, code: err.code, message: err.message };
    }
  }
  snapshot() {
    return { keys: this.state.keys(), size: this.state.size, entries: this.state.entries() };
  }
  list(opts) {
    return [...this.state.list(opts).keys()];
  }
  del(key) {
    return this.state.delete(key);
  }
  mutateWithoutSet() {
    const v = this.state.get('obj');
    v.changed = true;
    return this.state.get('obj');
  }
  async txn(fail) {
    this.state.set('a', 1);
    try {
      await this.state.transaction(async () => {
        this.state.set('b', 2);
        this.state.set('a', 10);
        this.state.delete('c');
        if (fail) throw new Error('boom');
      });
    } catch (err) {
      return { threw: err.message, a: this.state.get('a'), b: this.state.get('b'), c: this.state.get('c') };
    }
    return { a: this.state.get('a'), b: this.state.get('b'), c: this.state.get('c') };
  }
  async wipe() {
    await this.state.deleteAll();
    return this.state.keys();
  }
}

async function host(t, opts = {}) {
  const dir = opts.dir ?? tmpDir(t);
  const h = await open({ dir, ...opts });
  t.teardown(() => h.close());
  return h;
}

test('Date, Map, Set, BigInt, typed arrays and cyclic objects come back as themselves after a reopen', async (t) => {
  const dir = tmpDir(t);
  const cyclic = { name: 'loop' };
  cyclic.self = cyclic;
  const value = {
    when: new Date(Date.UTC(2024, 1, 29, 12)),
    map: new Map([
      ['a', 1],
      [2, 'b'],
    ]),
    set: new Set(['x', 'y']),
    big: 2n ** 70n,
    bytes: new Uint8Array([1, 2, 3]),
    cyclic,
    nested: [undefined, null, -0, NaN, 'ü€😀'],
  };
  let h = await open({ dir });
  await h.get(Box, 'b').put('v', value);
  await h.close();
  h = await open({ dir });
  t.teardown(() => h.close());
  const back = await h.get(Box, 'b').get('v');
  t.true(back.when instanceof Date);
  t.is(back.when.getTime(), value.when.getTime());
  t.true(back.map instanceof Map);
  t.deepEqual(
    [...back.map],
    [
      ['a', 1],
      [2, 'b'],
    ],
  );
  t.true(back.set instanceof Set);
  t.is(back.big, 2n ** 70n);
  t.deepEqual([...back.bytes], [1, 2, 3]);
  t.is(back.cyclic.self, back.cyclic);
  t.true(Object.is(back.nested[2], -0));
  t.true(Number.isNaN(back.nested[3]));
  t.is(back.nested[4], 'ü€😀');
});

test('many sets in one call are one commit', async (t) => {
  const h = await host(t);
  const box = h.get(Box, 'many');
  await box.putMany(1); // creates the file
  const before = h.stats().commits;
  t.is(await box.putMany(500), 500);
  t.is(h.stats().commits - before, 1);
});

test('a set of the bytes already stored writes nothing', async (t) => {
  const h = await host(t);
  const box = h.get(Box, 'same');
  await box.put('obj', { a: [1, 2, 3], d: new Date(5) });
  const before = h.stats();
  await box.put('obj', { a: [1, 2, 3], d: new Date(5) });
  await box.put('obj', { a: [1, 2, 3], d: new Date(5) });
  const after = h.stats();
  t.is(after.commits, before.commits);
  t.is(after.bytesWritten, before.bytesWritten);
  await box.put('obj', { a: [1, 2, 4], d: new Date(5) });
  t.is(h.stats().commits, before.commits + 1);
});

test('a value over 128 KiB is refused at the set with nothing changed', async (t) => {
  const h = await host(t);
  const box = h.get(Box, 'caps');
  await box.put('k', 'small');
  const r = await box.tryPut('k', 'x'.repeat(129 * 1024));
  t.false(r.ok);
  t.is(r.code, 'ERR_DURABLE_STATE_TOO_LARGE');
  t.regex(r.message, /Box "caps"/);
  t.is(await box.get('k'), 'small');
});

test('a worker over 1 MiB in all is refused at the set with nothing changed', async (t) => {
  const h = await host(t);
  const box = h.get(Box, 'total');
  const chunk = 'y'.repeat(120 * 1024);
  for (let i = 0; i < 8; i++) t.true((await box.tryPut(`c${i}`, chunk)).ok);
  const sizeBefore = (await box.snapshot()).size;
  const r = await box.tryPut('c8', chunk);
  t.is(r.code, 'ERR_DURABLE_STATE_TOO_LARGE');
  const snap = await box.snapshot();
  t.is(snap.size, sizeBefore);
  t.false(snap.keys.includes('c8'));
  // Replacing a value with a smaller one is still allowed at the cap.
  t.true((await box.tryPut('c0', 'tiny')).ok);
});

test('a value that cannot be cloned is refused at the set with nothing changed', async (t) => {
  const h = await host(t);
  const box = h.get(Box, 'clone');
  class Holder extends DurableWorker {
    bad(kind) {
      const values = { fn: () => 1, sym: Symbol('s'), nested: { f() {} } };
      try {
        this.state.set('k', values[kind]);
        return 'stored';
      } catch (err) {
        return [err.code, this.state.has('k')];
      }
    }
  }
  const holder = h.get(Holder, 'x');
  for (const kind of ['fn', 'sym', 'nested']) {
    t.deepEqual(await holder.bad(kind), ['ERR_DURABLE_UNCLONEABLE', false], kind);
  }
  t.deepEqual((await box.snapshot()).keys, []);
});

test('an argument that cannot be cloned is refused before the call runs', async (t) => {
  const h = await host(t);
  const err = await t.throwsAsync(h.get(Box, 'a').put('k', () => 1));
  t.is(err.code, 'ERR_DURABLE_UNCLONEABLE');
  t.regex(err.message, /Box "a".*put\(\)/);
});

test('get returns a copy: mutating it changes nothing until set', async (t) => {
  const h = await host(t);
  const box = h.get(Box, 'copy');
  await box.put('obj', { n: 1 });
  t.deepEqual(await box.mutateWithoutSet(), { n: 1 });
});

test('keys, entries and list are sorted and honour prefix, start, end, limit and reverse', async (t) => {
  const h = await host(t);
  const box = h.get(Box, 'list');
  for (const k of ['b/2', 'a', 'b/1', 'c', 'b/3']) await box.put(k, k.toUpperCase());
  const snap = await box.snapshot();
  t.deepEqual(snap.keys, ['a', 'b/1', 'b/2', 'b/3', 'c']);
  t.deepEqual(snap.entries[1], ['b/1', 'B/1']);
  t.deepEqual(await box.list({ prefix: 'b/' }), ['b/1', 'b/2', 'b/3']);
  t.deepEqual(await box.list({ start: 'b/2', end: 'c' }), ['b/2', 'b/3']);
  t.deepEqual(await box.list({ prefix: 'b/', reverse: true, limit: 2 }), ['b/3', 'b/2']);
  t.true(await box.del('b/2'));
  t.false(await box.del('b/2'));
  t.deepEqual(await box.list({ prefix: 'b/' }), ['b/1', 'b/3']);
});

test('a transaction that throws leaves state as before, on disk and in memory', async (t) => {
  const dir = tmpDir(t);
  let h = await open({ dir });
  const box = h.get(Box, 'tx');
  await box.put('c', 3);
  t.deepEqual(await box.txn(true), { threw: 'boom', a: 1, b: undefined, c: 3 });
  await h.close();
  h = await open({ dir });
  t.teardown(() => h.close());
  const again = h.get(Box, 'tx');
  t.deepEqual((await again.snapshot()).keys, ['a', 'c']);
  t.deepEqual(await again.txn(false), { a: 10, b: 2, c: undefined });
});

test('deleteAll removes every key in one commit', async (t) => {
  const dir = tmpDir(t);
  let h = await open({ dir });
  const box = h.get(Box, 'wipe');
  await box.putMany(20);
  const before = h.stats().commits;
  t.deepEqual(await box.wipe(), []);
  t.is(h.stats().commits, before + 1);
  await h.close();
  h = await open({ dir });
  t.teardown(() => h.close());
  t.deepEqual((await h.get(Box, 'wipe').snapshot()).keys, []);
});

test('bad keys are refused with ERR_DURABLE_NAME', async (t) => {
  const h = await host(t);
  const box = h.get(Box, 'keys');
  t.is((await box.tryPut(42, 1)).code, 'ERR_DURABLE_NAME');
  t.is((await box.tryPut('\uD800', 1)).code, 'ERR_DURABLE_NAME');
  t.is((await box.tryPut('k'.repeat(2049), 1)).code, 'ERR_DURABLE_NAME');
  t.true((await box.tryPut('k'.repeat(2048), 1)).ok);
});

test('a nested transaction that throws undoes only itself; the outer one still commits', async (t) => {
  class Nest extends DurableWorker {
    async run() {
      await this.state.transaction(async () => {
        this.state.set('outer', 1);
        await this.state
          .transaction(async () => {
            this.state.set('inner', 2);
            this.state.set('outer', 99);
            throw new Error('inner fails');
          })
          .catch(() => {});
        this.state.set('after', 3);
      });
      return this.state.entries();
    }
    dump() {
      return this.state.entries();
    }
  }
  const dir = tmpDir(t);
  let h = await open({ dir });
  const expected = [
    ['after', 3],
    ['outer', 1],
  ];
  t.deepEqual(await h.get(Nest, 'n').run(), expected);
  await h.close();
  h = await open({ dir });
  t.teardown(() => h.close());
  t.deepEqual(await h.get(Nest, 'n').dump(), expected);
});

test('writes a method made before it threw are committed, and the caller gets the error', async (t) => {
  class Half extends DurableWorker {
    setThenThrow() {
      this.state.set('k', 'written');
      throw new Error('after the write');
    }
    get_() {
      return this.state.get('k');
    }
  }
  const dir = tmpDir(t);
  let h = await open({ dir });
  await t.throwsAsync(h.get(Half, 'h').setThenThrow(), { message: 'after the write' });
  await h.close();
  h = await open({ dir });
  t.teardown(() => h.close());
  t.is(await h.get(Half, 'h').get_(), 'written');
});
