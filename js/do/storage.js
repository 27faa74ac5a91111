'use strict';
// `ctx.storage`: the asynchronous key-value API, `kv`, `sql`, transactions
// and the alarm, over one object's connection. On a SQLite-backed object
// Cloudflare answers every call at once (its promises are already resolved),
// so a call never lets another event in, and writes join the turn's implicit
// transaction (./turns.js).

const { Store } = require('./store');
const { SqlStorage } = require('./sql');
const { SyncKvStorage } = require('./kv');
const { transaction, transactionSync } = require('./transactions');
const { encode, decode } = require('./storage-values');
const { toBytes, fromBytes, compareKeys } = require('./keys');

/**
 * What the host and transactions need of a storage and user code must not
 * see: its Store, the input gate, and whether `alarm()` is running with the
 * alarm that fired not yet set or deleted (workerd's deferred delete: it
 * reads as null, and is deleted once the handler succeeds).
 * @type {WeakMap<object, { store: Store, blockConcurrencyWhile: Function, alarmFiring: boolean, dropFiredAlarm: (at: number) => void }>}
 */
const internal = new WeakMap();

/** @param {DurableObjectStorage} storage */
const internals = (storage) => internal.get(storage);

// workerd's words, typos included: an app may match on them.
const NO_SQL =
  "SQL is not enabled for this Durable Object class. To enable it, change `new_classes` to `new_sqlite_classes` within the 'migrations' field in your wrangler.jsonc or wrangler.toml file. If using workerd directly,set `enableSql = true` in your workerd config for the class. Note that this change cannot be made after the class is already deployed to production.";
const NO_KV =
  "The storage.kv (synchronous KV) API is only available for SQLite-backed Durable Objects, but this object's namespace is not declared to use SQLite. You can use the older, asyncronous interface via methods of `storage` itself (e.g. `storage.get()`). Alternatively, to enable SQLite, change `new_classes` to `new_sqlite_classes` within the 'migrations' field in your wrangler.jsonc or wrangler.toml file. If using workerd directly, set `enableSql = true` in your workerd config for the class. Note that this change cannot be made after the class is already deployed to production.";

/** `ctx.storage` of one object. */
class DurableObjectStorage {
  #native;
  #turns;
  #store;
  #own;
  #hasAlarmHandler;
  #idName;
  #alarmWritten;
  /**
   * @param {object} native the object's NativeObject
   * @param {import('./turns').Turns} turns
   * @param {{ sql: boolean, hasAlarmHandler: () => boolean, blockConcurrencyWhile: (fn: () => Promise<unknown>) => Promise<unknown>,
   *           idName?: () => string | undefined, alarmWritten?: (at: number | null) => void }} o
   *   idName: the id's name, kept with the alarm for `ctx.id.name` in alarm(); alarmWritten: the app set (or deleted) the alarm
   */
  constructor(native, turns, o) {
    this.#native = native;
    this.#turns = turns;
    this.#hasAlarmHandler = o.hasAlarmHandler;
    this.#idName = o.idName ?? (() => undefined);
    this.#alarmWritten = o.alarmWritten ?? (() => {});
    this.#store = new Store(native, turns);
    this.#own = {
      store: this.#store,
      blockConcurrencyWhile: o.blockConcurrencyWhile,
      alarmFiring: false,
      /** The alarm that fired at `at` is done: deleted in the open turn, if it is still the one set. */
      dropFiredAlarm: (at) => {
        turns.check();
        if (native.getAlarm() === at) turns.wrote(native.setAlarm(null, null));
      },
    };
    internal.set(this, this.#own);
    const sql = new SqlStorage(native, turns);
    const kv = new SyncKvStorage(this.#store);
    const refused = (message) => () => {
      throw new Error(message);
    };
    Object.defineProperty(this, 'sql', { get: o.sql ? () => sql : refused(NO_SQL), enumerable: true });
    Object.defineProperty(this, 'kv', { get: o.sql ? () => kv : refused(NO_KV), enumerable: true });
  }

  /**
   * A value, or a Map of the keys present (in UTF-8 order).
   * @param {string | string[]} keys
   */
  async get(keys) {
    if (!Array.isArray(keys)) return this.#store.get(keys);
    this.#turns.check();
    const ks = keys.map(String);
    const bytes = ks.map(toBytes);
    const values = this.#native.kvGet(bytes);
    const found = [];
    for (let i = 0; i < ks.length; i++) if (values[i] != null) found.push([fromBytes(bytes[i]), decode(values[i]), bytes[i]]);
    found.sort((a, b) => compareKeys(a[2], b[2]));
    return new Map(found.map(([k, v]) => [k, v]));
  }

  /**
   * `put(key, value, options)` or `put(entries, options)`.
   * @param {string | Record<string, unknown>} keyOrEntries
   * @param {unknown} [value]
   */
  async put(keyOrEntries, value, options) {
    if (options !== undefined && options !== null && typeof options !== 'object') {
      throw new TypeError("Failed to execute 'put' on 'DurableObjectStorage': parameter 3 is not of type 'PutOptions'.");
    }
    if (typeof keyOrEntries === 'object' && keyOrEntries !== null) {
      if (value !== undefined && (typeof value !== 'object' || value === null)) {
        throw new TypeError(
          'put() may only be called with a single key-value pair and optional options as put(key, value, options) or with multiple key-value pairs and optional options as put(entries, options)',
        );
      }
      const keys = [];
      const values = [];
      for (const [k, v] of Object.entries(keyOrEntries)) {
        if (v === undefined) continue;
        keys.push(k);
        values.push(encode('put', v));
      }
      this.#store.put(keys, values);
      return;
    }
    this.#store.put([String(keyOrEntries)], [encode('put', value)]);
  }

  /**
   * `delete(key)` → whether it was there; `delete(keys)` → how many were.
   * @param {string | string[]} keys
   */
  async delete(keys) {
    if (Array.isArray(keys)) return this.#store.delete(keys.map(String));
    return this.#store.delete([String(keys)]) > 0;
  }

  /**
   * A Map of the pairs in range. Bad options throw here, not in the promise, as on Cloudflare.
   * @param {object} [options] start, startAfter, end, prefix, reverse, limit
   */
  list(options) {
    return Promise.resolve(new Map(this.#store.list(options, 'DurableObjectStorage')));
  }

  /** Deletes every key, table and the alarm. Not within a transaction. */
  async deleteAll() {
    this.#turns.check();
    if (this.#turns.depth > 0) throw new Error('Cannot call deleteAll() within a transaction');
    this.#turns.wrote(this.#native.deleteAll());
    this.#own.alarmFiring = false;
    this.#alarmWritten(null);
  }

  /** Resolves when every write made so far is durable. */
  async sync() {
    await this.#turns.gate.wait();
  }

  /** @param {(txn: object) => Promise<unknown>} closure */
  transaction(closure) {
    return transaction(this, closure);
  }

  /** @param {() => unknown} closure */
  transactionSync(closure) {
    return transactionSync(this, closure);
  }

  /** The alarm's time in ms since the epoch, or null. */
  async getAlarm() {
    this.#turns.check();
    if (this.#own.alarmFiring) return null;
    return this.#native.getAlarm();
  }

  /** @param {number | Date} when */
  async setAlarm(when) {
    this.#turns.check();
    if (typeof when !== 'number' && !(when instanceof Date)) {
      throw new TypeError("Failed to execute 'setAlarm' on 'DurableObjectStorage': parameter 1 is not of type 'date'.");
    }
    const at = when instanceof Date ? when.getTime() : when;
    if (!(at > 0)) throw new TypeError('setAlarm() cannot be called with an alarm time <= 0');
    if (!this.#hasAlarmHandler()) {
      throw new TypeError('Your Durable Object class must have an alarm() handler in order to call setAlarm()');
    }
    const clamped = Math.trunc(Math.max(at, Date.now()));
    this.#turns.wrote(this.#native.setAlarm(clamped, this.#idName() ?? null));
    this.#own.alarmFiring = false;
    this.#alarmWritten(clamped);
  }

  async deleteAlarm() {
    this.#turns.check();
    this.#turns.wrote(this.#native.setAlarm(null, null));
    this.#own.alarmFiring = false;
    this.#alarmWritten(null);
  }
}

module.exports = { DurableObjectStorage, internals };
