'use strict';
// Peek's schedules, on the package's own, for both adapters: one durable
// worker per Peek worker (class PeekWorker, id = the worker's name) holds its
// manifest path and a `state.schedule({ every })` that calls `tick` on the
// interval's grid. On Node it lives in the adapter's directory; on workerd it
// is a Durable Object of the gateway (toDurableObject). Every run of that
// worker the adapter starts goes through this durable worker's mailbox,
// schedules and commands alike, which is what makes runs of one worker
// single-flight.
//
// What the schedule primitive gives (js/alarms/schedules.js), and so what the
// declaration states:
// - the schedule is on disk, so it survives the process;
// - slots that fell due while no process ran are one run at start, and the
//   grid then resumes after now, so a long outage is one catch-up run;
// - a slot leaves the disk only after `tick` returned, so a run cut short by
//   a crash runs again (at least once);
// - a `tick` that throws is called again at 1 s, 2 s, 4 s … for the same slot,
//   which is how a failed run is retried (up to `retries`);
// - a run that broke the realm protocol (ERR_PEEK_PROTOCOL) is not retried:
//   that is the worker's doing, not bad luck;
// - a schedule whose slots keep failing backs off: after the second failed
//   slot in a row the slots of the next 1, 3, 7 … intervals (capped at
//   BACKOFF_CAP_MS) are skipped, so a crashing worker costs a run now and
//   then, not a crash loop; one run that succeeds ends the backoff.
//
// On workerd the run goes to the host over the hub's socket, and there may be
// no host connected (the adapter stopped): `run` answers { noHost: true }. The
// slot is then kept as `waiting`, later slots fold into it, and `wake()` (the
// hub calls it when a host connects) runs it once, as a one-off schedule.
const { DurableWorker } = require('../index');
const { nextAfter } = require('./schedule-spec');
const { codes, peekError, toPlainError, fromPlainError } = require('./errors');

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
 * @param {{ run: (name: string, manifestPath: string, trigger: object) => Promise<object>, retries: number, log?: (record: object) => void }} ctl
 *   `run` answers a run's result, or { noHost: true } when nobody can run it now (workerd without a host)
 */
function peekWorkerClass(ctl) {
  return class PeekWorker extends DurableWorker {
    static workerName = 'peek-worker';

    /** Sets or replaces the schedule. The same spec again keeps the pending slot (ensure, not reset). */
    async setSchedule({ manifestPath, spec, intervalMs }) {
      const current = this.state.get('schedule');
      const mine = this.#mine();
      if (current && current.spec === spec && current.manifestPath === manifestPath && mine !== null) {
        return { changed: false, next: this.#next(mine) };
      }
      if (mine !== null) await this.state.cancelSchedule(mine.id);
      await this.state.deleteAlarm(); // the slot alarm of a directory made before schedules
      this.state.set('schedule', { manifestPath, spec, intervalMs });
      if (this.state.has('backoffUntil')) this.state.delete('backoffUntil');
      await this.state.schedule({ every: spec.replace(/^every /, '') }, 'tick');
      return { changed: true, next: this.#next(this.#mine()) };
    }

    /** Removes the schedule; false if there was none. */
    async cancelSchedule() {
      const had = this.state.has('schedule');
      await this.state.deleteAll(); // the schedule entries too
      return had;
    }

    /** The schedule and its next due time, or null. */
    schedule() {
      const s = this.state.get('schedule');
      if (!s) return null;
      const mine = this.#mine();
      return { ...s, next: mine === null ? this.state.getAlarm() : this.#next(mine) };
    }

    /** A run for a trigger from outside the schedule (a command, a wake): queued behind any running one. */
    async dispatch(manifestPath, trigger) {
      const result = await ctl.run(this.id, manifestPath, trigger);
      if (result.noHost) return { ok: false, error: toPlainError(noHost(this.id)), ms: 0 };
      return result.ok ? result : { ok: false, error: toPlainError(result.error), ms: result.ms };
    }

    /** A host is back: the slot that found none runs now, once. */
    async wake() {
      const slot = this.state.get('waiting');
      if (slot === undefined) return;
      this.state.delete('waiting');
      await this.state.schedule(Date.now(), 'catchUp', slot);
    }

    /** The run of a slot that found no host (a one-off schedule made by wake). */
    async catchUp(slot) {
      const s = this.state.get('schedule');
      const entry = this.state.schedules().find((x) => x.method === 'catchUp');
      if (s) await this.#run(s, slot, entry?.attempt ?? 0);
    }

    /** One slot of the schedule (the schedule's own call; `slot` and `attempt` are its entry's). */
    async tick() {
      const s = this.state.get('schedule');
      const mine = this.#mine();
      if (!s || mine === null) return;
      await this.#run(s, mine.slot, mine.attempt);
    }

    /** The slot alarm of a directory made before schedules: runs that slot, then the schedule takes over. */
    async alarm({ scheduledTime, retryCount }) {
      const s = this.state.get('schedule');
      if (!s) return;
      await this.#run(s, scheduledTime, retryCount);
      if (this.#mine() === null) await this.state.schedule({ every: s.spec.replace(/^every /, '') }, 'tick');
    }

    async #run(s, slot, retryCount) {
      // Backing off: the slots before `backoffUntil` are skipped (a retry of a slot already run is not).
      const until = this.state.get('backoffUntil');
      if (until !== undefined && retryCount === 0 && slot < until) return;
      const result = await ctl.run(this.id, s.manifestPath, { kind: 'schedule', scheduledFor: slot });
      if (result.noHost) {
        // The earliest missed slot is the one that runs (as after a restart on Node).
        if (!this.state.has('waiting')) this.state.set('waiting', slot);
        return;
      }
      // Throwing hands the retry to the schedule: it comes back with a backoff
      // and the same slot. After the last retry, move on.
      if (!result.ok && retryCount < ctl.retries && !NO_RETRY.has(result.error?.code)) {
        throw result.error instanceof Error ? result.error : fromPlainError(result.error);
      }
      const failures = result.ok ? 0 : (this.state.get('failures') ?? 0) + 1;
      if (failures > 0) this.state.set('failures', failures);
      else if (this.state.has('failures')) this.state.delete('failures');
      const wait = backoffMs(failures, s.intervalMs);
      if (wait > 0) {
        const next = nextAfter(slot, s.intervalMs, Date.now() + wait);
        this.state.set('backoffUntil', next);
        ctl.log?.({
          level: 'warn',
          worker: this.id,
          args: [`${failures} scheduled runs in a row failed (last: ${result.error?.code ?? result.error?.message}); backing off, next run ${new Date(next).toISOString()}`],
        });
      } else if (this.state.has('backoffUntil')) {
        this.state.delete('backoffUntil');
      }
    }

    /** This worker's schedule entry, or null. */
    #mine() {
      return this.state.schedules().find((x) => x.method === 'tick') ?? null;
    }

    /** When the next run happens: the next slot, or the end of a backoff. */
    #next(mine) {
      const until = this.state.get('backoffUntil');
      return until !== undefined && mine.attempt === 0 && until > mine.next ? until : mine.next;
    }
  };
}

function noHost(name) {
  return peekError(codes.CLOSED, `no host is connected to run ${name} (start the adapter)`);
}

module.exports = { peekWorkerClass, backoffMs, BACKOFF_CAP_MS };
