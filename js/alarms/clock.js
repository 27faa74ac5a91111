'use strict';
// The time alarms and schedules run on. The system clock in production; in a
// user's tests a TestClock, which runs with real time and can be moved
// forward: advance() fires what fell due as one step and resolves when it has
// run and committed, so a test of "the reminder goes out at 9:00" takes no
// wall time and has no race.

/** The system clock. */
const SYSTEM = Object.freeze({ now: () => Date.now() });

/** How a host's alarm schedulers join a TestClock (internal, not API). */
const ATTACH = Symbol('durable-workers.clock.attach');

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration: ms, or a string such as '90s', '15m', '1h', '7d'. */
function durationMs(v) {
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(v) : null;
  const ms = typeof v === 'number' ? v : m ? Number(m[1]) * UNITS[m[2]] : NaN;
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`TestClock: a duration is ms ≥ 0 or a string such as '15m', '1h', '7d', got ${JSON.stringify(v)}`);
  return ms;
}

/**
 * A clock for tests: the system's time plus an offset that only grows.
 * Hand it to `open({ clock })`; alarms and schedules then fall due by it.
 */
class TestClock {
  #offset = 0;
  /** @type {Set<() => Promise<void>>} what each attached scheduler does to fire what is due now */
  #settlers = new Set();

  /** @param {{ at?: number | Date }} [options] `at`: the time the clock reads now (default: the system's) */
  constructor({ at } = {}) {
    if (at !== undefined) {
      const ms = at instanceof Date ? at.getTime() : at;
      if (typeof ms !== 'number' || !Number.isFinite(ms)) throw new TypeError(`TestClock({ at }): at is a Date or epoch ms, got ${String(at)}`);
      this.#offset = ms - Date.now();
    }
  }

  /** Epoch ms by this clock. */
  now() {
    return Date.now() + this.#offset;
  }

  /**
   * Moves the clock forward by `by` (ms or '15m', '1h', '1d'…) and fires every
   * alarm and schedule now due, of the classes each host's startAlarms()
   * serves, earliest first; resolves once they have run and committed. A
   * recurring schedule that missed several slots runs once, as after an
   * outage. `advance(0)` fires what is due without moving.
   * @param {number | string} by
   */
  async advance(by) {
    this.#offset += durationMs(by);
    for (const settle of this.#settlers) await settle();
  }

  /** @internal a host's scheduler: `settle()` fires what is due and resolves when it is done. Returns the detach. */
  [ATTACH](settle) {
    this.#settlers.add(settle);
    return () => this.#settlers.delete(settle);
  }
}

/** open()'s `clock`: the system's, or a TestClock. */
function checkClock(clock) {
  if (clock === undefined) return SYSTEM;
  if (!(clock instanceof TestClock)) throw new TypeError('open(): clock must be a TestClock (require("durable-workers").TestClock)');
  return clock;
}

module.exports = { TestClock, SYSTEM, ATTACH, checkClock };
