'use strict';
// Named alarms on the one alarm a Durable Object has.
//
// Guarantee (as on Node): one alarm per name, durable; alarm() runs at least
// once for each, after its time; inside alarm() the firing one reads as
// cleared and setting it there repeats it; a throw retries it at 1 s, 2 s,
// 4 s … 5 min. Mechanism: the names live in a table of the object's own
// database, dw_alarms(name, at, attempt, scheduled), written in the same
// implicit transaction as the call's other writes; the object's single
// platform alarm (ctx.storage.setAlarm) is kept at the earliest `at`. When it
// fires, every due name runs in order, as one mailbox entry. Retries are
// ours, not the platform's: a platform retry would rerun every due name.
const { alarmBackoff } = require('../api/rules');
const { Schedules, isScheduleName, nextTime } = require('../alarms/schedules');
const wire = require('./wire');

const DDL = 'CREATE TABLE IF NOT EXISTS dw_alarms(name TEXT PRIMARY KEY NOT NULL, at INTEGER NOT NULL, attempt INTEGER NOT NULL, scheduled INTEGER NOT NULL) WITHOUT ROWID';

class NamedAlarms {
  #storage;
  #sql;
  #ready = false;
  /** Names whose alarm() is running → { rescheduled }. */
  #firing = new Map();

  /**
   * @param {DurableObjectStorage} storage
   * @param {() => string} who names the worker in messages
   * @param {Set<string>} methods what a schedule may call
   */
  constructor(storage, who, methods) {
    this.#storage = storage;
    this.#sql = storage.sql;
    this.schedules = new Schedules({
      who,
      methods: () => methods,
      set: (name, at) => this.set(name, at),
      remove: (name) => this.remove(name),
      entries: () => [...this.#table().exec('SELECT name, at, attempt, scheduled FROM dw_alarms')],
      encode: (value) => wire.encode(value, () => `${who()}: a schedule's arguments`),
      decode: (text) => wire.decode(text),
      newId: () => crypto.randomUUID(),
      now: () => Date.now(),
    });
  }

  #table() {
    if (!this.#ready) {
      this.#sql.exec(DDL);
      this.#ready = true;
    }
    return this.#sql;
  }

  /** Sets `name` to fire at `at` and moves the platform alarm if it is now earliest. */
  async set(name, at, attempt = 0, scheduled = at) {
    const f = this.#firing.get(name);
    if (f !== undefined) f.rescheduled = true;
    this.#table().exec(
      'INSERT INTO dw_alarms(name, at, attempt, scheduled) VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET at = excluded.at, attempt = excluded.attempt, scheduled = excluded.scheduled',
      name,
      at,
      attempt,
      scheduled,
    );
    await this.arm();
  }

  /** The time of `name`, or null; a firing one reads as cleared until set again. */
  time(name) {
    const f = this.#firing.get(name);
    if (f !== undefined && !f.rescheduled) return null;
    const rows = [...this.#table().exec('SELECT at FROM dw_alarms WHERE name = ?', name)];
    return rows.length ? rows[0].at : null;
  }

  async remove(name) {
    const f = this.#firing.get(name);
    if (f !== undefined) f.rescheduled = false;
    const r = this.#table().exec('DELETE FROM dw_alarms WHERE name = ?', name);
    if (r.rowsWritten > 0) await this.arm();
  }

  /** Removes every named alarm, synchronously (inside deleteAll's transaction); then disarm(). */
  clearSync() {
    this.#table().exec('DELETE FROM dw_alarms');
    for (const f of this.#firing.values()) f.rescheduled = false;
  }

  /** Removes the platform alarm (a stray one would find nothing due, and re-arm to none). */
  async disarm() {
    await this.#storage.deleteAlarm();
  }

  /** Keeps the platform alarm at the earliest named one (or none). */
  async arm() {
    const rows = [...this.#table().exec('SELECT min(at) AS at FROM dw_alarms')];
    const at = rows[0]?.at ?? null;
    const current = await this.#storage.getAlarm();
    if (at === null) {
      if (current !== null) await this.#storage.deleteAlarm();
    } else if (current !== at) {
      await this.#storage.setAlarm(at);
    }
  }

  /**
   * Runs every due alarm through `run(info, call)`, earliest first (`call`: a
   * schedule's method and arguments, else null); then re-arms. A schedule
   * that succeeded moves to its next slot after now, or ends.
   * @param {(info: { name: string, scheduledTime: number, retryCount: number }, call: object | null) => Promise<void>} run
   * @param {(err: unknown, info: object) => void} onFailed
   */
  async fire(run, onFailed) {
    const due = [...this.#table().exec('SELECT name, at, attempt, scheduled FROM dw_alarms WHERE at <= ? ORDER BY at, name', Date.now())];
    for (const a of due) {
      const call = isScheduleName(a.name) ? this.schedules.of(a.name) : null;
      this.#firing.set(a.name, { rescheduled: false });
      let error = null;
      try {
        await run({ name: a.name, scheduledTime: a.scheduled, retryCount: a.attempt }, call);
      } catch (err) {
        error = err;
      }
      const setAgain = this.#firing.get(a.name).rescheduled;
      this.#firing.delete(a.name);
      const named = call === null ? { name: a.name } : { schedule: call.id, method: call.method };
      if (error === null && call !== null) {
        const next = nextTime(call.when, a.scheduled, Date.now());
        if (next === null) this.#sql.exec('DELETE FROM dw_alarms WHERE name = ?', a.name);
        else this.#sql.exec('UPDATE dw_alarms SET at = ?, attempt = 0, scheduled = ? WHERE name = ?', next, next, a.name);
      } else if (error === null) {
        if (!setAgain) this.#sql.exec('DELETE FROM dw_alarms WHERE name = ? AND at = ?', a.name, a.at);
      } else if (!setAgain) {
        const attempt = a.attempt + 1;
        const retryAt = Date.now() + alarmBackoff(attempt);
        this.#sql.exec('UPDATE dw_alarms SET at = ?, attempt = ? WHERE name = ?', retryAt, attempt, a.name);
        onFailed(error, { ...named, attempt, retryAt });
      } else {
        onFailed(error, { ...named, attempt: a.attempt + 1, retryAt: this.time(a.name) });
      }
    }
    await this.arm();
  }
}

module.exports = { NamedAlarms };
