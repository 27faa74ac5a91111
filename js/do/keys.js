'use strict';
// The bytes workerd makes of a JavaScript string it takes as a key or a name:
// what `ctx.storage` stores, what `list()` orders by, and what `idFromName()`
// hashes.
//
// Guarantee: toBytes(s) is byte for byte what workerd's `kj::String`
// conversion gives (jsg `JsString::toString`, src/workerd/jsg/jsvalue.c++),
// and fromBytes(b) is the string workerd hands back for those bytes.
//
// Mechanism: workerd writes the string with V8's WriteUtf8V2 *without*
// kReplaceInvalidUtf8, so a lone surrogate is not replaced by U+FFFD: it is
// written as its own three-byte sequence (ED A0 80 for U+D800), the
// "generalized UTF-8" (WTF-8) form. It is tempting to use Buffer.from(s,
// 'utf8'), which is right for every well-formed string and is the fast path
// below; don't use it for the rest: it writes EF BF BD, a different key that
// sorts elsewhere and hashes to another object id. Measured on workerd
// 1.20261117.1: put('a\uD800') and put('a\uFFFD') are two keys, and
// idFromName('a\uD800b').name is 'a\uFFFD\uFFFD\uFFFDb'.
//
// On the way back workerd lets V8 decode the bytes as UTF-8, which replaces
// each byte of such a sequence by U+FFFD; Buffer#toString('utf8') decodes by
// the same rule.

/**
 * The bytes workerd stores for a key (or hashes for a name).
 * @param {string} s
 * @returns {Buffer}
 */
function toBytes(s) {
  if (s.isWellFormed()) return Buffer.from(s, 'utf8');
  const out = Buffer.allocUnsafe(s.length * 3);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x80) {
      out[n++] = c;
    } else if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 0x3f);
    } else if (c < 0x10000) {
      // A lone surrogate lands here too, encoded like any other BMP code point.
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    } else {
      out[n++] = 0xf0 | (c >> 18);
      out[n++] = 0x80 | ((c >> 12) & 0x3f);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    }
  }
  return out.subarray(0, n);
}

/**
 * The string workerd gives back for stored key bytes.
 * @param {Uint8Array} bytes
 * @returns {string}
 */
function fromBytes(bytes) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/**
 * Orders two keys as workerd does: by their bytes (SQLite's BINARY collation
 * on `_cf_KV.key`, and `std::sort` on `kj::String` for `get(keys[])`). That is
 * code point order, with a lone surrogate at its own code point (between
 * U+D7FF and U+E000), not UTF-16 order: '\uFFFF' < '\u{1F600}' here, though
 * not for `<`.
 * @param {string | Uint8Array} a a key, or its bytes
 * @param {string | Uint8Array} b
 * @returns {number} negative, 0 or positive
 */
function compareKeys(a, b) {
  if (typeof a === 'string' && typeof b === 'string' && a === b) return 0;
  return Buffer.compare(typeof a === 'string' ? toBytes(a) : a, typeof b === 'string' ? toBytes(b) : b);
}

module.exports = { toBytes, fromBytes, compareKeys };
