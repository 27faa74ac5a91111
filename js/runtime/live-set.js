'use strict';
// The workers a host has materialized, and their eviction: the JS half of the
// native live set (src/evict.rs). Each worker gets a slot number the native
// side knows it by; when work arrives (`busy`) the native side may name idle
// or least recently used workers to close, and they are retired behind their
// queues: no timer runs for this, so an idle process exits.
//
// A worker that goes idle tells the native side when the loop's turn ends or
// another worker gets work, whichever comes first, not at once: a serial
// caller's next call usually arrives before either (its result was released
// in the same turn), and then the worker never went idle at all, and no call
// pays for a round trip through the addon each way.
//
// A key maps to a worker, or to a tombstone `{ closed }` while its file is
// being deleted; whoever finds one that is closing waits for `closed`.
const { fromNative } = require('../api/errors');
const { QueuedWorker } = require('./queued-worker');

class LiveSet {
  #native;
  /** @type {(w: object) => void} */
  #onIdle;
  /** @type {(info: { class: string, id: string, reason: string }) => void} */
  #onEvicted;
  /** @type {() => boolean} */
  #hostClosed;
  /** @type {Map<string, object>} key → worker (or tombstone) */
  #byKey = new Map();
  /** @type {Map<number, object>} slot → worker */
  #bySlot = new Map();
  #nextSlot = 1;
  /** Workers gone idle whose native `end` waits for the turn's end or another worker's work. */
  #ending = new Set();
  #endScheduled = false;
  #endTurn = () => {
    this.#endScheduled = false;
    this.#endAll();
  };
  materialized = 0;
  evicted = 0;

  /**
   * @param {{ native: object, onIdle: (w: object) => void, onEvicted: (info: object) => void, hostClosed: () => boolean }} options
   */
  constructor({ native, onIdle, onEvicted, hostClosed }) {
    this.#native = native;
    this.#onIdle = onIdle;
    this.#onEvicted = onEvicted;
    this.#hostClosed = hostClosed;
  }

  /** The worker (or tombstone) under `key`. */
  get(key) {
    return this.#byKey.get(key);
  }

  /** Puts a tombstone under `key` (a delete in progress). */
  setTomb(key, tomb) {
    this.#byKey.set(key, tomb);
  }

  /** Removes `key` if it still holds `entry`. */
  deleteIf(key, entry) {
    if (this.#byKey.get(key) === entry) this.#byKey.delete(key);
  }

  /** Every worker and tombstone. */
  values() {
    return this.#byKey.values();
  }

  /** Open workers. */
  get size() {
    return this.#bySlot.size;
  }

  /**
   * Deletes the worker under `key`: closed without stop() if it is
   * materialized (a worker closing already is waited for), then its file and
   * catalog entry go.
   * @param {() => object} dormant its native handle, made only when it is not materialized
   * @returns {Promise<boolean>} false if it never existed
   */
  async destroy(key, dormant, who) {
    for (;;) {
      const w = this.#byKey.get(key);
      if (w === undefined) break;
      if (w instanceof QueuedWorker && w.closed === null) {
        const existed = w.close(null, { destroy: true });
        existed.then(
          () => this.drop(w),
          () => this.drop(w),
        );
        return existed;
      }
      await w.closed.catch(() => {});
    }
    return this.#destroyDormant(key, dormant(), who);
  }

  /**
   * Deletes a worker that is not materialized: its file and catalog entry go
   * (`native.destroy()`), while a tomb under its key makes calls wait for it.
   * @returns {Promise<boolean>} false if it never existed
   */
  async #destroyDormant(key, native, who) {
    const tomb = { closed: native.destroy() };
    this.setTomb(key, tomb);
    try {
      return await tomb.closed;
    } catch (err) {
      throw fromNative(err, who);
    } finally {
      this.deleteIf(key, tomb);
    }
  }

  /** Makes the worker for `key` with a new slot: `make(slot)`. */
  materialize(key, make) {
    const slot = this.#nextSlot++;
    const w = make(slot);
    this.#byKey.set(key, w);
    this.#bySlot.set(slot, w);
    this.materialized++;
    return w;
  }

  /** Work arrived for `w`: the native live set may name workers to close. */
  busy(w) {
    // Idle since earlier in this turn: still busy as far as the native side knows.
    if (this.#ending.delete(w)) return;
    if (w.closed !== null || this.#hostClosed()) return;
    // The others gone idle first, so that they can be named to make room.
    if (this.#ending.size !== 0) this.#endAll();
    const victims = this.#native.begin(w.slot);
    if (victims === null) return;
    for (let i = 0; i < victims.length; i += 2) {
      const v = this.#bySlot.get(victims[i]);
      if (v === undefined || v.closed !== null) continue;
      const reason = victims[i + 1] === 1 ? 'evicted' : 'idle';
      this.retire(v, reason).then(() => {
        this.evicted++;
        this.#onEvicted({ class: v.binding.name, id: v.id, reason });
      });
    }
  }

  /** `w` has nothing left to run. */
  idle(w) {
    if (w.closed === null) {
      this.#ending.add(w);
      if (!this.#endScheduled) {
        this.#endScheduled = true;
        setImmediate(this.#endTurn);
      }
    }
    this.#onIdle(w);
  }

  /** Tells the native side of every worker gone idle since it last heard. */
  #endAll() {
    const closed = this.#hostClosed();
    for (const w of this.#ending) if (w.closed === null && !closed) this.#native.end(w.slot);
    this.#ending.clear();
  }

  /** Closes a worker behind its queue and forgets it. Never rejects. */
  retire(w, reason) {
    const closed = w.close(reason);
    return closed.then(
      () => this.drop(w),
      () => this.drop(w),
    );
  }

  /** Forgets `w` (closed, failed or deleted). */
  drop(w) {
    if (this.#byKey.get(w.key) === w) this.#byKey.delete(w.key);
    if (this.#bySlot.get(w.slot) === w) {
      this.#bySlot.delete(w.slot);
      this.#native.forget(w.slot);
    }
  }
}

module.exports = { LiveSet };
