'use strict';
// host.ids(): the ids of a class that exist, read from the catalog a page at
// a time, so listing a million workers holds one page in memory.
const { fromNative } = require('./errors');

const IDS_PAGE = 256;

/**
 * The ids of class `name` in sorted order, from the catalog.
 * @param {{ ids(name: string, prefix: string, after: string | null, limit: number): Promise<string[]> }} native
 * @param {string} name
 * @param {{ prefix?: string, limit?: number }} options
 * @returns {AsyncIterable<string>}
 */
async function* pageIds(native, name, { prefix = '', limit = Infinity } = {}) {
  if (typeof prefix !== 'string') throw new TypeError('ids(): prefix must be a string');
  if (!(limit >= 0)) throw new RangeError('ids(): limit must be a number ≥ 0');
  let after = null;
  let left = limit;
  while (left > 0) {
    const page = await native.ids(name, prefix, after, Math.min(IDS_PAGE, left)).catch((err) => Promise.reject(fromNative(err, `class ${name}`)));
    for (const id of page) yield id;
    if (page.length < Math.min(IDS_PAGE, left)) return;
    left -= page.length;
    after = page[page.length - 1];
  }
}

module.exports = { pageIds };
