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
//   scheduledTime, which is how a failed run is retried (up to `retries`);
// - a run that broke the realm protocol (ERR_PEEK_PROTOCOL) is not retried:
//   that is the worker's doing, not bad luck;
// - a schedule whose slots keep failing backs off: after the second failed
//   slot in a row the next run waits 1, 3, 7 … more intervals (capped at
//   BACKOFF_CAP_MS), so a crashing worker costs a run now and then, not a
//   crash loop; one run that succeeds ends the backoff.
const { DurableWorker } = require('../../index');
const { nextAfter } = require('../schedule-spec');
const { codes, toPlainError } = require('../errors');

/** The longest a failing schedule's backoff adds before its next slot. */
const BACKOFF_CAP_MS = 10 * 60_000;
/** Failures a retry does not help. */
const NO_RETRY = new Set([codes.PROTOCOL]);

/** Added wait before the next slot after `failures` failed slots in a row. */
function backoffMs(failures, intervalMs) {
  if (failures < 2) return 0;
  return Math.min(intervalMs * (2 ** Math.min(failures - 1, 30) - 1), BACKOFF_CAP_MS);
}

/**
 * The PeekWorker class for one adapter.
 * @param {{ run: (manifestPath: string, trigger: object) => Promise<object>, retries: number, log?: (record: object) => void }} ctl
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
      if (!result.ok && retryCount < ctl.retries && !NO_RETRY.has(result.error?.code)) throw result.error;
      const failures = result.ok ? 0 : (this.state.get('failures') ?? 0) + 1;
      if (failures > 0) this.state.set('failures', failures);
      else if (this.state.has('failures')) this.state.delete('failures');
      const wait = backoffMs(failures, s.intervalMs);
      const next = nextAfter(scheduledTime, s.intervalMs, Date.now() + wait);
      if (wait > 0) {
        ctl.log?.({
          level: 'warn',
          worker: this.id,
          args: [`${failures} scheduled runs in a row failed (last: ${result.error?.code ?? result.error?.message}); backing off, next run ${new Date(next).toISOString()}`],
        });
      }
      await this.state.setAlarm(next);
    }
  };
}

module.exports = { peekWorkerClass, backoffMs, BACKOFF_CAP_MS };
