'use strict';
// What AsyncLocalStorage itself costs an async call, the mechanism under
// js/runtime/call-chain.js's call-chain frame: a call that runs an async function (with
// `awaits` awaits) inside `storage.run(frame, …)` and reads the frame back,
// against the same call with no AsyncLocalStorage in the process at all.
//
// Node 20 carries the store across awaits with promise hooks, which once
// enabled run for every promise in the process (a cost per await); Node 24
// keeps it in V8's AsyncContextFrame, which costs at run() (a new frame) and
// getStore(), not per await. Each variant
// runs in a fresh process (bench/child.js), since Node 20's hooks stay on once
// a store has been entered. bench/lines.js runs it on each Node line.

const { performance } = require('node:perf_hooks');
const { timed } = require('./measure');

/** Async calls per step, so the loop around them is not what is timed. */
const BATCH = 1000;

const scenarios = {
  /** Async calls per second, each inside `storage.run` (`als: true`) or plain. */
  async calls({ seconds, rounds = 3, als, awaits = 1 }) {
    let call;
    if (als) {
      const { AsyncLocalStorage } = require('node:async_hooks');
      const storage = new AsyncLocalStorage();
      const frame = { key: 'c', chain: ['c'], keys: ['c'] };
      const body = async () => {
        for (let i = 0; i < awaits; i++) await null;
        return storage.getStore() === frame ? 1 : 0;
      };
      call = () => storage.run(frame, body);
    } else {
      call = async () => {
        for (let i = 0; i < awaits; i++) await null;
        return 1;
      };
    }
    let wrong = 0;
    const started = performance.now();
    const r = await timed({
      seconds,
      rounds,
      step: async () => {
        for (let i = 0; i < BATCH; i++) if ((await call()) !== 1) wrong++;
        return BATCH;
      },
    });
    const result = { value: r.rate, unit: 'calls/s', notes: { min: r.min, max: r.max, nsPerCall: 1e9 / r.rate, wallMs: performance.now() - started } };
    if (wrong) result.warnings = [`${wrong} calls did not see their frame`];
    return result;
  },
};

module.exports = { scenarios };
