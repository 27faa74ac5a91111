'use strict';
// Filling a newly declared field's column from the documents already stored.
//
// Without it the column would be null for every document written before the
// field was declared, and a query over it would quietly return a subset. It
// runs on the worker's first wake after the declaration changed, before
// start() and before any call, so nothing can query a half-filled column; the
// whole fill is one transaction, so a crash leaves it to do again.
const { decode } = require('../state/codec');
const { toColumn, ValueWriter } = require('./declarations');
const { fromNative } = require('../api/errors');
const { unpackRows } = require('./result-rows');

/** Documents read per trip while filling. */
const PAGE = 1000;

/**
 * @param {{ query: Function, backfill: Function }} native the worker's storage handle
 * @param {import('./declarations').Collections} collections
 * @param {{ collection: number, fields: number[] }[]} needs
 * @param {string} who
 */
async function backfill(native, collections, needs, who) {
  for (const { collection, fields } of needs) {
    const decl = collections.list[collection];
    const ids = [];
    const w = new ValueWriter();
    /** Field name → documents whose value does not fit the declared type. */
    const misfits = new Map();
    let after;
    try {
      for (;;) {
        const page = unpackRows(await native.query({ kind: 'scan', collection, after, limit: PAGE }));
        for (let i = 0; i < page.ids.length; i++) {
          const id = page.ids[i];
          const doc = decode(page.tags[i], page.docs[i], () => `${who}, collection ${decl.name}, document ${JSON.stringify(id)}`);
          ids.push(id);
          for (const f of fields) {
            const { name, type } = decl.fields[f];
            const raw = doc !== null && typeof doc === 'object' && Object.hasOwn(doc, name) ? doc[name] : undefined;
            let v = toColumn(type, raw);
            if (v === undefined) {
              v = null;
              misfits.set(name, (misfits.get(name) ?? 0) + 1);
            }
            w.put(type, v);
          }
        }
        if (page.ids.length < PAGE) break;
        after = page.ids[page.ids.length - 1];
      }
      await native.backfill(collection, fields, ids, w.bytes());
    } catch (err) {
      throw fromNative(err, who);
    }
    for (const [name, n] of misfits) {
      const { type } = decl.fields[decl.fieldIndex.get(name)];
      process.emitWarning(
        `${who}: ${n} stored document(s) of collection ${decl.name} hold a ${name} that is not of its declared type ${type}; their ${name} column is null, so queries on ${name} find them only as null`,
        { code: 'DURABLE_WORKERS_BACKFILL' },
      );
    }
  }
}

module.exports = { backfill };
