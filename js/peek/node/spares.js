'use strict';
// The warm spare: one run process forked ahead of need, booted, holding
// nothing of any worker. Taking it hides fork and boot (most of a run's added
// latency) without giving up a fresh module graph per run: the spare has not
// imported anything a worker could have touched, and it is used once.
const { AsyncResource } = require('node:async_hooks');
const { forkRunProcess, release, hold } = require('./process');

class Spares {
  #options;
  #spare = null;
  #closed = false;
  // Forks happen in the async context the pool was made in, not in whichever
  // run's context asked for one: the IPC messages of a process later handed
  // to another worker must not look as if they came from the first one's call.
  #scope = new AsyncResource('PeekSpares');

  /** @param {{ memoryMb: number, warm: boolean }} options */
  constructor(options) {
    this.#options = options;
  }

  /** A booted (or booting) process for one run, and a new spare forked behind it. */
  take() {
    if (this.#closed) throw new Error('the adapter is closed');
    let p = this.#spare;
    this.#spare = null;
    if (p === null) p = this.#fork();
    hold(p.proc);
    if (this.#options.warm) setImmediate(() => this.#refill());
    return p;
  }

  /** Forks the spare now (the adapter calls this when it starts). */
  warm() {
    if (this.#options.warm) this.#refill();
  }

  #refill() {
    if (this.#closed || this.#spare !== null) return;
    const p = this.#fork();
    release(p.proc);
    // A spare that dies (killed from outside) is dropped, not handed out.
    p.exited.then(() => {
      if (this.#spare === p) this.#spare = null;
    });
    this.#spare = p;
  }

  #fork() {
    return this.#scope.runInAsyncScope(() => forkRunProcess(this.#options));
  }

  /** Kills the spare. */
  async close() {
    this.#closed = true;
    const p = this.#spare;
    this.#spare = null;
    if (p !== null) {
      hold(p.proc); // an unref'd process would not keep us waiting for its exit
      p.proc.kill('SIGKILL');
      await p.exited;
    }
  }
}

module.exports = { Spares };
