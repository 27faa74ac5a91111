'use strict';
// Testing code that runs on a schedule, with no wall time and no race:
// a TestClock is what the host's alarms and schedules fall due by, and
// `clock.advance()` resolves once what fell due has run and committed.
//
//   node --test examples/reminders/reminders.test.js
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { open, TestClock } = require('durable-workers');
const { Reminders } = require('./reminders');

test('the reminder goes out at 09:00 Paris time every day, and the follow-up a week later', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reminders-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // Monday 5 January 2026, 07:00 UTC: 08:00 in Paris.
  const clock = new TestClock({ at: new Date('2026-01-05T07:00:00Z') });
  const host = await open({ dir, clock });
  const alarms = await host.startAlarms({ classes: [Reminders] });
  t.after(async () => {
    await alarms.stop();
    await host.close();
  });
  const ann = host.get(Reminders, 'ann');

  assert.equal(await ann.plan('stand up', 'Europe/Paris'), true);
  await clock.advance('59m');
  assert.deepEqual(await ann.sent(), [], 'not before 09:00');
  await clock.advance('1m');
  assert.deepEqual(await ann.sent(), ['reminder: stand up']);

  // Six more days, one at a time: one reminder each.
  for (let day = 0; day < 6; day++) await clock.advance('1d');
  assert.equal((await ann.sent()).filter((m) => m.startsWith('reminder')).length, 7);

  // The follow-up was booked for 08:00 UTC + 7 days: due within the next day.
  await clock.advance('1d');
  assert.ok((await ann.sent()).includes('one week since the first reminder on 2026-01-05'));

  await ann.stopReminding();
  const before = (await ann.sent()).length;
  await clock.advance('2d');
  assert.equal((await ann.sent()).length, before, 'no reminder after stopReminding');
});
