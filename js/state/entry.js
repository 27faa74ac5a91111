'use strict';
// One resident value of a worker's state: its encoded bytes (what is stored,
// compared and counted against the caps) with their codec tag and, for a
// primitive, the value itself (immutable, so handed out as it is instead of
// decoded again).
const { Buffer } = require('node:buffer');
const { isPrimitive } = require('./codec');

/** One resident value. `value` is kept only for primitives, which are immutable. */
class Entry {
  constructor(tag, bytes, value, prim) {
    this.tag = tag;
    this.bytes = bytes;
    this.value = value;
    this.prim = prim;
  }
}

/** The entry for `value`, encoded as `bytes` in the codec `tag` names. */
function entryOf(tag, bytes, value) {
  const prim = isPrimitive(value);
  return new Entry(tag, bytes, prim ? value : undefined, prim);
}

/** What an entry counts against the 1 MiB cap: its key's UTF-8 and its bytes. */
function sizeOf(key, entry) {
  return entry ? Buffer.byteLength(key) + entry.bytes.length : 0;
}

/**
 * A sorted range of `sorted` keys as a Map of key → `get(key)`: keys starting
 * with `prefix`, from `start` (inclusive) to `end` (exclusive), at most
 * `limit`, optionally reversed.
 */
function keyRange(sorted, { prefix, start, end, limit, reverse = false } = {}, get) {
  let keys = sorted.filter((k) => (prefix === undefined || k.startsWith(prefix)) && (start === undefined || k >= start) && (end === undefined || k < end));
  if (reverse) keys.reverse();
  if (limit !== undefined) keys = keys.slice(0, limit);
  const out = new Map();
  for (const k of keys) out.set(k, get(k));
  return out;
}

module.exports = { Entry, entryOf, sizeOf, keyRange };
