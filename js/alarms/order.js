'use strict';
// Alarms due together start in time order across workers: a worker's firing
// waits for the firing of the earlier-due one to start, but not for ever.

/**
 * How long a worker's alarm firing waits for the firing of an earlier-due
 * alarm of another worker to start: long enough for that worker's file to
 * open on a loaded machine (50 ms was not), short enough that a worker busy
 * with a long call holds the others up for a second at most.
 */
const ORDER_WAIT_MS = 1000;

/** Resolves when `promise` does or `ms` have passed, whichever is first. */
function waitAtMost(promise, ms) {
  let timer;
  return Promise.race([promise, new Promise((r) => (timer = setTimeout(r, ms)))]).finally(() => clearTimeout(timer));
}

module.exports = { ORDER_WAIT_MS, waitAtMost };
