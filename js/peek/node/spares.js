'use strict';
// The warm spares: run processes forked ahead of need (one by default,
// options.spares for more, so back-to-back runs find one booted), booted, holding
// nothing of any worker. Taking it hides fork and boot (most of a run's added
// latency) without giving up a fresh module graph per run: the spare has not
// imported anything a worker could have touched, and it is used once.
const { AsyncResource } = require('node:async_hooks');
const { forkRunProcess, killGroup, release, hold } = require('./process');
const { codes, peekError } = require('../errors');

class Spares {
  #options;
  /** Booted (or booting) processes, oldest first. */
  #spares = [];
  #closed = false;
  // Forks happen in the async context the pool was made in, not in whichever
  // run's context asked for one: the IPC messages of a process later handed
  // to another worker must not look as if they came from the first one's call.
  #scope = new AsyncResource('PeekSpares');

  /** @param {{ memoryMb: number, size: number, uid?: number, gid?: number }} options size: spares kept ready (0: fork when a run asks) */
  constructor(options) {
    this.#options = options;
  }

  /** A booted (or booting) process for one run, and a new spare forked behind it. */
  take() {
    if (this.#closed) throw peekError(codes.CLOSED, 'the adapter is closed');
    const p = this.#spares.shift() ?? this.#fork(false);
    hold(p.proc);
    if (this.#options.size > 0) setImmediate(() => this.#refill());
    return p;
  }

  /** Forks the spares now (the adapter calls this when it starts). */
  warm() {
    this.#refill();
  }

  #refill() {
    while (!this.#closed && this.#spares.length < this.#options.size) {
      let p;
      try {
        p = this.#fork(true);
      } catch {
        // No spare can be made now (no sandbox uid free): a run forks its own and hears why.
        return;
      }
      release(p.proc);
      // A spare that dies (killed from outside) is dropped, not handed out.
      p.exited.then(() => {
        const i = this.#spares.indexOf(p);
        if (i >= 0) this.#spares.splice(i, 1);
      });
      this.#spares.push(p);
    }
  }

  /** warm: a spare, booted ahead of need: it also takes the platform's fetch machinery before it says ready. */
  #fork(warm) {
    return this.#scope.runInAsyncScope(() => forkRunProcess({ ...this.#options, warm }));
  }

  /** Kills the spares. */
  async close() {
    this.#closed = true;
    const all = this.#spares.splice(0);
    await Promise.all(
      all.map((p) => {
        hold(p.proc); // an unref'd process would not keep us waiting for its exit
        killGroup(p.proc);
        return p.exited;
      }),
    );
  }
}

module.exports = { Spares };
