'use strict';
// Schedule specs: `every <n><unit>` with unit s, m, h or d, nothing else.
// A cron-like grammar would promise calendar semantics (time zones, "the 1st
// of the month") that an alarm-based scheduler does not have; an interval is
// exactly what an alarm can keep.
const { codes, peekError } = require('./errors');

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SPEC = /^every ([1-9][0-9]{0,5})([smhd])$/;

/**
 * The interval of a schedule spec, in ms.
 * @param {unknown} spec e.g. 'every 15m'
 * @param {string} [field] how the caller names the spec in errors
 * @returns {number}
 */
function parseSchedule(spec, field = 'schedule') {
  const m = typeof spec === 'string' ? SPEC.exec(spec.trim()) : null;
  if (m === null) {
    throw peekError(codes.SCHEDULE, `${field}: ${JSON.stringify(spec)} is not a schedule; write "every <n><unit>" with unit s, m, h or d (e.g. "every 30s", "every 15m", "every 2h", "every 1d")`);
  }
  return Number(m[1]) * UNIT_MS[m[2]];
}

/**
 * The first time on the grid `from + k·interval` (k ≥ 1) that is after `now`.
 * A schedule that missed several due times while nothing ran resumes on its
 * own grid, once, instead of replaying every missed slot.
 */
function nextAfter(from, intervalMs, now) {
  if (now < from + intervalMs) return from + intervalMs;
  const k = Math.floor((now - from) / intervalMs) + 1;
  return from + k * intervalMs;
}

module.exports = { parseSchedule, nextAfter };
