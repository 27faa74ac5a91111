'use strict';
// Timers an object sets keep it in memory until they fire or are cleared:
// workerd does not hibernate an object with a timer pending, and a timer of
// an instance that left memory would otherwise fire on that old instance.
// The global `setTimeout` and `setInterval` are wrapped (once per process,
// by `openObjects`) to note each timer made inside an object's event; the
// wrapper is the original function when no object's event is running.
// The host's own timers come from `node:timers`, never counted.

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
      actorContext.getStore()?.timers.add(timer);
      return timer;
    },
  }[make.name];
  if (make[promisify.custom] !== undefined) Object.defineProperty(wrapped, promisify.custom, { value: make[promisify.custom] });
  return wrapped;
}

/**
 * Whether any of `set` (an object's timers) is still to fire; fired and
 * cleared ones are dropped. Node marks a Timeout `_destroyed` once it fired
 * (an interval: never) or was cleared, however it was cleared (by object or
 * by its numeric id).
 * @param {Set<NodeJS.Timeout>} set
 */
function pendingTimers(set) {
  for (const t of set) if (t._destroyed !== false) set.delete(t);
  return set.size > 0;
}

module.exports = { installTimerAccounting, pendingTimers };
