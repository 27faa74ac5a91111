'use strict';
// Alarms of the Durable Objects of one host: when each fires, its retries,
// and the catalog's alarm index that finds them after a restart.
//
// The object's file is the truth (`_cf_METADATA`, one alarm per object);
// the catalog's index keeps one entry per object (class `do.<Class>`, id the
// 64-hex id) so that due alarms are found without opening every file. No
// transaction spans the two files, so the order of the writes is the design,
// as for DurableWorker alarms (../alarms/index-writes.js): the index moves
// earlier when the app sets an alarm (the object's output gate waits for
// it), and only then is the object's commit written (./turns.js,
// commitAfter), then the index is set exactly once that commit is durable.
// A crash leaves the index early, never late; an early entry costs one wake
// that finds nothing due and puts the entry right.
//
// Retries (plan §2.7): a handler that throws runs again after
// `retryMs << retryCount` plus up to 25 % jitter, at most 6 times, then the
// alarm is deleted. The retry's time lives in the index only (the file keeps
// the alarm as set) and the counts in memory, as workerd keeps them: after a
// restart a pending retry runs once more with retryCount 0.
//
// This is a server's timer: it is unref'd, so a host nobody closed does not
// keep the process alive, and `stop()` clears it.

// The host's own timers: never counted as an object's (./timers.js).
const { setTimeout, clearTimeout } = require('node:timers');
const { kAlarmActor } = require('./namespace');

const PAGE = 256;
const MAX_RETRIES = 6;
/** Ceiling on one sleep: a clock that jumps cannot leave the host asleep for ever. */
const POLL_MS = 60_000;
/** Wait before asking again when the catalog refused or an alarm stayed due. */
const STALL_MS = 1000;

class ObjectAlarms {
  #native;
  /** @type {Map<string, Array<import('./namespace').DurableObjectNamespace>>} catalog class → its namespaces */
  #namespaces;
  #classes;
  #retryMs;
  #timer = null;
  #wakeAt = Infinity;
  #stopped = false;
  #running = false;
  #again = false;
  /** The pass under way: stop() waits for it, as it reads the catalog. */
  #passing = Promise.resolve();
  /** @type {Map<string, Promise<void>>} objects whose alarm is running */
  #firing = new Map();
  /** @type {Map<string, number>} the retryCount of each object's next attempt, once one threw */
  #retries = new Map();
  /** @type {Map<string, Promise<void>>} each object's index writes, in order */
  #chains = new Map();

  /**
   * @param {object} native the NativeHost (alarmEarlier, alarmExact, alarmNext, alarmDue)
   * @param {Map<string, object[]>} namespaces each catalog class (`do.<Class>`) → its namespaces (bindings)
   * @param {{ retryMs: number }} o retryMs: the first retry's delay
   */
  constructor(native, namespaces, o) {
    this.#native = native;
    this.#namespaces = namespaces;
    this.#classes = [...namespaces.keys()];
    this.#retryMs = o.retryMs;
  }

  /** Fires what is due now (alarms left by an earlier run), then sleeps until the next. */
  start() {
    this.#pass();
  }

  /**
   * The app set an alarm (`byApp`): the first write, before the object's
   * commit; or an object opened with an alarm in its file, which the index
   * may lack after a crash. Resolves when the index entry is no later than `at`.
   * @param {string} cls catalog class
   * @param {string} hex object id
   * @param {number} at
   * @param {boolean} [byApp] true: the commit that follows wakes the host; false: wake it now
   */
  earlier(cls, hex, at, byApp = true) {
    if (byApp) this.#retries.delete(key(cls, hex));
    return this.#chain(cls, hex, async () => {
      await this.#native.alarmEarlier(cls, hex, at);
      if (!byApp) this.#wake(at);
    });
  }

  /**
   * The object's alarm is durable as `at` (null: none): the last write. A
   * change by the app forgets the retries of the alarm it replaced, as
   * workerd skips a retry in favour of a newly queued alarm.
   * @param {string} cls
   * @param {string} hex
   * @param {number | null} at
   * @param {boolean} byApp
   */
  exact(cls, hex, at, byApp) {
    if (byApp) this.#retries.delete(key(cls, hex));
    return this.#chain(cls, hex, async () => {
      await this.#native.alarmExact(cls, hex, at);
      if (at !== null) this.#wake(at);
    });
  }

  /** Stops: no more firings start; resolves when those under way and the index writes are done. */
  async stop() {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = null;
    await this.#passing;
    await Promise.allSettled(this.#firing.values());
    await this.drain();
  }

  /** Resolves when the index writes asked for so far are done. */
  async drain() {
    while (this.#chains.size > 0) await Promise.allSettled([...this.#chains.values()]);
  }

  /** Index writes of one object run in the order they were asked for. */
  #chain(cls, hex, write) {
    const k = key(cls, hex);
    const next = (this.#chains.get(k) ?? Promise.resolve()).then(write).catch(() => {
      // The catalog refused (the host closing, a disk error): the index stays
      // early or stale, and a later pass puts it right.
    });
    this.#chains.set(k, next);
    next.finally(() => {
      if (this.#chains.get(k) === next) this.#chains.delete(k);
    });
    return next;
  }

  #wake(at) {
    if (this.#stopped) return;
    // A pass under way may have read the index before this write: it looks again.
    if (this.#running) this.#again = true;
    else if (at < this.#wakeAt) this.#sleepUntil(at);
  }

  #sleepUntil(at) {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    const now = Date.now();
    this.#wakeAt = Math.min(at, now + POLL_MS);
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#wakeAt = Infinity;
        this.#pass();
      },
      Math.max(0, this.#wakeAt - now),
    );
    this.#timer.unref();
  }

  /** One look at the index: start what is due, then sleep until the next. */
  #pass() {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    this.#passing = this.#look();
  }

  async #look() {
    try {
      do {
        this.#again = false;
        const due = await this.#native.alarmDue(this.#classes, Date.now(), PAGE);
        let started = 0;
        for (let i = 0; i < due.ids.length && !this.#stopped; i++) {
          const k = key(due.classes[i], due.ids[i]);
          if (this.#firing.has(k)) continue;
          started++;
          const done = this.#fire(due.classes[i], due.ids[i]).finally(() => {
            this.#firing.delete(k);
            this.#pass();
          });
          this.#firing.set(k, done);
        }
        if (this.#stopped) return;
        if (due.ids.length === PAGE && started > 0) {
          this.#again = true;
          continue;
        }
        const next = await this.#native.alarmNext(this.#classes);
        if (next === null || next === undefined) this.#sleepUntil(Infinity);
        else if (next > Date.now()) this.#sleepUntil(next);
        // Due: being fired (its end starts the next pass), or it became due
        // a moment ago.
        else this.#sleepUntil(Date.now() + (this.#firing.size > 0 ? POLL_MS : 10));
      } while (this.#again && !this.#stopped);
    } catch {
      this.#sleepUntil(Date.now() + STALL_MS);
    } finally {
      this.#running = false;
    }
  }

  /** Runs one object's due alarm, then schedules its retry or indexes what its file now holds. */
  async #fire(cls, hex) {
    const k = key(cls, hex);
    const actor = actorOf(this.#namespaces.get(cls), hex);
    if (actor === null) {
      // Not an id of any namespace of the class (its unique key changed): nothing can run it.
      await this.exact(cls, hex, null, false);
      return;
    }
    const retryCount = this.#retries.get(k) ?? 0;
    let r;
    try {
      r = await actor.fireAlarm(retryCount);
    } catch {
      // The object broke (a failed commit, abort()): counted as a throw.
      r = { state: 'threw', changed: false, at: null, alarm: null };
    }
    if (r.state === 'threw' && !r.changed) {
      if (retryCount < MAX_RETRIES) {
        this.#retries.set(k, retryCount + 1);
        const delay = this.#retryMs * 2 ** retryCount;
        await this.exact(cls, hex, Date.now() + delay + Math.random() * delay * 0.25, false);
        return;
      }
      // Given up: the alarm is deleted, as workerd deletes it.
      this.#retries.delete(k);
      try {
        // Looked up again: the instance that fired may have left memory since.
        r.alarm = await actorOf(this.#namespaces.get(cls), hex).dropAlarm(r.at);
      } catch {
        r.alarm = null;
      }
    }
    this.#retries.delete(k);
    await this.exact(cls, hex, r.alarm, false);
  }
}

/** The object `hex` of whichever namespace made it, or null. */
function actorOf(namespaces, hex) {
  for (const ns of namespaces) {
    try {
      return ns[kAlarmActor](hex);
    } catch {
      // Another namespace's id: its MAC differs.
    }
  }
  return null;
}

function key(cls, hex) {
  return `${cls}\u0000${hex}`;
}

module.exports = { ObjectAlarms, MAX_RETRIES };
