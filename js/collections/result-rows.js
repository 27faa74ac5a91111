'use strict';
// A collection read as the addon returns it: one buffer, little-endian, of
// u32 rows, f64 count, then per row u32 tag, u32 id length, u32 document
// length, the id's UTF-8 and the document's bytes (src/napi/dto.rs, pack).
// Unpacked into the shape the JS layer reads, { ids, tags, docs, count }:
// each document a view of the buffer, not a copy. A find read now whose
// documents are all JSON text comes as that array's text instead: `json`.
const { Buffer } = require('node:buffer');

/** @typedef {{ ids: string[], tags: number[], docs: Buffer[], count: number, json: string | undefined }} Rows */

const NONE = Object.freeze([]);

/**
 * @param {Uint8Array} packed
 * @returns {Rows}
 */
function unpackRows(packed) {
  const buf = Buffer.isBuffer(packed) ? packed : Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
  const rows = buf.readUInt32LE(0);
  const ids = new Array(rows);
  const tags = new Array(rows);
  const docs = new Array(rows);
  let at = 12;
  for (let i = 0; i < rows; i++) {
    tags[i] = buf.readUInt32LE(at);
    const idEnd = at + 12 + buf.readUInt32LE(at + 4);
    const docEnd = idEnd + buf.readUInt32LE(at + 8);
    ids[i] = buf.toString('utf8', at + 12, idEnd);
    docs[i] = buf.subarray(idEnd, docEnd);
    at = docEnd;
  }
  return { ids, tags, docs, count: buf.readDoubleLE(4), json: undefined };
}

/**
 * A find's documents as one JSON array's text (NativeWorker.findNow).
 * @param {string} json
 * @returns {Rows}
 */
function jsonRows(json) {
  return { ids: /** @type {string[]} */ (NONE), tags: /** @type {number[]} */ (NONE), docs: /** @type {Buffer[]} */ (NONE), count: 0, json };
}

/**
 * The first row of a packed read, without unpacking the rest: what a `get`
 * reads. Null when there is none.
 * @param {Buffer} buf
 * @returns {{ tag: number, bytes: Buffer } | null}
 */
function firstRow(buf) {
  if (buf.readUInt32LE(0) === 0) return null;
  const docStart = 24 + buf.readUInt32LE(16);
  return { tag: buf.readUInt32LE(12), bytes: buf.subarray(docStart, docStart + buf.readUInt32LE(20)) };
}

module.exports = { unpackRows, jsonRows, firstRow };
