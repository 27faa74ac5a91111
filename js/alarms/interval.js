'use strict';
// The interval grammar of schedules, one for both users of it: a worker's
// `state.schedule({ every: '15m' }, …)` and Peek's `every 15m` specs.
// `<n><unit>`, n a whole number from 1 to 999999, unit s, m, h or d. No
// Node builtins: it runs on workerd too.

const UNIT_MS = Object.freeze({ s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 });
const INTERVAL = /^([1-9][0-9]{0,5})([smhd])$/;

/** The interval `text` names, in ms, or null if it is not one. */
function intervalMs(text) {
  const m = typeof text === 'string' ? INTERVAL.exec(text) : null;
  return m === null ? null : Number(m[1]) * UNIT_MS[m[2]];
}

/**
 * The first time on the grid `from + k·interval` (k ≥ 1) that is after `now`.
 * A schedule that missed several due times while nothing ran resumes on its
 * own grid, once, instead of replaying every missed slot.
 */
function nextAfter(from, interval, now) {
  if (now < from + interval) return from + interval;
  const k = Math.floor((now - from) / interval) + 1;
  return from + k * interval;
}

module.exports = { intervalMs, nextAfter };
