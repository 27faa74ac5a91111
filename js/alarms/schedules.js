'use strict';
// Schedules: "call `method(...args)` at this time, every interval, or on this
// cron grid", durable, on the alarm index.
//
// A schedule is a named alarm. Its name is reserved (it starts with NUL, which
// no alarm name a worker sets may) and carries what the schedule is, encoded
// once when it is made: `\0<id>\0<payload>`, the payload being the method,
// the arguments and the `when`, as a structured clone in base64 (wire text on
// Cloudflare). What changes as it runs (its next time, its attempt count, the
// slot a retry is for) is the alarm's own columns. So a schedule is written,
// indexed, fired, retried and deleted exactly as an alarm is, in the same
// commit as the writes around it, on every host, with no storage of its own;
// the alarm index keeps it early, never late.
//
// Firing (runtime/live.js, cloudflare/runtime.js): a due schedule calls its
// method through the worker's mailbox like an alarm handler, with its
// deadline and the alarm retry policy (a throw retries the same slot at 1 s,
// 2 s, 4 s …). A recurring one then moves to its next slot after now, so a
// slot missed while no process ran is run once, not once per missed slot.
// Cron expressions are parsed by croner, in the schedule's time zone.
const { DurableError, codes } = require('../api/errors');
const { intervalMs, nextAfter } = require('./interval');

const MARK = '\u0000';
/** Most characters a schedule's payload may take as stored (base64 of the clone on Node, wire text on Cloudflare). */
const MAX_PAYLOAD = 64 * 1024;

let Cron = null;
/** croner, loaded on the first cron schedule. */
function cron(expr, tz, who) {
  Cron ??= require('croner').Cron;
  try {
    // UTC unless told: the process's own zone would move a schedule with the machine's TZ.
    const c = new Cron(expr, { timezone: tz ?? 'UTC', paused: true });
    if (c.nextRun() === null) throw new Error('it never fires'); // a zone that does not exist fails here too
    return c;
  } catch (err) {
    throw new DurableError(codes.NAME, `${who}: schedule({ cron: ${JSON.stringify(expr)}${tz ? `, tz: ${JSON.stringify(tz)}` : ''} }): ${err.message}`, { cause: err });
  }
}

/** Whether an alarm name is a schedule's (reserved: a worker's own alarm names may not start with NUL). */
function isScheduleName(name) {
  return name.charCodeAt(0) === 0;
}

/**
 * `schedule(when, …)`'s `when`, checked: a time (a Date or epoch ms),
 * `{ after }` (an interval from `now`), `{ every }` or `{ cron, tz? }`.
 * Returns the form stored with the schedule (`{ after }` becomes `{ at }`).
 * @returns {{ at: number } | { every: string } | { cron: string, tz?: string }}
 */
function checkWhen(who, when, now) {
  if (when instanceof Date || typeof when === 'number') {
    const at = when instanceof Date ? when.getTime() : when;
    if (!Number.isFinite(at)) throw new TypeError(`${who}: schedule(when): a time must be a valid Date or finite epoch ms, got ${String(when)}`);
    return { at: Math.floor(at) };
  }
  if (when === null || typeof when !== 'object') throw new TypeError(`${who}: schedule(when): when is a Date, epoch ms, { after }, { every } or { cron, tz }`);
  const keys = Object.keys(when);
  if (keys.length === 1 && keys[0] === 'after') {
    const ms = typeof when.after === 'number' && Number.isFinite(when.after) && when.after >= 0 ? when.after : intervalMs(when.after);
    if (ms === null) throw new DurableError(codes.NAME, `${who}: schedule({ after: ${JSON.stringify(when.after)} }): ms ≥ 0, or <n><unit> with unit s, m, h or d ('30s', '7d')`);
    return { at: Math.floor(now + ms) };
  }
  if (keys.length === 1 && keys[0] === 'every') {
    if (intervalMs(when.every) === null)
      throw new DurableError(codes.NAME, `${who}: schedule({ every: ${JSON.stringify(when.every)} }): write <n><unit> with unit s, m, h or d ('30s', '15m', '2h', '1d')`);
    return { every: when.every };
  }
  if (keys.includes('cron') && keys.every((k) => k === 'cron' || k === 'tz')) {
    if (typeof when.cron !== 'string') throw new TypeError(`${who}: schedule({ cron }): cron must be a string such as '0 9 * * 1-5'`);
    if (when.tz !== undefined && typeof when.tz !== 'string') throw new TypeError(`${who}: schedule({ cron, tz }): tz must be an IANA time zone name such as 'Europe/Paris'`);
    cron(when.cron, when.tz, who); // refuses a bad expression or zone now, not at its first slot
    return when.tz === undefined ? { cron: when.cron } : { cron: when.cron, tz: when.tz };
  }
  throw new TypeError(`${who}: schedule(when): unknown form ${JSON.stringify(keys)}; when is a Date, epoch ms, { after }, { every } or { cron, tz }`);
}

/**
 * The time a schedule fires after the slot `from`, at or after `now`; null
 * when it does not recur. The first slot is `next(when, null, now)`.
 */
function nextTime(when, from, now) {
  if ('at' in when) return from === null ? when.at : null;
  if ('every' in when) {
    const ms = intervalMs(when.every);
    return from === null ? now + ms : nextAfter(from, ms, now);
  }
  const next = cron(when.cron, when.tz, 'a schedule').nextRun(new Date(Math.max(now, from ?? now)));
  return next === null ? null : next.getTime();
}

/**
 * One worker's schedules over its alarms: what `state.schedule`,
 * `state.schedules` and `state.cancelSchedule` do, on any host.
 */
class Schedules {
  #port;
  /** @type {Map<string, { id: string, method: string, args: unknown[], when: object }>} name → decoded payload */
  #decoded = new Map();

  /**
   * @param {{ who(): string, methods(): Set<string> | null, set(name: string, at: number): Promise<void>,
   *   remove(name: string): Promise<void>, entries(): { name: string, at: number, attempt: number, scheduled: number }[],
   *   encode(value: unknown): string, decode(text: string): any, newId(): string, now(): number }} port the host's alarms, codec and clock
   */
  constructor(port) {
    this.#port = port;
  }

  /** `state.schedule(when, method, ...args)`: resolves to the new schedule's id once it is on disk. */
  async add(when, method, args) {
    const who = this.#port.who();
    const spec = checkWhen(who, when, this.#port.now());
    const methods = this.#port.methods();
    if (typeof method !== 'string' || (methods !== null && !methods.has(method))) {
      throw new DurableError(codes.METHOD, `${who}: schedule(when, ${JSON.stringify(method)}): not a method of the class that a stub could call`);
    }
    const payload = this.#port.encode({ method, args, when: spec });
    if (payload.length > MAX_PAYLOAD)
      throw new DurableError(codes.STATE_TOO_LARGE, `${who}: a schedule's method, arguments and time take ${payload.length} characters as stored; at most ${MAX_PAYLOAD} (64 KiB)`);
    const id = this.#port.newId();
    const first = nextTime(spec, null, this.#port.now());
    await this.#port.set(`${MARK}${id}${MARK}${payload}`, first);
    return id;
  }

  /** `state.schedules()`: every schedule, soonest first. */
  list() {
    const out = [];
    for (const { name, at, attempt, scheduled } of this.#port.entries()) {
      if (!isScheduleName(name)) continue;
      const s = this.of(name);
      out.push({ id: s.id, method: s.method, args: structuredClone(s.args), ...s.when, next: at, slot: scheduled, attempt });
    }
    return out.sort((a, b) => a.next - b.next);
  }

  /** `state.cancelSchedule(id)`: true if there was one. */
  async cancel(id) {
    if (typeof id !== 'string') throw new TypeError(`${this.#port.who()}: cancelSchedule(id) takes the id schedule() returned`);
    const prefix = `${MARK}${id}${MARK}`;
    for (const { name } of this.#port.entries()) {
      if (name.startsWith(prefix)) {
        await this.#port.remove(name);
        this.#decoded.delete(name);
        return true;
      }
    }
    return false;
  }

  /** What the schedule named `name` calls, and when. */
  of(name) {
    let s = this.#decoded.get(name);
    if (s === undefined) {
      const cut = name.indexOf(MARK, 1);
      s = { id: name.slice(1, cut), ...this.#port.decode(name.slice(cut + 1)) };
      // Bounded: a worker that makes a one-off schedule per request keeps no payload for each.
      if (this.#decoded.size >= 64) this.#decoded.clear();
      this.#decoded.set(name, s);
    }
    return s;
  }
}

module.exports = { Schedules, isScheduleName, nextTime, checkWhen, MARK };
