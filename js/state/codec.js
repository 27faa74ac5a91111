'use strict';
// Values are stored in one of two formats, named by a tag stored beside every
// value:
//
// - JSON text (UTF-8) for plain data: objects, arrays, strings, finite numbers,
//   booleans and null, where no object appears twice. JSON.parse brings such a
//   value back exactly as a structured clone would, decoding it in a third to
//   a half of the time (bench/codec.js), and most stored values are of this
//   kind.
// - V8 structured-clone bytes, the format postMessage and structuredClone use,
//   for everything else: a Date comes back a Date, a Map a Map, a BigInt a
//   BigInt, -0 as -0, a cyclic object cyclic.
//
// Bytes written by a newer build in a format this one does not know are
// refused by name instead of being misread.
const { Buffer } = require('node:buffer');
const v8 = require('node:v8');
const { isProxy } = require('node:util').types;
const { DurableError, codes } = require('../api/errors');
const { structuredCopy } = require('./clone');

/** The tag of V8 structured-clone bytes. */
const TAG_V8 = 1;
/** The tag of JSON text, for values `isPlainData` accepts. */
const TAG_JSON = 2;

/**
 * Whether JSON text round-trips `value` to what a structured clone would give:
 * plain objects and dense arrays without extra properties, strings, finite
 * numbers other than -0, booleans and null, and no object reached twice (a
 * clone keeps a shared or cyclic reference, JSON would copy or refuse it).
 * @param {unknown} value
 * @param {Set<object>} seen objects met so far
 */
function isPlainData(value, seen) {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (seen.has(value) || isProxy(value)) return false;
      seen.add(value);
      const proto = Object.getPrototypeOf(value);
      if (proto === Array.prototype) {
        const a = /** @type {unknown[]} */ (value);
        // Holes and named properties survive a clone, not JSON.
        if (Object.keys(a).length !== a.length) return false;
        for (let i = 0; i < a.length; i++) if (!isPlainData(a[i], seen)) return false;
        return true;
      }
      if (proto !== Object.prototype && proto !== null) return false;
      for (const k of Object.keys(value)) if (!isPlainData(/** @type {any} */ (value)[k], seen)) return false;
      return true;
    }
    default:
      return false; // undefined (a clone keeps the property), bigint, symbol, function
  }
}

/**
 * Encodes a stored value: JSON for plain data, unless its JSON is over `max`
 * bytes (text outside Latin-1 takes more bytes as UTF-8 than as a clone, and
 * a value that fits as a clone must still fit); a structured clone otherwise.
 * @param {unknown} value
 * @param {() => string} where names the worker and key for the error
 * @param {number} max the cap its bytes are held to
 * @returns {{ tag: number, bytes: Buffer }}
 */
function encodeValue(value, where, max) {
  let bytes = null;
  try {
    if (isPlainData(value, new Set())) bytes = Buffer.from(JSON.stringify(value));
  } catch {
    // A getter that throws, or nesting past the stack: the clone below meets
    // the same and reports it as ERR_DURABLE_UNCLONEABLE, as it always has.
  }
  if (bytes !== null && bytes.length <= max) return { tag: TAG_JSON, bytes };
  return { tag: TAG_V8, bytes: encode(value, where) };
}

/**
 * Structured-clone bytes (socket attachments are always these).
 * @param {unknown} value
 * @param {() => string} where names the worker and key for the error
 * @returns {Buffer}
 */
function encode(value, where) {
  try {
    return v8.serialize(value);
  } catch (err) {
    throw new DurableError(codes.UNCLONEABLE, `${where()}: the value cannot be stored (${err.message})`, { cause: err });
  }
}

/**
 * @param {number} tag
 * @param {Buffer} bytes
 * @param {() => string} where
 */
function decode(tag, bytes, where) {
  if (tag === TAG_JSON) return JSON.parse(bytes.toString('utf8'));
  if (tag !== TAG_V8) {
    throw new DurableError(
      codes.STATE_FORMAT,
      `${where()}: stored with codec tag ${tag}, which this build of durable-workers does not know (it reads tags ${TAG_V8} and ${TAG_JSON}); it was written by a newer version`,
    );
  }
  return v8.deserialize(bytes);
}

/** True for values that are their own clone. */
function isPrimitive(v) {
  const t = typeof v;
  return v === null || (t !== 'object' && t !== 'function' && t !== 'symbol');
}

/**
 * A structured clone, as arguments and results cross between workers.
 * @param {unknown} value
 * @param {() => string} where
 */
function clone(value, where) {
  if (isPrimitive(value)) return value;
  try {
    return structuredCopy(value);
  } catch (err) {
    throw new DurableError(codes.UNCLONEABLE, `${where()}: ${err.message}`, { cause: err });
  }
}

module.exports = { TAG_V8, TAG_JSON, encode, encodeValue, decode, clone, isPrimitive };
