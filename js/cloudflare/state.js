'use strict';
// `this.state` inside workerd, over the object's synchronous key/value store
// (ctx.storage.kv) and its SQLite database (ctx.storage.sql).
//
// Guarantee (as on Node): reads are synchronous; a write is refused at the
// `set`, with nothing changed, when the value cannot be cloned or is over the
// caps (128 KiB a value, 1 MiB a worker, counted in V8 structured-clone
// bytes by js/cloudflare/size.js); a call's result leaves only once its
// writes are durable. Mechanism: workerd itself gives the last part — its
// output gate holds every response, RPC result and socket message until the
// writes made before it have been confirmed — so nothing is queued here.
//
// Differences, stated in docs/cloudflare.md: keys are listed in the
// database's byte order (UTF-8 code points), where Node sorts UTF-16 units;
// a transaction is ctx.storage.transaction, which rolls back key/value and
// SQL writes together; a set of the value already stored is written again.
const { DurableError, codes } = require('../api/errors');
const { checkKey, checkAlarmName, alarmTime, utf8Length, MAX_VALUE_BYTES, MAX_STATE_BYTES, valueTooLarge, stateTooLarge } = require('../api/rules');
const { encodedSize } = require('./size');
const { Collection, ensureTables } = require('./collection');
const { noSuchCollection } = require('../collections/declarations');

class CloudflareState {
  #who;
  #storage;
  #kv;
  #collections;
  #handles = new Map();
  #alarms;
  /** key → encoded bytes (key included), built on the first write after a wake. */
  #sizes = null;
  #total = 0;
  #tablesReady = false;

  /**
   * @param {() => string} who names the worker in messages
   * @param {DurableObjectStorage} storage
   * @param {import('../collections/declarations').Collections} collections
   * @param {import('./alarms').NamedAlarms} alarms
   */
  constructor(who, storage, collections, alarms) {
    this.#who = who;
    this.#storage = storage;
    this.#kv = storage.kv;
    this.#collections = collections;
    this.#alarms = alarms;
  }

  // --- reads ---------------------------------------------------------------

  get(key) {
    return this.#kv.get(key);
  }

  has(key) {
    return this.#kv.get(key) !== undefined;
  }

  keys() {
    return [...this.#kv.list()].map(([k]) => k);
  }

  entries() {
    return [...this.#kv.list()];
  }

  list({ prefix, start, end, limit, reverse = false } = {}) {
    const opts = {};
    if (prefix !== undefined) opts.prefix = prefix;
    if (start !== undefined) opts.start = start;
    if (end !== undefined) opts.end = end;
    if (limit !== undefined) opts.limit = limit;
    if (reverse) opts.reverse = true;
    return new Map(this.#kv.list(opts));
  }

  get size() {
    return this.#measure();
  }

  collection(name) {
    let c = this.#handles.get(name);
    if (c !== undefined) return c;
    const decl = typeof name === 'string' ? this.#collections.byName.get(name) : undefined;
    if (decl === undefined) throw noSuchCollection(this.#who(), name, this.#collections);
    this._ensureTables();
    c = new Collection(decl, this.#storage.sql, this.#who);
    this.#handles.set(name, c);
    return c;
  }

  /** @internal creates and backfills the declared tables, once per wake */
  _ensureTables() {
    if (this.#tablesReady) return;
    ensureTables(this.#storage.sql, this.#collections);
    this.#tablesReady = true;
  }

  // --- writes --------------------------------------------------------------

  set(key, value) {
    this.#checkKey(key);
    const where = () => `${this.#who()}, key ${JSON.stringify(key)}`;
    const bytes = encodedSize(value, where);
    if (bytes > MAX_VALUE_BYTES) throw valueTooLarge(this.#who(), key, bytes);
    this.#measure();
    const size = utf8Length(key) + bytes;
    const total = this.#total - (this.#sizes.get(key) ?? 0) + size;
    if (total > MAX_STATE_BYTES) throw stateTooLarge(this.#who(), key, total);
    try {
      this.#kv.put(key, value);
    } catch (err) {
      throw new DurableError(codes.UNCLONEABLE, `${where()}: the value cannot be stored (${err?.message ?? err})`, { cause: err });
    }
    this.#sizes.set(key, size);
    this.#total = total;
  }

  delete(key) {
    this.#checkKey(key);
    if (this.#kv.get(key) === undefined) return false;
    this.#kv.delete(key);
    if (this.#sizes !== null) {
      this.#total -= this.#sizes.get(key) ?? 0;
      this.#sizes.delete(key);
    }
    return true;
  }

  /** Resolves when every write so far is durable. */
  async sync() {
    await this.#storage.sync();
  }

  /**
   * Runs `fn` in ctx.storage.transaction: its key/value and collection writes
   * commit together or, if it throws, not at all; the error is rethrown.
   */
  async transaction(fn) {
    try {
      return await this.#storage.transaction(() => fn());
    } finally {
      // A rollback changed what is stored behind the byte count's back.
      this.#sizes = null;
    }
  }

  /** Deletes every key, every document and every alarm, in one transaction (tables stay). */
  async deleteAll() {
    this.#storage.transactionSync(() => {
      for (const [k] of [...this.#kv.list()]) this.#kv.delete(k);
      const tables = [...this.#storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'c\\_%' ESCAPE '\\'")];
      for (const t of tables) this.#storage.sql.exec(`DELETE FROM "${t.name}"`);
      this.#alarms.clearSync();
    });
    await this.#alarms.disarm();
    this.#sizes = new Map();
    this.#total = 0;
  }

  // --- alarms --------------------------------------------------------------

  async setAlarm(at, { name = '' } = {}) {
    const when = alarmTime(this.#who, at);
    this.#checkAlarmName(name);
    await this.#alarms.set(name, when);
  }

  getAlarm(name = '') {
    this.#checkAlarmName(name);
    return this.#alarms.time(name);
  }

  async deleteAlarm(name = '') {
    this.#checkAlarmName(name);
    await this.#alarms.remove(name);
  }

  // --- schedules: named alarms whose name carries the call (../alarms/schedules.js) ---

  schedule(when, method, ...args) {
    return this.#alarms.schedules.add(when, method, args);
  }

  schedules() {
    return this.#alarms.schedules.list();
  }

  cancelSchedule(id) {
    return this.#alarms.schedules.cancel(id);
  }

  // --- checks --------------------------------------------------------------

  #measure() {
    if (this.#sizes === null) {
      this.#sizes = new Map();
      this.#total = 0;
      for (const [k, v] of this.#kv.list()) {
        const n = utf8Length(k) + encodedSize(v, () => this.#who());
        this.#sizes.set(k, n);
        this.#total += n;
      }
    }
    return this.#total;
  }

  #checkAlarmName(name) {
    checkAlarmName(this.#who, name);
  }

  #checkKey(key) {
    checkKey(this.#who, key);
  }
}

module.exports = { CloudflareState };
