'use strict';
// The output gate on workerd, under a crash: a call's result leaves the
// Durable Object only once its writes are confirmed, so every write whose
// result reached the client is on disk after a SIGKILL that follows the
// result at once. (On Node the same is files/crash.test.js.) Each round: 8
// objects, each written by a loop of serial calls; the moment the K-th result
// arrives (K differs per round), workerd is SIGKILLed from inside the
// callback that received it, then restarted on the same storage.
const test = require('ava');
const { workerdHost } = require('../helpers/workerd-hosts');

const OBJECTS = 8;
const ROUNDS = 4;

test('workerd: every write whose result was received before a SIGKILL is there after the restart, at the place its result said', async (t) => {
  t.timeout(120_000);
  const h = await workerdHost();
  t.teardown(() => h.close());
  let total = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const killAt = 10 + round * 17;
    const received = []; // [box, value, length]
    let killed = false;
    const writer = async (b) => {
      for (let i = 0; !killed; i++) {
        const value = `${round}:${b}:${i}`;
        let n;
        try {
          n = await h.call('Box', `gate-${b}`, 'append', value);
        } catch {
          return; // the crash cut this call off: its write may or may not be there
        }
        received.push([b, value, n]);
        if (received.length === killAt && !killed) {
          killed = true;
          process.kill(h.process.pid, 'SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: OBJECTS }, (_, b) => writer(b)));
    t.true(killed, `round ${round}: the kill happened`);
    t.true(received.length >= killAt, `round ${round}: ${received.length} results received`);
    await h.restart({ crash: true });
    const lists = await Promise.all(Array.from({ length: OBJECTS }, (_, b) => h.call('Box', `gate-${b}`, 'get', 'xs')));
    for (const [b, value, n] of received) {
      t.is(lists[b]?.[n - 1], value, `round ${round}: ${value} at place ${n} of Box gate-${b}`);
    }
    // Each object's writes are in the order its serial calls made them, with none missing before the last received.
    for (let b = 0; b < OBJECTS; b++) {
      const mine = (lists[b] ?? []).filter((v) => v.startsWith(`${round}:${b}:`));
      t.deepEqual(
        mine,
        mine.map((_, i) => `${round}:${b}:${i}`),
        `round ${round}: Box gate-${b} in order, no gap`,
      );
    }
    total += received.length;
  }
  t.log(`${total} results received before ${ROUNDS} SIGKILLs, every one of them on disk after`);
});
