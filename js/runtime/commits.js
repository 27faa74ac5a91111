'use strict';
// Commits in flight: the JS half of the commit threads (src/committer.rs).
//
// A write is handed to a native commit thread with a number; the thread calls
// back with that number when the commit has landed. The callback alone would
// not keep Node's event loop running, so while any commit is in flight a
// referenced timer does; with none in flight the process may exit.

class Commits {
  /** @type {Map<number, { resolve: () => void, reject: (err: Error) => void }>} */
  #waiting = new Map();
  #next = 1;
  #keepAlive;

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
      if (code === '') w.resolve(report);
      else w.reject(Object.assign(new Error(message), { code }));
    };
  }

  /**
   * Runs one native operation on a commit thread.
   * @param {(id: number) => void} start hands the operation to the native side under `id`
   * @returns {Promise<[number, string, string, number, number]>} settled when the thread reports `id` done
   */
  submit(start) {
    return new Promise((resolve, reject) => {
      const id = this.#next;
      this.#next = this.#next >= 0xffffffff ? 1 : this.#next + 1;
      start(id);
      if (this.#waiting.size === 0) this.#keepAlive.ref();
      this.#waiting.set(id, { resolve, reject });
    });
  }

  /** Stops holding the event loop open (the host is closed). */
  close() {
    clearInterval(this.#keepAlive);
  }
}

module.exports = { Commits };
