'use strict';
// Where a collection read runs: on the JS thread when it is small and the
// worker's storage can answer now (its file open and no commit holding it),
// else on libuv's pool, in turn with the worker's commits. A point read takes
// SQLite a microsecond or two; the trip to the pool and back took ~50 µs. A
// read that may return or overlay thousands of documents goes to the pool
// whatever it would cost: there it holds no other worker's calls.
const { fromNative } = require('../api/errors');
const { firstRow } = require('./result-rows');

/** Most documents a find may ask for and still run on the JS thread. */
const MAX_LIMIT_NOW = 1000;
/** Most uncommitted documents a read may overlay and still run on the JS thread. */
const MAX_OVERLAY_NOW = 256;

/** Whether `q` is small enough to run on the JS thread. */
function small(q) {
  if (q.overlay !== undefined && q.overlay.ids.length > MAX_OVERLAY_NOW) return false;
  switch (q.kind) {
    case 'get':
    case 'count':
      return true;
    case 'find':
      return q.limit !== undefined && q.limit <= MAX_LIMIT_NOW;
    default:
      return false;
  }
}

/** @typedef {import('./collection').Rows} Rows */

/**
 * @param {{ query: (q: object) => Promise<Rows>, queryNow?: (q: object) => Rows | null }} storage the worker's storage
 * @param {object} q the read, as the addon takes it
 * @param {() => string} who names the worker for an error
 * @returns {Rows | Promise<Rows>}
 */
function readRows(storage, q, who) {
  if (storage.queryNow !== undefined && small(q)) {
    let now;
    try {
      now = storage.queryNow(q);
    } catch (err) {
      return Promise.reject(fromNative(err, who()));
    }
    if (now !== null) return now;
  }
  return storage.query(q).catch((err) => Promise.reject(fromNative(err, who())));
}

/**
 * A document by id, read now on this thread: its JSON text, its row when it
 * is stored in another format, null when there is none, or undefined when
 * the storage cannot answer now (and `readRows` must).
 * @param {{ getNow?: (coll: number, id: string) => string | Buffer | false | null }} storage
 * @param {number} coll
 * @param {string} id
 * @param {() => string} who
 * @returns {string | { tag: number, bytes: Buffer } | null | undefined}
 */
function getNow(storage, coll, id, who) {
  if (storage.getNow === undefined) return undefined;
  let found;
  try {
    found = storage.getNow(coll, id);
  } catch (err) {
    throw fromNative(err, who());
  }
  if (typeof found === 'string') return found;
  if (found === null) return undefined;
  return found === false ? null : firstRow(found);
}

module.exports = { readRows, getNow };
