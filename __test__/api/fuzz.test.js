'use strict';
// Hostile and random input, against the documented contract (API.md §1,
// index.d.ts, README "Errors"):
//   - this.state against an in-memory model: random sets, deletes, reads,
//     lists (prefix / start / end / limit / reverse), transactions that commit
//     or throw (nested too), calls that throw after writing, deleteAll, and
//     reopens (the host closed and the directory opened again); keys from the
//     whole Unicode range, empty, at 2,048 and 2,049 bytes, with lone
//     surrogates; values that cannot be cloned;
//   - ids from the whole Unicode range, empty, 2,049 bytes, NUL, slashes and
//     "..": each valid one its own file inside the directory, the others
//     ERR_DURABLE_ID wherever an id is taken;
//   - values, arguments and results that cannot be cloned: ERR_DURABLE_UNCLONEABLE;
//   - method names such as __proto__, constructor, then, toString, start, alarm;
//   - collection, field and query names: undeclared ones refused before any
//     SQL, `__proto__` and `constructor` ordinary when declared.
// The state model runs twice: over wide keys, and over three keys that
// collide (rewritten in nested transactions and synced).
// After every bad input, nothing changed: not the worker's own state, not
// another worker's.
//
// Key order. The docs say "sorted"; js/state/resident-state.js sorts keys, and compares
// `start` / `end`, as JavaScript strings (UTF-16 code units), so that is what
// the model does ('\u{10000}' sorts before '\uFFFF'). host.ids() is sorted
// by the catalog, by code point; the ids test compares sets.
//
// A failure prints the shrunk counterexample and the seed; replay with
// FUZZ_SEED=<seed> FUZZ_PATH=<path>. FUZZ_RUNS=<n> runs longer.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Buffer } = require('node:buffer');
const test = require('ava');
const fc = require('fast-check');
const { open, DurableWorker } = require('../..');
const { tmpDir } = require('../helpers/tmp');

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const replay = () => (process.env.FUZZ_SEED === undefined ? {} : { seed: Number(process.env.FUZZ_SEED), path: process.env.FUZZ_PATH });

// --- inputs ------------------------------------------------------------------

const LONE = ['\uD800', 'a\uDC00', '\uDBFF\uDBFF'];
const KEY_2048 = ['a'.repeat(2048), 'é'.repeat(1024), '\u{1F600}'.repeat(512), `${'€'.repeat(682)}ab`];
const KEY_2049 = ['a'.repeat(2049), `${'é'.repeat(1024)}a`, `${'\u{1F600}'.repeat(512)}a`, `${'€'.repeat(683)}`];
/** Short keys that collide, prefix each other and sort differently by code unit and by code point. */
const NEAR = ['', 'a', 'ab', 'b', 'B', '\u0000', 'a\u0000', '/', '..', '\uFFFF', '\u{10000}', '\u{10FFFF}', 'é', 'e\u0301', 'constructor', '__proto__'];

for (const k of KEY_2048) assert.equal(Buffer.byteLength(k), 2048);
for (const k of KEY_2049) assert.equal(Buffer.byteLength(k), 2049);

const validKey = (k) => k.isWellFormed() && Buffer.byteLength(k) <= 2048;

const shortKey = fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom(...NEAR), fc.string({ unit: fc.constantFrom('a', 'b', '\uFFFF', '\u{10000}'), maxLength: 3 }));
const keyArb = fc.oneof({ weight: 8, arbitrary: shortKey }, { weight: 1, arbitrary: fc.constantFrom(...KEY_2048, ...KEY_2049, ...LONE) });

/** A marker the worker turns into a value that cannot be cloned (functions cannot be sent as arguments). */
const UNCLONEABLE = ['function', 'symbol', 'nested function', 'WeakMap', 'Promise'];
function uncloneable(kind) {
  switch (kind) {
    case 'function':
      return () => 1;
    case 'symbol':
      return Symbol('s');
    case 'nested function':
      return { a: [1, { f() {} }] };
    case 'WeakMap':
      return new WeakMap();
    case 'Promise':
      return Promise.resolve(1);
  }
  throw new Error(kind);
}

const valueArb = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.bigInt(),
  fc.date({ noInvalidDate: true }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ unit: 'binary', maxLength: 3 }), fc.integer(), { maxKeys: 3, noNullPrototype: true }),
  fc.tuple(fc.integer(), fc.string({ maxLength: 3 })).map(([a, b]) => new Map([[a, b]])),
);

/**
 * The op and step generators over a key space. Wide keys find what breaks on
 * odd strings; a dense space of three keys makes ops collide (a key written,
 * then rewritten by a nested transaction, then synced), which is where
 * ordering bugs live.
 * @param {{ key: fc.Arbitrary<string>, listKey: fc.Arbitrary<string> }} space
 */
function generators({ key, listKey }) {
  const listOpts = fc.record({ prefix: listKey, start: listKey, end: listKey, limit: fc.nat(5), reverse: fc.boolean() }, { requiredKeys: [] });
  const leaf = fc.oneof(
    { weight: 6, arbitrary: fc.record({ op: fc.constant('set'), key, value: valueArb }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('set'), key, bad: fc.constantFrom(...UNCLONEABLE) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('delete'), key }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('get'), key }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('has'), key }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('list'), opts: listOpts }) },
    { weight: 1, arbitrary: fc.constant({ op: 'keys' }) },
    { weight: 2, arbitrary: fc.constant({ op: 'sync' }) },
  );
  const txnOf = (inner) => fc.record({ op: fc.constant('txn'), ops: fc.array(inner, { maxLength: 4 }), throws: fc.boolean() });
  const op = fc.oneof({ weight: 6, arbitrary: leaf }, { weight: 2, arbitrary: txnOf(fc.oneof({ weight: 4, arbitrary: leaf }, { weight: 2, arbitrary: txnOf(leaf) })) });
  return fc.oneof(
    { weight: 8, arbitrary: fc.record({ step: fc.constant('call'), ops: fc.array(op, { minLength: 1, maxLength: 5 }) }) },
    { weight: 1, arbitrary: fc.record({ step: fc.constant('throwing call'), ops: fc.array(leaf, { minLength: 1, maxLength: 3 }) }) },
    { weight: 1, arbitrary: fc.constant({ step: 'reopen' }) },
    { weight: 1, arbitrary: fc.constant({ step: 'deleteAll' }) },
  );
}

const WIDE = generators({ key: keyArb, listKey: shortKey });
const DENSE_KEY = fc.constantFrom('a', 'b', 'ab');
const DENSE = generators({ key: DENSE_KEY, listKey: fc.constantFrom('', 'a', 'ab', 'b', 'c') });

// --- the worker and the model run the same ops ----------------------------------

class Planned extends Error {}

/** Runs `ops` on a DurableState; what each one gave. Shared shape with `model`. */
async function runOps(state, ops) {
  const out = [];
  for (const o of ops) {
    try {
      switch (o.op) {
        case 'set': {
          const before = state.size;
          try {
            state.set(o.key, o.bad === undefined ? o.value : uncloneable(o.bad));
            out.push({ ok: true });
          } catch (err) {
            out.push({ code: err.code, unchanged: state.size === before });
          }
          break;
        }
        case 'delete': {
          const before = state.size;
          try {
            out.push({ value: state.delete(o.key) });
          } catch (err) {
            out.push({ code: err.code, unchanged: state.size === before });
          }
          break;
        }
        case 'get':
          out.push({ value: state.get(o.key) });
          break;
        case 'has':
          out.push({ value: state.has(o.key) });
          break;
        case 'list':
          out.push({ value: [...state.list(o.opts)] });
          break;
        case 'keys':
          out.push({ value: state.keys() });
          break;
        case 'sync':
          await state.sync();
          out.push({ ok: true });
          break;
        case 'txn': {
          let inner;
          try {
            await state.transaction(async () => {
              inner = await runOps(state, o.ops);
              if (o.throws) throw new Planned('planned');
            });
            out.push({ inner, threw: false });
          } catch (err) {
            if (!(err instanceof Planned)) throw err;
            out.push({ inner, threw: true });
          }
          break;
        }
        default:
          throw new Error(`unknown op ${o.op}`);
      }
    } catch (err) {
      out.push({ unexpected: String(err?.stack ?? err) });
    }
  }
  return out;
}

/** The model: a Map, keys sorted as JavaScript strings. */
function model(m, ops) {
  const out = [];
  for (const o of ops) {
    switch (o.op) {
      case 'set':
        if (!validKey(o.key)) out.push({ code: 'ERR_DURABLE_NAME', unchanged: true });
        else if (o.bad !== undefined) out.push({ code: 'ERR_DURABLE_UNCLONEABLE', unchanged: true });
        else {
          m.set(o.key, o.value);
          out.push({ ok: true });
        }
        break;
      case 'delete':
        if (!validKey(o.key)) out.push({ code: 'ERR_DURABLE_NAME', unchanged: true });
        else out.push({ value: m.delete(o.key) });
        break;
      case 'get':
        out.push({ value: m.get(o.key) });
        break;
      case 'has':
        out.push({ value: m.has(o.key) });
        break;
      case 'list': {
        const { prefix, start, end, limit, reverse } = o.opts;
        let keys = [...m.keys()].sort().filter((k) => (prefix === undefined || k.startsWith(prefix)) && (start === undefined || k >= start) && (end === undefined || k < end));
        if (reverse) keys.reverse();
        if (limit !== undefined) keys = keys.slice(0, limit);
        out.push({ value: keys.map((k) => [k, m.get(k)]) });
        break;
      }
      case 'keys':
        out.push({ value: [...m.keys()].sort() });
        break;
      case 'sync':
        out.push({ ok: true });
        break;
      case 'txn': {
        const copy = new Map(m);
        const inner = model(copy, o.ops);
        if (!o.throws) {
          m.clear();
          for (const [k, v] of copy) m.set(k, v);
        }
        out.push({ inner, threw: o.throws });
        break;
      }
    }
  }
  return out;
}

class Fuzz extends DurableWorker {
  async run(ops) {
    return runOps(this.state, ops);
  }

  /** Runs the ops, then throws: their writes commit all the same (README, Guarantees). */
  async runThenThrow(ops) {
    await runOps(this.state, ops);
    throw new RangeError('after the writes');
  }

  async wipe() {
    await this.state.deleteAll();
    return this.state.keys();
  }

  async dump() {
    return this.state.entries();
  }

  async size() {
    return this.state.size;
  }

  async put(key, value) {
    this.state.set(key, value);
    return true;
  }

  async tryPut(key, bad) {
    const before = this.state.entries();
    try {
      this.state.set(key, uncloneable(bad));
      return { ok: true };
    } catch (err) {
      return { code: err.code, unchanged: JSON.stringify(this.state.entries()) === JSON.stringify(before) };
    }
  }

  async tryPutDoc(id, bad) {
    try {
      this.state.collection('docs').put(id, bad === undefined ? { id } : { id, v: uncloneable(bad) });
      return { ok: true };
    } catch (err) {
      return { code: err.code };
    }
  }

  async docs() {
    return this.state.collection('docs').find();
  }

  /** A result holding something that cannot be cloned (inside an object: a Promise returned bare is awaited). */
  async badResult(kind) {
    this.state.set('badResult', kind);
    return { value: uncloneable(kind) };
  }

  async echo(...args) {
    return args;
  }

  /** Calls `method` on another worker through this.ctx; the code it got. */
  async callOther(id, method) {
    try {
      const stub = this.ctx.get(Fuzz, id);
      const fn = stub[method];
      if (fn === undefined) return { property: 'undefined' };
      await fn('x');
      return { ok: true };
    } catch (err) {
      return { code: err.code };
    }
  }

  /** this.ctx.get with a bad id: the code it throws. */
  async getOther(id) {
    try {
      this.ctx.get(Fuzz, id);
      return { ok: true };
    } catch (err) {
      return { code: err.code };
    }
  }

  get total() {
    return 1;
  }

  field = () => 1;

  static helper() {}

  // Hooks: never reachable through a stub.
  start() {}
  alarm() {}
}
Fuzz.collections = { docs: { id: 'text' } };

/** A worker that holds known data; checked unchanged after every bad input. */
const SENTINEL = {
  id: 'sentinel',
  entries: [
    ['a', 1],
    ['b', { deep: [1, 2, 3] }],
    ['\u{10FFFF}', 'last'],
  ],
};

async function seedSentinel(host) {
  for (const [k, v] of SENTINEL.entries) await host.get(Fuzz, SENTINEL.id).put(k, v);
}

async function sentinelUnchanged(host) {
  assert.deepEqual(
    await host.get(Fuzz, SENTINEL.id).dump(),
    [...SENTINEL.entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
}

// --- this.state against the model ---------------------------------------------------

/** Runs random steps on one worker and its model, in a fresh directory per run. */
async function modelRuns(t, stepArb, numRuns) {
  const root = tmpDir(t);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }), fc.array(stepArb, { maxLength: 25 }), async (id, steps) => {
      fc.pre(id !== SENTINEL.id);
      const dir = path.join(root, String(run++));
      let host = await open({ dir });
      try {
        await seedSentinel(host);
        const m = new Map();
        const check = async () =>
          assert.deepEqual(
            await host.get(Fuzz, id).dump(),
            [...m.keys()].sort().map((k) => [k, m.get(k)]),
          );
        for (const s of steps) {
          switch (s.step) {
            case 'call':
              assert.deepEqual(await host.get(Fuzz, id).run(s.ops), model(m, s.ops));
              break;
            case 'throwing call':
              await assert.rejects(host.get(Fuzz, id).runThenThrow(s.ops), { name: 'RangeError', message: 'after the writes' });
              model(m, s.ops);
              await check();
              break;
            case 'reopen': {
              // The byte count kept as writes come and go (and transactions
              // roll back) is the one a fresh load computes.
              const size = await host.get(Fuzz, id).size();
              await host.close();
              host = await open({ dir });
              await check();
              assert.equal(await host.get(Fuzz, id).size(), size, 'state.size after a reopen');
              await sentinelUnchanged(host);
              break;
            }
            case 'deleteAll':
              assert.deepEqual(await host.get(Fuzz, id).wipe(), []);
              assert.equal(await host.get(Fuzz, id).size(), 0);
              m.clear();
              break;
          }
        }
        await check();
        await host.close();
        host = await open({ dir });
        await check();
        await sentinelUnchanged(host);
      } finally {
        await host.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }),
    { numRuns, ...replay() },
  );
  t.pass();
}

test('this.state matches an in-memory model through random writes, lists, syncs, transactions, throwing calls, deleteAll and reopens, for keys from the whole Unicode range', async (t) => {
  t.timeout(120_000);
  await modelRuns(t, WIDE, RUNS);
});

test('this.state matches an in-memory model when three keys are written, rewritten in nested transactions and synced', async (t) => {
  t.timeout(120_000);
  await modelRuns(t, DENSE, RUNS);
});

// Regression (found by the dense model run, fixed in js/state/resident-state.js #takeBatch):
// a flush inside a nested transaction wrote a key as it was before the
// outermost transaction only if that transaction's undo log had it, so a key
// dirtied before the outer transaction and written only by the inner one was
// flushed with the inner one's value, and stayed on disk when the inner one
// threw. The contract (API.md §1, transaction): "if fn throws, not at all".
class Nested extends DurableWorker {
  async run() {
    this.state.set('k', 'before');
    await this.state.transaction(async () => {
      await this.state
        .transaction(async () => {
          this.state.set('k', 'rolled back');
          await this.state.sync();
          throw new Planned('inner');
        })
        .catch(() => {});
    });
    return this.state.get('k');
  }

  async read() {
    return this.state.get('k');
  }
}

test('a nested transaction that throws leaves nothing on disk, even when its body syncs a key written before the outer transaction', async (t) => {
  const dir = tmpDir(t);
  let host = await open({ dir });
  t.is(await host.get(Nested, 'n').run(), 'before');
  await host.close();
  host = await open({ dir });
  t.teardown(() => host.close());
  t.is(await host.get(Nested, 'n').read(), 'before');
});

// --- ids ----------------------------------------------------------------------

const BAD_IDS = ['', 'a'.repeat(2049), `${'\u{1F600}'.repeat(512)}a`, `${'é'.repeat(1024)}a`, ...LONE, 42, null, undefined, {}, ['a']];
const ODD_IDS = [
  'a'.repeat(2048),
  '\u{1F600}'.repeat(512),
  '\u0000',
  'a\u0000b',
  'a\u0000',
  '/',
  '..',
  '.',
  '../..',
  '../../escape',
  '/etc/passwd',
  'a/../b',
  'a/b',
  '\\',
  '..\\..',
  '_registry',
  '_registry.db',
  'A',
  'a',
  '\uFFFF',
  '\u{10000}',
  '\u{10FFFF}',
  'e\u0301',
  'é',
  ' ',
  '\n',
];

/** Every file and directory under `dir`, relative. */
function tree(dir) {
  const out = [];
  const walk = (d, rel) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out.push(r);
      if (e.isDirectory()) walk(path.join(d, e.name), r);
    }
  };
  walk(dir, '');
  return out.sort();
}

async function checkIds(t, ids, bad) {
  const root = tmpDir(t);
  const dir = path.join(root, 'data');
  let host = await open({ dir });
  try {
    await seedSentinel(host);
    const written = [];
    for (const id of ids) {
      await host.get(Fuzz, id).put('me', id);
      written.push(id);
    }
    const files = tree(dir);
    for (const id of bad) {
      assert.throws(() => host.get(Fuzz, id), { code: 'ERR_DURABLE_ID' }, `get(${JSON.stringify(id)})`);
      await assert.rejects(host.delete(Fuzz, id), { code: 'ERR_DURABLE_ID' }, `delete(${JSON.stringify(id)})`);
      if (typeof id === 'string') assert.deepEqual(await host.get(Fuzz, SENTINEL.id).getOther(id), { code: 'ERR_DURABLE_ID' });
      await sentinelUnchanged(host);
      assert.deepEqual(tree(dir), files, 'a refused id creates no file');
    }
    // Each id reads back its own data, after a reopen too.
    for (let pass = 0; pass < 2; pass++) {
      for (const id of written) assert.deepEqual(await host.get(Fuzz, id).dump(), [['me', id]], `worker ${JSON.stringify(id)}`);
      await sentinelUnchanged(host);
      await host.close();
      host = await open({ dir });
    }
    const listed = [];
    for await (const id of host.ids(Fuzz)) listed.push(id);
    assert.deepEqual(new Set(listed), new Set([...written, SENTINEL.id]));
    assert.equal(listed.length, written.length + 1);
    // One file per worker, all of them inside the directory.
    await host.close();
    const all = tree(root);
    for (const f of all) assert.ok(f === 'data' || f.startsWith('data/'), `${f} was created outside the directory`);
    const dbs = all.filter((f) => f.endsWith('.db'));
    assert.equal(dbs.filter((f) => f.startsWith('data/Fuzz/')).length, written.length + 1, dbs.join('\n'));
    assert.deepEqual(
      dbs.filter((f) => !f.startsWith('data/Fuzz/')),
      ['data/_registry.db'],
    );
  } finally {
    await host.close();
  }
}

test('ids with NUL, slashes, "..", 2,048 bytes and any code point each address their own file inside the directory; empty, 2,049 bytes, lone surrogates and non-strings are ERR_DURABLE_ID and change nothing', async (t) => {
  t.timeout(60_000);
  await checkIds(t, ODD_IDS, BAD_IDS);
  t.pass();
});

test('random ids from the whole Unicode range each address their own worker', async (t) => {
  t.timeout(120_000);
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 12 }), async (ids) => {
      fc.pre(!ids.includes(SENTINEL.id));
      await checkIds(t, ids, []);
    }),
    { numRuns: Math.max(5, Math.round(RUNS / 4)), ...replay() },
  );
  t.pass();
});

// --- values that cannot be cloned ------------------------------------------------

test('values, documents, arguments and results that cannot be cloned are ERR_DURABLE_UNCLONEABLE, and nothing else changes', async (t) => {
  const dir = tmpDir(t);
  const host = await open({ dir });
  t.teardown(() => host.close());
  await seedSentinel(host);
  const w = host.get(Fuzz, 'victim');
  await w.put('keep', [1, 2]);
  for (const kind of UNCLONEABLE) {
    t.deepEqual(await w.tryPut('keep', kind), { code: 'ERR_DURABLE_UNCLONEABLE', unchanged: true }, `state.set of a ${kind}`);
    t.deepEqual(await w.tryPut('new', kind), { code: 'ERR_DURABLE_UNCLONEABLE', unchanged: true }, `state.set of a ${kind}`);
    t.deepEqual(await w.tryPutDoc('d', kind), { code: 'ERR_DURABLE_UNCLONEABLE' }, `collection.put of a ${kind}`);
    await t.throwsAsync(w.echo(uncloneable(kind)), { code: 'ERR_DURABLE_UNCLONEABLE' }, `an argument that is a ${kind}`);
    await t.throwsAsync(w.badResult(kind), { code: 'ERR_DURABLE_UNCLONEABLE' }, `a result that is a ${kind}`);
    await sentinelUnchanged(host);
  }
  t.deepEqual(await w.docs(), []);
  // What badResult wrote before its result failed to cross still commits, like any write before a throw.
  t.deepEqual(await w.dump(), [
    ['badResult', UNCLONEABLE.at(-1)],
    ['keep', [1, 2]],
  ]);
  // Document ids are held to the same rules as worker ids.
  for (const id of ['a'.repeat(2049), ...LONE, 7]) t.deepEqual(await w.tryPutDoc(id), { code: 'ERR_DURABLE_ID' }, `document id ${String(id).slice(0, 8)}`);
  t.deepEqual(await w.tryPutDoc('a'.repeat(2048)), { ok: true });
});

// --- method names ---------------------------------------------------------------

const NOT_METHODS = [
  '__proto__',
  'constructor',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupGetter__',
  'start',
  'stop',
  'alarm',
  'webSocketMessage',
  'webSocketClose',
  'webSocketError',
  'id',
  'state',
  'ctx',
  'total', // a getter
  'field', // an instance field holding a function
  'helper', // a static method
  'prototype',
  'call',
  'apply',
  'bind',
  '',
  '\u0000',
  '\uD800',
  'run\u0000',
  'a'.repeat(5000),
];
const METHODS = new Set(['run', 'runThenThrow', 'wipe', 'dump', 'put', 'tryPut', 'tryPutDoc', 'docs', 'badResult', 'echo', 'callOther', 'getOther']);

test('hooks, inherited and unknown names are ERR_DURABLE_METHOD through a stub and through this.ctx, before the worker runs; then is undefined, since a stub is not thenable', async (t) => {
  t.timeout(120_000);
  const dir = tmpDir(t);
  const host = await open({ dir });
  t.teardown(() => host.close());
  await seedSentinel(host);
  const caller = host.get(Fuzz, 'caller');
  await caller.put('x', 1);
  const files = tree(dir);
  const stub = host.get(Fuzz, 'never-called');
  const before = host.stats().materialized;

  t.is(stub.then, undefined);
  t.is(await stub, stub, 'await on a stub gives the stub back');
  t.deepEqual(await caller.callOther('never-called', 'then'), { property: 'undefined' });
  t.is(stub[Symbol.iterator], undefined);
  t.is(stub[Symbol.toPrimitive], undefined);

  const tryName = async (name) => {
    await assert.rejects(stub[name]('x'), { code: 'ERR_DURABLE_METHOD' }, `stub.${name}()`);
    assert.deepEqual(await caller.callOther('never-called', name), { code: 'ERR_DURABLE_METHOD' }, `ctx stub.${name}()`);
  };
  for (const name of NOT_METHODS) await tryName(name);
  await fc.assert(
    fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 12 }), async (name) => {
      fc.pre(!METHODS.has(name) && name !== 'then');
      await tryName(name);
    }),
    { numRuns: RUNS * 2, ...replay() },
  );
  t.is(host.stats().materialized, before, 'no refused call materialized its worker');
  t.deepEqual(tree(dir), files, 'no refused call created a file');
  await sentinelUnchanged(host);
  t.deepEqual(await caller.dump(), [['x', 1]]);
});

// --- collection, field and query names ------------------------------------------------

class Named extends DurableWorker {
  // Declared through JSON so the names are own properties, as a config file would give them.
  static collections = JSON.parse('{"docs": {"n": "integer", "s": "text"}, "__proto__": {"x": "text"}, "constructor": {"hasOwnProperty": "integer", "__proto__": "text"}}');

  async collection(name) {
    try {
      this.state.collection(name);
      return 'ok';
    } catch (err) {
      return err.code;
    }
  }

  async find(name, opts) {
    try {
      return await this.state.collection(name).find(opts);
    } catch (err) {
      return err.code ?? err.name;
    }
  }

  async put(name, id, doc) {
    this.state.collection(name).put(id, doc);
  }
}

test('undeclared collection, field and query names are refused before any SQL; __proto__ and constructor are ordinary declared names', async (t) => {
  const dir = tmpDir(t);
  let host = await open({ dir });
  const w = host.get(Named, 'n');
  for (const name of ['toString', 'hasOwnProperty', '', 'docs; DROP TABLE kv', 'DOCS', 'kv', 'meta', 'alarms', 'fields', 7, null]) {
    t.is(await w.collection(name), 'ERR_DURABLE_NAME', `collection(${JSON.stringify(name)})`);
  }
  const sneaky = "'); DROP TABLE kv; --";
  await w.put('docs', 'a', { n: 1, s: sneaky });
  await w.put('__proto__', 'b', { x: 'hello' });
  await w.put('constructor', 'c', JSON.parse('{"hasOwnProperty": 5, "__proto__": "p"}'));
  for (const where of [{ constructor: 1 }, { toString: 1 }, { 'n; DROP TABLE kv': 1 }, { 'n" OR 1=1 --': 1 }, JSON.parse('{"__proto__": {"$eq": 1}}')]) {
    t.is(await w.find('docs', { where }), 'ERR_DURABLE_NOT_INDEXED', JSON.stringify(where));
  }
  t.is(await w.find('docs', { orderBy: 'n desc; DROP TABLE kv' }), 'ERR_DURABLE_NOT_INDEXED');
  t.is(await w.find('docs', { orderBy: ['n', 'sideways'] }), 'TypeError');
  t.is(await w.find('docs', { where: { n: { $where: '1' } } }), 'TypeError');
  t.deepEqual(await w.find('docs', { where: { s: sneaky } }), [{ n: 1, s: sneaky }]);
  await host.close();
  host = await open({ dir });
  t.teardown(() => host.close());
  const again = host.get(Named, 'n');
  t.deepEqual(await again.find('docs', {}), [{ n: 1, s: sneaky }], 'the kv and docs tables are still there');
  t.deepEqual(await again.find('__proto__', { where: { x: 'hello' } }), [{ x: 'hello' }]);
  t.deepEqual(await again.find('constructor', { where: JSON.parse('{"__proto__": "p"}') }), [JSON.parse('{"hasOwnProperty": 5, "__proto__": "p"}')]);
  t.deepEqual(await again.find('constructor', { where: { hasOwnProperty: 5 } }), [JSON.parse('{"hasOwnProperty": 5, "__proto__": "p"}')]);
});
