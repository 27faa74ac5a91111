'use strict';
// JS values bound to `sql.exec` parameters, as workerd binds them (observed
// on workerd, __test__/do/workerd-probe.test.js): a number is always REAL
// (`typeof(?)` of 1 is 'real'; NaN is NULL), a string TEXT, an ArrayBuffer
// or a view of one a BLOB, null and undefined NULL, a BigInt refused, and
// anything else its string (true is 'true', an array '1,2').

const { toBytes } = require('./keys');

/**
 * The values as the storage core takes them (null, numbers, strings,
 * Buffers), and the positions of Buffers that are text: a string with a lone
 * surrogate, bound as the bytes workerd writes for it (./keys.js), or null.
 * @param {unknown[]} values
 * @returns {[Array<null | number | string | Buffer>, number[] | null]}
 */
function bindings(values) {
  const out = new Array(values.length);
  let text = null;
  for (let i = 0; i < values.length; i++) {
    const v = binding(values[i]);
    if (typeof v === 'string' && !v.isWellFormed()) {
      out[i] = toBytes(v);
      (text ??= []).push(i);
    } else out[i] = v;
  }
  return [out, text];
}

/** @param {unknown} v */
function binding(v) {
  switch (typeof v) {
    case 'number':
    case 'string':
      return v;
    case 'bigint':
      throw new TypeError('Cannot convert a BigInt value to a number');
    case 'undefined':
      return null;
    case 'object':
      if (v === null) return null;
      if (v instanceof ArrayBuffer) return Buffer.from(v);
      if (ArrayBuffer.isView(v)) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
      return String(v);
    default:
      return String(v);
  }
}

module.exports = { bindings };
