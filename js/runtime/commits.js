'use strict';
// Commits in flight: the JS half of the commit threads (src/committer.rs).
//
// A write is handed to a native commit thread with a number; the thread calls
// back with that number when the commit has landed. The callback alone would
// not keep Node's event loop running, so while any commit is in flight a
// referenced timer does; with none in flight the process may exit.
//
// A write that would be alone is made on the JS thread instead, sync and all
// (`write`): with no other commit in flight the JS thread usually has
// nothing to do but sleep until the report, and waking it from that sleep
// costs as much as the write itself (docs/internals.md, Threads). Three
// rules keep that from costing anyone else. Only when no commit is in
// flight: under load the commit threads keep syncing in parallel with JS.
// Only at the end of the loop's turn (in `setImmediate`), and only if no
// other write came in that turn: one that does sends both to the commit
// threads, so a turn that ends many calls still shares them out. And only
// while the device syncs fast: a slow sync would stall the loop for its
// whole length (the storage core times every sync and declines, see
// NativeWorker.writeInline; it makes none before it has timed one). Nor a
// bulk write, whose transaction alone would hold the loop (the caller says,
// runtime/live.js). One write does not wait for the turn's end: the next
// write of the worker whose commit was just made on the JS thread, before
// the loop turns again (a serial caller). The turn it would wait for is the
// next one, and the turn that made that commit has already run its timers
// and sockets; another worker's write meanwhile waits as usual, and sends
// both to the threads. The loop turns at least every millisecond of such
// writes (`HOT_MS`), so a caller writing in a loop never starves timers or
// sockets for longer.

/** How long a serial caller's writes are made at once before the loop is let turn (ms). */
const HOT_MS = 1;

class Commits {
  /** @type {Map<number, { resolve: (report: unknown[]) => void, reject: (err: Error) => void }>} */
  #waiting = new Map();
  #next = 1;
  #keepAlive;
  /** A write waiting for the end of the turn to be made on the JS thread, if it is still alone then. */
  #alone = null;
  /** The worker whose write was last made on the JS thread, until the loop turns; and since when. */
  #hot = null;
  #hotSince = 0;
  #turned = () => {
    this.#hot = null;
  };

  constructor() {
    this.#keepAlive = setInterval(() => {}, 2 ** 30);
    this.#keepAlive.unref();
    /**
     * Passed to the native host: called on the JS thread with [id, code,
     * message, queuedMicros, ranMicros] as each commit ends. A commit's
     * promise resolves with that array (its timings, for the commit channel).
     */
    this.done = (report) => {
      const [id, code, message] = report;
      const w = this.#waiting.get(id);
      if (w === undefined) return;
      this.#waiting.delete(id);
      if (this.#waiting.size === 0) this.#keepAlive.unref();
      if (code === '') {
        w.time?.observe(performance.now() - w.t0);
        w.resolve(report);
      } else w.reject(Object.assign(new Error(message), { code }));
    };
  }

  #id() {
    const id = this.#next;
    this.#next = this.#next >= 0xffffffff ? 1 : this.#next + 1;
    return id;
  }

  #wait(id, resolve, reject, time = undefined, t0 = 0) {
    if (this.#waiting.size === 0) this.#keepAlive.ref();
    this.#waiting.set(id, { resolve, reject, time, t0 });
  }

  /**
   * Runs one native operation on a commit thread.
   * @param {(id: number) => void} start hands the operation to the native side under `id`
   * @returns {Promise<[number, string, string, number, number]>} settled when the thread reports `id` done
   */
  submit(start) {
    return new Promise((resolve, reject) => {
      const id = this.#id();
      start(id);
      this.#wait(id, resolve, reject);
    });
  }

  /**
   * `submit` for an operation that may find nothing to do: `start(id)`
   * returns whether it handed anything to a commit thread; when not, the
   * promise resolves with null at once.
   * @param {(id: number) => boolean} start
   * @returns {Promise<[number, string, string, number, number] | null>}
   */
  maybe(start) {
    return new Promise((resolve, reject) => {
      const id = this.#id();
      if (start(id)) this.#wait(id, resolve, reject);
      else resolve(null);
    });
  }

  /**
   * Runs one write, on the JS thread at the end of this turn when it is
   * alone and `small` (see above), else on a commit thread. Settles as
   * `submit` does; a write made at once (an `owner`'s, see above) returns
   * its report itself, landed and synced: nothing is left to wait for.
   * @param {(id: number, inline: boolean) => number} start with `inline`, writes now and returns the µs it
   *   took, or -1 when it could not and handed the write to a commit thread under `id` instead
   * @param {() => boolean} small whether the write is small enough to be made on the JS thread (asked
   *   only when it is alone: under load no commit pays for measuring itself)
   * @param {object} [owner] the worker writing: its next write after one made on the JS thread, before
   *   the loop turns, is made at once
   * @param {{ observe(ms: number): void }} [time] the commit-latency histogram the write's time goes to,
   *   when it lands (here rather than in a reaction to the promise: a serial caller's call pays for each)
   * @returns {Promise<[number, string, string, number, number]> | [number, string, string, number, number]}
   */
  write(start, small, owner = undefined, time = undefined) {
    const now = performance.now();
    const alone = this.#alone;
    if (alone !== null) {
      this.#alone = null;
      this.#handOff(alone);
    } else if (this.#waiting.size === 0 && small()) {
      if (owner !== undefined && owner === this.#hot && now - this.#hotSince < HOT_MS) return this.#now(start, owner, time, now);
      return new Promise((resolve, reject) => {
        const w = { start, resolve, reject, owner, time, t0: now };
        this.#alone = w;
        setImmediate(() => this.#inline(w));
      });
    }
    return new Promise((resolve, reject) => this.#handOff({ start, resolve, reject, owner, time, t0: now }));
  }

  #handOff(w) {
    const id = this.#id();
    try {
      w.start(id, false);
    } catch (err) {
      return w.reject(err);
    }
    this.#wait(id, w.resolve, w.reject, w.time, w.t0);
  }

  #inline(w) {
    if (this.#alone !== w) return;
    this.#alone = null;
    // Something else was handed to a commit thread since (a close).
    if (this.#waiting.size !== 0) return this.#handOff(w);
    this.#made(w);
  }

  /** Makes `w` on the JS thread (or hands it over, when the native side declines). */
  #made(w) {
    const id = this.#id();
    let us;
    try {
      us = w.start(id, true);
    } catch (err) {
      return w.reject(err);
    }
    if (us < 0) return this.#wait(id, w.resolve, w.reject, w.time, w.t0);
    w.resolve(this.#landed(id, us, w.owner, w.time, w.t0));
  }

  /** A serial caller's write, made at once: its report, or a promise when it failed or went to a thread. */
  #now(start, owner, time, t0) {
    const id = this.#id();
    let us;
    try {
      us = start(id, true);
    } catch (err) {
      return Promise.reject(err);
    }
    if (us < 0) return new Promise((resolve, reject) => this.#wait(id, resolve, reject, time, t0));
    return this.#landed(id, us, owner, time, t0);
  }

  /** A write made on the JS thread has landed: its owner is hot until the loop turns. */
  #landed(id, us, owner, time, t0) {
    const now = performance.now();
    if (owner !== undefined) {
      if (this.#hot === null) {
        this.#hotSince = now;
        setImmediate(this.#turned);
      }
      this.#hot = owner;
    }
    time?.observe(now - t0);
    return [id, '', '', 0, Math.round(us)];
  }

  /** Stops holding the event loop open (the host is closed). */
  close() {
    clearInterval(this.#keepAlive);
  }
}

module.exports = { Commits };
