'use strict';
// The globals a Worker expects from workerd that Node lacks or has in another
// shape: `WebSocket` (workerd's, with READY_STATE_* and attachments, not
// undici's client), `WebSocketPair`, and a `Response` that takes
// `{ status: 101, webSocket }` (./response.js). On
// Node 20 also the ES2025 iterator helpers (`Iterator.prototype.filter`, …),
// which workerd's V8 has: partyserver's default (non-hibernating)
// `getConnections()`, hence `broadcast()`, calls `map.values().filter(…)`.

const { WebSocket, WebSocketPair } = require('./websocket');
const { Response } = require('./response');

/** The WebSocket a response upgrades with, or null (any Response, Node's too). */
function webSocketOf(response) {
  return Response.socketOf(response);
}

/**
 * The iterator helpers Node 20's V8 lacks, on %IteratorPrototype%, only where
 * absent (Node 22 and later have them natively). Lazy like the built-ins:
 * each returns a generator over `this`, so leaving it early (`return()`)
 * closes the source too.
 */
function installIteratorHelpers() {
  const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
  if (typeof IteratorPrototype.filter === 'function') return;
  const callable = (fn, name) => {
    if (typeof fn !== 'function') throw new TypeError(`Iterator.prototype.${name}: ${String(fn)} is not a function`);
  };
  const count = (n, name) => {
    const v = Number(n);
    if (Number.isNaN(v) || v < 0) throw new RangeError(`Iterator.prototype.${name}: ${String(n)} must be a non-negative number`);
    return Math.trunc(v);
  };
  const iterable = (it) => ({ [Symbol.iterator]: () => it });
  const helpers = {
    map(fn) {
      callable(fn, 'map');
      return (function* (it) {
        let i = 0;
        for (const v of iterable(it)) yield fn(v, i++);
      })(this);
    },
    filter(fn) {
      callable(fn, 'filter');
      return (function* (it) {
        let i = 0;
        for (const v of iterable(it)) if (fn(v, i++)) yield v;
      })(this);
    },
    take(n) {
      const limit = count(n, 'take');
      return (function* (it) {
        if (limit === 0) return void it.return?.();
        let i = 0;
        for (const v of iterable(it)) {
          yield v;
          if (++i >= limit) return;
        }
      })(this);
    },
    drop(n) {
      const skip = count(n, 'drop');
      return (function* (it) {
        let i = 0;
        for (const v of iterable(it)) if (i++ >= skip) yield v;
      })(this);
    },
    flatMap(fn) {
      callable(fn, 'flatMap');
      return (function* (it) {
        let i = 0;
        for (const v of iterable(it)) yield* fn(v, i++);
      })(this);
    },
    reduce(fn, ...initial) {
      callable(fn, 'reduce');
      let i = 0;
      let acc;
      let empty = initial.length === 0;
      if (!empty) acc = initial[0];
      for (const v of iterable(this)) {
        acc = empty ? v : fn(acc, v, i);
        empty = false;
        i++;
      }
      if (empty) throw new TypeError('Iterator.prototype.reduce: reduce of empty iterator with no initial value');
      return acc;
    },
    toArray() {
      return [...iterable(this)];
    },
    forEach(fn) {
      callable(fn, 'forEach');
      let i = 0;
      for (const v of iterable(this)) fn(v, i++);
    },
    some(fn) {
      callable(fn, 'some');
      let i = 0;
      for (const v of iterable(this)) if (fn(v, i++)) return true;
      return false;
    },
    every(fn) {
      callable(fn, 'every');
      let i = 0;
      for (const v of iterable(this)) if (!fn(v, i++)) return false;
      return true;
    },
    find(fn) {
      callable(fn, 'find');
      let i = 0;
      for (const v of iterable(this)) if (fn(v, i++)) return v;
      return undefined;
    },
  };
  for (const [name, value] of Object.entries(helpers)) {
    Object.defineProperty(IteratorPrototype, name, { value, writable: true, configurable: true, enumerable: false });
  }
}

let installed = false;

/**
 * Installs `WebSocket`, `WebSocketPair` and the 101-capable `Response` on
 * globalThis, and the iterator helpers where Node lacks them (once).
 */
function installGlobals() {
  if (installed) return;
  installed = true;
  installIteratorHelpers();
  for (const [name, value] of Object.entries({ WebSocket, WebSocketPair, Response })) {
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
  }
}

module.exports = { installGlobals, Response, webSocketOf };
