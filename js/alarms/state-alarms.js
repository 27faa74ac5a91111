'use strict';
// A worker's alarms and schedules as `this.state` offers them: installed on
// DurableState (../state/resident-state.js), reaching its internals through
// the state's runtime view.
const { randomUUID } = require('node:crypto');
const { checkAlarmName, alarmTime } = require('../api/rules');
const { encode, decode, TAG_V8 } = require('../state/codec');
const { Schedules } = require('./schedules');
const { SYSTEM } = require('./clock');

/** @type {(state: object) => object} DurableState.runtimeOf, once installed */
let runtimeOf = null;

/** The schedules of `state` (a DurableState) over its alarms, made on first use. */
function schedulesOf(state) {
  const rt = runtimeOf(state);
  return (rt.schedules ??= new Schedules({
    who: () => rt.who(),
    methods: () => rt.methods,
    set: (name, at) => rt.alarmWrites('schedule()').set(name, at),
    remove: (name) => rt.alarmWrites('cancelSchedule()').delete(name),
    entries: () => rt.alarms.entries(),
    encode: (value) => encode(value, () => `${rt.who()}: a schedule's arguments`).toString('base64'),
    decode: (text) => decode(TAG_V8, Buffer.from(text, 'base64'), () => `${rt.who()}: a schedule`),
    newId: randomUUID,
    now: () => (rt.clock ?? SYSTEM).now(),
  }));
}

/** @param {typeof import('../state/resident-state').DurableState} DurableState */
function installAlarms(DurableState) {
  runtimeOf = (state) => DurableState.runtimeOf(state);
  const who = (state) => runtimeOf(state).who();

  Object.assign(DurableState.prototype, {
    /**
     * Sets alarm `name` (the unnamed one by default) to fire at `at`. Resolves
     * once it is on disk and findable. Three writes, in an order that leaves the
     * catalog's index early, never late, whatever crashes between them.
     * @param {number | Date} at epoch milliseconds
     * @param {{ name?: string }} [options]
     */
    async setAlarm(at, { name = '' } = {}) {
      const when = alarmTime(() => who(this), at);
      checkAlarmName(() => who(this), name);
      await runtimeOf(this).alarmWrites('setAlarm()').set(name, when);
    },

    /**
     * The time alarm `name` is set for, or null. Inside `alarm()`, the alarm
     * firing reads as cleared until the handler sets it again.
     * @param {string} [name]
     */
    getAlarm(name = '') {
      checkAlarmName(() => who(this), name);
      return runtimeOf(this).alarms.time(name);
    },

    /** Removes alarm `name` (the unnamed one by default). */
    async deleteAlarm(name = '') {
      checkAlarmName(() => who(this), name);
      await runtimeOf(this).alarmWrites('deleteAlarm()').delete(name);
    },

    /**
     * Calls `method(...args)` of this worker at `when` (a Date or epoch ms),
     * `{ every: '15m' }` or `{ cron: '0 9 * * 1-5', tz: 'Europe/Paris' }`,
     * through its mailbox, at least once per slot. The arguments are kept as a
     * structured clone. Resolves to the schedule's id once it is on disk.
     * @param {number | Date | { every: string } | { cron: string, tz?: string }} when
     * @param {string} method
     * @param {...unknown} args
     * @returns {Promise<string>}
     */
    schedule(when, method, ...args) {
      return schedulesOf(this).add(when, method, args);
    },

    /** Every schedule of this worker, soonest first: `{ id, method, args, next, attempt, at | every | cron, tz }`. */
    schedules() {
      return schedulesOf(this).list();
    },

    /**
     * Removes schedule `id`; resolves to false if there was none.
     * @param {string} id
     * @returns {Promise<boolean>}
     */
    cancelSchedule(id) {
      return schedulesOf(this).cancel(id);
    },
  });
}

module.exports = { installAlarms, schedulesOf };
