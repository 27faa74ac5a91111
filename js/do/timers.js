'use strict';
// Timers an object sets keep it in memory until they fire or are cleared:
// workerd does not hibernate an object with a timer pending, and a timer of
// an instance that left memory would otherwise fire on that old instance.
// The global `setTimeout` and `setInterval` are wrapped (once per process,
// by `openObjects`) to note each timer made inside an object's event; the
// wrapper is the original function when no object's event is running.
// The host's own timers come from `node:timers`, never counted; an unref'd
// timer (a library's, such as the fetch client's shared one) does not hold
// an object, as code written for workerd cannot unref one.

const { promisify } = require('node:util');
const { actorContext } = require('./websocket');

let installed = false;

/** Wraps the global timer functions (idempotent). */
function installTimerAccounting() {
  if (installed) return;
  installed = true;
  globalThis.setTimeout = counted(globalThis.setTimeout);
  globalThis.setInterval = counted(globalThis.setInterval);
}

/** `make` (setTimeout or setInterval), noting each timer made inside an object's event on that object. */
function counted(make) {
  const wrapped = {
    [make.name](...args) {
      const timer = make(...args);
      const actor = actorContext.getStore();
      if (actor !== undefined) note(actor.timers, timer);
      return timer;
    },
  }[make.name];
  if (make[promisify.custom] !== undefined) Object.defineProperty(wrapped, promisify.custom, { value: make[promisify.custom] });
  return wrapped;
}

/** Each set's size at which its fired and cleared timers are dropped next: a busy object is never idle long enough to be checked. */
const sweepAt = new WeakMap();

/** @param {Set<NodeJS.Timeout>} set @param {NodeJS.Timeout} timer */
function note(set, timer) {
  set.add(timer);
  if (set.size < (sweepAt.get(set) ?? 64)) return;
  pendingTimers(set);
  sweepAt.set(set, Math.max(64, 2 * set.size));
}

/**
 * Whether any of `set` (an object's timers) is still to fire and holds the
 * loop; fired and cleared ones are dropped. Node marks a Timeout
 * `_destroyed` once it fired (an interval: never) or was cleared, however it
 * was cleared (by object or by its numeric id).
 * @param {Set<NodeJS.Timeout>} set
 */
function pendingTimers(set) {
  let held = false;
  for (const t of set) {
    if (t._destroyed !== false) set.delete(t);
    else if (t.hasRef()) held = true;
  }
  return held;
}

module.exports = { installTimerAccounting, pendingTimers };
