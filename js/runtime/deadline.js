'use strict';
// Deadlines: how long a worker's code may run before the worker is reset.
//
// A call's deadline is fixed when it starts running: its timeout (the stub's,
// else the host's `callTimeout`) from then, and never later than the deadline
// of the call it was made from, so a call chain shares its caller's budget.
// Time spent waiting in the mailbox does not count against the timeout, but a
// caller's deadline keeps running while its call waits: a call that starts
// after it has passed is refused without running.
//
// What a timeout cannot do is interrupt code that never yields: a loop that
// holds the event loop holds the timer too. On a shard the watchdog
// (shards/pool.js) kills such a loop; on the host thread nothing can.
const { DurableError, codes } = require('../api/errors');

/** No deadline: the default. */
const NONE = Infinity;
/** What `within` rejects with when a deadline passes, by the callers that need nothing else. */
const TIMED_OUT = Symbol('timed out');
/** The longest a Node timer waits; a longer deadline is reached in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The deadline of an entry starting `now`: `timeout` ms from then (none when
 * undefined), and no later than `outer`, its caller's.
 * @param {number | undefined} timeout
 * @param {number | undefined} outer
 * @param {number} [now] epoch ms (the caller's reading, so a limit it reports is the timeout itself)
 */
function deadlineOf(timeout, outer, now = Date.now()) {
  const own = timeout === undefined ? NONE : now + timeout;
  return outer === undefined ? own : Math.min(own, outer);
}

/** ERR_DURABLE_TIMEOUT: `what` (a method's call, a hook) of `who` ran `ranMs` and was cut off. */
function timeoutError(who, what, ranMs, limitMs) {
  const err = new DurableError(codes.TIMEOUT, `${who}: ${what} ran for ${ranMs} ms, past its deadline (${limitMs} ms); the worker was reset`);
  err.ranMs = ranMs;
  return err;
}

/** ERR_DURABLE_TIMEOUT for a call whose caller's deadline had passed before it could start. */
function expiredError(who, method) {
  return new DurableError(codes.TIMEOUT, `${who}: ${method}() was not started: the deadline of the call it was made from had passed while it waited`);
}

/** ERR_DURABLE_RESET for ctx.abort(reason). */
function abortError(who, reason) {
  const why = reason === undefined ? '' : `: ${reason instanceof Error ? reason.message : String(reason)}`;
  return new DurableError(codes.RESET, `${who}: reset by ctx.abort()${why}`, reason instanceof Error ? { cause: reason } : undefined);
}

/** ERR_DURABLE_RESET: something the abandoned instance of a reset worker tried (a write, a call, a send). */
function abandonedError(who, what, reset) {
  return new DurableError(codes.RESET, `${who}: ${what} refused: this instance was abandoned when the worker was reset (${reset.message})`, { cause: reset });
}

/**
 * Settles as `promise` does, or rejects with `timedOut` once `deadline`
 * (epoch ms) passes; the timer is cleared either way.
 * @template T
 * @param {Promise<T>} promise
 * @param {number} deadline
 * @param {symbol | object} timedOut what the rejection carries
 * @returns {Promise<T>}
 */
function within(promise, deadline, timedOut) {
  if (deadline === NONE) return promise;
  // One promise and one timer per call (not a Promise.race of three): the shop pays this on every call.
  return new Promise((resolve, reject) => {
    let timer;
    // A timer may fire a fraction of a millisecond early by Date.now(): it is re-armed then.
    const arm = () => (timer = setTimeout(() => (Date.now() >= deadline ? reject(timedOut) : arm()), Math.min(MAX_TIMER_MS, Math.max(0, deadline - Date.now()))));
    arm();
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

module.exports = { NONE, TIMED_OUT, deadlineOf, timeoutError, expiredError, abortError, abandonedError, within };
