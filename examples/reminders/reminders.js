'use strict';
// Reminders: one durable worker per user. `plan` books a daily reminder at
// 09:00 in the user's time zone and one follow-up a week later; the host calls
// `remind` and `followUp` on time, with the arguments they were booked with,
// across restarts. What a reminder "sends" is kept in `sent`, for the example
// test (reminders.test.js) to read.
const { DurableWorker } = require('durable-workers');

class Reminders extends DurableWorker {
  /**
   * Books the daily reminder (once: a second plan keeps the first) and a
   * follow-up in 7 days.
   * @param {string} text
   * @param {string} tz an IANA time zone, such as 'Europe/Paris'
   */
  async plan(text, tz) {
    if (this.state.schedules().some((s) => s.method === 'remind')) return false;
    await this.state.schedule({ cron: '0 9 * * *', tz }, 'remind', text);
    // `{ after }` counts from the host's clock (a TestClock in tests), where Date.now() would not.
    await this.state.schedule({ after: '7d' }, 'followUp', { started: this.state.schedules()[0].next });
    return true;
  }

  /** @param {string} text */
  remind(text) {
    this.#send(`reminder: ${text}`);
  }

  /** @param {{ started: number }} what */
  followUp({ started }) {
    this.#send(`one week since the first reminder on ${new Date(started).toISOString().slice(0, 10)}`);
  }

  /** Stops the daily reminder. */
  async stopReminding() {
    for (const s of this.state.schedules()) if (s.method === 'remind') await this.state.cancelSchedule(s.id);
  }

  /** @returns {string[]} */
  sent() {
    return this.state.get('sent') ?? [];
  }

  /** @param {string} message */
  #send(message) {
    // A real app would send an email or a push here, after `await this.state.sync()`.
    this.state.set('sent', [...this.sent(), message]);
  }
}

module.exports = { Reminders };
