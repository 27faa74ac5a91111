'use strict';
// A collection read as the addon returns it (every document's bytes in one
// buffer, document i ending at ends[i]) unpacked into one view per document,
// the shape the JS layer reads: { ids, tags, docs, count }. Views, not copies.

/**
 * @param {{ ids: string[], tags: number[], bytes: Buffer, ends: number[], count: number }} r
 * @returns {{ ids: string[], tags: number[], docs: Buffer[], count: number }}
 */
function unpackRows(r) {
  const docs = new Array(r.ends.length);
  let start = 0;
  for (let i = 0; i < r.ends.length; i++) {
    docs[i] = r.bytes.subarray(start, r.ends[i]);
    start = r.ends[i];
  }
  return { ids: r.ids, tags: r.tags, docs, count: r.count };
}

module.exports = { unpackRows };
