'use strict';
// Schedules as durable-worker alarms. One durable worker per Peek worker
// (class PeekWorker, id = the worker's name) holds its schedule and its next
// alarm, in the adapter's directory. Every run of that worker the adapter
// starts goes through this durable worker's mailbox, alarms and commands
// alike, which is what makes runs of one worker single-flight.
//
// What the alarm machinery gives, and so what the declaration states:
// - the alarm is on disk, so a schedule survives the process;
// - an alarm that fell due while no process ran fires once at start, and the
//   handler then moves to the next slot after now, so a long outage is one
//   catch-up run, not one per missed slot;
// - an alarm leaves the disk only after its handler returned, so a run cut
//   short by a crash runs again (at least once);
// - a handler that throws is fired again at 1 s, 2 s, 4 s … with the same
//   scheduledTime, which is how a failed run is retried (up to `retries`).
const { DurableWorker } = require('../../index');
const { nextAfter } = require('../schedule-spec');
const { toPlainError } = require('../errors');

/**
 * The PeekWorker class for one adapter.
 * @param {{ run: (manifestPath: string, trigger: object) => Promise<object>, retries: number }} ctl
 */
function peekWorkerClass(ctl) {
  return class PeekWorker extends DurableWorker {
    static workerName = 'peek-worker';

    /** Sets or replaces the schedule. The same spec again keeps the pending alarm (ensure, not reset). */
    async setSchedule({ manifestPath, spec, intervalMs }) {
      const current = this.state.get('schedule');
      const pending = this.state.getAlarm();
      if (current && current.spec === spec && current.manifestPath === manifestPath && pending !== null) {
        return { changed: false, next: pending };
      }
      this.state.set('schedule', { manifestPath, spec, intervalMs });
      const next = Date.now() + intervalMs;
      await this.state.setAlarm(next);
      return { changed: true, next };
    }

    /** Removes the schedule and its alarm; false if there was none. */
    async cancelSchedule() {
      const had = this.state.has('schedule');
      await this.state.deleteAll();
      return had;
    }

    /** The schedule and its next due time, or null. */
    schedule() {
      const s = this.state.get('schedule');
      return s ? { ...s, next: this.state.getAlarm() } : null;
    }

    /** A run for a trigger from outside the schedule (a command, a wake): queued behind any running one. */
    async dispatch(manifestPath, trigger) {
      const result = await ctl.run(manifestPath, trigger);
      return result.ok ? result : { ok: false, error: toPlainError(result.error), ms: result.ms };
    }

    async alarm({ scheduledTime, retryCount }) {
      const s = this.state.get('schedule');
      if (!s) return;
      const result = await ctl.run(s.manifestPath, { kind: 'schedule', scheduledFor: scheduledTime });
      // Throwing hands the retry to the alarm: it comes back with a backoff
      // and the same scheduledTime. After the last retry, move on.
      if (!result.ok && retryCount < ctl.retries) throw result.error;
      await this.state.setAlarm(nextAfter(scheduledTime, s.intervalMs, Date.now()));
    }
  };
}

module.exports = { peekWorkerClass };
