'use strict';
// The stored-value codec: JSON text for plain data, structured-clone bytes for
// the rest. Whatever the format, a stored value comes back exactly as a
// structured clone of it would; these are the values where JSON would not.
const test = require('ava');
const { encodeValue, decode, TAG_V8, TAG_JSON } = require('../../js/state/codec');

const where = () => 'Box "b", key "k"';
const MiB = 1024 * 1024;
const roundTrip = (v, max = MiB) => {
  const { tag, bytes } = encodeValue(v, where, max);
  return { tag, back: decode(tag, bytes, where) };
};

const shared = { n: 1 };
const cyclic = { name: 'c' };
cyclic.self = cyclic;
const holey = [1, , 3]; // eslint-disable-line no-sparse-arrays
const named = Object.assign([1, 2], { extra: 'kept' });

const plain = {
  'a string': 'héllo ✓ \ud800 lone surrogate',
  'a number': 12.5,
  'the largest safe integer': Number.MAX_SAFE_INTEGER,
  'a boolean': false,
  null: null,
  'an object of arrays': {
    items: [
      { sku: 'a', qty: 2 },
      { sku: 'b', qty: 1 },
    ],
    total: 0,
    '': 'empty key',
    __proto__: null,
  },
  'integer-like keys': { 10: 'ten', 2: 'two', b: 'b', a: 'a' },
  'an own __proto__ key': JSON.parse('{"__proto__": {"x": 1}}'),
  'an empty array': [],
};

const cloneOnly = {
  '-0': -0,
  NaN: NaN,
  Infinity: Infinity,
  undefined: undefined,
  'a property holding undefined': { a: undefined },
  'a Date': new Date(0),
  'a Map': new Map([[1, 2]]),
  'a BigInt': 10n,
  'a typed array': new Uint8Array([1, 2]),
  'an object reached twice': { a: shared, b: shared },
  'a cyclic object': cyclic,
  'an array with holes': holey,
  'an array with a named property': named,
  'a class instance': new (class Point {
    constructor() {
      this.x = 1;
    }
  })(),
  'nested -0': { n: [-0] },
};

for (const [name, v] of Object.entries(plain)) {
  test(`plain data is stored as JSON and comes back as a clone would: ${name}`, (t) => {
    const { tag, back } = roundTrip(v);
    t.is(tag, TAG_JSON);
    t.deepEqual(back, structuredClone(v));
    t.deepEqual(Object.keys(back ?? {}), Object.keys(structuredClone(v) ?? {}), 'same key order');
  });
}

for (const [name, v] of Object.entries(cloneOnly)) {
  test(`a value JSON would change is stored as a structured clone: ${name}`, (t) => {
    const { tag, back } = roundTrip(v);
    t.is(tag, TAG_V8);
    if (name === 'a cyclic object') t.is(back.self, back);
    else if (name === 'an object reached twice') t.is(back.a, back.b);
    else if (name === 'a class instance') t.deepEqual({ ...back }, { x: 1 });
    else t.deepEqual(back, structuredClone(v));
    if (Object.is(v, -0)) t.true(Object.is(back, -0));
    if (name === 'nested -0') t.true(Object.is(back.n[0], -0));
    if (name === 'a property holding undefined') t.true('a' in back);
    if (name === 'an array with holes') t.false(1 in back);
  });
}

test('a proxy is refused as before (a structured clone cannot take one), not stored as JSON', (t) => {
  const err = t.throws(() => encodeValue(new Proxy({ a: 1 }, {}), where, MiB));
  t.is(err.code, 'ERR_DURABLE_UNCLONEABLE');
});

test('text whose UTF-8 is over the cap but whose clone fits is stored as a clone: what fitted before still fits', (t) => {
  const text = '漢'.repeat(1000); // 3 bytes a character as UTF-8, 2 in a clone
  const max = 2500;
  const { tag, bytes } = encodeValue(text, where, max);
  t.is(tag, TAG_V8);
  t.true(bytes.length <= max, `${bytes.length} bytes`);
  t.is(decode(tag, bytes, where), text);
});

test('an unknown tag is refused by name, listing the tags this build reads', (t) => {
  const err = t.throws(() => decode(9, Buffer.from('1'), where));
  t.is(err.code, 'ERR_DURABLE_STATE_FORMAT');
  t.regex(err.message, /Box "b", key "k".*tag 9.*tags 1 and 2/);
});

test('a getter that throws is reported as ERR_DURABLE_UNCLONEABLE, as a clone reports it, not as the raw error', (t) => {
  const value = {
    get boom() {
      throw new Error('no');
    },
  };
  const err = t.throws(() => encodeValue(value, where, MiB));
  t.is(err.code, 'ERR_DURABLE_UNCLONEABLE');
});
