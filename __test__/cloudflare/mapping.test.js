'use strict';
// The parts of the Cloudflare mapping that are plain JavaScript, checked in
// Node against Node's own answers: the caps' byte count against v8.serialize
// (the Node host's measure), the wire codec as a round trip, and what
// toDurableObject refuses.
const test = require('ava');
const v8 = require('node:v8');
const fc = require('fast-check');
const { encodedSize } = require('../../js/cloudflare/size');
const wire = require('../../js/cloudflare/wire');
const { makeToDurableObject } = require('../../js/cloudflare/runtime');
const cloudflare = require('../../js/cloudflare');
const { DurableWorker } = require('../..');

const where = () => 'test';

/** Numbers in `v`: each may be held by V8 as a small integer or as a double, which JavaScript cannot tell apart (8 bytes either way). */
function numbers(v) {
  if (typeof v === 'number') return 1;
  if (v === null || typeof v !== 'object' || v instanceof Date) return 0;
  if (v instanceof Map) return [...v].reduce((n, [k, x]) => n + numbers(k) + numbers(x), 0);
  return [...(v instanceof Set ? v : Object.values(v))].reduce((n, x) => n + numbers(x), 0);
}

test('the caps count the bytes of v8.serialize for strings, numbers, BigInt, Date, Map, Set, plain objects and dense arrays (up to V8 holding an integer as a double)', (t) => {
  const leaf = fc.oneof(
    fc.string(),
    fc.integer(),
    fc.double({ noNaN: true }).filter((x) => !Number.isInteger(x)),
    fc.bigInt(),
    fc.boolean(),
    fc.constant(null),
    fc.date({ noInvalidDate: true }),
  );
  const value = fc.letrec((tie) => ({
    v: fc.oneof(
      { depthSize: 'small' },
      leaf,
      fc.array(tie('v'), { maxLength: 5 }),
      fc.dictionary(fc.string(), tie('v'), { maxKeys: 5 }),
      fc.array(fc.tuple(leaf, tie('v')), { maxLength: 4 }).map((e) => new Map(e)),
      fc.array(leaf, { maxLength: 4 }).map((e) => new Set(e)),
    ),
  })).v;
  fc.assert(
    fc.property(value, (v) => Math.abs(encodedSize(v, where) - v8.serialize(v).length) <= 8 * numbers(v)),
    { numRuns: 500 },
  );
  t.is(encodedSize({ a: [1, 'b', new Date(0)], m: new Map([[1n, new Set(['x'])]]) }, where), v8.serialize({ a: [1, 'b', new Date(0)], m: new Map([[1n, new Set(['x'])]]) }).length);
});

test('for strings beyond ASCII the byte count is within the length of the string of v8.serialize (V8 may hold a Latin-1 string in two-byte form)', (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (s) => Math.abs(encodedSize(s, where) - v8.serialize(s).length) <= s.length + 2),
    { numRuns: 500 },
  );
  t.pass();
});

test('a function or a symbol is refused by the byte count with ERR_DURABLE_UNCLONEABLE', (t) => {
  t.is(t.throws(() => encodedSize({ f() {} }, where)).code, 'ERR_DURABLE_UNCLONEABLE');
  t.is(t.throws(() => encodedSize([Symbol('s')], where)).code, 'ERR_DURABLE_UNCLONEABLE');
});

test('the wire codec round-trips structured values, keeps an error’s code, and refuses cycles', (t) => {
  const v = { $t: 'plain key', d: new Date(5), m: new Map([[1n, new Set([undefined, NaN, Infinity])]]), u8: new Uint8Array([1, 2, 3]), re: /a+/gi, neg: -0 };
  const back = wire.decode(wire.encode(v));
  t.deepEqual(back, v);
  t.true(Object.is(back.neg, -0));
  const err = wire.decode(wire.encode(Object.assign(new RangeError('r'), { code: 'E_X' })));
  t.like(err, { name: 'RangeError', message: 'r', code: 'E_X' });
  const cyclic = {};
  cyclic.self = cyclic;
  t.is(t.throws(() => wire.encode(cyclic)).code, 'ERR_DURABLE_UNCLONEABLE');
});

test('toDurableObject refuses what cannot map: a non-worker class, a method named fetch or __*, a bad name; in Node it explains itself', (t) => {
  const toDurableObject = makeToDurableObject(class {});
  t.is(t.throws(() => toDurableObject(class Plain {})).code, 'ERR_DURABLE_NAME');
  t.is(
    t.throws(() =>
      toDurableObject(
        class Web extends DurableWorker {
          fetch() {}
        },
      ),
    ).code,
    'ERR_DURABLE_METHOD',
  );
  t.is(
    t.throws(() =>
      toDurableObject(
        class Sneaky extends DurableWorker {
          __call() {}
        },
      ),
    ).code,
    'ERR_DURABLE_METHOD',
  );
  t.is(
    t.throws(() =>
      toDurableObject(
        class Named extends DurableWorker {
          static workerName = 'no spaces';
        },
      ),
    ).code,
    'ERR_DURABLE_NAME',
  );
  class Cart extends DurableWorker {
    add() {}
  }
  const DO = toDurableObject(Cart);
  t.is(DO.name, 'Cart');
  t.is(typeof DO.prototype.add, 'function', 'each method is an RPC method of the Durable Object');
  t.is(DO.prototype.start, undefined);
  t.is(t.throws(() => cloudflare.toDurableObject(Cart)).code, 'ERR_DURABLE_METHOD');
  t.is(t.throws(() => cloudflare.hostOf({}).ids()).code, 'ERR_DURABLE_METHOD');
  t.is(cloudflare.WORKERD_VERSION, require('workerd/package.json').version, 'the pinned workerd is the one installed');
});
