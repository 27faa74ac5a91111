'use strict';
// Stored values: V8 serializer bytes, as workerd stores them.

const v8 = require('node:v8');

/** @param {Buffer} b */
const decode = (b) => v8.deserialize(b);

/**
 * @param {string} method the API call, for the message
 * @param {unknown} value
 */
function encode(method, value) {
  if (value === undefined) throw new TypeError(`${method}() called with undefined value.`);
  return serialize(value);
}

/**
 * V8's bytes for any value, `undefined` included (`kv.put` stores it);
 * what cannot be cloned is a DataCloneError, as on Cloudflare.
 * @param {unknown} value
 */
function serialize(value) {
  try {
    return v8.serialize(value);
  } catch (err) {
    throw new DOMException(err.message, 'DataCloneError');
  }
}

module.exports = { encode, serialize, decode };
