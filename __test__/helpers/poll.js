'use strict';
// Waiting in tests without fixed sleeps: poll a condition up to a deadline.

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Polls `check` (sync or async) every `every` ms until it gives something truthy; throws after `ms` naming `what`. */
async function until(check, ms, what, every = 10) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await sleep(every);
  }
}

module.exports = { sleep, until };
