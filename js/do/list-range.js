'use strict';
// The options of `ctx.storage.list()` and `ctx.storage.kv.list()`, compiled
// into one key range, as workerd compiles them.
//
// Guarantee: for any options, compileList() throws what workerd throws, or
// returns the range workerd would scan, or null where workerd answers an empty
// result without reading. The rows are then those with start <= key < end
// (by bytes, ./keys.js), in ascending order or descending with `reverse`, the
// first `limit` of them: the `stmtList*` queries of workerd's
// src/workerd/util/sqlite-kv.h, which both APIs reach (io/actor-sqlite.c++
// `list`/`listReverse`, api/sync-kv.c++ `list`).
//
// Mechanism, in two steps so that each can be checked on its own:
// 1. readOptions(): what JSG does to the options object before workerd sees
//    it (api/actor-state.h `ListOptions`, a JSG_STRUCT; jsg/struct.h,
//    jsg/value.h): undefined or null is "no options", another non-object is a
//    TypeError, each field is read in declaration order and coerced (strings
//    by ToString, `reverse` by ToBoolean, `limit` as a WebIDL int).
// 2. compileRange(): a port of
//    `DurableObjectStorageOperations::compileListOptions`
//    (api/actor-state.c++), on bytes. Its checks run in workerd's order, which
//    decides which error wins: start with startAfter, then the limit, then the
//    prefix clamp, then end <= start.
//
// Both APIs throw synchronously, the async `list()` included (it throws
// before it makes a promise); measured on workerd 1.20261117.1.
const { toBytes, compareKeys } = require('./keys');

const BOTH_STARTS = 'list() cannot be called with both start and startAfter values.';
const LIMIT_NOT_POSITIVE = 'List limit must be positive.';
const INT_MIN = -2147483648;
const INT_MAX = 2147483647;
const EMPTY = Buffer.alloc(0);
const NUL = Buffer.from([0]);

/**
 * @typedef {{ start: Buffer | null, end: Buffer | null, reverse: boolean, limit: number | null }} KeyRange
 *   start: inclusive, null for "from the first key"; end: exclusive, null for
 *   "to the last key"; limit: null for no limit
 */

/**
 * Compiles list options into the range workerd scans.
 * @param {unknown} options what the user passed to list()
 * @param {'DurableObjectStorage' | 'SyncKvStorage'} [api] names the receiver in the
 *   TypeError for options that are not an object, as workerd does
 * @returns {KeyRange | null} null when the result is known to be empty
 * @throws {TypeError} with workerd's message
 */
function compileList(options, api = 'DurableObjectStorage') {
  return compileRange(readOptions(options, api));
}

/**
 * JSG's unwrapping of the options object: keys become bytes, `reverse` a
 * boolean, `limit` an int; an absent field stays undefined.
 * @param {unknown} options
 * @param {string} api
 */
function readOptions(options, api) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' && typeof options !== 'function') {
    throw new TypeError(`Failed to execute 'list' on '${api}': parameter 1 is not of type 'ListOptions'.`);
  }
  const o = {};
  for (const field of ['start', 'startAfter', 'end', 'prefix']) {
    const v = options[field];
    // A template literal is ToString: it throws V8's own TypeError for a
    // Symbol, as JSG does; String(symbol) would not.
    if (v !== undefined) o[field] = toBytes(`${v}`);
  }
  const reverse = options.reverse;
  if (reverse !== undefined) o.reverse = Boolean(reverse);
  const limit = options.limit;
  if (limit !== undefined) o.limit = toInt(limit);
  return o;
}

/**
 * A WebIDL `long` as JSG converts one (jsg/value.h, the `int` unwrap): a
 * non-finite number is 0 (so `limit: NaN` or `Infinity` reads as 0), a value
 * outside the int range is a TypeError, anything else is truncated toward
 * zero. Unary plus is ToNumber, and throws V8's TypeError for a BigInt.
 */
function toInt(v) {
  const n = +v;
  if (!Number.isFinite(n)) return 0;
  if (n > INT_MAX || n < INT_MIN) throw new TypeError(`Value out of range. Must be between ${INT_MIN} and ${INT_MAX} (inclusive).`);
  return Math.trunc(n) || 0;
}

/**
 * The port of `compileListOptions` on bytes. Exported for callers and tests
 * that hold bytes no JavaScript string encodes to (a 0xff byte).
 * @param {{ start?: Uint8Array, startAfter?: Uint8Array, end?: Uint8Array, prefix?: Uint8Array,
 *           reverse?: boolean, limit?: number }} o
 * @returns {KeyRange | null}
 */
function compileRange(o) {
  if (o.start !== undefined && o.startAfter !== undefined) throw new TypeError(BOTH_STARTS);
  let start = o.start !== undefined ? Buffer.from(o.start) : EMPTY;
  // The first key after startAfter is startAfter + "\0": an exclusive bound
  // becomes an inclusive one, so the scan has one kind of lower bound.
  if (o.startAfter !== undefined) start = Buffer.concat([o.startAfter, NUL]);
  let end = o.end !== undefined ? Buffer.from(o.end) : null;
  if (o.limit !== undefined && !(o.limit > 0)) throw new TypeError(LIMIT_NOT_POSITIVE);
  const prefix = o.prefix;
  if (prefix !== undefined && prefix.length > 0) {
    if (compareKeys(start, prefix) < 0) {
      start = Buffer.from(prefix);
    } else if (!startsWith(start, prefix)) {
      // start is past every key with the prefix.
      return null;
    }
    const after = keyAfterPrefix(prefix);
    // A prefix of only 0xff bytes reaches the end of the key space: the end,
    // if any, stays as given.
    if (after !== null) {
      if (end === null) {
        end = after;
      } else if (compareKeys(end, prefix) <= 0) {
        return null;
      } else if (!startsWith(end, prefix)) {
        end = after;
      }
    }
  }
  if (end !== null && compareKeys(end, start) <= 0) return null;
  return { start: start.length > 0 ? start : null, end, reverse: o.reverse === true, limit: o.limit ?? null };
}

/** The first key that sorts after every key starting with `prefix`, or null if there is none. */
function keyAfterPrefix(prefix) {
  let n = prefix.length;
  while (n > 0 && prefix[n - 1] === 0xff) n--;
  if (n === 0) return null;
  const after = Buffer.from(prefix.subarray(0, n));
  after[n - 1]++;
  return after;
}

function startsWith(key, prefix) {
  return key.length >= prefix.length && Buffer.compare(key.subarray(0, prefix.length), prefix) === 0;
}

module.exports = { compileList, compileRange, compareKeys, BOTH_STARTS, LIMIT_NOT_POSITIVE };
