'use strict';
// The alarm scheduler: the one timer this package holds, and only while
// started.
//
// It asks the catalog for the earliest alarm among exactly the classes it was
// given (the query leaves the others out, so they are neither fired nor
// stepped over), sleeps until then, fires what is due through each worker's
// mailbox, and asks again. There is no polling loop: `alarmPoll` is only a
// ceiling on one sleep, so a clock that jumps cannot leave it asleep for ever,
// and a setAlarm earlier than its wake-up wakes it at once.
//
// Why the class list is required: a class is a value in one process's module
// graph, and whether this process is the one meant to serve it cannot be read
// off it. Guessing ("classes something has addressed") would fire alarms on a
// busy process and not on an idle one.

const { ATTACH } = require('./clock');

const PAGE = 256;
const RETRY_MIN_MS = 10;
const RETRY_MAX_MS = 1000;

class AlarmScheduler {
  #native;
  #fire;
  /** @type {Map<string, object>} class name → binding */
  #bindings;
  #names;
  #poll;
  /** @type {{ now(): number }} */
  #clock;
  #timer = null;
  /** Leaves a TestClock this scheduler attached to. */
  #detach = null;
  /** The pass running, if any. */
  #current = null;
  #wakeAt = Infinity;
  #stopped = false;
  #running = false;
  #again = false;
  /** @type {Map<string, Promise<void>>} workers whose alarms are being fired */
  #firing = new Map();
  /** Consecutive passes that found the index due but nothing to fire. */
  #stalls = 0;
  /** The start of the last firing begun: the next one's handlers wait for it. */
  #lastStarted = Promise.resolve();

  /**
   * @param {object} native the NativeHost (alarmNext, alarmDue)
   * @param {(binding: object, id: string, after: Promise<void>) => { started: Promise<void>, done: Promise<void> }} fire
   *   runs a worker's due alarms, starting its handlers once `after` resolves
   * @param {object[]} bindings the classes to serve
   * @param {number} poll ceiling on one sleep, ms
   * @param {{ now(): number }} clock what "due" is measured by (./clock.js)
   */
  constructor(native, fire, bindings, poll, clock) {
    this.#clock = clock;
    this.#native = native;
    this.#fire = fire;
    this.#bindings = new Map(bindings.map((b) => [b.name, b]));
    this.#names = [...this.#bindings.keys()];
    this.#poll = poll;
  }

  /** Serves these classes? */
  serves(name) {
    return this.#bindings.has(name);
  }

  /**
   * Starts; `forget` runs when stopped. What startAlarms() resolves to.
   * @returns {{ stop(): Promise<void> }}
   */
  start(forget) {
    this.#detach = this.#clock[ATTACH]?.(() => this.settle()) ?? null;
    this.#pass();
    return {
      stop: async () => {
        forget();
        await this.stop();
      },
    };
  }

  /** An alarm was set for `at`: wake earlier than planned if need be. */
  wake(at) {
    if (!this.#stopped && at < this.#wakeAt) this.#sleepUntil(at);
  }

  /**
   * Fires everything due now and resolves once it has run and nothing more
   * is due (a TestClock's advance). A worker whose due alarms cannot be fired
   * (its file will not open) is given up on after a few passes.
   */
  async settle() {
    for (let pass = 0; pass < 16 && !this.#stopped; pass++) {
      await this.#pass();
      await Promise.allSettled([...this.#firing.values()]);
      if (this.#firing.size > 0) continue;
      const next = await this.#native.alarmNext(this.#names);
      if (next === null || next > this.#clock.now()) return;
    }
  }

  /** Stops: no more firings start; resolves when those under way are done. */
  async stop() {
    this.#stopped = true;
    this.#detach?.();
    clearTimeout(this.#timer);
    this.#timer = null;
    await Promise.allSettled(this.#firing.values());
  }

  #sleepUntil(at) {
    clearTimeout(this.#timer);
    const now = this.#clock.now();
    this.#wakeAt = Math.min(at, now + this.#poll);
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#wakeAt = Infinity;
        this.#pass();
      },
      Math.max(0, this.#wakeAt - now),
    );
  }

  /** One look at the index: fire what is due, then sleep until the next. Resolves when the look (not the firings) is done. */
  #pass() {
    if (this.#stopped) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#current;
    }
    this.#running = true;
    this.#current = this.#look();
    return this.#current;
  }

  async #look() {
    try {
      do {
        this.#again = false;
        const due = await this.#native.alarmDue(this.#names, this.#clock.now(), PAGE);
        let started = 0;
        // Workers open in parallel; each one's handlers wait for the previous
        // (earlier-due) one's to start, so alarms due together run in time order.
        let previous = this.#lastStarted;
        for (let i = 0; i < due.ids.length && !this.#stopped; i++) {
          const key = `${due.classes[i]}\u0000${due.ids[i]}`;
          if (this.#firing.has(key)) continue;
          started++;
          const firing = this.#fire(this.#bindings.get(due.classes[i]), due.ids[i], previous);
          previous = firing.started;
          const done = firing.done
            .catch(() => {})
            .finally(() => {
              this.#firing.delete(key);
              this.#pass();
            });
          this.#firing.set(key, done);
        }
        this.#lastStarted = previous;
        if (this.#stopped) return;
        if (due.ids.length === PAGE && started > 0) {
          this.#again = true;
          continue;
        }
        const next = await this.#native.alarmNext(this.#names);
        if (this.#stopped) return;
        if (next === null) {
          this.#stalls = 0;
          this.#sleepUntil(Infinity);
        } else if (next > this.#clock.now()) {
          this.#stalls = 0;
          this.#sleepUntil(next);
        } else if (this.#firing.size > 0) {
          // Due and being fired: its firing's end starts the next pass.
          this.#sleepUntil(this.#clock.now() + this.#poll);
        } else {
          // Due and not fired (it became due a moment ago, or a worker cannot
          // open): look again soon, more slowly each time it repeats.
          this.#stalls++;
          this.#sleepUntil(this.#clock.now() + Math.min(RETRY_MIN_MS * 2 ** (this.#stalls - 1), RETRY_MAX_MS));
        }
      } while (this.#again && !this.#stopped);
    } catch (err) {
      // The catalog refused (the host closing, a disk error): try again later.
      if (!this.#stopped) this.#sleepUntil(this.#clock.now() + RETRY_MAX_MS);
    } finally {
      this.#running = false;
    }
  }
}

/** startAlarms()'s `classes`, checked. */
function servedClasses(classes) {
  if (!Array.isArray(classes) || classes.length === 0) {
    throw new TypeError('startAlarms({ classes }): classes must be a non-empty array of DurableWorker classes, the ones this process serves');
  }
  return classes;
}

module.exports = { AlarmScheduler, servedClasses };
