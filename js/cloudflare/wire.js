'use strict';
// A text form of structured-clone values, for what crosses HTTP between Node
// and workerd (the test gateway, the Peek realm's messages) and for the
// documents a collection stores on workerd (codec tag 2: there is no
// v8.serialize inside workerd). JSON, with the values JSON cannot say written
// as one-key objects { "$t": [type, payload] }; a plain object that happens to
// have a "$t" key is written as { "$t": ["o", entries] } so nothing is
// ambiguous. Keeps: undefined, NaN, ±Infinity, -0, BigInt, Date, Map, Set,
// RegExp, ArrayBuffer and typed arrays, Error (name, message, code, and other
// own enumerable fields). Refuses functions, symbols and cycles (which a
// structured clone would keep) with ERR_DURABLE_UNCLONEABLE.
const { DurableError, codes } = require('../api/errors');

/** The codec tag of a wire-encoded document (Node's V8 bytes are tag 1). */
const TAG_WIRE = 2;

const TYPED = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];

function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/**
 * @param {unknown} value
 * @param {() => string} [where] names what is encoded, for the error
 * @returns {string}
 */
function encode(value, where = () => 'a value') {
  const stack = new Set();
  const refuse = (what) => {
    throw new DurableError(codes.UNCLONEABLE, `${where()}: ${what} cannot be cloned`);
  };
  const enc = (v) => {
    switch (typeof v) {
      case 'undefined':
        return { $t: ['u'] };
      case 'number':
        return Number.isFinite(v) && !Object.is(v, -0) ? v : { $t: ['n', Object.is(v, -0) ? '-0' : String(v)] };
      case 'bigint':
        return { $t: ['b', v.toString()] };
      case 'string':
      case 'boolean':
        return v;
      case 'function':
        return refuse(`function ${v.name || '(anonymous)'}`);
      case 'symbol':
        return refuse(String(v));
      default:
        break;
    }
    if (v === null) return null;
    if (stack.has(v)) return refuse('a cyclic value (over HTTP and in documents on workerd)');
    stack.add(v);
    try {
      if (v instanceof Date) return { $t: ['d', v.getTime()] };
      if (v instanceof Map) return { $t: ['m', [...v].map(([k, x]) => [enc(k), enc(x)])] };
      if (v instanceof Set) return { $t: ['s', [...v].map(enc)] };
      if (v instanceof RegExp) return { $t: ['r', v.source, v.flags] };
      if (v instanceof ArrayBuffer) return { $t: ['ab', toBase64(new Uint8Array(v))] };
      if (ArrayBuffer.isView(v)) {
        const name = TYPED.find((n) => Object.prototype.toString.call(v) === `[object ${n}]`) ?? 'Uint8Array';
        return { $t: ['ta', name, toBase64(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))] };
      }
      if (v instanceof Error) {
        const extra = {};
        for (const k of Object.keys(v)) extra[k] = enc(v[k]);
        return { $t: ['e', String(v.name), String(v.message), extra] };
      }
      if (Array.isArray(v)) return Array.from(v, enc);
      const out = {};
      for (const k of Object.keys(v)) out[k] = enc(v[k]);
      return Object.hasOwn(out, '$t') ? { $t: ['o', Object.entries(out)] } : out;
    } finally {
      stack.delete(v);
    }
  };
  return JSON.stringify(enc(value));
}

/**
 * @param {string} text from `encode`
 * @returns {any}
 */
function decode(text) {
  const dec = (v) => {
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map(dec);
    const t = v.$t;
    if (t === undefined) {
      const out = {};
      for (const k of Object.keys(v)) out[k] = dec(v[k]);
      return out;
    }
    switch (t[0]) {
      case 'u':
        return undefined;
      case 'n':
        return Number(t[1]);
      case 'b':
        return BigInt(t[1]);
      case 'd':
        return new Date(t[1]);
      case 'm':
        return new Map(t[1].map(([k, x]) => [dec(k), dec(x)]));
      case 's':
        return new Set(t[1].map(dec));
      case 'r':
        return new RegExp(t[1], t[2]);
      case 'ab':
        return fromBase64(t[1]).buffer;
      case 'ta': {
        const bytes = fromBase64(t[2]);
        const C = globalThis[t[1]] ?? Uint8Array;
        return new C(bytes.buffer, 0, bytes.byteLength / (C.BYTES_PER_ELEMENT ?? 1));
      }
      case 'e': {
        const err = new Error(t[2]);
        for (const [k, x] of Object.entries(t[3])) err[k] = dec(x);
        if (t[1] !== 'Error') Object.defineProperty(err, 'name', { value: t[1], writable: true, configurable: true });
        return err;
      }
      case 'o': {
        const out = {};
        for (const [k, x] of t[1]) out[k] = dec(x);
        return out;
      }
      default:
        throw new DurableError(codes.STATE_FORMAT, `a wire value has the unknown type ${JSON.stringify(t[0])}`);
    }
  };
  return dec(JSON.parse(text));
}

module.exports = { TAG_WIRE, encode, decode };
