'use strict';
// The structured clone every call's arguments and result go through, with
// plain data copied in JS.
//
// `structuredClone` serializes and deserializes through V8 (on Node 20, by
// way of a MessagePort), microseconds for a small object, at every call.
// Most of what crosses is plain data, which a walk copies in a fraction of
// that (bench/codec.js, crossing). The walk gives what a
// structured clone gives, or gives up before returning anything:
//
// - objects whose prototype is Object.prototype or null become plain objects
//   of their own enumerable string keys, in order, read with [[Get]] (a
//   getter runs, a property a getter deleted is left out), as V8 does;
// - arrays without holes or named properties, element by element;
// - a Date becomes a Date of its time, its own properties dropped;
// - an object met twice is copied once, so shared and cyclic references
//   come out shared and cyclic;
// - primitives are their own copy (-0, NaN and BigInts included).
//
// Anything else (a Map, a class instance, a typed array, a proxy, a holey
// array; an arguments object, a function or a symbol, which a clone
// refuses) sends the whole value to `structuredClone`, which then reads it
// again: a getter met before the walk gave up runs a second time.
const { isArgumentsObject, isModuleNamespaceObject, isProxy } = require('node:util').types;

const dateTime = Date.prototype.getTime;
/** The walk met something it does not copy. */
const GIVE_UP = Symbol('give up');

/**
 * A structured clone of `value`, as `structuredClone` would make it.
 * @template T
 * @param {T} value
 * @returns {T}
 */
function structuredCopy(value) {
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'function' || typeof value === 'symbol') return structuredClone(value);
    return value;
  }
  let out;
  try {
    out = copy(value, new Map());
  } catch {
    // A getter threw, or the value nests past the stack: the clone meets the
    // same and reports it in its own words.
    out = GIVE_UP;
  }
  return out === GIVE_UP ? structuredClone(value) : out;
}

/** @param {unknown} v @param {Map<object, unknown>} memo original → copy */
function copy(v, memo) {
  if (typeof v !== 'object' || v === null) return typeof v === 'function' || typeof v === 'symbol' ? GIVE_UP : v;
  const known = memo.get(v);
  if (known !== undefined) return known;
  if (isProxy(v)) return GIVE_UP;
  const proto = Object.getPrototypeOf(v);
  if (proto === Object.prototype ? !isArgumentsObject(v) : proto === null && !isModuleNamespaceObject(v)) {
    const out = {};
    memo.set(v, out);
    for (const k of Object.keys(v)) {
      const x = /** @type {any} */ (v)[k];
      if (x === undefined && !Object.hasOwn(v, k)) continue;
      const c = copy(x, memo);
      if (c === GIVE_UP) return GIVE_UP;
      // An own `__proto__` is a property in a clone; assigned, it would set the prototype.
      if (k === '__proto__') Object.defineProperty(out, k, { value: c, writable: true, enumerable: true, configurable: true });
      else /** @type {any} */ (out)[k] = c;
    }
    return out;
  }
  if (proto === Array.prototype && Array.isArray(v)) {
    const n = v.length;
    /** @type {unknown[]} */
    const out = [];
    memo.set(v, out);
    for (let i = 0; i < n; i++) {
      const c = copy(v[i], memo);
      if (c === GIVE_UP) return GIVE_UP;
      out.push(c);
    }
    // Holes and named properties survive a clone: left to it.
    return Object.keys(v).length === n ? out : GIVE_UP;
  }
  if (proto === Date.prototype) {
    const out = new Date(dateTime.call(v));
    memo.set(v, out);
    return out;
  }
  return GIVE_UP;
}

module.exports = { structuredCopy };
