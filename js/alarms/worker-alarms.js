'use strict';
// A worker's named alarms, as its file holds them.
//
// The worker's file is the truth, and the catalog's index follows it in an
// order that leaves it early, never late (./index-writes.js). This module
// keeps the alarms and what of them is not yet on disk: an alarm replaced or
// removed still counts for the index until the commit that replaces or
// removes it has landed, so the index is never set later than something the
// disk may still hold.

/** @typedef {{ at: number, attempt: number, scheduled: number }} Alarm  (scheduled: what it was set for; at: when it fires next) */

class WorkerAlarms {
  /** @type {Map<string, Alarm>} */
  #alarms = new Map();
  /** Names changed since the last batch → what they held before (null: nothing). */
  #pending = new Map();
  /** Per batch in flight, oldest first: what its names held before. */
  #inflight = [];
  /** Names whose alarm() is running → whether the handler set it again. */
  #firing = new Map();

  /** Fills from a loaded page: `{ names, ats, attempts, scheduled }`. */
  load({ names, ats, attempts, scheduled }) {
    for (let i = 0; i < names.length; i++) {
      this.#alarms.set(names[i], { at: ats[i], attempt: attempts[i], scheduled: scheduled[i] });
    }
  }

  get size() {
    return this.#alarms.size;
  }

  /** Whether alarm `name` is set (a firing one included). */
  has(name) {
    return this.#alarms.has(name);
  }

  /** Every alarm: `[{ name, at, attempt, scheduled }]`. */
  entries() {
    return [...this.#alarms].map(([name, a]) => ({ name, at: a.at, attempt: a.attempt, scheduled: a.scheduled }));
  }

  /** True when changes wait for the next batch. */
  get dirty() {
    return this.#pending.size > 0;
  }

  /** The time of alarm `name`, or null; a firing alarm reads as cleared. */
  time(name) {
    const f = this.#firing.get(name);
    if (f !== undefined && !f.rescheduled) return null;
    return this.#alarms.get(name)?.at ?? null;
  }

  /**
   * Sets alarm `name` (in memory; committed with the next batch). A retry
   * passes the attempt count and the time the alarm was first set for.
   */
  put(name, at, attempt = 0, scheduled = at) {
    const f = this.#firing.get(name);
    if (f !== undefined) f.rescheduled = true;
    this.#note(name);
    this.#alarms.set(name, { at, attempt, scheduled });
  }

  /** Removes alarm `name`; true if there was one. */
  remove(name) {
    const f = this.#firing.get(name);
    if (f !== undefined) f.rescheduled = false;
    if (!this.#alarms.has(name)) return false;
    this.#note(name);
    this.#alarms.delete(name);
    return true;
  }

  /** Removes every alarm (deleteAll). */
  clear() {
    for (const name of [...this.#alarms.keys()]) this.remove(name);
  }

  /** Alarms due at `now`, earliest first: `[{ name, at, attempt, scheduled }]`. */
  due(now) {
    const out = [];
    for (const [name, a] of this.#alarms) if (a.at <= now) out.push({ name, ...a });
    return out.sort((x, y) => x.at - y.at);
  }

  /**
   * The index entry this worker needs: its earliest alarm, counting alarms
   * replaced or removed by commits that have not landed yet. Null if none.
   */
  indexAt() {
    let min = Infinity;
    for (const a of this.#alarms.values()) min = Math.min(min, a.at);
    for (const a of this.#pending.values()) if (a !== null) min = Math.min(min, a.at);
    for (const m of this.#inflight) for (const a of m.values()) if (a !== null) min = Math.min(min, a.at);
    return min === Infinity ? null : min;
  }

  /** Marks `name` as firing: it reads as cleared until `endFiring`. */
  beginFiring(name) {
    this.#firing.set(name, { rescheduled: false });
  }

  /** Ends the firing of `name`; true if the handler set it again. */
  endFiring(name) {
    const f = this.#firing.get(name);
    this.#firing.delete(name);
    return f?.rescheduled ?? false;
  }

  /**
   * Takes the changes since the last batch: `{ names, ats, attempts, deletes }`,
   * or null if there are none. Call `landed()` when the batch has committed.
   */
  take() {
    if (this.#pending.size === 0) return null;
    const out = { names: [], ats: [], attempts: [], scheduled: [], deletes: [] };
    for (const name of this.#pending.keys()) {
      const a = this.#alarms.get(name);
      if (a === undefined) out.deletes.push(name);
      else {
        out.names.push(name);
        out.ats.push(a.at);
        out.attempts.push(a.attempt);
        out.scheduled.push(a.scheduled);
      }
    }
    this.#inflight.push(this.#pending);
    this.#pending = new Map();
    return out;
  }

  /** The oldest batch taken has committed. */
  landed() {
    this.#inflight.shift();
  }

  #note(name) {
    if (!this.#pending.has(name)) {
      const a = this.#alarms.get(name);
      this.#pending.set(name, a === undefined ? null : { ...a });
    }
  }
}

module.exports = { WorkerAlarms };
