'use strict';
// Collections against a model: random sequences of put / get / delete /
// update / count / find / transaction / reopen, run inside a worker, every
// read compared with an in-memory model written here from the documented
// contract (API.md §1, index.d.ts). The model shares no code with js/collections/query.js
// or js/collections/declarations.js: it is a differential oracle.
//
// What it models:
//   - put replaces, committed with the call; a declared field of the wrong
//     type refuses the put with ERR_DURABLE_TYPE and writes nothing;
//   - missing / undefined / null declared fields are NULL;
//   - where: equality (null = IS NULL), $eq $ne (null-aware) $lt $lte $gt $gte
//     (never NULL, a null value is a TypeError) $in (never NULL; [] = nothing),
//     ANDed; booleans as 0/1, dates as epoch ms (a query may give ms);
//   - order: by id by default, NULL first ascending, strings by code point,
//     ties by id in the same direction, limit;
//   - undeclared fields: ERR_DURABLE_NOT_INDEXED unless scan: true, then
//     numbers/bigints < strings, booleans 0/1, Dates ms, objects NULL;
//   - reads in a call see its own and earlier calls' uncommitted writes;
//   - transaction: all or nothing;
//   - reopen: close the host and open the directory again.
//
// A failure shows the shrunk sequence of steps, the seed and the path; replay
// it with MODEL_SEED=<seed> MODEL_PATH=<path>. MODEL_RUNS=<n> runs longer.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Buffer } = require('node:buffer');
const test = require('ava');
const fc = require('fast-check');
const { open, DurableWorker } = require('../..');
const { tmpDir } = require('../helpers/tmp');

const DECL = Object.freeze({ name: 'text', n: 'integer', x: 'real', ok: 'boolean', at: 'date' });
const DECLARED = Object.keys(DECL);
const UNDECLARED = 'u';
const WORKER_ID = 'model/\u{1F600}';
const NUM_RUNS = Number(process.env.MODEL_RUNS ?? 60);

// --- the worker under test ---------------------------------------------------

/** What `update`'s fn returns for `how` and the current document (shared by worker and model: test code). */
function nextDoc(how, cur) {
  switch (how.kind) {
    case 'none':
      return undefined;
    case 'set':
      return how.doc;
    case 'patch':
      return { ...(cur ?? {}), [how.field]: how.value };
    default:
      throw new Error(`unknown update ${how.kind}`);
  }
}

async function runOp(state, op) {
  const c = state.collection('items');
  try {
    switch (op.op) {
      case 'put':
        c.put(op.id, op.doc);
        return { ok: true };
      case 'get':
        return { value: await c.get(op.id) };
      case 'delete':
        return { value: await c.delete(op.id) };
      case 'update': {
        let seen = 'fn not called';
        const value = await c.update(op.id, (cur) => {
          seen = cur;
          return nextDoc(op.how, cur);
        });
        return { seen, value };
      }
      case 'count':
        return { value: op.where === undefined ? await c.count() : await c.count(op.where) };
      case 'find':
        return { value: await c.find(op.opts) };
      case 'txn': {
        const inner = [];
        try {
          await state.transaction(async () => {
            for (const o of op.ops) inner.push(await runOp(state, o));
            if (op.fail) throw new Error('model: roll back');
          });
          return { inner, committed: true };
        } catch (err) {
          if (err?.message !== 'model: roll back') throw err;
          return { inner, committed: false };
        }
      }
      default:
        throw new Error(`unknown op ${op.op}`);
    }
  } catch (err) {
    return { error: err?.code ?? err?.name ?? String(err) };
  }
}

class ModelItems extends DurableWorker {
  static collections = { items: DECL, other: { name: 'text' } };

  async apply(ops) {
    const out = [];
    for (const op of ops) out.push(await runOp(this.state, op));
    return out;
  }
}

// --- the model ---------------------------------------------------------------

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

function fits(type, v) {
  if (v === undefined || v === null) return true;
  switch (type) {
    case 'text':
      return typeof v === 'string';
    case 'integer':
      return (typeof v === 'number' && Number.isSafeInteger(v)) || (typeof v === 'bigint' && v >= I64_MIN && v <= I64_MAX);
    case 'real':
      return typeof v === 'number' && !Number.isNaN(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'date':
      return v instanceof Date && !Number.isNaN(v.getTime());
    default:
      throw new Error(type);
  }
}

function validDoc(doc) {
  return DECLARED.every((f) => fits(DECL[f], doc !== null && typeof doc === 'object' && Object.hasOwn(doc, f) ? doc[f] : undefined));
}

/** A value as the model compares it: null, a number or bigint, or a string. */
function scalarOf(v) {
  switch (typeof v) {
    case 'string':
    case 'bigint':
      return v;
    case 'number':
      return Number.isNaN(v) ? null : v;
    case 'boolean':
      return v ? 1 : 0;
    case 'object':
      return v instanceof Date && !Number.isNaN(v.getTime()) ? v.getTime() : null;
    default:
      return null;
  }
}

function fieldOf(doc, f) {
  return scalarOf(doc !== null && typeof doc === 'object' && Object.hasOwn(doc, f) ? doc[f] : undefined);
}

function utf8Compare(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function cmp(a, b) {
  const rank = (v) => (v === null ? 0 : typeof v === 'string' ? 2 : 1);
  const d = rank(a) - rank(b);
  if (d !== 0) return Math.sign(d);
  if (a === null) return 0;
  if (typeof a === 'string') return utf8Compare(a, b);
  return a < b ? -1 : a > b ? 1 : 0; // number / bigint, mixed exactly
}

const RANGE = new Set(['$lt', '$lte', '$gt', '$gte']);

function isOps(v) {
  return v !== null && typeof v === 'object' && !(v instanceof Date) && !Array.isArray(v);
}

/** The errors a query may be refused with (any one of them), or an empty set. */
function queryErrors(where, orderBy, scan) {
  const errs = new Set();
  for (const [f, cond] of Object.entries(where ?? {})) {
    if (!scan && !Object.hasOwn(DECL, f)) errs.add('ERR_DURABLE_NOT_INDEXED');
    if (isOps(cond)) for (const [k, v] of Object.entries(cond)) if (RANGE.has(k) && v === null) errs.add('TypeError');
  }
  if (orderBy !== undefined) {
    const f = Array.isArray(orderBy) ? orderBy[0] : orderBy;
    if (!scan && !Object.hasOwn(DECL, f)) errs.add('ERR_DURABLE_NOT_INDEXED');
  }
  return errs;
}

function holds(v, op, q) {
  switch (op) {
    case '$eq':
      return q === null ? v === null : v !== null && cmp(v, scalarOf(q)) === 0;
    case '$ne':
      return !holds(v, '$eq', q);
    case '$in':
      return v !== null && q.some((x) => cmp(v, scalarOf(x)) === 0);
    case '$lt':
      return v !== null && cmp(v, scalarOf(q)) < 0;
    case '$lte':
      return v !== null && cmp(v, scalarOf(q)) <= 0;
    case '$gt':
      return v !== null && cmp(v, scalarOf(q)) > 0;
    case '$gte':
      return v !== null && cmp(v, scalarOf(q)) >= 0;
    default:
      throw new Error(op);
  }
}

function matches(doc, where) {
  for (const [f, cond] of Object.entries(where ?? {})) {
    const v = fieldOf(doc, f);
    if (isOps(cond)) {
      for (const [op, q] of Object.entries(cond)) if (!holds(v, op, q)) return false;
    } else if (!holds(v, '$eq', cond)) {
      return false;
    }
  }
  return true;
}

class Model {
  docs = new Map();

  apply(op) {
    switch (op.op) {
      case 'put':
        if (!validDoc(op.doc)) return { error: 'ERR_DURABLE_TYPE' };
        this.docs.set(op.id, structuredClone(op.doc));
        return { ok: true };
      case 'get':
        return { value: this.#get(op.id) };
      case 'delete': {
        const had = this.docs.delete(op.id);
        return { value: had };
      }
      case 'update': {
        const seen = this.#get(op.id);
        const next = nextDoc(op.how, this.#get(op.id));
        if (next === undefined) return { seen, value: undefined };
        if (!validDoc(next)) return { error: 'ERR_DURABLE_TYPE' };
        this.docs.set(op.id, structuredClone(next));
        return { seen, value: structuredClone(next) };
      }
      case 'count': {
        const errs = queryErrors(op.where, undefined, false);
        if (errs.size > 0) return { errorOneOf: [...errs] };
        return { value: [...this.docs.values()].filter((d) => matches(d, op.where)).length };
      }
      case 'find':
        return this.#find(op.opts);
      case 'txn': {
        const before = new Map(this.docs);
        const inner = op.ops.map((o) => this.apply(o));
        if (op.fail) this.docs = before;
        return { inner, committed: !op.fail };
      }
      default:
        throw new Error(op.op);
    }
  }

  #get(id) {
    return this.docs.has(id) ? structuredClone(this.docs.get(id)) : undefined;
  }

  #find({ where, orderBy, limit, scan } = {}) {
    const errs = queryErrors(where, orderBy, scan === true);
    if (errs.size > 0) return { errorOneOf: [...errs] };
    const [field, dir] = orderBy === undefined ? [null, 'asc'] : Array.isArray(orderBy) ? [orderBy[0], orderBy[1] ?? 'asc'] : [orderBy, 'asc'];
    const sign = dir === 'desc' ? -1 : 1;
    const rows = [...this.docs].filter(([, d]) => matches(d, where));
    rows.sort(([ia, a], [ib, b]) => sign * ((field === null ? 0 : cmp(fieldOf(a, field), fieldOf(b, field))) || utf8Compare(ia, ib)));
    const docs = rows.map(([, d]) => structuredClone(d));
    return { value: limit === undefined ? docs : docs.slice(0, limit) };
  }
}

/** Where the model allows one of several errors, take the one the worker gave if it is allowed. */
function settle(expected, actual) {
  if (Array.isArray(expected)) return expected.map((e, i) => settle(e, actual?.[i]));
  if (expected === null || typeof expected !== 'object') return expected;
  if (expected.errorOneOf) {
    return actual && expected.errorOneOf.includes(actual.error) ? { error: actual.error } : { error: expected.errorOneOf.join(' | ') };
  }
  if (expected.inner) return { ...expected, inner: settle(expected.inner, actual?.inner) };
  return expected;
}

// --- generators --------------------------------------------------------------

// Characters on both sides of the UTF-16 / code point order difference:
// U+E000–U+FFFF sort before astral characters by code point, after them by
// UTF-16 unit (JS `<`).
const CHARS = ['a', 'b', 'B', 'é', '\u0800', '\uE000', '\uFF5E', '\uFFFD', '\uFFFF', '\u{10000}', '\u{1F600}', '\u{10FFFF}'];
const str = fc.array(fc.constantFrom(...CHARS), { maxLength: 3 }).map((a) => a.join(''));
const IDS = ['', 'a', 'B', 'é', '\uE000', '\uFFFD', '\u{1F600}', 'a\u{10000}'];
const id = fc.constantFrom(...IDS);

const dateOf = (ms) => new Date(ms);
const VALID = {
  text: str,
  integer: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: -3, max: 3 }) },
    { weight: 2, arbitrary: fc.bigInt({ min: -3n, max: 3n }) },
    fc.constantFrom(-0, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, I64_MAX, I64_MIN, 2n ** 53n + 1n),
  ),
  real: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(-1.5, -1, -0, 0, 0.5, 1, 2.25) },
    fc.constantFrom(Infinity, -Infinity, Number.MAX_VALUE, Number.MIN_VALUE, -(2 ** 60), 2 ** 60 + 4096),
    fc.double({ noNaN: true }),
  ),
  boolean: fc.boolean(),
  date: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: -2, max: 2 }).map(dateOf) }, fc.constantFrom(8.64e15, -8.64e15, 1_700_000_000_000).map(dateOf)),
};
const WRONG = {
  text: fc.constantFrom(5, 1n, true, new Date(0), { a: 1 }, ['a']),
  integer: fc.constantFrom(1.5, 2 ** 53, I64_MAX + 1n, I64_MIN - 1n, '1', true, NaN, Infinity, new Date(1)),
  real: fc.constantFrom(NaN, '1', 1n, true, new Date(0)),
  boolean: fc.constantFrom(0, 1, 'true', 1n),
  date: fc.constantFrom(new Date(NaN), 0, '1970-01-01T00:00:00.000Z', true),
};
const undeclaredValue = fc.oneof(
  str,
  fc.integer({ min: -2, max: 2 }),
  fc.bigInt({ min: -2n, max: 2n }),
  fc.constantFrom(-0, 0.5, 1.5, -Infinity, 2n ** 64n),
  fc.boolean(),
  VALID.date,
  fc.constantFrom({ a: 1 }, [1, 'x'], new Map([[1, 'x']]), new Set(['s']), new Uint8Array([1, 2])),
  fc.constant(null),
  fc.constant(undefined),
);

/** A declared field's value in a document: valid, null, or explicitly undefined. */
const fieldValue = (type) => fc.oneof({ weight: 6, arbitrary: VALID[type] }, fc.constant(null), fc.constant(undefined));

const validDocArb = fc.record({ ...Object.fromEntries(DECLARED.map((f) => [f, fieldValue(DECL[f])])), [UNDECLARED]: undeclaredValue }, { requiredKeys: [] });
const badDocArb = fc.tuple(validDocArb, fc.constantFrom(...DECLARED)).chain(([doc, f]) => WRONG[DECL[f]].map((v) => ({ ...doc, [f]: v })));
const docArb = fc.oneof({ weight: 9, arbitrary: validDocArb }, { weight: 1, arbitrary: badDocArb });

/** A value to compare field `f` with (a date field also takes epoch ms). */
function queryValue(f) {
  if (f === UNDECLARED) return fc.oneof(str, fc.integer({ min: -2, max: 2 }), fc.bigInt({ min: -2n, max: 2n }), fc.constantFrom(0.5, -Infinity), fc.boolean(), VALID.date);
  const type = DECL[f];
  if (type === 'date') return fc.oneof(VALID.date, fc.integer({ min: -2, max: 2 }));
  return VALID[type];
}

function condition(f) {
  const v = queryValue(f);
  const vOrNull = fc.oneof({ weight: 4, arbitrary: v }, fc.constant(null));
  // A null range bound is rare: it is refused with a TypeError.
  const range = fc.oneof({ weight: 19, arbitrary: v }, fc.constant(null));
  const ops = fc
    .record({ $eq: vOrNull, $ne: vOrNull, $lt: range, $lte: range, $gt: range, $gte: range, $in: fc.array(v, { maxLength: 3 }) }, { requiredKeys: [] })
    .filter((o) => Object.keys(o).length > 0 && Object.keys(o).length <= 2);
  return fc.oneof(vOrNull, ops);
}

const FIELDS = [...DECLARED, UNDECLARED];
const whereArb = fc.array(fc.oneof(...FIELDS.map((f) => fc.tuple(fc.constant(f), condition(f)))), { maxLength: 2 }).map((entries) => Object.fromEntries(entries));
const orderArb = fc.oneof(fc.constantFrom(...FIELDS), fc.tuple(fc.constantFrom(...FIELDS), fc.constantFrom('asc', 'desc')));
const findArb = fc.record({ where: whereArb, orderBy: orderArb, limit: fc.integer({ min: 0, max: 4 }), scan: fc.boolean() }, { requiredKeys: [] });

const howArb = fc.oneof(
  fc.constant({ kind: 'none' }),
  docArb.map((doc) => ({ kind: 'set', doc })),
  fc
    .constantFrom(...FIELDS)
    .chain((f) =>
      fc
        .oneof({ weight: 9, arbitrary: f === UNDECLARED ? undeclaredValue : fieldValue(DECL[f]) }, f === UNDECLARED ? undeclaredValue : WRONG[DECL[f]])
        .map((value) => ({ kind: 'patch', field: f, value })),
    ),
);

const simpleOp = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('put'), id, doc: docArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete'), id }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('update'), id, how: howArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('get'), id }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('count'), where: fc.option(whereArb, { nil: undefined }) }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('find'), opts: findArb }) },
);
const txnOp = fc.record({ op: fc.constant('txn'), ops: fc.array(simpleOp, { minLength: 1, maxLength: 4 }), fail: fc.boolean() });
const opArb = fc.oneof({ weight: 9, arbitrary: simpleOp }, { weight: 1, arbitrary: txnOp });
const batch = fc.array(opArb, { minLength: 1, maxLength: 4 });

const stepArb = fc.oneof(
  { weight: 8, arbitrary: fc.record({ step: fc.constant('call'), ops: batch }) },
  // Two calls sent without waiting: the second runs while the first's commit may be in flight.
  { weight: 2, arbitrary: fc.record({ step: fc.constant('calls'), batches: fc.array(batch, { minLength: 2, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ step: fc.constant('reopen') }) },
);
const stepsArb = fc.array(stepArb, { minLength: 1, maxLength: 30, size: 'max' });

// --- the property ------------------------------------------------------------

function tally(stats, op, result) {
  stats[op.op] = (stats[op.op] ?? 0) + 1;
  if (result.error) stats[`${op.op}:${result.error}`] = (stats[`${op.op}:${result.error}`] ?? 0) + 1;
  if (op.op === 'find' && Array.isArray(result.value) && result.value.length > 1) stats['find:several'] = (stats['find:several'] ?? 0) + 1;
  if (op.op === 'find' && op.opts.scan && Array.isArray(result.value) && result.value.length > 0) stats['find:scan hit'] = (stats['find:scan hit'] ?? 0) + 1;
  if (op.op === 'txn') {
    stats[op.fail ? 'txn:rolled back' : 'txn:committed'] = (stats[op.fail ? 'txn:rolled back' : 'txn:committed'] ?? 0) + 1;
    op.ops.forEach((o, i) => tally(stats, o, result.inner[i]));
  }
}

const STEP_MS = 10_000;

/** `promise`, or a rejection naming `what` if it has not settled within STEP_MS (a hang fails and shrinks too). */
function settled(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${STEP_MS} ms`)), STEP_MS);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function runSteps(parent, steps, stats) {
  const dir = fs.mkdtempSync(path.join(parent, 'run-'));
  let host = await settled(open({ dir }), 'open');
  const model = new Model();
  try {
    let i = 0;
    const check = (ops, actual, where) => {
      const expected = settle(
        ops.map((op) => model.apply(op)),
        actual,
      );
      assert.deepStrictEqual(actual, expected, `results differ at ${where}`);
      ops.forEach((op, k) => tally(stats, op, expected[k]));
    };
    for (const s of steps) {
      i++;
      if (s.step === 'reopen') {
        await settled(host.close(), `close at step ${i}`);
        host = await settled(open({ dir }), `open at step ${i}`);
        stats.reopen = (stats.reopen ?? 0) + 1;
      } else if (s.step === 'call') {
        const actual = await settled(host.get(ModelItems, WORKER_ID).apply(s.ops), `the call at step ${i}`);
        check(s.ops, actual, `step ${i}`);
      } else {
        const stub = host.get(ModelItems, WORKER_ID);
        const all = await settled(Promise.all(s.batches.map((ops) => stub.apply(ops))), `the calls at step ${i}`);
        s.batches.forEach((ops, k) => check(ops, all[k], `step ${i}, call ${k + 1} of ${s.batches.length}`));
      }
    }
    // Everything acknowledged is there after a reopen.
    await settled(host.close(), 'the final close');
    host = await settled(open({ dir }), 'the final open');
    const final = await settled(host.get(ModelItems, WORKER_ID).apply([{ op: 'find', opts: {} }]), 'the find after the final reopen');
    assert.deepStrictEqual(final, [{ value: [...model.docs].sort(([a], [b]) => utf8Compare(a, b)).map(([, d]) => d) }], 'after the final reopen');
  } finally {
    await settled(host.close(), 'close').catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('collections behave like the model: writes, queries, transactions and reopens', async (t) => {
  const parent = tmpDir(t);
  const stats = {};
  const started = Date.now();
  const seed = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);
  try {
    await fc.assert(
      fc.asyncProperty(stepsArb, (steps) => runSteps(parent, steps, stats)),
      { numRuns: NUM_RUNS, seed, path: process.env.MODEL_PATH },
    );
  } catch (err) {
    // fast-check's message holds the seed, the path and the shrunk counterexample; the cause says what differed.
    t.fail(`${err.message}\n\n${err.cause instanceof Error ? err.cause.message : String(err.cause ?? '')}`);
    return;
  }
  t.log(`${NUM_RUNS} runs in ${Date.now() - started} ms`);
  t.log(
    Object.entries(stats)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`)
      .join(' '),
  );
  // The generators reach what the property is about.
  for (const k of ['find:several', 'find:scan hit', 'put:ERR_DURABLE_TYPE', 'find:ERR_DURABLE_NOT_INDEXED', 'txn:rolled back', 'txn:committed', 'reopen']) {
    t.true((stats[k] ?? 0) > 0, `never reached ${k}`);
  }
});
