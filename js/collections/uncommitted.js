'use strict';
// A worker's collection writes that have not committed yet, in layers: the
// commit in flight, the writes waiting for the next commit, and one layer per
// open transaction. A layer holds each document's final state (written or
// deleted), so a burst of writes to one document commits once, and a
// transaction that throws is undone by dropping its layer.
//
// Reads look through the layers, newest first, before they reach the file:
// a worker reads its own writes whether or not they have committed.
const { Buffer } = require('node:buffer');

const EMPTY = Buffer.alloc(0);

/** @typedef {{ tag: number, bytes: Buffer, cols: Buffer }} DocPut  a write; `null` is a delete */

class DocLayer {
  /** Every collection was emptied (deleteAll) before the writes below. */
  clear = false;
  /** @type {Map<number, Map<string, DocPut | null>>} collection index → id → final state */
  ops = new Map();

  get empty() {
    return !this.clear && this.ops.size === 0;
  }

  /** @param {number} coll @param {string} id @param {DocPut | null} op */
  set(coll, id, op) {
    let m = this.ops.get(coll);
    if (m === undefined) this.ops.set(coll, (m = new Map()));
    m.set(id, op);
  }

  /**
   * What this layer says about a document: its write, `null` if deleted here
   * (or emptied), `undefined` if nothing.
   */
  lookup(coll, id) {
    const op = this.ops.get(coll)?.get(id);
    if (op !== undefined) return op;
    return this.clear ? null : undefined;
  }

  wipe() {
    this.clear = true;
    this.ops = new Map();
  }

  /** Takes a later layer's writes on top of this one's. */
  absorb(later) {
    if (later.clear) this.wipe();
    for (const [coll, m] of later.ops) for (const [id, op] of m) this.set(coll, id, op);
  }

  /**
   * The layer as the native core takes it; only collection `only` if given.
   * @param {number} [only]
   */
  toNative(only) {
    const colls = [];
    const ids = [];
    const tags = [];
    const docs = [];
    const cols = [];
    for (const [coll, m] of this.ops) {
      if (only !== undefined && coll !== only) continue;
      for (const [id, op] of m) {
        colls.push(coll);
        ids.push(id);
        tags.push(op === null ? 0 : op.tag);
        docs.push(op === null ? EMPTY : op.bytes);
        if (op !== null) cols.push(op.cols);
      }
    }
    return { clear: this.clear, colls, ids, tags, docs, columns: Buffer.concat(cols) };
  }
}

/**
 * The layers merged, oldest first, into one (a snapshot: later writes do not
 * change it).
 * @param {(DocLayer | null)[]} layers
 */
function merged(layers) {
  const out = new DocLayer();
  for (const l of layers) if (l !== null) out.absorb(l);
  return out;
}

/**
 * What the layers say about one document, newest first.
 * @param {(DocLayer | null)[]} layers oldest first
 */
function lookup(layers, coll, id) {
  for (let i = layers.length - 1; i >= 0; i--) {
    const l = layers[i];
    if (l === null) continue;
    const r = l.lookup(coll, id);
    if (r !== undefined) return r;
  }
  return undefined;
}

module.exports = { DocLayer, merged, lookup };
