'use strict';
// A call's arguments and result are structured clones, made by a walk for
// plain data (js/state/clone.js): whatever the walk copies must come out as
// `structuredClone` would make it, identity and prototypes included, and
// whatever it does not must reach `structuredClone` whole.
const test = require('ava');
const { isDeepStrictEqual } = require('node:util');
const { structuredCopy } = require('../../js/state/clone');
const { clone } = require('../../js/state/codec');

/**
 * Whether `a` and `b` are the same graph: same prototypes, same own keys in
 * the same order, same primitives (Object.is), and objects shared or cyclic
 * in one exactly where they are in the other.
 */
function same(a, b, pairs = new Map()) {
  if (typeof a !== 'object' || a === null) return Object.is(a, b);
  if (typeof b !== 'object' || b === null) return false;
  if (pairs.has(a)) return pairs.get(a) === b;
  if ([...pairs.values()].includes(b)) return false;
  pairs.set(a, b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date) return Object.is(a.getTime(), b.getTime()) && Reflect.ownKeys(b).length === 0;
  if (a instanceof Map || a instanceof Set || ArrayBuffer.isView(a)) return isDeepStrictEqual(a, b);
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  if (!isDeepStrictEqual(ka, kb)) return false;
  return ka.every((k) => same(a[k], b[k], pairs));
}

/** Whether any object of `b`'s graph is also in `a`'s. */
function sharesWith(a, b) {
  const seen = new Set();
  const walk = (v, into) => {
    if (typeof v !== 'object' || v === null || into.has(v)) return;
    into.add(v);
    for (const k of Reflect.ownKeys(v)) walk(v[k], into);
  };
  walk(a, seen);
  const other = new Set();
  walk(b, other);
  return [...other].some((o) => seen.has(o));
}

const cases = () => {
  const shared = { n: 1 };
  const cyclic = { name: 'c', list: [] };
  cyclic.self = cyclic;
  cyclic.list.push(cyclic, cyclic.list);
  const bare = Object.assign(Object.create(null), { a: 1, b: [2] });
  const dated = Object.assign(new Date(0), { note: 'dropped' });
  return {
    'a cart': { id: 'c1', items: [{ sku: 'tea', qty: 2, price: 455 }], total: 910, orders: 3 },
    primitives: [0, -0, NaN, Infinity, -1.5, 'x', '', true, false, null, undefined, 10n],
    'an undefined property': { a: undefined, b: 1 },
    'shared references': { a: shared, b: [shared, shared], c: { d: shared } },
    'a cycle': cyclic,
    'a null-prototype object': bare,
    dates: { at: new Date(1_700_000_000_000), bad: new Date(NaN), dated, again: dated },
    'integer-like keys': { b: 1, 2: 'two', a: 3, 1: 'one' },
    'an own __proto__ key': JSON.parse('{"__proto__": {"$eq": 1}, "constructor": 2}'),
    'an empty array and object': [[], {}],
    'nested arrays': [[1, [2, [3, [4]]]], 'x'],
    // Everything below is left to structuredClone.
    'a Map and a Set sharing an object': { m: new Map([[1, shared]]), s: new Set([shared]), shared },
    'a class instance': new (class Point {
      x = 1;
      y = [2];
    })(),
    'a typed array': { bytes: new Uint8Array([1, 2, 3]) },
    'a holey array': [1, , 3], // eslint-disable-line no-sparse-arrays
    'an array with a named property': Object.assign([1, 2], { extra: 'kept' }),
    'an array-prototype object': Object.create(Array.prototype),
    'a date-prototype object': Object.create(Date.prototype),
    'a RegExp and an Error': { r: /a+/gi, e: new RangeError('no') },
  };
};

for (const [name, value] of Object.entries(cases())) {
  test(`${name}: the copy is what structuredClone makes, sharing nothing with the original`, (t) => {
    const copied = structuredCopy(value);
    t.true(same(structuredClone(value), copied));
    t.false(sharesWith(value, copied));
  });
}

test('random plain graphs with shared and cyclic references come out as structuredClone makes them', (t) => {
  let seed = 7;
  const rand = (n) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const leaves = [0, -0, NaN, 1.5, 'a', '', true, null, undefined, 3n];
  for (let round = 0; round < 300; round++) {
    const made = [];
    const grow = (depth) => {
      const pick = rand(10);
      if (made.length > 0 && pick === 0) return made[rand(made.length)];
      if (depth > 4 || pick < 4) return leaves[rand(leaves.length)];
      if (pick === 4) return new Date(rand(1e12));
      const node = pick < 7 ? [] : pick === 7 ? Object.create(null) : {};
      made.push(node);
      const n = rand(5);
      for (let i = 0; i < n; i++) {
        if (Array.isArray(node)) node.push(grow(depth + 1));
        else node[`k${rand(8)}`] = grow(depth + 1);
      }
      return node;
    };
    const value = grow(0);
    t.true(same(structuredClone(value), structuredCopy(value)), `round ${round}`);
  }
});

test('a getter runs once, in order; a property a getter deletes is left out, as a clone leaves it', (t) => {
  const order = [];
  const make = () => {
    const o = {
      get first() {
        order.push('first');
        delete o.second;
        return 1;
      },
      second: 2,
      get third() {
        order.push('third');
        return { n: 3 };
      },
    };
    return o;
  };
  const copied = structuredCopy(make());
  t.deepEqual(order, ['first', 'third']);
  t.true(same(structuredClone(make()), copied));
  t.deepEqual(Object.keys(copied), ['first', 'third']);
});

test('a getter that clones inside the walk gets its own copy, and the outer copy is whole', (t) => {
  const inner = { deep: [1, 2] };
  const value = {
    a: inner,
    get b() {
      return structuredCopy({ x: inner });
    },
  };
  const copied = structuredCopy(value);
  t.deepEqual(copied, { a: { deep: [1, 2] }, b: { x: { deep: [1, 2] } } });
  t.not(copied.a, inner);
});

/** What `f` throws (a DOMException is not an Error on every line, so not t.throws). */
function thrown(f) {
  try {
    f();
  } catch (err) {
    return err;
  }
  return undefined;
}

test('what a clone refuses is refused in its words: a function, a symbol, a proxy, an arguments object, a throwing getter', (t) => {
  const args = (function () {
    return arguments;
  })(1, 'two');
  for (const bad of [{ f() {} }, [Symbol('s')], () => {}, Symbol('s'), new Proxy({}, {}), { args }]) {
    const theirs = thrown(() => structuredClone(bad));
    const ours = thrown(() => structuredCopy(bad));
    t.is(ours?.name, 'DataCloneError');
    t.is(ours.name, theirs.name);
    t.is(ours.message, theirs.message);
  }
  const boom = new Error('getter failed');
  t.is(
    t.throws(() =>
      structuredCopy({
        get x() {
          throw boom;
        },
      }),
    ),
    boom,
  );
});

test('nesting past the stack gets the outcome structuredClone gives it', (t) => {
  let deep = {};
  for (let i = 0; i < 100_000; i++) deep = { next: deep };
  let theirs;
  try {
    theirs = { value: structuredClone(deep) };
  } catch (err) {
    theirs = { error: err.name };
  }
  let ours;
  try {
    ours = { value: structuredCopy(deep) };
  } catch (err) {
    ours = { error: err.name };
  }
  t.is(ours.error, theirs.error);
  if (theirs.value !== undefined) t.true(isDeepStrictEqual(ours.value, theirs.value));
});

test('codec.clone names the worker when the value cannot be cloned', (t) => {
  const err = t.throws(() => clone({ items: [{ f() {} }] }, () => 'Cart "c1": the result of browse() cannot be returned'));
  t.is(err.code, 'ERR_DURABLE_UNCLONEABLE');
  t.regex(err.message, /^Cart "c1": the result of browse\(\) cannot be returned: /);
});
