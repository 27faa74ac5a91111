'use strict';
// One declared collection of a worker, as `this.state.collection(name)`.
//
// Writes are like `state.set`: `put` is synchronous, changes nothing on disk
// by itself, and commits with the call's flush (the call's result waits for
// it). Reads are promises: they go to the worker's file, one statement at a
// time with its commits, and see the worker's own uncommitted writes. A small
// read runs on the JS thread when the worker's file is free (a commit holds
// it only while it writes), else on libuv's pool (see read.js). A query is
// read whole, in one turn, never as a cursor held across the caller's loop: a
// loop body that writes would otherwise wait on its own read.
const { Buffer } = require('node:buffer');
const { checkDocumentId, MAX_DOCUMENT_BYTES, documentTooLarge } = require('../api/rules');
const { encodeValue, decode } = require('../state/codec');
const { columnsOf } = require('./declarations');
const { plan, nativeConds, matches, evaluate } = require('./query');

/** @typedef {import('./result-rows').Rows} Rows */

/**
 * What a collection needs from its worker's state (see DurableState).
 * @typedef {object} DocStore
 * @property {() => string} who
 * @property {(coll: number, id: string, op: object | null) => void} write
 * @property {(coll: number, id: string) => object | null | undefined} lookup
 * @property {(coll: number) => object | undefined} overlay
 * @property {(coll: number) => import('./uncommitted').DocLayer} snapshot
 * @property {(q: object) => Rows | Promise<Rows>} query the rows now when the file is free, else a promise of them
 * @property {(coll: number, id: string) => string | { tag: number, bytes: Buffer } | null | undefined} getNow a
 *   document read now (its JSON text, or its row in another format; null: none), or undefined when only
 *   `query` can read it
 */

class Collection {
  #decl;
  /** @type {DocStore} */
  #store;

  /**
   * @param {import('./declarations').Decl} decl
   * @param {DocStore} store
   */
  constructor(decl, store) {
    this.#decl = decl;
    this.#store = store;
  }

  /** The collection's declared name. */
  get name() {
    return this.#decl.name;
  }

  /**
   * Writes `doc` under `id`, replacing what was there; committed with the
   * call's flush. Refused, with nothing changed, when a declared field has a
   * value of the wrong type, the document cannot be cloned, or it is over 1 MiB.
   * @param {string} id
   * @param {unknown} doc
   */
  put(id, doc) {
    this.#checkId(id);
    const where = () => `${this.#store.who()}, collection ${this.#decl.name}, document ${JSON.stringify(id)}`;
    const cols = columnsOf(this.#decl, doc, where);
    const { tag, bytes } = encodeValue(doc, where, MAX_DOCUMENT_BYTES);
    if (bytes.length > MAX_DOCUMENT_BYTES) throw documentTooLarge(where(), bytes.length);
    this.#store.write(this.#decl.index, id, { tag, bytes, cols: Buffer.from(cols) });
  }

  /**
   * The document stored under `id`, or undefined.
   * @param {string} id
   */
  async get(id) {
    this.#checkId(id);
    const now = this.#now(id);
    return this.#value(id, now !== undefined ? now : await this.#read(id));
  }

  /**
   * Deletes the document under `id`; true if there was one.
   * @param {string} id
   */
  async delete(id) {
    this.#checkId(id);
    const now = this.#now(id);
    if ((now !== undefined ? now : await this.#read(id)) === null) return false;
    this.#store.write(this.#decl.index, id, null);
    return true;
  }

  /**
   * Replaces the document under `id` with what `fn` returns for the current
   * one (undefined if none). Returning undefined writes nothing. Nothing else
   * of this worker runs between the read and the write (the mailbox runs one
   * call at a time).
   * @param {string} id
   * @param {(doc: any) => any} fn
   */
  async update(id, fn) {
    this.#checkId(id);
    if (typeof fn !== 'function') throw new TypeError(`${this.#store.who()}: update(id, fn) takes a function`);
    const cur = await this.get(id);
    const next = await fn(cur);
    if (next === undefined) return undefined;
    this.put(id, next);
    return next;
  }

  /**
   * How many documents match `where` (declared fields only).
   * @param {object} [where]
   */
  async count(where) {
    const p = plan(this.#decl, { where }, { scan: false, who: this.#store.who });
    const r = await this.#store.query({
      kind: 'count',
      collection: this.#decl.index,
      ...nativeConds(p),
      overlay: this.#store.overlay(this.#decl.index),
    });
    return r.count;
  }

  /**
   * The documents matching `where`, in `orderBy` order (by id if none), at
   * most `limit`. Only declared fields, unless `scan: true`: then every
   * document is read and decoded, and the query is applied here.
   * @param {{ where?: object, orderBy?: string | [string, 'asc' | 'desc'], limit?: number, scan?: boolean }} [options]
   */
  async find(options = {}) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`${this.#store.who()}: find takes { where?, orderBy?, limit?, scan? }`);
    }
    const scan = options.scan === true;
    const p = plan(this.#decl, options, { scan, who: this.#store.who });
    if (p.limit === 0) return [];
    const coll = this.#decl.index;
    if (scan) return this.#scan(p);
    const r = await this.#store.query({
      kind: 'find',
      collection: coll,
      ...nativeConds(p),
      order: p.order === null ? undefined : p.order.index,
      desc: p.desc,
      limit: p.limit,
      overlay: this.#store.overlay(coll),
    });
    if (r.json !== undefined) return JSON.parse(r.json);
    return r.ids.map((id, i) => this.#decode(id, r.tags[i], r.docs[i]));
  }

  async #scan(p) {
    const coll = this.#decl.index;
    // Taken before the read: a write in the commit now in flight is either
    // in the rows read or in this snapshot (applying it twice is harmless).
    const overlay = this.#store.snapshot(coll);
    const r = await this.#store.query({ kind: 'scan', collection: coll });
    const ops = overlay.ops.get(coll) ?? new Map();
    // Filtered as decoded, and each document's bytes let go once decoded:
    // only the matches are held, not every document twice over.
    const rows = [];
    const keep = (id, tag, bytes) => {
      const doc = this.#decode(id, tag, bytes);
      if (matches(p, doc)) rows.push({ id, doc });
    };
    if (!overlay.clear) {
      for (let i = 0; i < r.ids.length; i++) {
        if (ops.has(r.ids[i])) continue; // the uncommitted write wins
        keep(r.ids[i], r.tags[i], r.docs[i]);
        r.docs[i] = null;
      }
    }
    for (const [id, op] of ops) if (op !== null) keep(id, op.tag, op.bytes);
    return evaluate(p, rows).map((row) => row.doc);
  }

  /**
   * The document's state as known now: its uncommitted write, else its
   * stored JSON text or row; null if there is none; undefined when only a
   * read on the pool can say.
   */
  #now(id) {
    const coll = this.#decl.index;
    const known = this.#store.lookup(coll, id);
    return known !== undefined ? known : this.#store.getNow(coll, id);
  }

  /** The document's state read on the pool: its row, or null if there is none. */
  async #read(id) {
    const coll = this.#decl.index;
    const r = await this.#store.query({ kind: 'get', collection: coll, id });
    // A write made while the read was out wins over what was read.
    const since = this.#store.lookup(coll, id);
    if (since !== undefined) return since;
    return r.ids.length === 0 ? null : { tag: r.tags[0], bytes: r.docs[0] };
  }

  /** The document `#now` or `#read` found, decoded; undefined for none. */
  #value(id, found) {
    if (found === null) return undefined;
    if (typeof found === 'string') return JSON.parse(found);
    return this.#decode(id, found.tag, found.bytes);
  }

  #decode(id, tag, bytes) {
    return decode(tag, bytes, () => `${this.#store.who()}, collection ${this.#decl.name}, document ${JSON.stringify(id)}`);
  }

  #checkId(id) {
    checkDocumentId(this.#store.who, this.#decl.name, id);
  }
}

module.exports = { Collection };
