'use strict';
// Values are stored as V8 structured-clone bytes, the format postMessage and
// structuredClone use: a Date comes back a Date, a Map a Map, a BigInt a BigInt,
// a cyclic object cyclic. A tag stored beside every value names the format, so
// bytes written by a newer build in a format this one does not know are refused
// by name instead of being misread.
const v8 = require('node:v8');
const { DurableError, codes } = require('../api/errors');

/** The tag of V8 structured-clone bytes. */
const TAG_V8 = 1;

/**
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
  if (tag !== TAG_V8) {
    throw new DurableError(
      codes.STATE_FORMAT,
      `${where()}: stored with codec tag ${tag}, which this build of durable-workers does not know (it reads tag ${TAG_V8}); it was written by a newer version`,
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
    return structuredClone(value);
  } catch (err) {
    throw new DurableError(codes.UNCLONEABLE, `${where()}: ${err.message}`, { cause: err });
  }
}

module.exports = { TAG_V8, encode, decode, clone, isPrimitive };
