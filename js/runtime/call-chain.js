'use strict';
// Who is waiting on whom.
//
// A mailbox runs one entry at a time, so a worker that calls back into a
// worker that is calling it would wait for ever. Two nets catch that:
//
// - The call chain. Every call runs inside a frame (AsyncLocalStorage, which
//   follows awaits and timers) listing the workers it came through. A call to a
//   worker already in the chain is refused, naming the chain.
// - The wait-for graph. A chain only sees one request: A calling B for one
//   request while B calls A for another is in no single chain, yet the
//   mailboxes wait on each other. So the host keeps an edge A → B while a call
//   made from A waits on B, and refuses the call that would close a cycle
//   before it waits. The one false alarm: a call a method starts and does not
//   await still counts as its worker waiting.
//
// A timeout was the alternative, and it turns a certain deadlock into an
// occasional slow failure.
const { AsyncLocalStorage } = require('node:async_hooks');
const { DurableError, codes } = require('../api/errors');
const { abandonedError } = require('./deadline');

/**
 * @typedef {object} Frame
 * @property {string} key the worker this code runs in
 * @property {string[]} chain labels of the workers the call came through, this one last
 * @property {string[]} keys their keys, same order
 * @property {object} worker the live worker (for its gate)
 * @property {number} [epoch] the worker's reset count when the code started (./deadline.js)
 * @property {number} [timeout] the call's own timeout, ms
 * @property {number} [outer] the caller's deadline (epoch ms)
 * @property {number} [deadline] when the call must have finished (epoch ms; Infinity: never)
 */

const frames = new AsyncLocalStorage();

/** @returns {Frame | undefined} the frame of the worker code running now */
function current() {
  return frames.getStore();
}

/** Runs `fn` as code of the worker described by `frame`. */
function runIn(frame, fn) {
  return frames.run(frame, fn);
}

/** `fn.apply(self, args)` as code of the worker described by `frame`, with no closure made per call. */
function applyIn(frame, fn, self, args) {
  return frames.run(frame, Reflect.apply, fn, self, args);
}

/**
 * Builds the frame for a call into `key`, made from `caller` (or from
 * outside). `timeout` is the call's own (./deadline.js); `outer` its caller's
 * deadline, which bounds it.
 */
function frameFor(caller, key, who, worker, timeout = undefined) {
  // Every field a frame gets later is made here, so frames keep one shape.
  if (caller === undefined) return { key, chain: [who], keys: [key], worker, timeout, outer: undefined, epoch: undefined, deadline: undefined };
  const outer = caller.deadline === Infinity ? undefined : caller.deadline;
  return { key, chain: [...caller.chain, who], keys: [...caller.keys, key], worker, timeout, outer, epoch: undefined, deadline: undefined };
}

/**
 * Refuses `what` (an outgoing call, a send) made by code of an instance that
 * a reset abandoned: it could carry a write the reset dropped.
 * @param {Frame | undefined} frame the code's frame
 */
function refuseStale(frame, what) {
  const w = frame?.worker;
  if (w == null || frame.epoch === undefined || frame.epoch === w.epoch) return;
  throw abandonedError(w.who, what, w.lastReset);
}

class WaitGraph {
  /** @type {Map<string, Map<string, { n: number, who: string }>>} caller → callee → calls waiting, callee's label */
  #edges = new Map();

  /**
   * Refuses a call from `caller` into `key` that would wait on itself;
   * otherwise records the wait and returns the function that ends it.
   * @param {Frame | undefined} caller
   * @param {string} key
   * @param {string} who
   * @returns {null | (() => void)}
   */
  enter(caller, key, who) {
    if (caller === undefined) return null;
    if (caller.keys.includes(key)) {
      throw new DurableError(codes.CYCLE, `a call to ${who} would wait on itself: ${[...caller.chain, who].join(' → ')} (a worker runs one call at a time, so this would never finish)`);
    }
    const from = caller.key;
    const path = this.#path(key, from);
    if (path !== null) {
      const names = [caller.chain[caller.chain.length - 1], who, ...path];
      throw new DurableError(codes.CYCLE, `a call to ${who} would close a cycle of waiting workers: ${names.join(' → ')} (another request holds part of it)`);
    }
    let out = this.#edges.get(from);
    if (out === undefined) this.#edges.set(from, (out = new Map()));
    const edge = out.get(key);
    if (edge === undefined) out.set(key, { n: 1, who });
    else edge.n++;
    return () => {
      const m = this.#edges.get(from);
      const e = m?.get(key);
      if (e === undefined) return;
      if (--e.n === 0) m.delete(key);
      if (m.size === 0) this.#edges.delete(from);
    };
  }

  /** Labels of a path of waits from `from` to `to` (excluding `from`), or null. */
  #path(from, to) {
    if (!this.#edges.has(from)) return null;
    const prev = new Map([[from, null]]);
    const queue = [from];
    for (let i = 0; i < queue.length; i++) {
      const k = queue[i];
      for (const [next, edge] of this.#edges.get(k) ?? []) {
        if (prev.has(next)) continue;
        prev.set(next, { k, who: edge.who });
        if (next === to) {
          const names = [];
          for (let at = next; at !== from; at = prev.get(at).k) names.unshift(prev.get(at).who);
          return names;
        }
        queue.push(next);
      }
    }
    return null;
  }
}

module.exports = { current, runIn, applyIn, frameFor, refuseStale, WaitGraph };
