'use strict';
// Stored values: V8 serializer bytes, as workerd stores them. V8's own
// serializer, not Node's `v8.serialize`, which writes typed arrays as Node
// host objects: with V8's, a typed array is stored as workerd stores it, and
// a Buffer comes back as a Uint8Array, as from structuredClone.

const v8 = require('node:v8');

/** @param {Uint8Array} bytes */
function decode(bytes) {
  const d = new v8.Deserializer(bytes);
  d.readHeader();
  return d.readValue();
}

/**
 * V8's bytes for any value, `undefined` included (`kv.put` stores it);
 * what cannot be cloned is a DataCloneError, as on Cloudflare.
 * @param {unknown} value
 * @returns {Buffer}
 */
function serialize(value) {
  const s = new v8.Serializer();
  s.writeHeader();
  try {
    s.writeValue(value);
  } catch (err) {
    throw new DOMException(err.message, 'DataCloneError');
  }
  return s.releaseBuffer();
}

/**
 * The bytes of a value the asynchronous API stores: undefined is refused.
 * @param {string} method the API call, for the message
 * @param {unknown} value
 */
function encode(method, value) {
  if (value === undefined) throw new TypeError(`${method}() called with undefined value.`);
  return serialize(value);
}

module.exports = { encode, serialize, decode };
