'use strict';
// One firing of a worker's alarms: every due alarm and schedule, earliest
// first, one after another, as one mailbox entry (runtime/live.js). An alarm
// leaves the disk only after its handler finished, so a crash mid-handler
// runs it again; a throw puts it back with its attempt count and a backoff.
// A schedule that succeeded moves to its next slot after now, or ends.
const { alarmBackoff } = require('../api/rules');
const { isScheduleName, nextTime } = require('./schedules');

/**
 * @param {import('./worker-alarms').WorkerAlarms} alarms
 * @param {{ of(name: string): { id: string, method: string, args: unknown[], when: object } } | null} schedules the state's (none: no schedule can be due)
 * @param {{ run(a: object, call: object | null): Promise<void>, failed(err: unknown, info: object): void, cut(): boolean, now(): number }} port
 *   `run` runs alarm() or the schedule's method; `cut()` says the worker was reset meanwhile; `now()` the clock's time
 * @returns {Promise<null | { name: string, attempt: number, scheduled: number, retryAt: number, error: unknown, info: object }>}
 *   the alarm a reset cut short (its retry is written on the fresh state; `info` what 'alarmFailed' says of it), or null
 */
async function fireDue(alarms, schedules, port) {
  for (const a of alarms.due(port.now())) {
    const call = isScheduleName(a.name) && schedules !== null ? schedules.of(a.name) : null;
    alarms.beginFiring(a.name);
    let error = null;
    try {
      await port.run(a, call);
    } catch (err) {
      error = err;
    }
    const attempt = a.attempt + 1;
    const info = call === null ? { name: a.name, attempt } : { schedule: call.id, method: call.method, attempt };
    if (port.cut()) return { name: a.name, attempt, scheduled: a.scheduled, retryAt: port.now() + alarmBackoff(attempt), error, info };
    const setAgain = alarms.endFiring(a.name);
    if (error === null) {
      // A schedule its own call cancelled is gone already.
      if (call !== null && alarms.has(a.name)) {
        const next = nextTime(call.when, a.scheduled, port.now());
        if (next === null) alarms.remove(a.name);
        else alarms.put(a.name, next, 0, next);
      } else if (call === null && !setAgain) alarms.remove(a.name);
    } else if (!setAgain && alarms.has(a.name)) {
      const retryAt = port.now() + alarmBackoff(attempt);
      alarms.put(a.name, retryAt, attempt, a.scheduled);
      port.failed(error, { ...info, retryAt });
    } else {
      // Set again by its handler (the retry is that), or a schedule its own call cancelled (none).
      port.failed(error, { ...info, retryAt: alarms.time(a.name) });
    }
  }
  return null;
}

/**
 * Runs what a due alarm calls on `instance`: a schedule's method, or
 * `alarm({ name, scheduledTime, retryCount })`.
 * @param {object} instance
 * @param {string} className names the class when it has no alarm()
 * @param {{ name: string, scheduled: number, attempt: number }} a
 * @param {{ method: string, args: unknown[] } | null} call the schedule's, or null for an alarm
 */
function runHandler(instance, className, a, call) {
  if (call !== null) return instance[call.method](...call.args);
  if (typeof instance.alarm !== 'function') throw new TypeError(`${className} has alarms set but no alarm() method`);
  return instance.alarm({ name: a.name, scheduledTime: a.scheduled, retryCount: a.attempt });
}

module.exports = { fireDue, runHandler };
