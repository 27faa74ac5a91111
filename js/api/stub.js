'use strict';
// A stub: the caller's handle on a worker. Every property is a method that
// returns a Promise; the call is checked and queued by the host. A stub is not
// thenable (`then` is undefined), so `await stub` gives the stub back.

const inspect = Symbol.for('nodejs.util.inspect.custom');

/**
 * @param {(method: string, args: unknown[]) => Promise<unknown>} call
 * @param {string} who the worker's label
 */
function makeStub(call, who) {
  const methods = new Map();
  const target = Object.create(null);
  return new Proxy(target, {
    get(_, prop) {
      if (prop === inspect) return () => `[stub ${who}]`;
      if (typeof prop === 'symbol' || prop === 'then') return undefined;
      let fn = methods.get(prop);
      if (fn === undefined) {
        fn = (...args) => call(prop, args);
        methods.set(prop, fn);
      }
      return fn;
    },
    has() {
      return false;
    },
    set() {
      return false;
    },
  });
}

module.exports = { makeStub };
