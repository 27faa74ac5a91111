'use strict';
// A worker's mailbox: entries run one at a time, in the order they came.
//
// "One at a time" is about running code, not about the disk: an entry is done
// when its code has finished, and the next one starts while the previous one's
// writes are still committing. Releasing results after the commit is the
// gate's business (../state/resident-state.js), not the mailbox's.
//
// The queue is bounded: past `limit` waiting entries a push is refused, because
// a queue that grows without limit is a failure hidden rather than reported.

class Mailbox {
  #queue = [];
  #head = 0;
  #running = false;
  #limit;
  #run;
  #onBusy;
  #onIdle;

  /**
   * @param {number} limit entries that may wait behind the running one
   * @param {(entry: any) => Promise<void>} run runs one entry's code
   * @param {() => void} onBusy the mailbox went from idle to running
   * @param {() => void} onIdle the mailbox drained
   */
  constructor(limit, run, onBusy, onIdle) {
    this.#limit = limit;
    this.#run = run;
    this.#onBusy = onBusy;
    this.#onIdle = onIdle;
  }

  /** Entries waiting behind the running one. */
  get waiting() {
    return this.#queue.length - this.#head;
  }

  /** Whether an entry is running (or the queue is being drained). */
  get running() {
    return this.#running;
  }

  /**
   * Queues an entry; false when full (the caller refuses the work). `force`
   * is for the host's own entries (start, close), which are never refused.
   */
  push(entry, force = false) {
    if (!force && this.waiting >= this.#limit) return false;
    this.#queue.push(entry);
    if (!this.#running) {
      this.#running = true;
      this.#onBusy();
      this.#drain();
    }
    return true;
  }

  async #drain() {
    while (this.#head < this.#queue.length) {
      const entry = this.#queue[this.#head];
      this.#queue[this.#head++] = undefined;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      await this.#run(entry);
    }
    this.#queue = [];
    this.#head = 0;
    this.#running = false;
    this.#onIdle();
  }
}

module.exports = { Mailbox };
