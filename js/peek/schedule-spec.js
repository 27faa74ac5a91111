'use strict';
// Schedule specs: `every <interval>`, the interval in the grammar a worker's
// `state.schedule({ every })` takes (../alarms/interval.js), nothing else.
// A cron-like grammar would promise calendar semantics (time zones, "the 1st
// of the month") that Peek's adapters do not all have; an interval is
// exactly what an alarm can keep.
const { codes, peekError } = require('./errors');
const { intervalMs, nextAfter } = require('../alarms/interval');

/**
 * The interval of a schedule spec, in ms.
 * @param {unknown} spec e.g. 'every 15m'
 * @param {string} [field] how the caller names the spec in errors
 * @returns {number}
 */
function parseSchedule(spec, field = 'schedule') {
  const m = typeof spec === 'string' ? /^every (.*)$/.exec(spec.trim()) : null;
  const ms = m === null ? null : intervalMs(m[1]);
  if (ms === null) {
    throw peekError(codes.SCHEDULE, `${field}: ${JSON.stringify(spec)} is not a schedule; write "every <n><unit>" with unit s, m, h or d (e.g. "every 30s", "every 15m", "every 2h", "every 1d")`);
  }
  return ms;
}

module.exports = { parseSchedule, nextAfter };
