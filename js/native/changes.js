'use strict';
// A batch's sets and deletes cross to the addon packed in one buffer.
//
// Passed as an object of parallel arrays, the addon read every field and
// every element through N-API, one call each: about 21,000 of the 66,000
// instructions a serial write call took in user space (`node
// bench/instructions.js serial`, callgrind), more than SQLite's commit.
// One buffer is read with one call. Alarm and collection changes, which
// most batches do not have, still cross as objects. The layout is
// `unpack_sets`'s in src/napi/dto.rs.

/**
 * @typedef {{ keys: string[], tags: number[], values: Uint8Array[], deletes: string[], alarms?: object, docs?: object }} Changes
 *   a batch as the state layer takes it (state/resident-state.js)
 */

/**
 * Packs `changes` for `NativeWorker.write` and `writeInline`.
 * @param {Changes} changes
 * @returns {[Buffer, { alarms?: object, docs?: object } | undefined]} the sets and deletes, packed; and the
 *   alarm and collection changes, when there are any
 */
function packChanges({ keys, tags, values, deletes, alarms, docs }) {
  let size = 8;
  for (let i = 0; i < keys.length; i++) size += 12 + Buffer.byteLength(keys[i]) + values[i].length;
  for (let i = 0; i < deletes.length; i++) size += 4 + Buffer.byteLength(deletes[i]);
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32LE(keys.length, 0);
  out.writeUInt32LE(deletes.length, 4);
  let at = 8;
  for (let i = 0; i < keys.length; i++) {
    at = key(out, keys[i], at);
    out.writeUInt32LE(tags[i], at);
    const value = values[i];
    out.writeUInt32LE(value.length, at + 4);
    out.set(value, at + 8);
    at += 8 + value.length;
  }
  for (let i = 0; i < deletes.length; i++) at = key(out, deletes[i], at);
  return [out, alarms === undefined && docs === undefined ? undefined : { alarms, docs }];
}

/** Writes a key's length and UTF-8 at `at`; returns where the next field starts. */
function key(out, k, at) {
  const n = out.write(k, at + 4);
  out.writeUInt32LE(n, at);
  return at + 4 + n;
}

module.exports = { packChanges };
