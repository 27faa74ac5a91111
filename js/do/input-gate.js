'use strict';
// The input gate: which events may start while another is in progress.
//
// Guarantee, as on Cloudflare: events (requests, RPC calls, alarms) start in
// the order they arrived; while `blockConcurrencyWhile` runs, none starts
// (its own nested calls do); otherwise events interleave at every `await`
// of I/O. Storage calls never let another event in: they are answered
// synchronously (./storage.js).
//
// Not matched: I/O started inside a critical section by code the runtime
// does not provide (`node:net`, third-party clients) completes whether or
// not the gate is open, as workerd's own would not. Documented in
// docs/durable-objects-on-node.md.

const { AsyncLocalStorage } = require('node:async_hooks');
// Not the global one, which ./timers.js counts as the object's.
const { setTimeout, clearTimeout } = require('node:timers');

/** Which critical section the running code belongs to, if any. */
const section = new AsyncLocalStorage();

class InputGate {
  /** @type {Array<() => void>} */
  #waiting = [];
  /** Critical sections open (nested ones count). */
  #held = 0;
  #owner = null;
  /** Events let through whose code has not resumed yet: later ones stay behind them. */
  #entering = 0;
  /** The object broke: no event waits any more (each finds it broken). */
  #released = false;

  /** Whether an event holds the gate, waits for it, or is being let through. */
  get busy() {
    return !this.#released && (this.#held > 0 || this.#waiting.length > 0 || this.#entering > 0);
  }

  /**
   * How an event gets in: null when it may start now; else a promise to
   * await, after which it calls `entered()` (from its own code, so that an
   * event arriving before it has resumed queues behind it).
   * @returns {Promise<void> | null}
   */
  enter() {
    if (!this.busy) return null;
    this.#entering++;
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.#drain();
    });
  }

  /** The event that awaited `enter()` is running. */
  entered() {
    this.#entering--;
  }

  /**
   * The object broke: every event waiting, and every later one, goes on at
   * once and finds it broken, even while a critical section that will never
   * end (the reason it broke) still holds the gate.
   */
  release() {
    this.#released = true;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }

  #drain() {
    while (this.#held === 0 && this.#waiting.length > 0) this.#waiting.shift()();
  }

  /**
   * Runs `fn` with no other event starting until it settles. A throw (or
   * rejection) is returned to the caller; the object's host resets it.
   * With `limitMs`, a callback still running that long after it started
   * (its wait for the gate not counted) rejects with `tooLong()`, and the
   * gate is let go.
   * @template T
   * @param {() => T | Promise<T>} fn
   * @param {{ limitMs: number, tooLong: () => Error }} [limit]
   * @returns {Promise<T>}
   */
  async blockConcurrencyWhile(fn, limit) {
    const mine = section.getStore();
    // Nested inside a section that holds the gate: already exclusive.
    if (mine !== undefined && mine === this.#owner) return fn();
    const wait = this.enter();
    if (wait !== null) {
      try {
        await wait;
      } finally {
        this.entered();
      }
    }
    const token = {};
    this.#held++;
    this.#owner = token;
    let timer;
    try {
      const run = section.run(token, fn);
      if (limit === undefined) return await run;
      return await Promise.race([
        run,
        new Promise((_, reject) => {
          // The host's timer, ref'd: a process with nothing else to do still sees the reset.
          timer = setTimeout(() => reject(limit.tooLong()), limit.limitMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.#held--;
      this.#owner = null;
      this.#drain();
    }
  }
}

module.exports = { InputGate };
