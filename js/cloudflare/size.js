'use strict';
// How many bytes a value takes in V8's structured-clone format, computed in
// JavaScript. On Node the caps (128 KiB a value, 1 MiB a worker) count the
// bytes of v8.serialize; inside workerd there is no v8.serialize (its
// node:v8 is a stub), so the same count is made here by walking the value as
// the serializer would. Exact for the types values are usually made of
// (primitives, strings, plain objects, dense arrays, Date, Map, Set, BigInt,
// RegExp, ArrayBuffer); an estimate within a few bytes for the rest (typed
// arrays, errors, sparse arrays, string padding). Two things JavaScript
// cannot see make the count differ from V8's by a few bytes: an integral
// number V8 happens to hold as a double (9 bytes, counted here as a small
// integer), and a Latin-1 string V8 holds in two-byte form. A value that cannot be
// cloned at all (a function, a symbol) is refused here by name; anything else
// the platform will not clone is refused by the write itself.
const { DurableError, codes } = require('../api/errors');

/** Bytes of a base-128 varint. */
function varintLen(n) {
  let len = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function stringLen(s) {
  // One-byte strings (every code unit ≤ 0xFF) are written as Latin-1.
  // eslint-disable-next-line no-control-regex
  if (/^[\u0000-\u00ff]*$/.test(s)) return 1 + varintLen(s.length) + s.length;
  return 1 + varintLen(2 * s.length) + 2 * s.length;
}

function numberLen(n) {
  if (Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 && !Object.is(n, -0)) {
    const zigzag = n >= 0 ? n * 2 : -n * 2 - 1;
    return 1 + varintLen(zigzag);
  }
  return 9;
}

function bigintLen(b) {
  const abs = b < 0n ? -b : b;
  const bits = abs === 0n ? 0 : abs.toString(2).length;
  const bytes = Math.ceil(bits / 64) * 8;
  return 1 + varintLen(bytes * 2) + bytes;
}

const INDEX = /^(?:0|[1-9][0-9]{0,9})$/;

/**
 * The encoded size of `value`, in bytes.
 * @param {unknown} value
 * @param {() => string} where names the worker and key for the error
 * @param {string} [why] what the error says cannot happen to the value
 * @returns {number}
 */
function encodedSize(value, where, why = 'the value cannot be stored') {
  const seen = new Map();
  const refuse = (what) => {
    throw new DurableError(codes.UNCLONEABLE, `${where()}: ${why} (${what} could not be cloned)`);
  };
  const visit = (v) => {
    switch (typeof v) {
      case 'undefined':
      case 'boolean':
        return 1;
      case 'number':
        return numberLen(v);
      case 'bigint':
        return bigintLen(v);
      case 'string':
        return stringLen(v);
      case 'function':
        return refuse(`function ${v.name || '(anonymous)'}`);
      case 'symbol':
        return refuse(String(v));
      default:
        break;
    }
    if (v === null) return 1;
    const ref = seen.get(v);
    if (ref !== undefined) return 1 + varintLen(ref);
    seen.set(v, seen.size);
    if (v instanceof Date) return 9;
    if (v instanceof RegExp) return 1 + stringLen(v.source) + 1;
    if (v instanceof Map) {
      let n = 2 + varintLen(v.size * 2);
      for (const [k, x] of v) n += visit(k) + visit(x);
      return n;
    }
    if (v instanceof Set) {
      let n = 2 + varintLen(v.size);
      for (const x of v) n += visit(x);
      return n;
    }
    if (v instanceof ArrayBuffer) return 1 + varintLen(v.byteLength) + v.byteLength;
    if (ArrayBuffer.isView(v)) return 1 + varintLen(v.buffer.byteLength) + v.buffer.byteLength + 3 + varintLen(v.byteOffset) + varintLen(v.byteLength);
    if (v instanceof Error) return 2 + stringLen(String(v.message)) + stringLen(String(v.stack ?? '')) + 1;
    if (v instanceof Boolean) return 1;
    if (v instanceof Number) return 9;
    if (v instanceof String) return 1 + stringLen(v.valueOf());
    if (v instanceof Promise || v instanceof WeakMap || v instanceof WeakSet) return refuse(`a ${v.constructor.name}`);
    if (Array.isArray(v)) {
      let n = 1 + varintLen(v.length);
      let extra = 0;
      for (let i = 0; i < v.length; i++) n += i in v ? visit(v[i]) : 1;
      for (const k of Object.keys(v)) {
        if (INDEX.test(k)) continue;
        n += stringLen(k) + visit(v[k]);
        extra++;
      }
      return n + 1 + varintLen(extra) + varintLen(v.length);
    }
    let n = 1;
    let count = 0;
    for (const k of Object.keys(v)) {
      n += (INDEX.test(k) && Number(k) < 2 ** 30 ? numberLen(Number(k)) : stringLen(k)) + visit(v[k]);
      count++;
    }
    return n + 1 + varintLen(count);
  };
  return 2 + visit(value);
}

module.exports = { encodedSize };
