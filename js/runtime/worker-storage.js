'use strict';
// A worker's storage as its DurableState uses it (../state/resident-state.js):
// commits through the commit threads (inline on the JS thread when small),
// reads answered now where the native core can, and the first write that
// creates the file.
const { unpackRows, jsonRows } = require('../collections/result-rows');
const { tracedCommit, commitsTraced, batchShape } = require('../observe/trace');
const { packChanges } = require('../native/changes');

/**
 * Most keys, documents and alarms, and most bytes, a commit may carry and
 * still be made on the JS thread (./commits.js): a bulk write would hold the
 * event loop for its whole transaction.
 */
const INLINE_MAX = Object.freeze({ entries: 64, bytes: 256 * 1024 });

function inlineable(batch) {
  const s = batchShape(batch);
  return s.keys + s.documents + s.alarms <= INLINE_MAX.entries && s.bytes <= INLINE_MAX.bytes;
}

/**
 * A find with nothing uncommitted to overlay, in the positional form
 * NativeWorker.findNow takes: [order + 1, desc, limit + 1, n, fields…, ops…,
 * counts…], 0 for no order or limit.
 */
function findShape(q) {
  const n = q.fields.length;
  const shape = new Uint32Array(4 + 3 * n);
  shape[0] = q.order === undefined ? 0 : q.order + 1;
  shape[1] = q.desc ? 1 : 0;
  shape[2] = q.limit === undefined ? 0 : q.limit + 1;
  shape[3] = n;
  for (let i = 0; i < n; i++) {
    shape[4 + i] = q.fields[i];
    shape[4 + n + i] = q.ops[i];
    shape[4 + 2 * n + i] = q.counts[i];
  }
  return shape;
}

/**
 * @param {import('./host-port').HostPort} host
 * @param {string} className
 * @param {string} id
 * @param {object} native the worker's native handle (or a shard's proxy of it)
 * @param {() => { trace: object | undefined, from: number }} takeTrace the traced call the next commit is attributed to, and when its wait began
 */
function workerStorage(host, className, id, native, takeTrace) {
  const { commits } = host;
  const commitTime = host.metrics?.commitSeries(className);
  const write = (changes) => {
    const { trace, from } = takeTrace();
    if (native.writeInline === undefined) return tracedCommit(className, id, changes, trace, from, commitTime, () => commits.submit((cid) => native.write(cid, changes, trace)));
    const [sets, extra] = packChanges(changes);
    const submit = () =>
      commits.write(
        (cid, inline) => (inline ? native.writeInline(cid, sets, extra) : (native.write(cid, sets, extra), -1)),
        () => inlineable(changes),
        native,
        commitTime,
      );
    // Untraced, the commit's time goes to the histogram as it lands, and a
    // commit made at once returns its report, not a promise (Commits.write).
    if (!commitsTraced()) return submit();
    return tracedCommit(className, id, changes, trace, from, undefined, () => Promise.resolve(submit()));
  };
  return {
    write,
    // A shard's storage is on another thread: it has no read to answer now.
    queryNow:
      native.queryNow === undefined
        ? undefined
        : (q) => {
            const r = q.kind === 'find' && q.overlay === undefined && native.findNow !== undefined ? native.findNow(q.collection, findShape(q), q.values) : native.queryNow(q);
            if (r === null) return null;
            return typeof r === 'string' ? jsonRows(r) : unpackRows(r);
          },
    getNow: native.getNow === undefined ? undefined : (coll, id) => native.getNow(coll, id),
    query: (q) => native.query(q).then(unpackRows),
    // The catalog row first, then the file (see NativeWorker.register).
    create: (changes) => native.register().then(() => write(changes)),
  };
}

module.exports = { workerStorage };
