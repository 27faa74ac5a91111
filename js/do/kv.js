'use strict';
// `ctx.storage.kv`: the same keys as the asynchronous API, answered
// synchronously. `list()` is an iterator, and only the latest one may be
// read: starting another invalidates the one before, as on Cloudflare.

const { serialize } = require('./storage-values');

/** `ctx.storage.kv`. */
class SyncKvStorage {
  #store;
  #listing = 0;

  /** @param {import('./store').Store} store */
  constructor(store) {
    this.#store = store;
  }

  /** @param {string} key */
  get(key) {
    return this.#store.get(key);
  }

  /** @param {string} key @param {unknown} value */
  put(key, value) {
    // Unlike the asynchronous put, undefined is a value here (workerd stores it).
    this.#store.put([String(key)], [serialize(value)]);
  }

  /** @param {string} key */
  delete(key) {
    return this.#store.delete([String(key)]) > 0;
  }

  /**
   * The pairs in range, as an iterator of `[key, value]`.
   * @param {object} [options] start, startAfter, end, prefix, reverse, limit
   */
  list(options) {
    const pairs = this.#store.list(options, 'SyncKvStorage');
    const mine = ++this.#listing;
    let at = 0;
    const it = {
      next: () => {
        if (mine !== this.#listing) {
          throw new Error('kv.list() iterator was invalidated because a new call to kv.list() was started. Only one kv.list() iterator can exist at a time.');
        }
        if (at >= pairs.length) return { done: true, value: undefined };
        return { done: false, value: pairs[at++] };
      },
      [Symbol.iterator]: () => it,
    };
    return it;
  }
}

module.exports = { SyncKvStorage };
