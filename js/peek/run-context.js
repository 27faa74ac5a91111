'use strict';
// The RunContext a worker's entry gets, built in one place for the host and
// for every realm (a Node run's process, a workerd isolate).

/**
 * @param {{ trigger: object, deadline: number, signal: AbortSignal }} parts
 * @returns {{ ctx: import('../../peek').RunContext, waits: Promise<unknown>[] }}
 *   `waits` collects what the entry hands to ctx.waitUntil.
 */
function makeRunContext({ trigger, deadline, signal }) {
  const waits = [];
  const ctx = Object.freeze({
    trigger,
    deadline,
    signal,
    waitUntil(p) {
      waits.push(Promise.resolve(p));
    },
  });
  return { ctx, waits };
}

module.exports = { makeRunContext };
