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

/**
 * One worker's uncommitted collection writes: the layer of the commit in
 * flight, the layer the next commit takes, and one per open transaction
 * (newest last). A write goes to the newest layer.
 */
class UncommittedDocs {
  /** @type {DocLayer | null} */
  #inflight = null;
  #pending = new DocLayer();
  /** @type {DocLayer[]} one per open transaction, in the order they began */
  #txns = [];

  /** Whether the next commit has collection writes to carry. */
  get dirty() {
    return !this.#pending.empty;
  }

  /**
   * Records a write in the newest layer. True when it is the first write
   * waiting for the next commit (outside any transaction).
   */
  write(coll, id, op) {
    const layer = this.#top();
    const wasClean = layer === this.#pending && layer.empty;
    layer.set(coll, id, op);
    return wasClean;
  }

  /** Empties every collection, in the newest layer (deleteAll). */
  wipe() {
    this.#top().wipe();
  }

  /** What the layers say about a document, newest first (see lookup()). */
  lookup(coll, id) {
    return lookup(this.#layers(), coll, id);
  }

  /** Every layer merged into one, oldest first. */
  merged() {
    return merged(this.#layers());
  }

  /** A transaction began: its layer. */
  begin() {
    const layer = new DocLayer();
    this.#txns.push(layer);
    return layer;
  }

  /** The transaction of `layer` ended: its writes join the enclosing one (or the next commit) if `keep`, else are dropped. */
  end(layer, { keep }) {
    const i = this.#txns.lastIndexOf(layer);
    if (i !== -1) this.#txns.splice(i, 1);
    if (keep) (this.#txns.length ? this.#txns[this.#txns.length - 1] : this.#pending).absorb(layer);
  }

  /** The writes for the next commit, in the addon's form, or undefined; they are in flight until landed(). */
  take() {
    if (this.#pending.empty) return undefined;
    this.#inflight = this.#pending;
    this.#pending = new DocLayer();
    return this.#inflight.toNative();
  }

  /** The commit in flight has landed: its layer is the file's now. */
  landed() {
    this.#inflight = null;
  }

  #top() {
    return this.#txns.length ? this.#txns[this.#txns.length - 1] : this.#pending;
  }

  #layers() {
    return [this.#inflight, this.#pending, ...this.#txns];
  }
}

module.exports = { DocLayer, UncommittedDocs, merged, lookup };
