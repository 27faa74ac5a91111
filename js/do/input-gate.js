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

/** Which critical section the running code belongs to, if any. */
const section = new AsyncLocalStorage();

class InputGate {
  /** @type {Array<() => void>} */
  #waiting = [];
  /** Critical sections open (nested ones count). */
  #held = 0;
  #owner = null;
  /** The object broke: no event waits any more (each finds it broken). */
  #released = false;

  /** Whether an event holds the gate, or one waits for it. */
  get busy() {
    return !this.#released && (this.#held > 0 || this.#waiting.length > 0);
  }

  /** Resolves when an event may start: at once unless a critical section holds the gate. */
  wait() {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.#drain();
    });
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
   * @template T
   * @param {() => T | Promise<T>} fn
   * @returns {Promise<T>}
   */
  async blockConcurrencyWhile(fn) {
    const mine = section.getStore();
    // Nested inside a section that holds the gate: already exclusive.
    if (mine !== undefined && mine === this.#owner) return fn();
    await this.wait();
    const token = {};
    this.#held++;
    this.#owner = token;
    try {
      return await section.run(token, fn);
    } finally {
      this.#held--;
      this.#owner = null;
      this.#drain();
    }
  }
}

module.exports = { InputGate };
