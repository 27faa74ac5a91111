'use strict';
// A worker's key/value state: resident, read synchronously, written through the
// gate.
//
// Guarantee: a write is on disk before anything that could reveal it leaves the
// worker. `set` and `delete` change the resident copy at once and mark the key
// dirty; `flush()` is the output gate's (./gate.js): it hands every dirty key,
// collection write and alarm change to one commit and answers when the commit
// carrying all writes so far has landed.
//
// The resident copy holds encoded bytes, decoded on every `get`: a caller who
// mutates what `get` returned has changed nothing until it calls `set`. The
// bytes are also what make a same-bytes set free: it is compared, and dropped.
const { checkKey, MAX_VALUE_BYTES, MAX_STATE_BYTES, valueTooLarge, stateTooLarge } = require('../api/rules');
const { encodeValue, decode } = require('./codec');
const { entryOf, sizeOf, keyRange } = require('./entry');
const { WorkerAlarms } = require('../alarms/worker-alarms');
const { AlarmIndexWrites, NO_INDEX } = require('../alarms/index-writes');
const { OutputGate, OWNER: GATE } = require('./gate');
const { UncommittedDocs } = require('../collections/uncommitted');
const { Collection } = require('../collections/collection');
const { readRows, getNow } = require('../collections/read');
const { NONE, noSuchCollection } = require('../collections/declarations');
const { abandonedError } = require('../runtime/deadline');
const { installAlarms } = require('../alarms/state-alarms');

class DurableState {
  #who;
  #native;
  /** @type {Map<string, Entry>} */
  #resident = new Map();
  #total = 0;
  /** @type {string[] | null} sorted keys, rebuilt when a key is added or removed */
  #sorted = null;
  /** Dirty keys → the entry they had when first dirtied (null: absent). */
  #pending = new Map();
  /** Open transactions, outermost first: { undo: Map, pending: Map, docs: DocLayer (this.#docs's) }. */
  #txns = [];
  /** Collection writes not yet on disk, in layers. */
  #docs = new UncommittedDocs();
  /** @type {import('../collections/declarations').Collections} */
  #collections;
  /** @type {Map<string, Collection>} */
  #collectionHandles = new Map();
  #onDirty;
  #alarms = new WorkerAlarms();
  /** @type {AlarmIndexWrites} */
  #alarmWrites;
  /** @type {OutputGate} */
  #gate;
  #runtime = null;

  /**
   * @param {() => string} who names the worker in messages
   * @param {{ write: Function, create: Function, query?: Function, queryNow?: Function }} native the worker's storage handle
   *   (`queryNow` answers a read on this thread, or null when it cannot: see ../collections/read.js)
   * @param {() => void} onDirty called when a write happens outside any call
   * @param {{ earlier(at: number): Promise<void>, exact(at: number | null): Promise<void>, wake(at: number): void }} [index]
   *   this worker's entry in the catalog's alarm index
   * @param {import('../collections/declarations').Collections} [collections] the class's declared collections
   */
  constructor(who, native, onDirty, index = NO_INDEX, collections = NONE) {
    this.#who = who;
    this.#native = native;
    this.#onDirty = onDirty;
    this.#collections = collections;
    this.#gate = new OutputGate(this);
    this.#alarmWrites = new AlarmIndexWrites(this.#alarms, index, this);
  }

  // What the gate asks of its state (./gate.js): methods, not closures, so a worker costs no more than its fields.
  [GATE.commit](batch, hasFile) {
    return hasFile ? this.#native.write(batch) : this.#native.create(batch);
  }

  [GATE.landed](batch) {
    this.#docs.landed();
    if (batch.alarms !== undefined) this.#alarms.landed();
  }

  [GATE.dirty]() {
    return this.#pending.size > 0 || this.#alarms.dirty || this.#docs.dirty;
  }

  /**
   * What the worker's runtime (runtime/live.js) needs of `state` beyond its
   * public face: `load(page)` fills it from the worker's file, `hasFile()`,
   * `alarms` (to fire them), `settleAlarms()` commits what firing changed and
   * sets the index exactly, `abandon(err)` (the worker is reset: every later
   * write is refused; returns the commit in flight, see OutputGate.abandon),
   * `alarmWrites(what)` for the alarm and schedule methods (../alarms/state-alarms.js).
   * One per state; its methods reach the private fields.
   */
  static runtimeOf(state) {
    return (state.#runtime ??= new DurableState.#Runtime(state));
  }

  static #Runtime = class StateRuntime {
    #s;
    constructor(s) {
      this.#s = s;
    }
    load(page) {
      this.#s.#load(page);
    }
    hasFile() {
      return this.#s.#gate.hasFile;
    }
    get alarms() {
      return this.#s.#alarms;
    }
    settleAlarms() {
      return this.#s.#alarmWrites.settle();
    }
    abandon(err) {
      return this.#s.#gate.abandon(err);
    }
    who() {
      return this.#s.#who();
    }
    /** The alarm writes in index order (../alarms/index-writes.js), refused for an abandoned instance. */
    alarmWrites(what) {
      this.#s.#writable(what);
      return this.#s.#alarmWrites;
    }
    /** The class's callable methods (what a schedule may call; null: unchecked), and the state's schedules (../alarms/state-alarms.js). */
    methods = null;
    schedules = null;
    clock = null;
  };

  /** Fills the resident copy from a loaded page; refuses unknown codecs by name. */
  #load({ exists, keys, tags, values, alarms }) {
    this.#gate.loaded(exists);
    if (alarms) this.#alarms.load(alarms);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const value = decode(tags[i], values[i], () => `${this.#who()}, key ${JSON.stringify(key)}`);
      const entry = entryOf(tags[i], values[i], value);
      this.#resident.set(key, entry);
      this.#total += sizeOf(key, entry);
    }
  }

  // --- reads -------------------------------------------------------------

  /** @param {string} key */
  get(key) {
    const e = this.#resident.get(key);
    if (e === undefined) return undefined;
    return e.prim ? e.value : decode(e.tag, e.bytes, this.#who);
  }

  /** @param {string} key */
  has(key) {
    return this.#resident.has(key);
  }

  /** Every key, sorted. */
  keys() {
    return this.#sortedKeys().slice();
  }

  /** Every [key, value], sorted by key. */
  entries() {
    return this.#sortedKeys().map((k) => [k, this.get(k)]);
  }

  /** A sorted range of keys as a Map (see keyRange in ./entry.js). */
  list(options) {
    return keyRange(this.#sortedKeys(), options, (k) => this.get(k));
  }

  /** The declared collection `name`. @param {string} name @returns {Collection} */
  collection(name) {
    let c = this.#collectionHandles.get(name);
    if (c !== undefined) return c;
    const decl = typeof name === 'string' ? this.#collections.byName.get(name) : undefined;
    if (decl === undefined) throw noSuchCollection(this.#who(), name, this.#collections);
    c = new Collection(decl, this.#docStore());
    this.#collectionHandles.set(name, c);
    return c;
  }

  /** Encoded bytes held, keys included (the 1 MiB cap counts this). */
  get size() {
    return this.#total;
  }

  // --- writes ------------------------------------------------------------

  /**
   * Sets `key`; committed with the call's flush. Refused, with nothing
   * changed, when the value cannot be cloned or is over the caps.
   */
  set(key, value) {
    checkKey(this.#who, key);
    const { tag, bytes } = encodeValue(value, () => `${this.#who()}, key ${JSON.stringify(key)}`, MAX_VALUE_BYTES);
    if (bytes.length > MAX_VALUE_BYTES) throw valueTooLarge(this.#who(), key, bytes.length);
    const old = this.#resident.get(key);
    if (old !== undefined && old.tag === tag && old.bytes.equals(bytes)) return;
    const entry = entryOf(tag, bytes, value);
    const total = this.#total - sizeOf(key, old) + sizeOf(key, entry);
    if (total > MAX_STATE_BYTES) throw stateTooLarge(this.#who(), key, total);
    this.#record(key, old);
    if (old === undefined) this.#sorted = null;
    this.#resident.set(key, entry);
    this.#total = total;
  }

  /** Deletes `key`; true if it was there. */
  delete(key) {
    checkKey(this.#who, key);
    const old = this.#resident.get(key);
    if (old === undefined) return false;
    this.#record(key, old);
    this.#resident.delete(key);
    this.#sorted = null;
    this.#total -= sizeOf(key, old);
    return true;
  }

  /** Resolves when every write so far is on disk. */
  async sync() {
    await this.flush();
  }

  /**
   * Runs `fn`; its writes commit together, or, if it throws, not at all: the
   * resident state is put back and the error rethrown.
   * @template T
   * @param {() => Promise<T> | T} fn
   * @returns {Promise<T>}
   */
  async transaction(fn) {
    const txn = { undo: new Map(), pending: new Map(), docs: this.#docs.begin() };
    this.#txns.push(txn);
    let result;
    try {
      result = await fn();
    } catch (err) {
      this.#popTxn(txn);
      this.#docs.end(txn.docs, { keep: false });
      this.#rollback(txn);
      throw err;
    }
    this.#popTxn(txn);
    this.#docs.end(txn.docs, { keep: true });
    this.#commitInto(txn);
    await this.flush();
    return result;
  }

  /** Deletes every key, every document and every alarm, in one commit. */
  async deleteAll() {
    for (const key of [...this.#resident.keys()]) this.delete(key);
    this.#docs.wipe();
    await this.#alarmWrites.clear();
  }

  // --- the gate ----------------------------------------------------------

  /**
   * The output gate (./gate.js): the commit that carries every write so far,
   * started or joined; null when nothing is dirty or in flight.
   * @returns {Promise<void> | null}
   */
  flush() {
    return this.#gate.flush();
  }

  /** Takes the dirty keys into a batch; null when every one is back to its stored bytes. */
  [GATE.take]() {
    const keys = [];
    const tags = [];
    const values = [];
    const deletes = [];
    for (const [key, base] of this.#pending) {
      // A key an open transaction has changed is written as it was before the
      // outermost one that changed it: the transactions' own values commit
      // when they do. (Every open transaction counts, not only the outermost:
      // a nested one that throws after a sync must leave nothing on disk.)
      let cur = this.#resident.get(key);
      for (const txn of this.#txns) {
        if (txn.undo.has(key)) {
          cur = txn.undo.get(key);
          break;
        }
      }
      if (cur === undefined || cur === null) {
        if (base !== null) deletes.push(key);
      } else if (base === null || base.tag !== cur.tag || !base.bytes.equals(cur.bytes)) {
        keys.push(key);
        tags.push(cur.tag);
        values.push(cur.bytes);
      }
    }
    this.#pending = new Map();
    const alarms = this.#alarms.take();
    if (keys.length === 0 && deletes.length === 0 && alarms === null && !this.#docs.dirty) return null;
    // (undefined, not null: the native side reads a missing field as none)
    return { keys, tags, values, deletes, alarms: alarms ?? undefined, docs: this.#docs.take() };
  }

  /** What a Collection needs of this state: see ../collections/collection.js. */
  #docStore() {
    return {
      who: this.#who,
      write: (coll, id, op) => {
        this.#writable(`a write to document ${JSON.stringify(id)}`);
        if (this.#docs.write(coll, id, op) && this.#pending.size === 0) this.#onDirty();
      },
      lookup: (coll, id) => this.#docs.lookup(coll, id),
      snapshot: () => this.#docs.merged(),
      overlay: (coll) => {
        const m = this.#docs.merged();
        return m.empty ? undefined : m.toNative(coll);
      },
      query: (q) => readRows(this.#native, q, this.#who),
      getNow: (coll, id) => getNow(this.#native, coll, id, this.#who),
    };
  }

  /** Refuses a write of an abandoned instance (../runtime/deadline.js). */
  #writable(what) {
    const reset = this.#gate.abandoned;
    if (reset !== null) throw abandonedError(this.#who(), what, reset);
  }

  #record(key, old) {
    this.#writable(`a write to key ${JSON.stringify(key)}`);
    const base = old === undefined ? null : old;
    const txn = this.#txns.length ? this.#txns[this.#txns.length - 1] : null;
    if (txn !== null) {
      if (!txn.undo.has(key)) txn.undo.set(key, base);
      if (!txn.pending.has(key)) txn.pending.set(key, base);
      return;
    }
    if (!this.#pending.has(key)) {
      this.#pending.set(key, base);
      if (this.#pending.size === 1) this.#onDirty();
    }
  }

  #popTxn(txn) {
    const i = this.#txns.lastIndexOf(txn);
    if (i !== -1) this.#txns.splice(i, 1);
  }

  #rollback(txn) {
    for (const [key, before] of txn.undo) {
      const now = this.#resident.get(key);
      this.#total -= sizeOf(key, now);
      if (before === null) this.#resident.delete(key);
      else this.#resident.set(key, before);
      this.#total += sizeOf(key, before);
    }
    this.#sorted = null;
  }

  /** A finished transaction's writes join the enclosing one, or the next flush. */
  #commitInto(txn) {
    const parent = this.#txns.length ? this.#txns[this.#txns.length - 1] : null;
    for (const [key, before] of txn.undo) {
      if (parent !== null) {
        if (!parent.undo.has(key)) parent.undo.set(key, before);
        if (!parent.pending.has(key)) parent.pending.set(key, before);
      } else if (!this.#pending.has(key)) {
        this.#pending.set(key, before);
      }
    }
  }

  #sortedKeys() {
    if (this.#sorted === null) this.#sorted = [...this.#resident.keys()].sort();
    return this.#sorted;
  }
}

installAlarms(DurableState);

module.exports = { DurableState };
